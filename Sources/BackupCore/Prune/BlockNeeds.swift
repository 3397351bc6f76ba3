import KeepsakeModel
import KeepsakeSupport

/// The blocks of big files that kept backups take from backups gone or going, gathered by
/// prune's plan (`ChainConsolidation`) from the kept manifests, oldest first: by backup and
/// path, each block with its digest, the oldest kept backup that takes any of them (its
/// supplement gets them all), and where that backup's archive has them.
struct BlockNeeds {
    // MARK: Kinds

    /// What kept backups take of one backup's version of one file.
    struct File {
        /// The oldest kept backup that takes blocks of it.
        var owner: BackupCatalog.Item
        var blockSize: Int
        /// The blocks taken, with their digests, and where the last of them ends.
        var digests: [Int: ArraySlice<UInt8>] = [:]
        /// Blocks taken whose digest no kept table holds (tables stored as changes hold only
        /// their own archive's): it is in the line of the backup that holds them (`fillDigests`).
        var undigested = Set<Int>()
        var lastEnd: (block: Int, end: Int64) = (-1, 0)
        /// Where the backup's archive has them, as the first kept table names it.
        var source: BlockTable.Source

        /// The blocks as a supplement holds them (placed when written).
        func held(origin: BackupID, path: [UInt8]) -> HeldBlocks {
            let indices = digests.keys.sorted()
            return HeldBlocks(origin: origin, path: path, blockSize: blockSize, indices: indices,
                              digests: indices.flatMap { digests[$0] ?? [] }, entrySize: lastEnd.end)
        }
    }

    // MARK: State

    private(set) var byFile: [SupplementManifest.HeldFile: File] = [:]
    /// The keys of `byFile` in the order first met.
    private(set) var order: [SupplementManifest.HeldFile] = []

    // MARK: Gathering

    /// Adds the blocks that `entry` (a file stored by blocks, of `table`, in kept backup
    /// `item`) takes from backups not in `kept`. A table that disagrees with an earlier one
    /// on a block size or a digest (damaged or forged) adds nothing for that block: the
    /// first one's stands, and a restore checks the file whole.
    mutating func add(_ entry: ManifestEntry, table: BlockTable, of item: BackupCatalog.Item, keeping kept: Set<BackupID>) {
        let recorded = table.heldDigests
        for (block, number) in table.sourceOfEachBlock.enumerated() {
            let source = table.sources[number]
            guard let holder = source.holder, !kept.contains(holder) else { continue }
            let key = SupplementManifest.HeldFile(origin: holder, path: PathKey(entry.path))
            if byFile[key] == nil {
                byFile[key] = File(owner: item, blockSize: table.blockSize, source: source)
                order.append(key)
            }
            guard byFile[key]?.blockSize == table.blockSize, byFile[key]?.digests[block] == nil else { continue }
            let end = min(Int64(block + 1) * Int64(table.blockSize), max(0, entry.size))
            if let digest = recorded[block] {
                byFile[key]?.digests[block] = digest
                byFile[key]?.undigested.remove(block)
            } else {
                byFile[key]?.undigested.insert(block)
            }
            if block > byFile[key]?.lastEnd.block ?? -1 { byFile[key]?.lastEnd = (block, end) }
        }
    }

    /// Gives the blocks whose digest no kept table holds the digest recorded where they
    /// are: in the line of the backup that holds them, when it is one being removed (read
    /// with `linesOf`, once each), else in the supplement line that holds them (`shelf`).
    /// Throws `ChainConsolidation.DamagedBackup` when a backup being removed does not record
    /// one, or its manifest cannot be read (it is kept); one no supplement records stays
    /// undigested (its file is not moved).
    mutating func fillDigests(going: [BackupID: BackupCatalog.Item], shelf: SupplementShelf,
                              linesOf: (BackupCatalog.Item, Set<PathKey>) throws -> [PathKey: ManifestEntry]) throws {
        var wanting: [BackupID: Set<PathKey>] = [:]
        for key in order where !(byFile[key]?.undigested.isEmpty ?? true) { wanting[key.origin, default: []].insert(key.path) }
        for (origin, paths) in wanting {
            let lines: [PathKey: ManifestEntry]?
            do {
                lines = try going[origin].map { try linesOf($0, paths) }
            } catch let interruption as Interruption {
                throw interruption
            } catch {
                // Its blocks cannot be checked as they are copied: it stays.
                let owner = paths.compactMap { byFile[.init(origin: origin, path: $0)]?.owner.id }.min()
                throw ChainConsolidation.DamagedBackup(backup: origin, neededBy: owner ?? origin,
                                                       reason: "its manifest cannot be read (\(error))")
            }
            for path in paths {
                let key = SupplementManifest.HeldFile(origin: origin, path: path)
                guard var need = byFile[key] else { continue }
                if let lines {
                    let held = BlockDigestGathering.digests(heldBy: lines[path], as: need.source, blockSize: need.blockSize)
                    for block in need.undigested {
                        guard block < held.count, let digest = held[block] else {
                            throw ChainConsolidation.DamagedBackup(backup: origin, neededBy: need.owner.id,
                                reason: "its manifest does not record block \(block) of \(PathBytes.display(path.bytes)) as kept backups take it")
                        }
                        need.digests[block] = digest
                    }
                    need.undigested = []
                } else {
                    let supplements = shelf.blockHolders(origin, path: path.bytes).map(\.blocks)
                    for block in need.undigested {
                        let line = supplements.first { $0.blockSize == need.blockSize && $0.digest(of: block) != nil }
                        if let digest = line?.digest(of: block) {
                            need.digests[block] = digest
                            need.undigested.remove(block)
                        }
                    }
                }
                byFile[key] = need
            }
        }
    }

    /// The part of `line` (blocks a supplement holds) that `needed` still takes, with the
    /// same digests; nil when none.
    static func part(of line: HeldBlocks, needed: [Int: ArraySlice<UInt8>]) -> HeldBlocks? {
        let indices = line.indices.filter { index in needed[index].map { line.holds(index, digest: $0) } ?? false }
        guard let last = indices.last else { return nil }
        return HeldBlocks(origin: line.origin, path: line.path, blockSize: line.blockSize, indices: indices,
                          digests: indices.flatMap { line.digest(of: $0) ?? [] }, entrySize: line.range(of: last).upperBound,
                          archiveOffset: line.archiveOffset, archiveLength: line.archiveLength)
    }
}
