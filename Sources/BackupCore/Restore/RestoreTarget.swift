import Foundation

/// The folder a restore writes into, reached only through directory descriptors: every
/// component is opened with `O_NOFOLLOW`, so nothing is ever written through a symlink,
/// whether the archive planted it or it was there before.
final class RestoreTarget {
    // MARK: Errors

    /// A path that cannot be written safely.
    struct Refusal: Error {
        let reason: String
    }

    // MARK: State

    /// The target folder's path, for messages.
    let path: String
    /// Descriptor of the target folder.
    let rootFD: Int32
    private var cachedParent: (components: [[UInt8]], fd: Int32)?

    // MARK: Life cycle

    /// Opens (creating when missing) the target folder.
    init(path: String) throws {
        self.path = path
        var info = stat()
        if stat(path, &info) != 0 {
            do {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            } catch {
                throw EngineError.targetUnusable(path: path, reason: "it cannot be created (\(error.localizedDescription))")
            }
        }
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw EngineError.targetUnusable(path: path, reason: FileDescriptorIO.message(errno)) }
        rootFD = fd
    }

    deinit {
        if let cachedParent { close(cachedParent.fd) }
        close(rootFD)
    }

    // MARK: Paths

    /// Splits an archive path into safe components, or explains why it is unsafe.
    static func components(of path: [UInt8]) -> Result<[[UInt8]], Refusal> {
        if path.first == UInt8(ascii: "/") { return .failure(Refusal(reason: "absolute path")) }
        let parts = PathBytes.components(path)
        if parts.contains([46, 46]) { return .failure(Refusal(reason: "path contains '..'")) }
        if parts.isEmpty { return .failure(Refusal(reason: "empty path")) }
        return .success(parts)
    }

    /// An open descriptor of the directory `components` (relative to the target), made
    /// on the way when `create` is set. The descriptor belongs to the target: do not close.
    func directory(_ components: ArraySlice<[UInt8]>, create: Bool) throws -> Int32 {
        if components.isEmpty { return rootFD }
        if let cachedParent, cachedParent.components.elementsEqual(components) { return cachedParent.fd }
        let fd = try openDirectory(components, create: create)
        if let cachedParent { close(cachedParent.fd) }
        cachedParent = (Array(components), fd)
        return fd
    }

    /// Like `directory`, but the caller owns (and closes) the descriptor; for a second
    /// directory needed at the same time (a hard link's target).
    func openDirectory(_ components: ArraySlice<[UInt8]>, create: Bool) throws -> Int32 {
        var fd = rootFD
        for component in components {
            var next = PathBytes.withCString(component) { openat(fd, $0, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
            if next < 0 && errno == ENOENT && create {
                if PathBytes.withCString(component, { mkdirat(fd, $0, 0o755) }) != 0 && errno != EEXIST {
                    let reason = FileDescriptorIO.message(errno)
                    if fd != rootFD { close(fd) }
                    throw Refusal(reason: "cannot create a folder (\(reason))")
                }
                next = PathBytes.withCString(component) { openat(fd, $0, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
            }
            let code = errno
            if fd != rootFD { close(fd) }
            guard next >= 0 else {
                if code == ELOOP || code == ENOTDIR {
                    throw Refusal(reason: "'\(PathBytes.display(component))' on the way is a symlink or not a folder; refusing to write through it")
                }
                throw Refusal(reason: FileDescriptorIO.message(code))
            }
            fd = next
        }
        return fd == rootFD ? dup(rootFD) : fd
    }

    // MARK: Names

    /// A fresh hidden name for writing before the final rename.
    static func temporaryName() -> [UInt8] {
        Array((".keepsake-" + String(UInt64.random(in: 0...UInt64.max), radix: 16)).utf8)
    }

    /// `lstat` of a name in a directory, or nil.
    static func existing(_ name: [UInt8], in directoryFD: Int32) -> stat? {
        var info = stat()
        return PathBytes.withCString(name, { fstatat(directoryFD, $0, &info, AT_SYMLINK_NOFOLLOW) }) == 0 ? info : nil
    }

    /// Renames within one directory, replacing what is there.
    static func rename(_ from: [UInt8], to: [UInt8], in directoryFD: Int32) -> Int32 {
        PathBytes.withCString(from) { source in
            PathBytes.withCString(to) { renameat(directoryFD, source, directoryFD, $0) }
        } == 0 ? 0 : errno
    }

    /// Removes a name (not a directory) from a directory.
    static func remove(_ name: [UInt8], in directoryFD: Int32) {
        _ = PathBytes.withCString(name) { unlinkat(directoryFD, $0, 0) }
    }
}
