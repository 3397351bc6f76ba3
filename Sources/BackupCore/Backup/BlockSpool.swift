import Foundation
import KeepsakeArchive
import KeepsakeHashing
import KeepsakeModel

/// Takes the content of a changed big file as it is read (once), cuts it into the blocks of
/// its last version's table, hashes each, and keeps in a spool file the blocks whose digest
/// differs (or that the last version did not have): what the backup then stores of it. The
/// spool is needed because a tar header says which blocks an entry holds before its data.
final class BlockSpool {
    // MARK: Types

    /// What was read: the new version's digests, which blocks changed, and their bytes.
    struct Outcome {
        let table: BlockTable
        /// One flag per block: stored here (it changed), or where the last version has it.
        let changed: [Bool]
        /// The changed blocks' bytes, in order (each `blockSize` long but a short last one).
        let spool: SpoolFile
        /// Bytes in `spool`.
        var storedBytes: Int64 { spool.size }
        /// True when no block of the last version is the same: the file is stored whole.
        var changedWhole: Bool { !changed.contains(false) }
        /// True when more changed than the spool takes (`mostSpooled`): the spool does not
        /// hold them all, and the file is read again and stored whole.
        let overflowed: Bool
    }

    /// The most bytes of changed blocks spooled for a file of `size` bytes when the file
    /// system of the spool (`$TMPDIR`) has `room` bytes free: half the file, and a quarter of
    /// that room. A file more of which changed is read again and stored whole: storing it by
    /// blocks would save less than half, or would fill `$TMPDIR` (a tmpfs, often, taking
    /// memory). A fixed cap stored a 4 GiB disk image whole the night 15% of its blocks
    /// changed (1.2 times restic's night, where the goal is at most half of it).
    static func mostSpooled(forFileSize size: Int64, room: Int64) -> Int64 {
        max(0, min(size / 2, room / 4))
    }

    // MARK: State

    private let basis: BlockTable
    private let blockSize: Int
    private let hasher = SHA256Hasher()
    private let spool: SpoolFile
    /// The block being read (kept once complete, until the next byte: the last block is
    /// stored even when unchanged, so that every read of the file has an entry of its own).
    private var block: [UInt8] = []
    private var blockDone = false
    private var digests: [UInt8] = []
    private var changed: [Bool] = []
    /// See `Outcome.overflowed`.
    private let mostSpooled: Int64
    private var overflowed = false

    // MARK: Life cycle

    /// A spool for a file of `fileSize` bytes whose last version `basis` describes, cut into
    /// its blocks; it overflows past `mostSpooled(forFileSize:room:)`.
    init(basis: BlockTable, fileSize: Int64) throws {
        self.basis = basis
        blockSize = basis.blockSize
        spool = try SpoolFile()
        mostSpooled = BlockSpool.mostSpooled(forFileSize: fileSize, room: spool.room)
        block.reserveCapacity(blockSize)
    }

    // MARK: Reading

    /// Takes the next bytes of the file.
    func add(_ chunk: UnsafeRawBufferPointer) throws {
        var rest = chunk[...]
        while !rest.isEmpty {
            if blockDone {
                block.removeAll(keepingCapacity: true)
                blockDone = false
            }
            let take = min(blockSize - block.count, rest.count)
            block.append(contentsOf: UnsafeRawBufferPointer(rebasing: rest.prefix(take)))
            rest = rest.dropFirst(take)
            if block.count == blockSize { try finishBlock() }
        }
    }

    /// Ends the file: its table and what it stores.
    func finish() throws -> Outcome {
        if !blockDone, !block.isEmpty { try finishBlock() }
        if !changed.contains(true), !changed.isEmpty {
            // Only its metadata changed: its last block is stored, with the header of now.
            try spool.append(block)
            changed[changed.count - 1] = true
        }
        try spool.flush()
        return Outcome(table: BlockTable(blockSize: blockSize, digests: digests), changed: changed, spool: spool,
                       overflowed: overflowed)
    }

    /// The parts of a file of `fileSize` bytes that its `changed` blocks of `blockSize` cover,
    /// neighbours joined: the data regions of its block entry.
    static func regions(of changed: [Bool], blockSize: Int, fileSize: Int64) -> [ArchiveEntryHeader.SparseRegion] {
        var regions: [ArchiveEntryHeader.SparseRegion] = []
        for (index, isChanged) in changed.enumerated() where isChanged {
            let offset = Int64(index) * Int64(blockSize)
            let length = min(Int64(blockSize), fileSize - offset)
            guard length > 0 else { continue }
            if let last = regions.last, last.offset + last.length == offset {
                regions[regions.count - 1].length += length
            } else {
                regions.append(ArchiveEntryHeader.SparseRegion(offset: offset, length: length))
            }
        }
        return regions
    }

    private func finishBlock() throws {
        hasher.update(block)
        let digest = hasher.finalizeDigest().prefix(BlockTable.digestLength)
        let index = changed.count
        let same = index < basis.count && basis.digest(at: index).elementsEqual(digest)
        if !same, !overflowed {
            if spool.size + Int64(block.count) > mostSpooled {
                overflowed = true
            } else {
                try spool.append(block)
            }
        }
        digests.append(contentsOf: digest)
        changed.append(!same)
        blockDone = true
    }
}
