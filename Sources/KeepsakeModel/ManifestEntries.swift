import Glibc
import KeepsakeArchive
import KeepsakeSupport

/// The entries of a manifest, in manifest order, stored compactly: one fixed-size record per
/// entry, each folder path once and every name and link target back to back in byte buffers,
/// each user, group and holding backup once, digests as 32 bytes. A `[ManifestEntry]` of
/// 100,000 entries took about 400 bytes an entry (a heap array per path, a 64-character
/// string per digest); this takes 128 plus the name. An entry (or its path) is built when
/// it is asked for.
public struct ManifestEntries: RandomAccessCollection, Sendable, Equatable, ExpressibleByArrayLiteral {
    // MARK: Storage

    /// One entry (128 bytes); variable parts are numbers into the tables below. The path is
    /// its folder's (`folder`, `noFolder` for a path without a slash), a slash, and the name
    /// in `bytes`; a link target follows the name there.
    private struct Record: Sendable {
        var nameStart: UInt32
        var nameLength: UInt32
        var folder: UInt32
        var linkLength: UInt32 = 0
        var uid: UInt32
        var gid: UInt32
        var user: UInt32 = 0
        var group: UInt32 = 0
        var holder: UInt32 = 0
        /// The permission bits (12 of them; what a manifest may hold).
        var mode: UInt16
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
        var linkStart: Int { Int(nameStart) + Int(nameLength) }
    }

    /// The fixed-size values of an entry, as both ways of appending one have them.
    private struct Numbers {
        var type: EntryType
        var size: Int64
        var mode: UInt32
        var uid: UInt32
        var gid: UInt32
        var mtime: Int64
        var ctime: Int64
        var inode: UInt64
        var device: UInt64
        var rdev: UInt64
    }

