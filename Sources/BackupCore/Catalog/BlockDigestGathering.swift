import KeepsakeHashing
import KeepsakeModel

/// The digest of every block of a file stored by blocks, gathered from the lines of the
/// archives that hold them: each block's digest is where its data are (the line of the
/// backup whose archive holds it, whole or in its block entry; or, that backup gone, the
/// supplement line that holds its blocks). What is gathered must be what the file's own
/// line records: each digest it holds, and, for a table stored as changes (which holds only
/// its own archive's), the SHA-256 of them all (`BlockTable.everyDigestSHA256`).
///
/// Verify checks a chain with it (the blocks a line takes from elsewhere are held there as
/// recorded); it is how a table stored as changes becomes whole again.
struct BlockDigestGathering {
    // MARK: Kinds

    /// What a reader found of a backup that holds blocks of the file.
    enum Holder {
        /// Its manifest's line for the file (nil: it has none).
        case line(ManifestEntry?)
        /// It is gone; the supplement lines that hold blocks of its version of the file.
        case gone([HeldBlocks])
    }

    /// Why the digests could not be gathered, or are not the ones recorded.
    struct Gap: Error, Equatable {
        /// The first block concerned, and the backup that was to hold it (nil: the line's own).
        var block: Int
        var holder: BackupID?
        var reason: String
    }

    // MARK: Gathering

    /// `table` (the file's, as its own line has it) holding every digest, gathered from
    /// `holders` (what a reader found of each backup `table.holders` names), or the gap.
    static func gather(_ table: BlockTable, holders: [BackupID: Holder]) -> Result<BlockTable, Gap> {
        let own = table.heldDigests
        var theirs: [Int: [ArraySlice<UInt8>?]] = [:] // by source: the digests the holder's line holds
        var every: [UInt8] = []
        every.reserveCapacity(table.count * BlockTable.digestLength)
        for (block, number) in table.sourceOfEachBlock.enumerated() {
            let source = table.sources[number]
            guard let holder = source.holder else {
                guard let digest = own[block] else {
                    return .failure(Gap(block: block, holder: nil, reason: "its line holds no digest of block \(block), "
                                        + "which it places in its own archive"))
                }
                every += digest
                continue
            }
            switch holders[holder] {
            case .line(let line)?:
                if theirs[number] == nil { theirs[number] = digests(heldBy: line, as: source, blockSize: table.blockSize) }
                let there = theirs[number] ?? []
                guard block < there.count, let digest = there[block] else {
                    return .failure(Gap(block: block, holder: holder, reason: "backup \(holder) does not hold block \(block) of it as recorded"))
                }
                every += digest
            case .gone(let lines)?:
                guard let digest = supplementLine(holding: block, of: table, recorded: own[block], among: lines)?.digest(of: block) else {
                    return .failure(Gap(block: block, holder: holder, reason: "backup \(holder) is gone and no supplement holds "
                                        + "block \(block) of it as recorded"))
                }
                every += digest
            case nil:
                return .failure(Gap(block: block, holder: holder, reason: "backup \(holder), which holds block \(block) of it, is missing"))
            }
        }
        let sha256 = SHA256Hasher.hex(of: every)
        if let whole = table.holdingEvery(every, sha256: sha256) { return .success(whole) }
        // (A table's runs cover its blocks once, as its reader checks: `every` has them all.)
        let places = table.sourceOfEachBlock
        if table.holdsEveryDigest, every.count == table.count * BlockTable.digestLength, places.count == table.count,
           let wrong = (0..<table.count).first(where: { !table.digest(at: $0).elementsEqual(digest(every, $0)) }) {
            let holder = table.sources[places[wrong]].holder
            return .failure(Gap(block: wrong, holder: holder, reason: "backup \(holder?.rawValue ?? "itself") does not hold block "
                                + "\(wrong) of it as recorded"))
        }
        return .failure(Gap(block: 0, holder: nil, reason: "the blocks its chain holds are not the ones its line records "
                            + "(the SHA-256 of their digests differs)"))
    }

    /// The supplement line, of `lines`, that holds block `block` of `table`: several may
    /// say they do (a planted one among them); the one with the digest `recorded` when the
    /// table holds it, else the first.
    static func supplementLine(holding block: Int, of table: BlockTable, recorded: ArraySlice<UInt8>?,
                               among lines: [HeldBlocks]) -> HeldBlocks? {
        lines.first { line in
            guard line.blockSize == table.blockSize, let digest = line.digest(of: block) else { return false }
            return recorded.map(digest.elementsEqual) ?? true
        }
    }

    /// The digests that `line` (a holder's line for the file) holds of the blocks `source`
    /// says it has, in file order: the file whole with its table (`whole`), or in its block
    /// entry, placed there by its own table. Empty when the line says otherwise.
    static func digests(heldBy line: ManifestEntry?, as source: BlockTable.Source, blockSize: Int) -> [ArraySlice<UInt8>?] {
        guard let line, line.type == .file, line.storedIn == nil, let theirs = line.blocks, theirs.blockSize == blockSize else {
            return []
        }
        if source.whole {
            return theirs.isStoredByBlocks || !theirs.holdsEveryDigest ? [] : theirs.heldDigests
        }
        guard theirs.isStoredByBlocks, let ownThere = theirs.ownSource, !theirs.sources[ownThere].whole else { return [] }
        // Only the blocks its own archive holds: one it takes from elsewhere is not here.
        let places = theirs.sourceOfEachBlock
        return theirs.heldDigests.enumerated().map { places[$0.offset] == ownThere ? $0.element : nil }
    }

    private static func digest(_ every: [UInt8], _ block: Int) -> ArraySlice<UInt8> {
        every[block * BlockTable.digestLength ..< (block + 1) * BlockTable.digestLength]
    }
}
