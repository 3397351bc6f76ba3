import Glibc
import KeepsakeArchive
import KeepsakeSupport

/// Decodes the manifest lines Keepsake writes straight from their bytes, without building
/// a JSON tree: a no-change backup of 100,000 files reads its parent's manifest mostly in
/// here. Anything it does not expect (an escape, an unknown key, a fraction, a `_b64`
/// name) makes it give up, and the line goes through the general JSON parser instead; both
/// judge what they read by `ManifestEntryRules`, so the two always agree on what a line means.
struct ManifestLineDecoder {
    // MARK: Input

    private let bytes: UnsafeBufferPointer<UInt8>
    private var position = 0

    private init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// The entry on `line`, or nil when the line needs the general parser. Throws only for
    /// lines that are well-formed but invalid, with the same messages as `ManifestEntry(json:line:)`.
    static func decode(_ line: UnsafeBufferPointer<UInt8>, lineNumber: Int) throws -> ManifestEntry? {
        try fields(line, lineNumber: lineNumber)?.entry
    }

    /// What `line` holds, with its strings left where they are in it (see `Fields`); nil
    /// and throws as `decode`.
    static func fields(_ line: UnsafeBufferPointer<UInt8>, lineNumber: Int) throws -> Fields? {
        var decoder = ManifestLineDecoder(line)
        return try decoder.fields(lineNumber: lineNumber)
    }