    /// `Record.folder` of a path without a slash.
    private static let noFolder = UInt32.max

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
    /// Names and link targets, back to back.
    private var bytes: [UInt8] = []
    /// Folder paths, back to back, each once; `folderSpans` says where each lies.
    private var folderBytes: [UInt8] = []
    private var folderSpans: [(start: UInt32, length: UInt32)] = []
    private var folderNumbers: [[UInt8]: UInt32] = [:]
    /// User and group names, each once.
    private var names: [String] = []
    private var nameNumbers: [String: UInt32] = [:]
    /// Device numbers, by position, of the few entries that have one (devices).
    private var deviceNumbers: [Int: UInt64] = [:]
    /// Block tables, by position, of the few entries that have one (big files; `BlockTable`).
    private var blockTables: [Int: BlockTable] = [:]
    /// The backups named by `in`, each once.
    private var holders: [BackupID] = []
    private var holderNumbers: [BackupID: UInt32] = [:]
    /// The user and group names met last while appending decoded lines.
    private var lastUser: (bytes: [UInt8], number: UInt32)?
    private var lastGroup: (bytes: [UInt8], number: UInt32)?

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
        var record = entry.path.withUnsafeBufferPointer { path in
            let numbers = Numbers(type: entry.type, size: entry.size, mode: entry.mode, uid: entry.uid, gid: entry.gid,
                                  mtime: entry.mtimeNanoseconds, ctime: entry.ctimeNanoseconds, inode: entry.inode,
                                  device: entry.device, rdev: entry.rdev)
            guard let link = entry.linkTarget else { return newRecord(path: path, link: nil, numbers) }
            return link.withUnsafeBufferPointer { newRecord(path: path, link: $0, numbers) }
        }
        if let user = entry.userName {
            record.flags |= Flag.user
            record.user = number(ofName: user)
        }
        if let group = entry.groupName {
            record.flags |= Flag.group
            record.group = number(ofName: group)
        }
        if let sha256 = entry.sha256 {
            var text = sha256
            if let digest = text.withUTF8({ HexEncoding.digest(fromHex: $0) }) {
                record.flags |= Flag.digest
                record.digest = digest
            } else {
                record.flags |= Flag.digestText
                record.digest.0 = UInt64(number(ofName: sha256))
            }
        }
        if let blocks = entry.blocks { blockTables[records.count] = blocks }
        finish(&record, storedIn: entry.storedIn, archiveOffset: entry.archiveOffset, archiveLength: entry.archiveLength)
    }

    /// Adds the entry of a manifest line as `ManifestLineDecoder` read it, without building
    /// a `ManifestEntry` (whose path, link and names are each a heap allocation).
    mutating func append(_ fields: ManifestLineDecoder.Fields) {
        var record = newRecord(path: fields.path, link: fields.link,
                               Numbers(type: fields.type, size: fields.size, mode: fields.mode, uid: fields.uid, gid: fields.gid,
                                       mtime: fields.mtime, ctime: fields.ctime, inode: fields.inode, device: fields.device,
                                       rdev: fields.rdev))
        if let user = fields.user {
            record.flags |= Flag.user
            var last = lastUser
            record.user = number(ofName: user, last: &last)
            lastUser = last
        }
        if let group = fields.group {
            record.flags |= Flag.group
            var last = lastGroup
            record.group = number(ofName: group, last: &last)
            lastGroup = last
        }
        if let sha256 = fields.sha256 {
            if let digest = fields.digest ?? HexEncoding.digest(fromHex: sha256) {
                record.flags |= Flag.digest
                record.digest = digest
            } else {
                record.flags |= Flag.digestText
                record.digest.0 = UInt64(number(ofName: String(decoding: sha256, as: UTF8.self)))
            }
        }
        finish(&record, storedIn: fields.storedIn, archiveOffset: fields.archiveOffset, archiveLength: fields.archiveLength)
    }

    /// The record of an entry with its path, link and numbers (the rest is added by the caller).
    private mutating func newRecord(path: UnsafeBufferPointer<UInt8>, link: UnsafeBufferPointer<UInt8>?,
                                    _ numbers: Numbers) -> Record {
        let slash = path.lastIndex(of: UInt8(ascii: "/"))
        let name = UnsafeBufferPointer(rebasing: path[(slash.map { $0 + 1 } ?? 0)...])
        var record = Record(nameStart: UInt32(truncatingIfNeeded: bytes.count), nameLength: UInt32(truncatingIfNeeded: name.count),
                            folder: slash.map { number(ofFolder: UnsafeBufferPointer(rebasing: path[..<$0])) }
                                ?? ManifestEntries.noFolder,
                            uid: numbers.uid, gid: numbers.gid, mode: UInt16(truncatingIfNeeded: numbers.mode),
                            type: UInt8(truncatingIfNeeded: ManifestEntries.types.firstIndex(of: numbers.type) ?? 0),
                            size: numbers.size, mtime: numbers.mtime, ctime: numbers.ctime,
                            inode: numbers.inode, device: numbers.device)
        bytes.append(contentsOf: name)
        if let link {
            record.flags |= Flag.link
            record.linkLength = UInt32(truncatingIfNeeded: link.count)
            bytes.append(contentsOf: link)
        }
        if numbers.rdev != 0 { deviceNumbers[records.count] = numbers.rdev }
        return record
    }

    /// Adds what every entry may have last and stores the record.
    private mutating func finish(_ record: inout Record, storedIn: BackupID?, archiveOffset: Int64?, archiveLength: Int64?) {
        if let holder = storedIn {
            record.flags |= Flag.holder
            record.holder = number(ofHolder: holder)
        }
        if let archiveOffset, let archiveLength {
            record.flags |= Flag.location
            record.archiveOffset = archiveOffset
            record.archiveLength = archiveLength
        }
        records.append(record)
    }

    /// Points the file at `position` at another archive: `holder`'s, where it lies at
    /// `offset`, `length` bytes long (a supplement that holds it for a backup prune let go).
    public mutating func relocate(at position: Int, to holder: BackupID, offset: Int64, length: Int64) {
        var record = records[position]
        record.flags |= Flag.holder | Flag.location
        record.holder = number(ofHolder: holder)
        record.archiveOffset = offset
        record.archiveLength = length
        records[position] = record
    }

    /// Sets the block table of the file at `position` (a reader pointing its blocks at the
    /// supplements that hold them: see `SupplementShelf.relocating`).
    public mutating func replaceBlocks(at position: Int, with table: BlockTable) {
        blockTables[position] = table
    }

    /// Adds every entry of `other` at the end.
    public mutating func append(contentsOf other: ManifestEntries) {
        guard !isEmpty else {
            self = other
            return
        }
        let shift = UInt32(truncatingIfNeeded: bytes.count)
        for (position, number) in other.deviceNumbers { deviceNumbers[records.count + position] = number }
        for (position, table) in other.blockTables { blockTables[records.count + position] = table }
        let folderMap = other.folderSpans.map { span in
            number(ofFolder: other.folderBytes[Int(span.start)..<Int(span.start + span.length)])
        }
        let nameMap = other.names.map { number(ofName: $0) }
        let holderMap = other.holders.map { number(ofHolder: $0) }
        bytes.append(contentsOf: other.bytes)
        records.reserveCapacity(records.count + other.records.count)
        for var record in other.records {
            record.nameStart &+= shift
            if record.folder != ManifestEntries.noFolder { record.folder = folderMap[Int(record.folder)] }
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
        if folderBytes.capacity > folderBytes.count + folderBytes.count / 8 { folderBytes = [UInt8](folderBytes[...]) }
        folderNumbers = [:]
        if records.capacity > records.count + records.count / 8 { records = [Record](records[...]) }
    }

    /// Reserves room for `count` entries.
    public mutating func reserveCapacity(_ count: Int) {
        records.reserveCapacity(count)
    }

    private mutating func number(ofFolder folder: ArraySlice<UInt8>) -> UInt32 {
        folder.withUnsafeBufferPointer { number(ofFolder: $0) }
    }

    private mutating func number(ofFolder folder: UnsafeBufferPointer<UInt8>) -> UInt32 {
        // Entries come folder by folder: the last folder is the likely one.
        if let last = folderSpans.indices.last, Int(folderSpans[last].length) == folder.count {
            let start = Int(folderSpans[last].start)
            let same = folderBytes.withUnsafeBufferPointer { known in
                ManifestEntries.same(UnsafeBufferPointer(rebasing: known[start..<(start + folder.count)]), folder)
            }
            if same { return UInt32(last) }
        }
        let key = Array(folder)
        if let known = folderNumbers[key] { return known }
        let number = UInt32(truncatingIfNeeded: folderSpans.count)
        folderSpans.append((UInt32(truncatingIfNeeded: folderBytes.count), UInt32(truncatingIfNeeded: folder.count)))
        folderBytes.append(contentsOf: folder)
        folderNumbers[key] = number
        return number
    }

    /// The number of the user or group name `name`; `last` remembers the one met last
    /// (a manifest names few owners, mostly the same one line after line), so that most
    /// lines neither build a string nor hash one.
    private mutating func number(ofName name: UnsafeBufferPointer<UInt8>, last: inout (bytes: [UInt8], number: UInt32)?) -> UInt32 {
        if let last, last.bytes.withUnsafeBufferPointer({ ManifestEntries.same($0, name) }) { return last.number }
        let number = number(ofName: String(decoding: name, as: UTF8.self))
        last = (Array(name), number)
        return number
    }

    /// Whether two runs of bytes are the same.
    private static func same(_ first: UnsafeBufferPointer<UInt8>, _ second: UnsafeBufferPointer<UInt8>) -> Bool {
        guard first.count == second.count else { return false }
        guard let one = first.baseAddress, let other = second.baseAddress else { return true }
        return memcmp(one, other, first.count) == 0
    }

    private mutating func number(ofName name: String) -> UInt32 {
        if let known = nameNumbers[name] { return known }
        let number = UInt32(truncatingIfNeeded: names.count)
        names.append(name)
        nameNumbers[name] = number
        return number
    }

    private mutating func number(ofHolder holder: BackupID) -> UInt32 {
        // An incremental's unchanged entries mostly name the same backup, line after line.
        if let last = holders.indices.last, holders[last] == holder { return UInt32(last) }
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
            path: path(at: position),
            type: ManifestEntries.types[Int(record.type)], size: record.size, mode: UInt32(record.mode), uid: record.uid,
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
        entry.blocks = blockTables[position]
        return entry
    }

    // MARK: Parts without building the entry

    /// The path of the entry at `position`.
    public func path(at position: Int) -> [UInt8] {
        let (folder, name) = parts(at: position)
        guard let folder else { return Array(name) }
        var path = [UInt8]()
        path.reserveCapacity(folder.count + 1 + name.count)
        path.append(contentsOf: folder)
        path.append(UInt8(ascii: "/"))
        path.append(contentsOf: name)
        return path
    }

    /// Whether the path of the entry at `position` is `other`, without building it.
    public func path(at position: Int, equals other: ArraySlice<UInt8>) -> Bool {
        let (folder, name) = parts(at: position)
        guard let folder else { return name.elementsEqual(other) }
        guard folder.count + 1 + name.count == other.count else { return false }
        let start = other.startIndex
        return other[start + folder.count] == UInt8(ascii: "/")
            && other[start..<(start + folder.count)].elementsEqual(folder)
            && other[(start + folder.count + 1)...].elementsEqual(name)
    }

    /// Whether the entries at `first` and `second` have the same path, without building either.
    public func paths(at first: Int, and second: Int) -> Bool {
        let (folder, name) = parts(at: first)
        guard let folder else { return path(at: second, equals: name) }
        let (otherFolder, otherName) = parts(at: second)
        guard let otherFolder else { return false }
        let sameFolder = records[first].folder == records[second].folder || folder.elementsEqual(otherFolder)
        return sameFolder && name.elementsEqual(otherName)
    }

    /// Feeds the path of the entry at `position` to `hasher` as `hasher.combine(bytes:)` of
    /// the whole path would (the hasher sees a stream of bytes), without building it.
    public func hashPath(at position: Int, into hasher: inout Hasher) {
        let (folder, name) = parts(at: position)
        if let folder {
            folder.withUnsafeBytes { hasher.combine(bytes: $0) }
            withUnsafeBytes(of: UInt8(ascii: "/")) { hasher.combine(bytes: $0) }
        }
        name.withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    /// The folder (nil for a path without a slash) and the name of the entry at `position`.
    private func parts(at position: Int) -> (folder: ArraySlice<UInt8>?, name: ArraySlice<UInt8>) {
        let record = records[position]
        let name = bytes[Int(record.nameStart)..<Int(record.nameStart) + Int(record.nameLength)]
        guard record.folder != ManifestEntries.noFolder else { return (nil, name) }
        let span = folderSpans[Int(record.folder)]
        return (folderBytes[Int(span.start)..<Int(span.start) + Int(span.length)], name)
    }

    /// The type of the entry at `position`.
    public func type(at position: Int) -> EntryType {
        ManifestEntries.types[Int(records[position].type)]
    }

    /// The size the entry at `position` records.
    public func size(at position: Int) -> Int64 {
        records[position].size
    }

    /// The backup holding the content of the entry at `position`, when not the manifest's own.
    public func storedIn(at position: Int) -> BackupID? {
        let record = records[position]
        return record.flags & Flag.holder != 0 ? holders[Int(record.holder)] : nil
    }

    /// Where the entry at `position` lies in its archive's uncompressed tar stream
    /// (`at`..<`at`+`len`), when the manifest says; never trusted beyond a hint.
    public func location(at position: Int) -> Range<Int64>? {
        let record = records[position]
        guard record.flags & Flag.location != 0, record.archiveOffset >= 0, record.archiveLength >= 0,
              record.archiveOffset <= Int64.max - record.archiveLength else { return nil }
        return record.archiveOffset..<(record.archiveOffset + record.archiveLength)
    }

    /// The SHA-256 of the entry at `position`, lowercase hex.
    public func sha256(at position: Int) -> String? {
        let record = records[position]
        if record.flags & Flag.digest != 0 { return HexEncoding.hex(ofDigest: record.digest) }
        return record.flags & Flag.digestText != 0 ? names[Int(record.digest.0)] : nil
    }

    /// Whether the entry at `position` lies whole in its own backup's archive: it names no
    /// other backup's (`in`), and is not a file stored by blocks.
    public func isWholeInOwnArchive(at position: Int) -> Bool {
        // Most manifests have no table at all: no lookup for them.
        storedIn(at: position) == nil && (blockTables.isEmpty || blockTables[position]?.isStoredByBlocks != true)
    }

    /// Whether backup's own archive has an entry for the entry at `position`: it lies there
    /// whole, or it is a file stored by blocks some of which that archive holds (in its
    /// block entry).
    public func hasEntryInOwnArchive(at position: Int) -> Bool {
        guard storedIn(at: position) == nil else { return false }
        guard let blocks = blockTables[position], blocks.isStoredByBlocks else { return true }
        return blocks.sources.contains { $0.holder == nil }
    }

    /// The block table of the entry at `position` (a big file's), when it has one.
    public func blocks(at position: Int) -> BlockTable? {
        blockTables[position]
    }

    /// The positions of the files stored by blocks (see `BlockTable.isStoredByBlocks`), in order.
    public var positionsStoredByBlocks: [Int] {
        blockTables.filter { $0.value.isStoredByBlocks }.keys.sorted()
    }

    /// Every backup that `in` names, each once.
    public var holdingBackups: [BackupID] { holders }
}
