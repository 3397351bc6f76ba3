import Foundation
import KeepsakeArchive
import KeepsakeJSON
import KeepsakeSupport

/// The blocks of a big file as a manifest line records them (JSON `blocks`): a digest of
/// each fixed-size block (`{"size":65536,"digests_b64":"…"}`: the first 16 bytes of each
/// block's SHA-256, one after another, in base64), and, for a file stored by its changed blocks, which archives
/// hold which blocks (`from`, `runs`). The next backup of a changed file compares its blocks
/// with these to find what changed (issue 34, part 2): fixed blocks, because the big files
/// that change a little (images, databases, mailboxes, logs) are written in place or
/// appended to, and a fixed block is found again by its offset alone.
///
/// Blocks are `blockSize` bytes from the file's start; the last one holds what is left
/// (holes read as zeros, as the file's SHA-256 reads them).
///
/// A table of a file stored by blocks may be stored as changes (JSON `digests_sha256`):
/// `digests` then holds only the digests of the blocks in the line's own archive, each other
/// block's digest is in the line of the backup (or supplement) that holds it, and
/// `everyDigestSHA256` is the SHA-256 of all of them, in file order, which a reader checks
/// what it gathers against (`BlockDigestGathering`). So a table costs what changed, not
/// the whole file's 16 bytes a block each night.
public struct BlockTable: Sendable, Equatable {
    // MARK: Policy

    /// Files of this many bytes or more get a table (below that, the whole file is about
    /// what its changed blocks and table would be).
    public static let threshold: Int64 = 1 << 20
    /// The block size of files up to `mostBlocks` blocks of it (2 GiB): the page that file
    /// systems, databases and virtual disks write, so a page rewritten in place is one
    /// block stored (64 KiB blocks stored 8 times what changed of a SQLite database).
    public static let standardBlockSize = 4 << 10
    /// Past this many standard blocks, the block size doubles until the table has at most
    /// this many digests (8 MiB): a 4 GiB file has 8 KiB blocks, a 16 GiB one 32 KiB. Only a
    /// whole table (a full backup's, or a file stored whole) is that large: one stored as
    /// changes holds the digests of the blocks its backup stores.
    public static let mostBlocks = 1 << 19
    /// The smallest and largest block sizes a manifest may name (powers of two).
    public static let blockSizes = (4 << 10)...(1 << 30)
    /// Bytes of one digest: the first 16 of the block's SHA-256. They tell a changed block
    /// from the one before (a chance of 2^-128 that a change goes unseen, and what a restore
    /// puts together is checked against the whole file's SHA-256 all the same), at half the
    /// room: a table is stored each night a file changes, in both copies of the manifest.
    public static let digestLength = 16

    /// The block size Keepsake uses for a file of `size` bytes.
    public static func blockSize(forFileSize size: Int64) -> Int {
        var blockSize = Int64(standardBlockSize)
        while blockSize < Int64(blockSizes.upperBound), size > blockSize * Int64(mostBlocks) { blockSize *= 2 }
        return Int(blockSize)
    }

    /// How many blocks of `blockSize` bytes a file of `size` bytes has; nil when either is
    /// not positive.
    public static func blockCount(fileSize size: Int64, blockSize: Int) -> Int? {
        guard size > 0, blockSize > 0 else { return nil }
        let (quotient, remainder) = size.quotientAndRemainder(dividingBy: Int64(blockSize))
        return Int(exactly: quotient + (remainder > 0 ? 1 : 0))
    }

    // MARK: Fields

    /// Bytes per block: a power of two in `blockSizes`.
    public let blockSize: Int
    /// The blocks' digests, `digestLength` bytes each, in file order: every block's, or,
    /// with `everyDigestSHA256`, those of the blocks in the line's own archive only.
    public let digests: [UInt8]
    /// For a table stored as changes: the SHA-256 (lowercase hex) of every block's digest,
    /// one after another in file order (JSON `digests_sha256`). Nil when `digests` holds every one.
    public let everyDigestSHA256: String?
    /// The number of blocks.
    public let count: Int
    /// For a file stored by blocks: the archives that hold them (JSON `from`). Empty when the
    /// file is whole where its line says (its backup's own archive, or `in`).
    public let sources: [Source]
    /// Which source holds each block: runs of blocks in file order, covering them all
    /// (JSON `runs`: the count, then the index in `sources`, for each run). Empty with `sources`.
    public let runs: [Run]

