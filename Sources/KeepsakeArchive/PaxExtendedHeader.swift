/// What a pax extended header (`x`) says about the entry after it: the records Keepsake's
/// encoder writes, parsed from their bytes. Records it does not know are passed over, as pax
/// asks; a record that is malformed, or a sparse form other than GNU 1.0, is damage.
struct PaxExtendedHeader {
    // MARK: Values

    var path: [UInt8]?
    var linkPath: [UInt8]?
    /// The bytes stored after the ustar header (for a sparse file: its map and its data).
    var storedSize: Int64?
    var uid: Int64?
    var gid: Int64?
    var userName: [UInt8]?
    var groupName: [UInt8]?
    var mtime: (seconds: Int64, nanoseconds: Int32)?
    var deviceMajor: Int64?
    var deviceMinor: Int64?
    var xattrs: [ArchiveEntryHeader.XAttribute] = []
    /// GNU sparse 1.0: its version records, the real name and the size with the holes.
    var sparseVersion: (major: Int64?, minor: Int64?)?
    var sparseName: [UInt8]?
    var sparseRealSize: Int64?

    /// Why records could not be read.
    struct Malformed: Error {
        let reason: String
    }

    /// The most bytes of records an entry may carry (libarchive's limit too).
    static let largestSize = 1 << 20

    // MARK: Parsing

    /// Adds the records in `bytes` (`LENGTH KEY=VALUE\n` each) to what is known.
    mutating func add(records bytes: UnsafeRawBufferPointer) throws(Malformed) {
        var start = 0
        while start < bytes.count {
            // The length counts its own digits, the space, the record and its newline.
            var index = start
            var length = 0
            while index < bytes.count, bytes[index] != UInt8(ascii: " ") {
                guard Self.isDigit(bytes[index]), length <= Self.largestSize else {
                    throw Malformed(reason: "a pax record's length is not a number")
                }
                length = length * 10 + Int(bytes[index] - UInt8(ascii: "0"))
                index += 1
            }
            let end = start + length
            guard index > start, index < bytes.count, end <= bytes.count, end > index + 1,
                  bytes[end - 1] == UInt8(ascii: "\n") else {
                throw Malformed(reason: "a pax record does not fit its length")
            }
            let record = UnsafeRawBufferPointer(rebasing: bytes[(index + 1)..<(end - 1)])
            guard let equals = record.firstIndex(of: UInt8(ascii: "=")), equals > 0 else {
                throw Malformed(reason: "a pax record has no key")
            }
            try set(Array(record[0..<equals]), UnsafeRawBufferPointer(rebasing: record[(equals + 1)...]))
            start = end
        }
    }

    private mutating func set(_ key: [UInt8], _ value: UnsafeRawBufferPointer) throws(Malformed) {
        switch key {
        case Key.path: path = Array(value)
        case Key.linkPath: linkPath = Array(value)
        case Key.size: storedSize = try Self.count(value, "size")
        case Key.uid: uid = try Self.count(value, "uid")
        case Key.gid: gid = try Self.count(value, "gid")
        case Key.userName: userName = Array(value)
        case Key.groupName: groupName = Array(value)
        case Key.mtime: mtime = try Self.time(value)
        case Key.deviceMajor: deviceMajor = try Self.count(value, "SCHILY.devmajor")
        case Key.deviceMinor: deviceMinor = try Self.count(value, "SCHILY.devminor")
        case Key.sparseMajor: sparseVersion = (try Self.count(value, "GNU.sparse.major"), sparseVersion?.minor)
        case Key.sparseMinor: sparseVersion = (sparseVersion?.major, try Self.count(value, "GNU.sparse.minor"))
        case Key.sparseName: sparseName = Array(value)
        case Key.sparseRealSize: sparseRealSize = try Self.count(value, "GNU.sparse.realsize")
        default:
            if key.starts(with: Key.xattrPrefix) {
                // Keepsake's writer percent-encodes the name (see `PaxXattrName`).
                let raw = Array(key.dropFirst(Key.xattrPrefix.count))
                guard let name = PaxXattrName.name(PaxXattrName.decoded(raw)) else { return }
                xattrs.append(ArchiveEntryHeader.XAttribute(name: name, value: Array(value)))
            } else if key.starts(with: Key.sparsePrefix) || Key.otherSparseForms.contains(key) {
                throw Malformed(reason: "a sparse file in a form Keepsake does not write (\(String(decoding: key, as: UTF8.self)))")
            }
        }
    }

    // MARK: Values

    /// The record keys, as bytes.
    private enum Key {
        static let path = Array("path".utf8)
        static let linkPath = Array("linkpath".utf8)
        static let size = Array("size".utf8)
        static let uid = Array("uid".utf8)
        static let gid = Array("gid".utf8)
        static let userName = Array("uname".utf8)
        static let groupName = Array("gname".utf8)
        static let mtime = Array("mtime".utf8)
        static let deviceMajor = Array("SCHILY.devmajor".utf8)
        static let deviceMinor = Array("SCHILY.devminor".utf8)
        static let sparseMajor = Array("GNU.sparse.major".utf8)
        static let sparseMinor = Array("GNU.sparse.minor".utf8)
        static let sparseName = Array("GNU.sparse.name".utf8)
        static let sparseRealSize = Array("GNU.sparse.realsize".utf8)
        static let sparsePrefix = Array("GNU.sparse.".utf8)
        static let xattrPrefix = Array("SCHILY.xattr.".utf8)
        static let otherSparseForms = [Array("SCHILY.realsize".utf8), Array("SUN.holesdata".utf8)]
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    /// A decimal number of at least one digit that fits 63 bits.
    static func count(_ text: UnsafeRawBufferPointer, _ key: String) throws(Malformed) -> Int64 {
        var value: Int64 = 0
        guard !text.isEmpty else { throw Malformed(reason: "the pax record \(key) is empty") }
        for byte in text {
            guard isDigit(byte) else { throw Malformed(reason: "the pax record \(key) is not a number") }
            let (times, overflow) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflowAgain) = times.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
            guard !overflow, !overflowAgain else { throw Malformed(reason: "the pax record \(key) is too large") }
            value = sum
        }
        return value
    }

    /// `[-]SECONDS[.FRACTION]`, as whole seconds (rounded down) and nanoseconds from them:
    /// -0.25 is -1 s and 750,000,000 ns. Digits past nanoseconds are dropped.
    static func time(_ text: UnsafeRawBufferPointer) throws(Malformed) -> (seconds: Int64, nanoseconds: Int32) {
        let negative = text.first == UInt8(ascii: "-")
        let body = UnsafeRawBufferPointer(rebasing: text[(negative ? 1 : 0)...])
        let dot = body.firstIndex(of: UInt8(ascii: "."))
        let whole = try count(UnsafeRawBufferPointer(rebasing: body[..<(dot ?? body.count)]), "mtime")
        var nanoseconds: Int32 = 0
        if let dot {
            var scale: Int32 = 100_000_000
            for byte in body[(dot + 1)...] {
                guard isDigit(byte) else { throw Malformed(reason: "the pax record mtime is not a time") }
                nanoseconds += Int32(byte - UInt8(ascii: "0")) * scale
                scale /= 10
            }
        }
        guard negative else { return (whole, nanoseconds) }
        return nanoseconds == 0 ? (-whole, 0) : (-whole - 1, 1_000_000_000 - nanoseconds)
    }
}