    /// The path and type at the start of a line as Keepsake writes it
    /// (`{"path":"…","type":"…",`), read without decoding the rest; nil when the line
    /// starts any other way (an escape in the path, a `path_b64`), and it must be decoded.
    static func peek(_ line: UnsafeBufferPointer<UInt8>) -> (path: UnsafeBufferPointer<UInt8>, type: EntryType)? {
        let pathKey = Array(#"{"path":""#.utf8), typeKey = Array(#"","type":""#.utf8)
        guard line.count > pathKey.count, line.starts(with: pathKey) else { return nil }
        var index = pathKey.count
        let pathStart = index
        while index < line.count, line[index] != UInt8(ascii: "\""), line[index] != UInt8(ascii: "\\") { index += 1 }
        guard index < line.count, line[index] == UInt8(ascii: "\"") else { return nil }
        let path = UnsafeBufferPointer(rebasing: line[pathStart..<index])
        guard line[index...].starts(with: typeKey) else { return nil }
        index += typeKey.count
        let typeStart = index
        while index < line.count, line[index] != UInt8(ascii: "\"") { index += 1 }
        guard index < line.count,
              let type = EntryType(rawValue: String(decoding: line[typeStart..<index], as: UTF8.self)) else { return nil }
        return (path, type)
    }

    // MARK: Fields

    /// An entry line's values: numbers, and its strings as the places in the line where
    /// they are (valid while the line is, already checked). Storing it in
    /// `ManifestEntries` copies only the name's bytes; `entry` builds a `ManifestEntry`.
    struct Fields {
        var path: UnsafeBufferPointer<UInt8>
        var type: EntryType
        var size: Int64
        var mode: UInt32
        var uid: UInt32
        var gid: UInt32
        var user: UnsafeBufferPointer<UInt8>?
        var group: UnsafeBufferPointer<UInt8>?
        var mtime: Int64
        var ctime: Int64
        var inode: UInt64
        var device: UInt64
        var rdev: UInt64
        var link: UnsafeBufferPointer<UInt8>?
        /// 64 lowercase hex digits, and what they say.
        var sha256: UnsafeBufferPointer<UInt8>?
        var digest: HexEncoding.Digest?
        var storedIn: BackupID?
        var archiveOffset: Int64?
        var archiveLength: Int64?

        /// The entry, its strings copied out of the line.
        var entry: ManifestEntry {
            func text(_ bytes: UnsafeBufferPointer<UInt8>?) -> String? { bytes.map { String(decoding: $0, as: UTF8.self) } }
            var entry = ManifestEntry(path: Array(path), type: type, size: size, mode: mode, uid: uid, gid: gid,
                                      userName: text(user), groupName: text(group), mtimeNanoseconds: mtime,
                                      ctimeNanoseconds: ctime, inode: inode, device: device, rdev: rdev,
                                      linkTarget: link.map { Array($0) }, sha256: text(sha256), storedIn: storedIn)
            entry.archiveOffset = archiveOffset
            entry.archiveLength = archiveLength
            return entry
        }
    }

    private mutating func fields(lineNumber: Int) throws -> Fields? {
        var path: Range<Int>?
        var rules = ManifestEntryRules()
        var mode: UInt32 = 0o644
        var userName: Range<Int>?
        var groupName: Range<Int>?
        var mtime: Int64 = 0
        var ctime: Int64 = 0
        var inode: UInt64 = 0
        var device: UInt64 = 0
        var rdev: UInt64 = 0
        var link: Range<Int>?
        var sha256: Range<Int>?
        var digest: HexEncoding.Digest?
        var storedIn: BackupID?
        var seen: UInt32 = 0
        // Where in the order Keepsake writes keys in the next key is looked for first.
        var expected = 0
        let written = ManifestLineDecoder.writtenKeys

        // Values are only gathered here (a value of the wrong kind hands the line over); what
        // they must say is judged once the line is read, by the rules the general parser uses.
        guard take(UInt8(ascii: "{")) else { return nil }
        if take(UInt8(ascii: "}")) { return nil }
        repeat {
            guard let key = nextKey(expected: &expected, written: written) else { return nil }
            // A repeated key means something unusual: leave it to the general parser.
            let bit = UInt32(1) << UInt32(key.rawValue)
            guard seen & bit == 0 else { return nil }
            seen |= bit
            switch key {
            case .path: guard let value = string() else { return nil }; path = value
            case .link: guard let value = string() else { return nil }; link = value
            case .type: guard let value = string() else { return nil }; rules.type = entryType(value)
            case .user: guard let value = string() else { return nil }; userName = value
            case .group: guard let value = string() else { return nil }; groupName = value
            case .mode:
                guard let value = string() else { return nil }
                if let parsed = ManifestEntryRules.mode(octalDigits: part(value)) { mode = parsed } else { rules.modeInvalid = true }
            case .sha256:
                guard let value = string() else { return nil }
                sha256 = value
                digest = HexEncoding.digest(fromHex: part(value))
                rules.sha256Invalid = digest == nil
            case .storedIn:
                guard let value = string() else { return nil }
                storedIn = BackupID(text(value))
                rules.storedInInvalid = storedIn == nil
            case .size: guard let value = signed() else { return nil }; rules.size = value
            case .uid: guard let value = signed() else { return nil }; rules.uid = value
            case .gid: guard let value = signed() else { return nil }; rules.gid = value
            case .mtime: guard let value = signed() else { return nil }; mtime = value
            case .ctime: guard let value = signed() else { return nil }; ctime = value
            case .offset: guard let value = signed() else { return nil }; rules.offset = value
            case .length: guard let value = signed() else { return nil }; rules.length = value
            case .inode: guard let value = unsigned() else { return nil }; inode = value
            case .device: guard let value = unsigned() else { return nil }; device = value
            case .rdev: guard let value = unsigned() else { return nil }; rdev = value
            }
        } while take(UInt8(ascii: ","))
        guard take(UInt8(ascii: "}")), position == bytes.count else { return nil }

        rules.pathLength = path?.count
        rules.hasLink = link != nil
        let owners = try rules.judged(line: lineNumber)
        // `judged` refused a line without them.
        guard let path, let type = rules.type else { throw ManifestError.invalidLine(line: lineNumber, reason: "missing 'path'") }
        return Fields(path: part(path), type: type, size: rules.size, mode: mode, uid: owners.uid, gid: owners.gid,
                      user: userName.map(part), group: groupName.map(part), mtime: mtime, ctime: ctime, inode: inode,
                      device: device, rdev: rdev, link: link.map(part), sha256: sha256.map(part), digest: digest, storedIn: storedIn,
                      archiveOffset: rules.offset, archiveLength: rules.length)
    }

    /// The bytes of the line in `range`.
    private func part(_ range: Range<Int>) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(rebasing: bytes[range])
    }