    /// An archive that holds blocks of the file.
    public struct Source: Sendable, Equatable {
        /// The backup whose archive it is; nil for the backup of the line itself. JSON `in`.
        public var holder: BackupID?
        /// The archive holds the file whole under its own path; otherwise in a block entry
        /// (`ArchiveLayout.blocksEntryPath`), whose data are the blocks it stores, each at
        /// its offset in the file. JSON `whole`.
        public var whole: Bool
        /// Where that entry lies in the archive's tar stream (a hint, as for a file's). JSON `at`, `len`.
        public var archiveOffset: Int64?
        public var archiveLength: Int64?
        /// Set only when a reader points the source at a supplement (`holder` is then the
        /// supplement's id): the backup whose blocks it holds, which names its entry
        /// (`SupplementNaming.blocksEntryPath`). Never written.
        public var origin: BackupID?

        /// A source: `holder`'s archive (nil: the line's own backup), whole or not, the entry where given.
        public init(holder: BackupID?, whole: Bool, archiveOffset: Int64? = nil, archiveLength: Int64? = nil, origin: BackupID? = nil) {
            self.holder = holder
            self.whole = whole
            self.archiveOffset = archiveOffset
            self.archiveLength = archiveLength
            self.origin = origin
        }

        /// The entry that holds the blocks in the archive, for the file at `path`.
        public func entryPath(for path: [UInt8]) -> [UInt8] {
            if whole { return path }
            if let origin { return SupplementNaming.blocksEntryPath(origin: origin, path: path) }
            return ArchiveLayout.blocksEntryPath(for: path)
        }

        /// Where the entry lies, when given.
        public var archiveRange: Range<Int64>? {
            guard let archiveOffset, let archiveLength, archiveOffset >= 0, archiveLength >= 0,
                  archiveOffset <= Int64.max - archiveLength else { return nil }
            return archiveOffset..<(archiveOffset + archiveLength)
        }
    }

    /// `count` blocks in a row, held by `sources[source]`.
    public struct Run: Sendable, Equatable {
        public var count: Int
        public var source: Int

        /// A run of `count` blocks from source `source`.
        public init(count: Int, source: Int) {
            self.count = count
            self.source = source
        }
    }

    /// Whether `digests` holds every block's digest (else only those of the line's own archive).
    public var holdsEveryDigest: Bool { everyDigestSHA256 == nil }

    /// Whether the file is stored by blocks (in `sources`), rather than whole.
    public var isStoredByBlocks: Bool { !sources.isEmpty }

    /// The earlier backups whose archives hold blocks of the file.
    public var holders: Set<BackupID> { Set(sources.compactMap(\.holder)) }

    /// A table of `digests` (`digestLength` bytes per block) for blocks of `blockSize` bytes, with the
    /// archives that hold them when the file is stored by blocks; with `everyDigestSHA256`,
    /// stored as changes (`digests` then holds the own archive's blocks' only).
    public init(blockSize: Int, digests: [UInt8], sources: [Source] = [], runs: [Run] = [], everyDigestSHA256: String? = nil) {
        self.blockSize = blockSize
        self.digests = digests
        self.sources = sources
        self.runs = runs
        self.everyDigestSHA256 = everyDigestSHA256
        count = everyDigestSHA256 == nil ? digests.count / BlockTable.digestLength : runs.reduce(0) { $0 + $1.count }
    }

    /// The index in `sources` of the line's own archive (no `in`), if it holds blocks.
    public var ownSource: Int? { sources.firstIndex { $0.holder == nil } }

    /// The index in `sources` of each block's archive, in file order (empty when the file is
    /// not stored by blocks).
    public var sourceOfEachBlock: [Int] {
        runs.flatMap { repeatElement($0.source, count: $0.count) }
    }

