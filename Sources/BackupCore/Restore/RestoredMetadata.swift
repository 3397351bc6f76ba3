import CPosix
import Foundation

/// Applies an entry's recorded owner, mode, extended attributes and time to what a restore
/// made. Problems are collected as warnings: metadata that cannot be set never stops a
/// restore. Used from the restoring thread and from the file writer's.
enum RestoredMetadata {
    // MARK: Open files and folders

    /// Applies `header`'s metadata to an open file or folder.
    static func apply(_ header: ArchiveEntryHeader, fd: Int32, request: RestoreRequest, path: [UInt8],
                      warnings: inout [PathWarning]) {
        if request.preserveOwnership {
            let (uid, gid) = owner(of: header)
            if fchown(fd, uid, gid) != 0 { problem(path, "owner", errno, &warnings) }
        }
        // setuid/setgid only when asked for (as root): a backup must not plant privileged programs.
        let mode = request.restoreSpecialFiles ? header.permissions : header.permissions & 0o1777
        if mode != header.permissions {
            warnings.append(PathWarning(kind: .metadata, path: PathBytes.display(path),
                                        reason: "setuid/setgid bits dropped (restore with --same-owner as root to keep them)"))
        }
        if fchmod(fd, mode_t(mode)) != 0 { problem(path, "permissions", errno, &warnings) }
        for attribute in header.xattrs {
            let status = attribute.value.withUnsafeBytes { ks_fsetxattr(fd, attribute.name, $0.baseAddress, $0.count, 0) }
            if status != 0 { problem(path, "extended attribute \(attribute.name)", errno, &warnings) }
        }
        var times = [timespec(tv_sec: 0, tv_nsec: KS_UTIME_NOW),
                     timespec(tv_sec: time_t(header.mtimeSeconds), tv_nsec: Int(header.mtimeNanoseconds))]
        if futimens(fd, &times) != 0 { problem(path, "modification time", errno, &warnings) }
    }

    // MARK: Names

    /// Applies `header`'s metadata to a symlink, FIFO or device node by name (a symlink's
    /// own time and owner, never its target's).
    static func applyToLink(_ header: ArchiveEntryHeader, name: [UInt8], parentFD: Int32, request: RestoreRequest,
                            path: [UInt8], warnings: inout [PathWarning]) {
        PathBytes.withCString(name) { cName in
            if request.preserveOwnership {
                let (uid, gid) = owner(of: header)
                if fchownat(parentFD, cName, uid, gid, AT_SYMLINK_NOFOLLOW) != 0 { problem(path, "owner", errno, &warnings) }
            }
            if header.type != .symlink, fchmodat(parentFD, cName, mode_t(header.permissions & 0o1777), 0) != 0 {
                problem(path, "permissions", errno, &warnings)
            }
            var times = [timespec(tv_sec: 0, tv_nsec: KS_UTIME_NOW),
                         timespec(tv_sec: time_t(header.mtimeSeconds), tv_nsec: Int(header.mtimeNanoseconds))]
            if utimensat(parentFD, cName, &times, AT_SYMLINK_NOFOLLOW) != 0 {
                problem(path, "modification time", errno, &warnings)
            }
        }
    }

    /// Applies a manifest entry's mode and modification time to a file by name.
    static func applyRecordedModeAndTime(_ entry: ManifestEntry, name: [UInt8], parentFD: Int32, keepSpecialBits: Bool) {
        let (seconds, nanoseconds) = entry.mtimeParts
        var times = [timespec(tv_sec: 0, tv_nsec: KS_UTIME_NOW), timespec(tv_sec: time_t(seconds), tv_nsec: Int(nanoseconds))]
        PathBytes.withCString(name) { cName in
            _ = fchmodat(parentFD, cName, mode_t(keepSpecialBits ? entry.mode : entry.mode & 0o1777), 0)
            _ = utimensat(parentFD, cName, &times, AT_SYMLINK_NOFOLLOW)
        }
    }

    // MARK: Helpers

    /// The owner to give: by name when this system knows the name, else by the recorded id.
    private static func owner(of header: ArchiveEntryHeader) -> (uid: UInt32, gid: UInt32) {
        (header.userName.flatMap(UserNames.shared.userID(named:)) ?? header.uid,
         header.groupName.flatMap(UserNames.shared.groupID(named:)) ?? header.gid)
    }


    private static func problem(_ path: [UInt8], _ what: String, _ code: Int32, _ warnings: inout [PathWarning]) {
        warnings.append(PathWarning(kind: .metadata, path: PathBytes.display(path),
                                    reason: "cannot set \(what): \(FileDescriptorIO.message(code))"))
    }
}
