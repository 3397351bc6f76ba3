import CPosix
import Foundation
import KeepsakeArchive
import KeepsakeModel
import KeepsakeSupport

/// Applies an entry's recorded owner, mode, extended attributes and time to what a restore
/// made, always through a descriptor: a name in the target can be swapped for a symlink by
/// anyone who may write there, and a call by name would then change the symlink's target
/// (root restoring into such a folder once made a root-owned 0600 file 0777). Problems are
/// collected as warnings: metadata that cannot be set never stops a restore. Used from the
/// restoring thread and from the file writer's.
enum RestoredMetadata {
    // MARK: Policy

    /// The permission bits an entry gets: setuid and setgid only with `--same-owner` as
    /// root; for other users the umask is applied unless `--same-permissions` (as GNU tar).
    static func permissions(_ recorded: UInt32, request: RestoreRequest) -> UInt32 {
        var mode = recorded & 0o7777
        if !request.restoreSpecialFiles { mode &= 0o1777 }
        if !request.samePermissions { mode &= ~request.umask & 0o7777 }
        return mode
    }

    /// Whether an extended attribute may be restored: `user.*` always; `security.*`
    /// (file capabilities), `trusted.*`, `system.*` and anything else only for root with
    /// `--same-owner`, like setuid bits: a restored `security.capability` hands a program
    /// privileges its owner never had.
    static func mayRestoreAttribute(_ name: String, request: RestoreRequest) -> Bool {
        request.restoreSpecialFiles || name.hasPrefix("user.")
    }

    // MARK: Open files and folders

    /// What a file this restore has just made, unnamed, already has: a call that would set
    /// the same is left out (an fchown and an fchmod per file, in most restores).
    struct Made: Sendable {
        /// Its permission bits, when known (see `UnnamedFiles.modeAtCreation`).
        let mode: UInt32?
        let uid: UInt32
        let gid: UInt32
    }

    /// Applies `header`'s metadata to an open file or folder; with `made`, what it already
    /// has is not set again.
    static func apply(_ header: ArchiveEntryHeader, fd: Int32, request: RestoreRequest, path: [UInt8],
                      warnings: inout [PathWarning], made: Made? = nil) {
        if request.preserveOwnership {
            let (uid, gid) = owner(of: header)
            if made.map({ $0.uid != uid || $0.gid != gid }) ?? true, fchown(fd, uid, gid) != 0 {
                problem(path, "owner", errno, &warnings)
            }
        }
        let mode = permissions(header.permissions, request: request)
        noteDroppedSpecialBits(header.permissions, mode, path: path, &warnings)
        if made?.mode != mode, fchmod(fd, mode_t(mode)) != 0 { problem(path, "permissions", errno, &warnings) }
        var dropped: [String] = []
        for attribute in header.xattrs {
            guard mayRestoreAttribute(attribute.name, request: request) else {
                dropped.append(attribute.name)
                continue
            }
            let status = attribute.value.withUnsafeBytes { ks_fsetxattr(fd, attribute.name, $0.baseAddress, $0.count, 0) }
            if status != 0 { problem(path, "extended attribute \(attribute.name)", errno, &warnings) }
        }
        if !dropped.isEmpty {
            warnings.append(PathWarning(kind: .metadata, path: PathBytes.display(path),
                                        reason: "extended attribute\(dropped.count == 1 ? "" : "s") \(dropped.joined(separator: ", ")) "
                                            + "not restored (only user.* is; restore with --same-owner as root to keep the others)"))
        }
        var times = modificationTime(header.mtimeSeconds, header.mtimeNanoseconds)
        if futimens(fd, &times) != 0 { problem(path, "modification time", errno, &warnings) }
    }

    // MARK: Nodes made by name

    /// Applies `header`'s metadata to the symlink, FIFO or device node this restore just made
    /// as `name` in `parentFD`, through a descriptor of the node itself (a symlink's own
    /// owner and time, never its target's). False when `name` no longer holds a node of
    /// that kind made by this process: it was swapped, and must not be placed.
    static func applyToNode(_ header: ArchiveEntryHeader, name: [UInt8], parentFD: Int32, request: RestoreRequest,
                            path: [UInt8], warnings: inout [PathWarning]) -> Bool {
        let kind: mode_t
        switch header.type {
        case .symlink: kind = S_IFLNK
        case .fifo: kind = S_IFIFO
        case .characterDevice: kind = S_IFCHR
        case .blockDevice: kind = S_IFBLK
        default: return false
        }
        guard let (fd, info) = openMade(name, in: parentFD, kind: kind, identity: nil) else { return false }
        defer { close(fd) }
        if request.preserveOwnership {
            let (uid, gid) = owner(of: header)
            // A node just made is often already the recorded owner's (root's, restored by root).
            if info.st_uid != uid || info.st_gid != gid, fchownat(fd, "", uid, gid, KS_AT_EMPTY_PATH) != 0 {
                problem(path, "owner", errno, &warnings)
            }
        }
        if header.type != .symlink {
            let mode = permissions(header.permissions, request: request)
            noteDroppedSpecialBits(header.permissions, mode, path: path, &warnings)
            if changeMode(fd, mode) != 0 { problem(path, "permissions", errno, &warnings) }
        }
        var times = modificationTime(header.mtimeSeconds, header.mtimeNanoseconds)
        if utimensat(fd, "", &times, KS_AT_EMPTY_PATH) != 0 { problem(path, "modification time", errno, &warnings) }
        return true
    }

