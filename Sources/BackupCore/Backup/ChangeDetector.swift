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
    private let chain: ChainPolicy
    private let cancellation: CancellationFlag
    /// For `--reread` only: the buffer a file's content is hashed from.
    private let buffer: UnsafeMutableRawBufferPointer?
    private static let bufferSize = 1 << 20

    // MARK: Life cycle

    /// A detector comparing with `parent` as `chain` asks, stopping a `--reread` hash once
    /// `cancellation` is set.
    init(parent: ParentCursor?, chain: ChainPolicy, cancellation: CancellationFlag) {
        self.parent = parent
        self.chain = chain
        self.cancellation = cancellation
        buffer = parent != nil && chain.reread
            ? UnsafeMutableRawBufferPointer.allocate(byteCount: ChangeDetector.bufferSize, alignment: 4096) : nil
    }

    deinit { buffer?.deallocate() }

    // MARK: Comparing

    /// The parent's entry for this file when the file has not changed since (same size,
    /// mtime, ctime, inode and device, as the chain policy asks; with `reread`, same
    /// content), with `storedIn` naming the archive that holds the content.
    func unchanged(_ item: ScannedItem) throws -> ManifestEntry? {
        guard let parent, let previous = parent.entry(for: item.archivePath), previous.sha256 != nil else { return nil }
        let info = item.info
        guard previous.size == Int64(info.st_size) else { return nil }
        var reference = previous
        reference.storedIn = previous.storedIn ?? parent.id
        if chain.reread {
            guard let digest = try contentHash(item), digest == previous.sha256 else { return nil }
            return reference
        }
        let mtime = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        let ctime = Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec)
        guard previous.mtimeNanoseconds == mtime,
              chain.ignoreCtime || previous.ctimeNanoseconds == ctime,
              chain.ignoreInode || (previous.inode == UInt64(info.st_ino) && previous.device == UInt64(info.st_dev)) else {
            return nil
        }
        return reference
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