    /// The keys an entry line may have.
    private enum Key: Int, CaseIterable {
        case path, link, type, user, group, mode, sha256, storedIn, size, uid, gid, mtime, ctime, offset, length, inode, device, rdev

        var name: [UInt8] {
            let text: String
            switch self {
            case .storedIn: text = "in"
            case .mtime: text = "mtime_ns"
            case .ctime: text = "ctime_ns"
            case .offset: text = "at"
            case .length: text = "len"
            case .device: text = "dev"
            case .path: text = "path"
            case .link: text = "link"
            case .type: text = "type"
            case .user: text = "user"
            case .group: text = "group"
            case .mode: text = "mode"
            case .sha256: text = "sha256"
            case .size: text = "size"
            case .uid: text = "uid"
            case .gid: text = "gid"
            case .inode: text = "inode"
            case .rdev: text = "rdev"
            }
            return Array(text.utf8)
        }
    }

    /// Key names by length (the index), to compare a key's bytes against only a few
    /// candidates; an array rather than a dictionary, since every key of every line is looked up.
    private static let keysByLength: [[(name: [UInt8], key: Key)]] = {
        let keys = Key.allCases.map { ($0.name, $0) }
        let longest = keys.map(\.0.count).max() ?? 0
        return (0...longest).map { length in keys.filter { $0.0.count == length } }
    }()

    /// A key as it appears on a line Keepsake writes (quoted, with its colon: at most 11
    /// bytes), as two little-endian words to compare with the line's next 16 bytes.
    private struct WrittenKey {
        let key: Key
        let count: Int
        let first: UInt64
        let second: UInt64
        /// Which bits of each word are the key's (a key shorter than 16 bytes leaves some out).
        let firstMask: UInt64
        let secondMask: UInt64

        init(_ key: Key) {
            let pattern = [UInt8(ascii: "\"")] + key.name + Array("\":".utf8)
            func word(_ bytes: ArraySlice<UInt8>) -> UInt64 {
                bytes.enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << UInt64(8 * $1.offset) }
            }
            self.key = key
            count = pattern.count
            first = word(pattern.prefix(8))
            second = word(pattern.dropFirst(8))
            func mask(_ bytes: Int) -> UInt64 { bytes >= 8 ? UInt64.max : (UInt64(1) << UInt64(8 * bytes)) &- 1 }
            firstMask = mask(count)
            secondMask = mask(max(0, count - 8))
        }