    /// The same blocks as a later backup sees them: what `owner` (the backup of this line)
    /// holds in its own archive is named by its id (a table stored as changes then holds no
    /// digest: each is in the line of the backup that holds its block).
    public func seen(after owner: BackupID) -> BlockTable {
        BlockTable(blockSize: blockSize, digests: holdsEveryDigest ? digests : [],
                   sources: sources.map { Source(holder: $0.holder ?? owner, whole: $0.whole, archiveOffset: $0.archiveOffset,
                                                 archiveLength: $0.archiveLength, origin: $0.origin) },
                   runs: runs, everyDigestSHA256: everyDigestSHA256)
    }

    /// The digest of block `index`, of a table that holds every one (`holdsEveryDigest`).
    public func digest(at index: Int) -> ArraySlice<UInt8> {
        digests[index * BlockTable.digestLength ..< (index + 1) * BlockTable.digestLength]
    }

    /// The digest of each block this table holds, in file order (nil for a block whose
    /// digest is in another line: one held elsewhere, of a table stored as changes).
    public var heldDigests: [ArraySlice<UInt8>?] {
        guard !holdsEveryDigest else { return (0..<count).map { digest(at: $0) } }
        let own = ownSource
        var next = 0
        return sourceOfEachBlock.map { source in
            guard source == own, next + BlockTable.digestLength <= digests.count else { return nil }
            defer { next += BlockTable.digestLength }
            return digests[next ..< next + BlockTable.digestLength]
        }
    }

    /// The digests of the blocks in the line's own archive, in file order: what a table
    /// stored as changes holds (`every`: each block's digest, as `digests` of a whole table).
    public static func ownDigests(_ every: [UInt8], sources: [Source], runs: [Run]) -> [UInt8] {
        guard let own = sources.firstIndex(where: { $0.holder == nil }) else { return [] }
        var held: [UInt8] = []
        var block = 0
        for run in runs {
            if run.source == own {
                let start = block * digestLength, end = (block + run.count) * digestLength
                if end <= every.count { held += every[start..<end] }
            }
            block += run.count
        }
        return held
    }

    /// This table as a whole one (every digest held), from `every`, the digest of each block
    /// in file order gathered from the lines that hold them: nil when they are not this
    /// table's (another count, a digest this table holds that differs, or, for a table
    /// stored as changes, another SHA-256 of them all, `sha256` of `every`).
    public func holdingEvery(_ every: [UInt8], sha256: String) -> BlockTable? {
        guard every.count == count * BlockTable.digestLength else { return nil }
        if let everyDigestSHA256 {
            guard everyDigestSHA256 == sha256 else { return nil }
        } else if every != digests {
            return nil
        }
        return BlockTable(blockSize: blockSize, digests: every, sources: sources, runs: runs)
    }

    /// This table stored as changes: only the own archive's blocks' digests, and the SHA-256
    /// (`sha256`) of every one. Nil for a table not stored by blocks or already so.
    public func asChanges(sha256: String) -> BlockTable? {
        guard holdsEveryDigest, isStoredByBlocks else { return nil }
        return BlockTable(blockSize: blockSize, digests: BlockTable.ownDigests(digests, sources: sources, runs: runs),
                          sources: sources, runs: runs, everyDigestSHA256: sha256)
    }

    /// The table of a new version of a file whose last version `basis` describes, as this
    /// backup sees it (every source named by its backup: see `seen(after:)`): `digests` are
    /// the new version's; the blocks `changed` marks lie in `own` (this backup's archive,
    /// named nil), the others where `basis` has them (each of those blocks has the same
    /// digest there).
    public static func storedByBlocks(digests: [UInt8], blockSize: Int, changed: [Bool], basis: BlockTable,
                                      own: Source) -> BlockTable {
        let count = digests.count / digestLength
        var placement = Placement<Int>() // keyed by the basis source; -1 stands for `own`
        let held = basis.sourceOfEachBlock
        for block in 0..<count {
            let key = block < changed.count && changed[block] || block >= held.count ? -1 : held[block]
            placement.append(key, source: key < 0 ? own : basis.sources[key])
        }
        return BlockTable(blockSize: blockSize, digests: digests, sources: placement.sources, runs: placement.runs)
    }

