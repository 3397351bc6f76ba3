import CPosix
import Foundation
import KeepsakeSupport

/// Files made without a name (`O_TMPFILE`) in their folder and named with `linkat` once
/// written and checked: how a restore writes into a target that started empty. Nothing
/// there needs protecting from a temporary name's rename, which costs a second directory
/// operation per file; and a file with no name yet vanishes with its descriptor, so a
/// restore stopped at any moment (even by kill -9) leaves nothing half-written under a final
/// name, nor a temporary to clean up.
///
/// Found by a probe in the target before the restore: `probe` is nil where the file system
/// or the kernel refuses unnamed files, or where they cannot be named, and the restore then
/// writes under temporary names as in any other target.
struct UnnamedFiles: Sendable {
    // MARK: Types

    /// How a finished file is given its name.
    private enum Naming: Sendable {
        /// `linkat(fd, "", …, AT_EMPTY_PATH)`: no path to walk (Linux 6.10 allows it to the
        /// file's opener; before, root only).
        case emptyPath
        /// `linkat` of `/proc/self/fd/N`, following that link: any user, any kernel with /proc.
        case procPath
    }

    // MARK: State

    private let naming: Naming
    /// Whose a new file in the target is (its folders are all made by this restore, so they
    /// give their files the same group as the target does).
    let owner: (uid: UInt32, gid: UInt32)
    /// The permission bits a file loses when it is made (the umask); nil when the target has
    /// a default ACL, which decides them instead.
    private let creationMask: UInt32?

    // MARK: Probing

    /// Whether unnamed files can be made and named in the folder `rootFD`, and with which
    /// owner and mode they come out; nil when they cannot (the caller uses temporary names).
    static func probe(in rootFD: Int32) -> UnnamedFiles? {
        let fd = openat(rootFD, ".", KS_O_TMPFILE | O_WRONLY | O_CLOEXEC, 0o777)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, fchmod(fd, 0o600) == 0 else { return nil }
        // Named once, under a temporary name, to learn which `linkat` this kernel allows.
        let name = RestoreTarget.temporaryName()
        let naming: Naming
        if link(fd, as: name, in: rootFD, .emptyPath) == 0 {
            naming = .emptyPath
        } else if link(fd, as: name, in: rootFD, .procPath) == 0 {
            naming = .procPath
        } else {
            return nil
        }
        RestoreTarget.remove(name, in: rootFD)
        // A default ACL gives new files its own modes, whatever the umask.
        let hasDefaultACL = ks_fgetxattr(rootFD, "system.posix_acl_default", nil, 0) >= 0
        return UnnamedFiles(naming: naming, owner: (info.st_uid, info.st_gid),
                            creationMask: hasDefaultACL ? nil : ~UInt32(info.st_mode) & 0o777)
    }

    // MARK: Files

    /// Makes an unnamed file open for writing in `directoryFD`, asking for `mode`; its
    /// descriptor, or -1 with errno set.
    func create(in directoryFD: Int32, mode: UInt32) -> Int32 {
        openat(directoryFD, ".", KS_O_TMPFILE | O_WRONLY | O_CLOEXEC, mode_t(mode & 0o777))
    }

    /// Whether the errno of a failed `create` says this folder takes no unnamed files (then
    /// a temporary name does), rather than that the target refused the file.
    static func refusesUnnamedFiles(_ code: Int32) -> Bool {
        code == EOPNOTSUPP || code == EISDIR || code == EINVAL
    }

    /// The mode a file made with `create(in:mode:)` has before any `fchmod`, when it is
    /// known; nil when it must be set (a default ACL, or bits beyond the permissions).
    func modeAtCreation(_ mode: UInt32) -> UInt32? {
        guard let creationMask, mode & ~0o777 == 0 else { return nil }
        return mode & ~creationMask
    }

    /// Gives the unnamed file open as `fd` the name `name` in `directoryFD`; 0, or the errno
    /// (EEXIST when the name is taken: the caller places the file over it another way).
    func name(_ fd: Int32, as name: [UInt8], in directoryFD: Int32) -> Int32 {
        UnnamedFiles.link(fd, as: name, in: directoryFD, naming)
    }

    private static func link(_ fd: Int32, as name: [UInt8], in directoryFD: Int32, _ naming: Naming) -> Int32 {
        let status = PathBytes.syscall(name) { target in
            switch naming {
            case .emptyPath: return linkat(fd, "", directoryFD, target, KS_AT_EMPTY_PATH)
            case .procPath: return linkat(AT_FDCWD, "/proc/self/fd/\(fd)", directoryFD, target, AT_SYMLINK_FOLLOW)
            }
        }
        return status == 0 ? 0 : errno
    }
}
