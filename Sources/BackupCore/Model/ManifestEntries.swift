/// The entries of a manifest, in manifest order, stored compactly: one fixed-size record per
/// entry, every path and link target back to back in one byte buffer, each user, group and
/// holding backup once, digests as 32 bytes. A `[ManifestEntry]` of 100,000 entries took
/// about 400 bytes an entry (a heap array per path, a 64-character string per digest);
/// this takes 128 plus the path. An entry is built when it is asked for.
public struct ManifestEntries: RandomAccessCollection, Sendable, Equatable, ExpressibleByArrayLiteral {
    // MARK: Storage

    /// One entry (128 bytes); variable parts are numbers into the tables below. A link
    /// target follows its path in `bytes`.
    private struct Record: Sendable {
        var pathStart: UInt32
        var pathLength: UInt32
        var linkLength: UInt32 = 0
        var mode: UInt32
        var uid: UInt32
        var gid: UInt32
        var user: UInt32 = 0
        var group: UInt32 = 0
        var holder: UInt32 = 0
        var type: UInt8
        var flags: UInt8 = 0
        var size: Int64
        var mtime: Int64
        var ctime: Int64
        var inode: UInt64
        var device: UInt64
        var digest: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        var archiveOffset: Int64 = 0
        var archiveLength: Int64 = 0

        /// Where the link target starts in `bytes`.
        var linkStart: Int { Int(pathStart) + Int(pathLength) }
    }

    /// Which optional parts a record has.
    private enum Flag {
        static let link: UInt8 = 1
        static let user: UInt8 = 2
        static let group: UInt8 = 4
        static let digest: UInt8 = 8
        static let holder: UInt8 = 16
        static let location: UInt8 = 32
        /// A digest that is not 64 lowercase hex digits (only an entry built by hand has
        /// one; the parsers refuse it), kept as text among the names.
        static let digestText: UInt8 = 64
    }

    private var records: [Record] = []
    /// Paths and link targets, back to back.
    private var bytes: [UInt8] = []
    /// User and group names, each once.
    private var names: [String] = []
    private var nameNumbers: [String: UInt32] = [:]
    /// Device numbers, by position, of the few entries that have one (devices).
    private var deviceNumbers: [Int: UInt64] = [:]
    /// The backups named by `in`, each once.
    private var holders: [BackupID] = []
    private var holderNumbers: [BackupID: UInt32] = [:]

    private static let types = EntryType.allCases

    // MARK: Life cycle

    /// No entries.
    public init() {}

    /// The entries of `sequence`, in its order.
    public init(_ sequence: some Sequence<ManifestEntry>) {
        for entry in sequence { append(entry) }
    }

    /// The entries listed.
    public init(arrayLiteral elements: ManifestEntry...) {
        self.init(elements)
    }

    /// The same entries in the same order.
    public static func == (left: ManifestEntries, right: ManifestEntries) -> Bool {
        left.elementsEqual(right)
    }

    /// Adds `entry` at the end.
    public mutating func append(_ entry: ManifestEntry) {
        var record = Record(pathStart: UInt32(truncatingIfNeeded: bytes.count), pathLength: UInt32(truncatingIfNeeded: entry.path.count),
                            mode: entry.mode, uid: entry.uid, gid: entry.gid,
                            type: UInt8(truncatingIfNeeded: ManifestEntries.types.firstIndex(of: entry.type) ?? 0),
                            size: entry.size, mtime: entry.mtimeNanoseconds, ctime: entry.ctimeNanoseconds, inode: entry.inode,
                            device: entry.device)
        bytes.append(contentsOf: entry.path)
        if let link = entry.linkTarget {
            record.flags |= Flag.link
            record.linkLength = UInt32(truncatingIfNeeded: link.count)
            bytes.append(contentsOf: link)
        }
        if entry.rdev != 0 { deviceNumbers[records.count] = entry.rdev }
        if let user = entry.userName {
            record.flags |= Flag.user
            record.user = number(ofName: user)
        }
        if let group = entry.groupName {
            record.flags |= Flag.group
            record.group = number(ofName: group)
        }
        if let sha256 = entry.sha256 {
            if let digest = ManifestEntries.digest(fromHex: sha256) {
                record.flags |= Flag.digest
                record.digest = digest
            } else {
                record.flags |= Flag.digestText
                record.digest.0 = UInt64(number(ofName: sha256))
            }
        }
        if let holder = entry.storedIn {
            record.flags |= Flag.holder
            record.holder = number(ofHolder: holder)
        }
        if let offset = entry.archiveOffset, let length = entry.archiveLength {
            record.flags |= Flag.location
            record.archiveOffset = offset
            record.archiveLength = length
        }
        records.append(record)
    }

    /// Adds every entry of `other` at the end.
    public mutating func append(contentsOf other: ManifestEntries) {
        guard !isEmpty else {
            self = other
            return
        }
        let shift = UInt32(truncatingIfNeeded: bytes.count)
        for (position, number) in other.deviceNumbers { deviceNumbers[records.count + position] = number }
        let nameMap = other.names.map { number(ofName: $0) }
        let holderMap = other.holders.map { number(ofHolder: $0) }
        bytes.append(contentsOf: other.bytes)
        records.reserveCapacity(records.count + other.records.count)
        for var record in other.records {
            record.pathStart &+= shift
            if record.flags & Flag.user != 0 { record.user = nameMap[Int(record.user)] }
            if record.flags & Flag.group != 0 { record.group = nameMap[Int(record.group)] }
            if record.flags & Flag.holder != 0 { record.holder = holderMap[Int(record.holder)] }
            if record.flags & Flag.digestText != 0 { record.digest.0 = UInt64(nameMap[Int(record.digest.0)]) }
            records.append(record)
        }
    }

