import Foundation
import KeepsakeArchive
import KeepsakeModel
import KeepsakeSupport

/// Compares an entry already in the target, which the overwrite policy keeps, with what the
/// backup holds at that place: the restore names the kept entries that differ, since the
/// target then does not hold what the backup does. Content counts (by SHA-256), and so do a
/// link's target and the kind of node; times and modes do not.
struct ExistingEntryCheck {
    let plan: RestorePlan
    /// Checked while hashing: a kept file can be large.
    let cancellation: CancellationFlag

    /// Whether `existing` (`lstat` of `name` in the folder `parentFD`) is what the backup's
    /// `header` describes. The archive's content is read from `reader` only when the
    /// manifest gives no SHA-256 to compare with; `rootFD` is the target folder, where a
    /// hard link's other name is found.
    func matches(_ header: ArchiveEntryHeader, reader: any EntryContentReader, existing: stat, name: [UInt8], parentFD: Int32,
                 entry: ManifestEntry?, rootFD: Int32) throws -> Bool {
        try compare(header, reader: reader, existing: existing, name: name, parentFD: parentFD, entry: entry, rootFD: rootFD)
            ?? false
    }

    /// `matches` for an entry about to be replaced, whose content the archive reader must
    /// still give to the writer: a file is compared only by the manifest's SHA-256, and nil
    /// says it cannot be (no manifest, as for a plain tarball).
    func matchesBeforeReplacing(_ header: ArchiveEntryHeader, existing: stat, name: [UInt8], parentFD: Int32,
                                entry: ManifestEntry?, rootFD: Int32) throws -> Bool? {
        try compare(header, reader: nil, existing: existing, name: name, parentFD: parentFD, entry: entry, rootFD: rootFD)
    }

    /// The comparison; nil when a file has no SHA-256 in the manifest and `reader` is nil.
    private func compare(_ header: ArchiveEntryHeader, reader: (any EntryContentReader)?, existing: stat, name: [UInt8], parentFD: Int32,
                         entry: ManifestEntry?, rootFD: Int32) throws -> Bool? {
        let kind = existing.st_mode & S_IFMT
        switch header.type {
        case .file:
            return try fileMatches(header, reader: reader, existing: existing, name: name, parentFD: parentFD, entry: entry)
        case .symlink:
            return kind == S_IFLNK && RestoreTarget.linkTarget(name, in: parentFD) == header.linkTarget
        case .hardlink:
            return isLink(existing, to: header.linkTarget.map(plan.linkedPath), rootFD: rootFD)
        case .fifo: return kind == S_IFIFO
        case .characterDevice: return kind == S_IFCHR && UInt64(existing.st_rdev) == UInt64(header.rdev)
        case .blockDevice: return kind == S_IFBLK && UInt64(existing.st_rdev) == UInt64(header.rdev)
        case .directory, .socket: return true
        }
    }

    /// Whether `existing` is the very file (the same inode) found at the archive path
    /// `linkTarget` in the target folder `rootFD`: a hard link already in place.
    func isLink(_ existing: stat, to linkTarget: [UInt8]?, rootFD: Int32) -> Bool {
        guard existing.st_mode & S_IFMT == S_IFREG, let linkTarget,
              case .success(let parts)? = plan.placement(of: linkTarget),
              let folder = try? RestoreTarget.openDirectory(parts.dropLast()[...], in: rootFD, create: false) else { return false }
        defer { close(folder) }
        guard let other = RestoreTarget.existing(parts[parts.count - 1], in: folder) else { return false }
        return other.st_dev == existing.st_dev && other.st_ino == existing.st_ino
    }

    /// Whether the regular file `name` holds the archive's content for `header`: same size,
    /// then the same SHA-256 (the manifest's, or else that of the content read from the
    /// archive). A file that cannot be read counts as different.
    private func fileMatches(_ header: ArchiveEntryHeader, reader: (any EntryContentReader)?, existing: stat, name: [UInt8],
                             parentFD: Int32, entry: ManifestEntry?) throws -> Bool? {
        guard existing.st_mode & S_IFMT == S_IFREG, Int64(existing.st_size) == header.size else { return false }
        // Non-blocking: a FIFO swapped in since the look must not hang the restore.
        let fd = PathBytes.syscall(name) { openat(parentFD, $0, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) }
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, Int64(info.st_size) == header.size else { return false }
        let wanted: String
        if let sha256 = entry?.sha256 {
            wanted = sha256
        } else if let reader {
            wanted = try ManifestCheck.hashContent(of: reader, declaredSize: header.size, cancellation: cancellation).sha256
        } else {
            return nil
        }
        return try ManifestCheck.hashFile(fd, size: header.size, cancellation: cancellation) == wanted
    }
}