    // MARK: Waiting files

    /// Which file a descriptor was open on: a waiting file is found again by it, never by
    /// its name alone.
    struct Identity: Sendable, Equatable {
        let device: UInt64
        let inode: UInt64

        /// The identity of the file open as `fd`; nil when it cannot be read.
        init?(fd: Int32) {
            var info = stat()
            guard fstat(fd, &info) == 0 else { return nil }
            self.init(info)
        }

        init(_ info: stat) {
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
        }
    }

    /// Applies a manifest entry's mode and modification time to the waiting file `name`,
    /// which must still be the file written as `identity`. False when it is not (it was
    /// swapped, or removed): it must not be placed.
    static func applyRecordedModeAndTime(_ entry: ManifestEntry, name: [UInt8], parentFD: Int32, identity: Identity,
                                         request: RestoreRequest) -> Bool {
        guard let (fd, _) = openMade(name, in: parentFD, kind: S_IFREG, identity: identity) else { return false }
        defer { close(fd) }
        let (seconds, nanoseconds) = entry.mtimeParts
        var times = modificationTime(seconds, nanoseconds)
        _ = changeMode(fd, permissions(entry.mode, request: request))
        _ = utimensat(fd, "", &times, KS_AT_EMPTY_PATH)
        return true
    }

    // MARK: Descriptors

    /// An `O_PATH` descriptor of `name` in `parentFD` (never following a symlink) and its
    /// `fstat`, when it is of `kind` and is the file written as `identity`, or, without one,
    /// is owned by this process's user and has one link only (not a hard link to someone
    /// else's file). Nil otherwise.
    static func openMade(_ name: [UInt8], in parentFD: Int32, kind: mode_t, identity: Identity?) -> (Int32, stat)? {
        let fd = PathBytes.syscall(name) { openat(parentFD, $0, KS_O_PATH | O_NOFOLLOW | O_CLOEXEC) }
        guard fd >= 0 else { return nil }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == kind,
              identity.map({ $0 == Identity(info) }) ?? (info.st_uid == effectiveUser && info.st_nlink == 1) else {
            close(fd)
            return nil
        }
        return (fd, info)
    }

    /// This process's user, asked once: it does not change during a run.
    private static let effectiveUser = geteuid()

    /// `fchmod` for an `O_PATH` descriptor (which `fchmod` refuses): through its
    /// `/proc/self/fd` entry, which names the open file itself, not a path.
    private static func changeMode(_ fd: Int32, _ mode: UInt32) -> Int32 {
        fchmodat(AT_FDCWD, "/proc/self/fd/\(fd)", mode_t(mode), 0)
    }

    // MARK: Helpers

    /// Access time now, modification time as recorded.
    private static func modificationTime(_ seconds: Int64, _ nanoseconds: Int32) -> [timespec] {
        [timespec(tv_sec: 0, tv_nsec: KS_UTIME_NOW), timespec(tv_sec: time_t(seconds), tv_nsec: Int(nanoseconds))]
    }

    /// The owner to give: by name when this system knows the name, else by the recorded id.
    private static func owner(of header: ArchiveEntryHeader) -> (uid: UInt32, gid: UInt32) {
        (header.userName.flatMap(UserNames.shared.userID(named:)) ?? header.uid,
         header.groupName.flatMap(UserNames.shared.groupID(named:)) ?? header.gid)
    }

    private static func noteDroppedSpecialBits(_ recorded: UInt32, _ given: UInt32, path: [UInt8],
                                               _ warnings: inout [PathWarning]) {
        guard recorded & 0o6000 & ~given != 0 else { return }
        warnings.append(PathWarning(kind: .metadata, path: PathBytes.display(path),
                                    reason: "setuid/setgid bits dropped (restore with --same-owner as root to keep them)"))
    }

    private static func problem(_ path: [UInt8], _ what: String, _ code: Int32, _ warnings: inout [PathWarning]) {
        warnings.append(PathWarning(kind: .metadata, path: PathBytes.display(path),
                                    reason: "cannot set \(what): \(FileDescriptorIO.message(code))"))
    }
}