        /// Whether the line at `start`, with `left` bytes from there, begins with this key.
        func isAt(_ start: UnsafePointer<UInt8>, left: Int) -> Bool {
            guard count <= left else { return false }
            if left >= 16 {
                let raw = UnsafeRawPointer(start)
                return raw.loadUnaligned(as: UInt64.self) & firstMask == first
                    && raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self) & secondMask == second
            }
            for index in 0..<count where start[index] != UInt8(truncatingIfNeeded: (index < 8 ? first >> UInt64(8 * index)
                                                                                       : second >> UInt64(8 * (index - 8)))) {
                return false
            }
            return true
        }
    }

    /// The keys in the order Keepsake writes them (see `ManifestEntry.write(to:)`).
    private static let writtenKeys = [Key.path, .type, .size, .mode, .uid, .gid, .user, .group, .mtime, .ctime, .inode,
                                      .device, .rdev, .link, .sha256, .storedIn, .offset, .length].map(WrittenKey.init)

    /// The key at the reading position and its colon. A line Keepsake wrote has its keys in
    /// `written` order, some left out: they are compared where they are expected, from
    /// `expected` on, before the key is read as a string and looked up.
    private mutating func nextKey(expected: inout Int, written: [WrittenKey]) -> Key? {
        if let base = bytes.baseAddress {
            let start = base + position, left = bytes.count - position
            var candidate = expected
            while candidate < written.count {
                let key = written[candidate]
                if key.isAt(start, left: left) {
                    position += key.count
                    expected = candidate + 1
                    return key.key
                }
                candidate += 1
            }
        }
        guard let range = string(), take(UInt8(ascii: ":")) else { return nil }
        return key(range)
    }

    /// Types by their names' bytes.
    private static let typeNames: [(name: [UInt8], type: EntryType)] = EntryType.allCases.map { (Array($0.rawValue.utf8), $0) }

    private func entryType(_ range: Range<Int>) -> EntryType? {
        guard let base = bytes.baseAddress else { return nil }
        for (name, type) in ManifestLineDecoder.typeNames where name.count == range.count {
            let same = name.withUnsafeBufferPointer { name in
                name.baseAddress.map { memcmp($0, base + range.lowerBound, range.count) == 0 } ?? false
            }
            if same { return type }
        }
        return nil
    }

    private func key(_ range: Range<Int>) -> Key? {
        let table = ManifestLineDecoder.keysByLength
        guard range.count < table.count, let base = bytes.baseAddress else { return nil }
        // Compared through pointers rather than elementsEqual on a slice: the same loop
        // optimised, and a debug build (the test suite's) does not walk generic iterators.
        let start = base + range.lowerBound
        for candidate in table[range.count] {
            let equal = candidate.name.withUnsafeBufferPointer { name in
                var index = 0
                while index < name.count, name[index] == start[index] { index += 1 }
                return index == name.count
            }
            if equal { return candidate.key }
        }
        return nil
    }

    private func text(_ range: Range<Int>) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    }

    // MARK: Tokens

    private mutating func take(_ byte: UInt8) -> Bool {
        guard position < bytes.count, bytes[position] == byte else { return false }
        position += 1
        return true
    }

    /// A string without escapes (nil otherwise): where its bytes are in the line.
    private mutating func string() -> Range<Int>? {
        guard take(UInt8(ascii: "\"")), let base = bytes.baseAddress, position < bytes.count,
              let quote = memchr(base + position, 0x22, bytes.count - position) else { return nil }
        let range = position..<base.distance(to: quote.assumingMemoryBound(to: UInt8.self))
        // One pass without early exits (the compiler reads it a vector at a time): escapes and
        // control characters (a NUL among them) are the general parser's to read, and it
        // refuses a NUL in a path or link (see ManifestEntry.init(json:line:)). An escaped
        // quote is found above as the end, with its backslash before it: refused here too.
        var special: UInt8 = 0
        var high: UInt8 = 0
        for byte in UnsafeBufferPointer(rebasing: bytes[range]) {
            special |= (byte == 0x5C ? 1 : 0) | (byte < 0x20 ? 1 : 0)
            high |= byte
        }
        guard special == 0 else { return nil }
        // JSON text is UTF-8: anything else is the general parser's to refuse.
        if high >= 0x80 && PathBytes.validString(Array(bytes[range])) == nil { return nil }
        position = range.upperBound + 1
        return range
    }

    /// A whole number that fits an Int64; nil for anything else (fractions, exponents).
    private mutating func signed() -> Int64? {
        let negative = take(UInt8(ascii: "-"))
        guard let magnitude = unsigned() else { return nil }
        if negative {
            return magnitude <= UInt64(Int64.max) + 1 ? Int64(truncatingIfNeeded: 0 &- magnitude) : nil
        }
        return magnitude <= UInt64(Int64.max) ? Int64(magnitude) : nil
    }

    /// A whole number without sign that fits a UInt64 (no leading zeros, as JSON says).
    private mutating func unsigned() -> UInt64? {
        let start = position
        var end = start
        var value: UInt64 = 0
        // Wraps past 19 digits (UInt64.max has 20): those are read again below, with checks.
        while end < bytes.count {
            let digit = bytes[end] &- 48
            guard digit < 10 else { break }
            value = value &* 10 &+ UInt64(digit)
            end += 1
        }
        position = end
        let digits = end - start
        guard digits > 0, !(digits > 1 && bytes[start] == 48) else { return nil }
        if end < bytes.count {
            let next = bytes[end]
            if next == 0x2E || next == 0x65 || next == 0x45 { return nil } // . e E: not a whole number
        }
        guard digits > 19 else { return value }
        value = 0
        for index in start..<end {
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(UInt64(bytes[index] &- 48))
            if overflow1 || overflow2 { return nil }
            value = sum
        }
        return value
    }
}
