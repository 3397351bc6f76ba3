import Foundation
import KeepsakeHashing
import KeepsakeModel
import KeepsakeScan
import KeepsakeSupport

/// Tells whether a scanned file is the one the parent backup already holds, so that an
/// incremental backup points at it instead of storing it again. Asked in scan order, as
/// the parent's manifest is read in step with the scan (see `ParentCursor`).
final class ChangeDetector {
    // MARK: State

    /// The parent backup; nil for a full backup, where every file is new.
    private let parent: ParentCursor?
    /// Every digest of a last version whose table is stored as changes.
    private let basis: BlockBasis?
    private let chain: ChainPolicy
    private let cancellation: CancellationFlag
    /// For `--reread` only: the buffer a file's content is hashed from.
    private let buffer: UnsafeMutableRawBufferPointer?
    private static let bufferSize = 1 << 20

    // MARK: Life cycle

    /// A detector comparing with `parent` as `chain` asks (`basis` gathering the digests of
    /// its tables stored as changes), stopping a `--reread` hash once `cancellation` is set.
    init(parent: ParentCursor?, basis: BlockBasis?, chain: ChainPolicy, cancellation: CancellationFlag) {
        self.parent = parent
        self.basis = basis
        self.chain = chain
        self.cancellation = cancellation
        buffer = parent != nil && chain.reread
            ? UnsafeMutableRawBufferPointer.allocate(byteCount: ChangeDetector.bufferSize, alignment: 4096) : nil
    }

    deinit { buffer?.deallocate() }

    // MARK: Comparing

    /// What the parent holds of a scanned file.
    enum Comparison {
        /// The file has not changed: the parent's entry, with `storedIn` naming the archive
        /// that holds the content (or, for a file stored by blocks, its table naming every
        /// archive that holds some).
        case unchanged(ManifestEntry)
        /// It changed (or is new); with `--blocks`, the last version's blocks as this backup
        /// sees them, when the file can be stored by its changed blocks.
        case changed(basis: BlockTable?)
    }

    /// Compares the scanned file with the parent's entry for it: unchanged when it has the
    /// same size, mtime, ctime, inode and device, as the chain policy asks (with `reread`,
    /// the same content).
    func compare(_ item: ScannedItem) throws -> Comparison {
        guard let parent, let previous = parent.entry(for: item.archivePath), previous.sha256 != nil else {
            return .changed(basis: nil)
        }
        let info = item.info
        // A file stored by blocks that now has other names is stored whole again: a hard link
        // in the archive cannot point into a block entry.
        let storedByBlocks = previous.blocks?.isStoredByBlocks == true
        if previous.size == Int64(info.st_size), !(storedByBlocks && info.st_nlink > 1), try isSame(item, as: previous) {
            var reference = previous
            if let blocks = previous.blocks, storedByBlocks {
                reference.blocks = blocks.seen(after: parent.id)
            } else {
                reference.storedIn = previous.storedIn ?? parent.id
                reference.blocks = nil
            }
            return .unchanged(reference)
        }
        return .changed(basis: try basis(for: item, previous: previous, parent: parent.id))
    }

    private func isSame(_ item: ScannedItem, as previous: ManifestEntry) throws -> Bool {
        let info = item.info
        if chain.reread {
            guard let digest = try contentHash(item) else { return false }
            return digest == previous.sha256
        }
        let mtime = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        let ctime = Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec)
        return previous.mtimeNanoseconds == mtime
            && (chain.ignoreCtime || previous.ctimeNanoseconds == ctime)
            && (chain.ignoreInode || (previous.inode == UInt64(info.st_ino) && previous.device == UInt64(info.st_dev)))
    }

    /// The last version's blocks, every source named and every digest held, when `--blocks`
    /// stores the changed file by its changed blocks: a big file of one name only (a hard
    /// link cannot point into a block entry), whose last version has a table of the block
    /// size it has now, with every digest (gathered by `basis` for a table stored as changes:
    /// without them all, the file is stored whole).
    private func basis(for item: ScannedItem, previous: ManifestEntry, parent: BackupID) throws -> BlockTable? {
        let size = Int64(item.info.st_size)
        guard chain.storesBlocks, item.type == .file, item.info.st_nlink == 1, size >= BlockTable.threshold,
              let written = previous.blocks, written.blockSize == BlockTable.blockSize(forFileSize: size),
              let blocks = written.holdsEveryDigest ? written : try basis?.everyDigest(of: written, path: previous.path)
        else { return nil }
        if blocks.isStoredByBlocks { return blocks.seen(after: parent) }
        // Whole in one archive: the parent's own, or the one it names.
        let whole = BlockTable.Source(holder: previous.storedIn ?? parent, whole: true, archiveOffset: previous.archiveOffset,
                                      archiveLength: previous.archiveLength)
        return BlockTable(blockSize: blocks.blockSize, digests: blocks.digests, sources: [whole],
                          runs: [BlockTable.Run(count: blocks.count, source: 0)])
    }

    /// Reads a whole file to hash it (for `--reread`); nil when it cannot be read.
    private func contentHash(_ item: ScannedItem) throws -> String? {
        guard let buffer else { return nil }
        let fd = PathBytes.syscall(item.name) { openat(item.parentFD, $0, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) }
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        let hasher = SHA256Hasher()
        while true {
            try cancellation.check()
            let count = FileDescriptorIO.read(fd, buffer)
            if count < 0 { return nil }
            if count == 0 { return hasher.finalizeHex() }
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        }
    }
}