    /// The `sources` and `runs` of a table, made block by block in file order: each block's
    /// source named by a key (one source a key).
    public struct Placement<Key: Hashable> {
        public private(set) var sources: [Source] = []
        public private(set) var runs: [Run] = []
        private var numbers: [Key: Int] = [:]

        /// No block yet.
        public init() {}

        /// The next block, held by the source `key` names (`source` the first time).
        public mutating func append(_ key: Key, source: @autoclosure () -> Source) {
            let number: Int
            if let known = numbers[key] {
                number = known
            } else {
                number = sources.count
                numbers[key] = number
                sources.append(source())
            }
            if let last = runs.last, last.source == number {
                runs[runs.count - 1].count += 1
            } else {
                runs.append(Run(count: 1, source: number))
            }
        }
    }

    // MARK: Encoding

    /// Appends the table as its JSON object.
    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("size"); writer.int(Int64(blockSize))
        writer.key("digests_b64"); writer.string(Data(digests).base64EncodedString())
        if let everyDigestSHA256 { writer.key("digests_sha256"); writer.string(everyDigestSHA256) }
        if !sources.isEmpty {
            writer.key("from")
            writer.beginArray()
            for source in sources {
                writer.beginObject()
                if let holder = source.holder { writer.key("in"); writer.string(holder.rawValue) }
                if source.whole { writer.key("whole"); writer.bool(true) }
                if let offset = source.archiveOffset, let length = source.archiveLength {
                    writer.key("at"); writer.int(offset)
                    writer.key("len"); writer.int(length)
                }
                writer.endObject()
            }
            writer.endArray()
            writer.key("runs")
            writer.beginArray()
            for run in runs {
                writer.int(Int64(run.count))
                writer.int(Int64(run.source))
            }
            writer.endArray()
        }
        writer.endObject()
    }

    /// Reads the table of a file of `fileSize` bytes from its JSON object, or says why it is
    /// not a table of a file of that size.
    public static func parse(_ json: JSONValue, fileSize: Int64) -> Result<BlockTable, Refusal> {
        guard case .object(let object) = json else { return .failure(Refusal("'blocks' must be a JSON object")) }
        guard let size = object["size"]?.int64Value, let blockSize = Int(exactly: size), blockSizes.contains(blockSize),
              blockSize & (blockSize - 1) == 0 else {
            return .failure(Refusal("'blocks' must give its block 'size', a power of two from 4096 to 1073741824"))
        }
        guard let encoded = object["digests_b64"]?.stringValue, let decoded = Data(base64Encoded: encoded) else {
            return .failure(Refusal("'blocks' must give 'digests_b64', the blocks' digests in base64"))
        }
        let count = blockCount(fileSize: fileSize, blockSize: blockSize)
        var everySHA256: String?
        if let value = object["digests_sha256"] {
            guard let text = value.stringValue, HexEncoding.isHex(text, length: 64) else {
                return .failure(Refusal("'digests_sha256' must be a SHA-256 in lowercase hex"))
            }
            guard object["from"] != nil else {
                return .failure(Refusal("only a file stored by blocks ('from') has its table stored as changes ('digests_sha256')"))
            }
            everySHA256 = text
        }
        if everySHA256 == nil {
            let expected = count.map { $0.multipliedReportingOverflow(by: digestLength) }
            guard let expected, !expected.overflow, decoded.count == expected.partialValue else {
                return .failure(Refusal("'blocks' holds \(decoded.count / digestLength) digests, where a file of \(fileSize) bytes "
                                        + "has \(count ?? 0) blocks of \(blockSize)"))
            }
        }
        guard let count, count > 0 else {
            return .failure(Refusal("a file of \(fileSize) bytes has no blocks"))
        }
        // Keepsake never makes a larger one (`blockSize(forFileSize:)`); a table stored as
        // changes holds few digests, so its line alone would not bound what reading it takes.
        guard count <= mostBlocks else {
            return .failure(Refusal("a file of \(fileSize) bytes has \(count) blocks of \(blockSize), more than the "
                                    + "\(mostBlocks) a table may hold"))
        }
        guard object["from"] != nil || object["runs"] != nil else {
            return .success(BlockTable(blockSize: blockSize, digests: Array(decoded)))
        }
        return parseSources(object, blockCount: count).flatMap { placed in
            let table = BlockTable(blockSize: blockSize, digests: Array(decoded), sources: placed.sources, runs: placed.runs,
                                   everyDigestSHA256: everySHA256)
            guard everySHA256 != nil else { return .success(table) }
            // Stored as changes: a digest for each block of its own archive, no more.
            let own = table.ownSource.map { own in placed.runs.reduce(0) { $0 + ($1.source == own ? $1.count : 0) } } ?? 0
            guard decoded.count == own * digestLength else {
                return .failure(Refusal("'blocks' holds \(decoded.count / digestLength) digests, where its own archive "
                                        + "holds \(own) of its blocks"))
            }
            return .success(table)
        }
    }

    /// The `from` and `runs` of a table of `blockCount` blocks: every block held by one of
    /// the sources, and every source holding some.
    private static func parseSources(_ object: JSONObject, blockCount: Int) -> Result<(sources: [Source], runs: [Run]), Refusal> {
        guard let listed = object["from"]?.arrayValue, !listed.isEmpty, listed.count <= blockCount else {
            return .failure(Refusal("'blocks' must list in 'from' the archives that hold its blocks, at most one a block"))
        }
        var sources: [Source] = []
        for value in listed {
            guard case .object(let source) = value else { return .failure(Refusal("each of 'from' must be a JSON object")) }
            var holder: BackupID?
            if let text = source["in"] {
                guard let id = text.stringValue.flatMap(BackupID.init) else {
                    return .failure(Refusal("'in' of 'from' must be a backup id"))
                }
                holder = id
            }
            guard source["whole"] == nil || source["whole"]?.boolValue != nil else {
                return .failure(Refusal("'whole' of 'from' must be true or false"))
            }
            let offset = source["at"]?.int64Value, length = source["len"]?.int64Value
            guard (source["at"] == nil) == (source["len"] == nil), source["at"] == nil || (offset ?? -1) >= 0 && (length ?? -1) >= 0,
                  (offset ?? 0) <= Int64.max - (length ?? 0) else {
                return .failure(Refusal("'at' and 'len' of 'from' must come together, as whole numbers ≥ 0"))
            }
            let whole = source["whole"]?.boolValue ?? false
            guard holder != nil || !whole else {
                return .failure(Refusal("a file whole in its own backup's archive is not stored by blocks: no 'from' says so"))
            }
            sources.append(Source(holder: holder, whole: whole, archiveOffset: offset, archiveLength: length))
        }
        guard let numbers = object["runs"]?.arrayValue, numbers.count % 2 == 0 else {
            return .failure(Refusal("'blocks' must give 'runs', pairs of a count and an index in 'from'"))
        }
        var runs: [Run] = []
        var covered = 0
        var used = Set<Int>()
        for pair in stride(from: 0, to: numbers.count, by: 2) {
            guard let count = numbers[pair].int64Value.flatMap({ Int(exactly: $0) }), count > 0, count <= blockCount - covered,
                  let source = numbers[pair + 1].int64Value.flatMap({ Int(exactly: $0) }), sources.indices.contains(source) else {
                return .failure(Refusal("'runs' must be pairs of a count ≥ 1 and an index in 'from', "
                                        + "covering the \(blockCount) blocks once"))
            }
            covered += count
            used.insert(source)
            runs.append(Run(count: count, source: source))
        }
        guard covered == blockCount else {
            return .failure(Refusal("'runs' cover \(covered) blocks, where the file has \(blockCount)"))
        }
        guard used.count == sources.count else { return .failure(Refusal("an archive of 'from' holds none of the blocks")) }
        return .success((sources, runs))
    }

    /// Why a `blocks` object was refused.
    public struct Refusal: Error, Equatable {
        public let reason: String
        init(_ reason: String) { self.reason = reason }
    }
}