    /// How much an entry takes besides its path and link (for tests).
    static var recordSize: Int { MemoryLayout<Record>.stride }

    /// Gives back the room that growing left unused (the buffers double as they grow).
    public mutating func trim() {
        if bytes.capacity > bytes.count + bytes.count / 8 { bytes = [UInt8](bytes[...]) }
        if records.capacity > records.count + records.count / 8 { records = [Record](records[...]) }
    }

    /// Reserves room for `count` entries.
    public mutating func reserveCapacity(_ count: Int) {
        records.reserveCapacity(count)
    }

    private mutating func number(ofName name: String) -> UInt32 {
        if let known = nameNumbers[name] { return known }
        let number = UInt32(truncatingIfNeeded: names.count)
        names.append(name)
        nameNumbers[name] = number
        return number
    }

    private mutating func number(ofHolder holder: BackupID) -> UInt32 {
        if let known = holderNumbers[holder] { return known }
        let number = UInt32(truncatingIfNeeded: holders.count)
        holders.append(holder)
        holderNumbers[holder] = number
        return number
    }

    // MARK: Collection

    public var startIndex: Int { 0 }
    public var endIndex: Int { records.count }

    /// The entry at `position`, built from its record.
    public subscript(position: Int) -> ManifestEntry {
        let record = records[position]
        var entry = ManifestEntry(
            path: Array(bytes[Int(record.pathStart)..<Int(record.pathStart) + Int(record.pathLength)]),
            type: ManifestEntries.types[Int(record.type)], size: record.size, mode: record.mode, uid: record.uid,
            gid: record.gid,
            userName: record.flags & Flag.user != 0 ? names[Int(record.user)] : nil,
            groupName: record.flags & Flag.group != 0 ? names[Int(record.group)] : nil,
            mtimeNanoseconds: record.mtime, ctimeNanoseconds: record.ctime, inode: record.inode, device: record.device,
            rdev: deviceNumbers[position] ?? 0,
            linkTarget: record.flags & Flag.link != 0
                ? Array(bytes[record.linkStart..<record.linkStart + Int(record.linkLength)]) : nil,
            sha256: sha256(at: position),
            storedIn: record.flags & Flag.holder != 0 ? holders[Int(record.holder)] : nil)
        if record.flags & Flag.location != 0 {
            entry.archiveOffset = record.archiveOffset
            entry.archiveLength = record.archiveLength
        }
        return entry
    }

    // MARK: Parts without building the entry

    /// The path of the entry at `position` (sharing the storage, not a copy).
    public func path(at position: Int) -> ArraySlice<UInt8> {
        let record = records[position]
        return bytes[Int(record.pathStart)..<Int(record.pathStart) + Int(record.pathLength)]
    }

    /// The type of the entry at `position`.
    public func type(at position: Int) -> EntryType {
        ManifestEntries.types[Int(records[position].type)]
    }

    /// The backup holding the content of the entry at `position`, when not the manifest's own.
    public func storedIn(at position: Int) -> BackupID? {
        let record = records[position]
        return record.flags & Flag.holder != 0 ? holders[Int(record.holder)] : nil
    }

    /// The SHA-256 of the entry at `position`, lowercase hex.
    public func sha256(at position: Int) -> String? {
        let record = records[position]
        if record.flags & Flag.digest != 0 { return ManifestEntries.hex(record.digest) }
        return record.flags & Flag.digestText != 0 ? names[Int(record.digest.0)] : nil
    }

    /// Every backup that `in` names, each once.
    public var holdingBackups: [BackupID] { holders }

    // MARK: Digests

    /// 64 lowercase hex digits as four big-endian words; nil for anything else.
    private static func digest(fromHex text: String) -> (UInt64, UInt64, UInt64, UInt64)? {
        var text = text
        return text.withUTF8 { utf8 -> (UInt64, UInt64, UInt64, UInt64)? in
            guard utf8.count == 64 else { return nil }
            func word(_ index: Int) -> UInt64? {
                var value: UInt64 = 0
                for byte in utf8[(index * 16)..<(index * 16 + 16)] {
                    switch byte {
                    case 48...57: value = value << 4 | UInt64(byte - 48)
                    case 97...102: value = value << 4 | UInt64(byte - 87)
                    default: return nil
                    }
                }
                return value
            }
            guard let first = word(0), let second = word(1), let third = word(2), let fourth = word(3) else { return nil }
            return (first, second, third, fourth)
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    private static func hex(_ digest: (UInt64, UInt64, UInt64, UInt64)) -> String {
        String(unsafeUninitializedCapacity: 64) { buffer in
            for (index, word) in [digest.0, digest.1, digest.2, digest.3].enumerated() {
                for nibble in 0..<16 {
                    buffer[index * 16 + nibble] = hexDigits[Int(word >> UInt64(60 - 4 * nibble) & 0xf)]
                }
            }
            return 64
        }
    }
}
