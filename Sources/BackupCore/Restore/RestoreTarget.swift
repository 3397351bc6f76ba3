import Foundation
import KeepsakeSupport
import Synchronization

/// The folder a restore writes into, reached only through directory descriptors: every
/// component is opened with `O_NOFOLLOW`, so nothing is ever written through a symlink,
/// whether the archive planted it or it was there before.
final class RestoreTarget {
    // MARK: Errors

    /// A path that cannot be written safely.
    typealias Refusal = ArchivePath.Refusal

    /// A folder on the way that the target would not let this restore make or open (no
    /// permission, a read-only or full file system): the target's problem, not the archive's.
    struct Unwritable: Error, CustomStringConvertible {
        /// The errno of the failed call.
        let code: Int32
        var description: String { RestoreTarget.notWritten(code) }
    }

    // MARK: State

    /// The target folder's path, for messages.
    let path: String
    /// Descriptor of the target folder.
    let rootFD: Int32
    /// Open descriptors of the folders on the way to the directory asked for last:
    /// `chain[i]` is the folder of components `0...i`. Entries mostly share a parent or a
    /// prefix with the one before, so only the components that differ are opened.
    private var chain: [(name: [UInt8], fd: Int32)] = []
    /// The folder at the end of a path deeper than the chain keeps (closed on the next call).
    private var deepFD: Int32?
    /// Deeper folders are opened each time rather than kept open (a hostile archive's
    /// thousand-level paths must not use up the process's descriptors).
    static let maximumChainDepth = 64
    /// The folders the last `directory(_:create:)` call made, by depth (1 is the folder of
    /// the first component): a restore may have to take them back with the entry they were
    /// made for.
    private(set) var madeByLastCall: [Int] = []

    // MARK: Life cycle

    /// Opens (creating when missing) the target folder, given as bytes: its path need not
    /// be UTF-8.
    init(path bytes: [UInt8]) throws {
        path = PathBytes.display(bytes)
        var info = stat()
        if PathBytes.syscall(bytes, { stat($0, &info) }) != 0 {
            let code = RestoreTarget.makeDirectories(bytes)
            if code != 0 {
                throw EngineError.targetUnusable(path: path, reason: "it cannot be created (\(FileDescriptorIO.message(code))); "
                    + RestoreTarget.advice(code))
            }
        }
        let fd = PathBytes.syscall(bytes) { open($0, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard fd >= 0 else { throw EngineError.targetUnusable(path: path, reason: FileDescriptorIO.message(errno)) }
        let empty = RestoreTarget.isEmptyDirectory(fd)
        // A real attempt, not access(2): root passes every mode check, and only a write
        // shows a read-only mount or a full disk.
        let code = RestoreTarget.probeWrite(fd)
        if code != 0 {
            close(fd)
            throw EngineError.targetUnusable(path: path, reason: RestoreTarget.unwritableReason(code))
        }
        rootFD = fd
        startedEmpty = empty
    }

    /// Opens an existing target folder only to look at what is in it (a dry run): nothing
    /// is made or written; nil when there is no folder there.
    init?(existing bytes: [UInt8]) {
        path = PathBytes.display(bytes)
        let fd = PathBytes.syscall(bytes) { open($0, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard fd >= 0 else { return nil }
        rootFD = fd
        startedEmpty = RestoreTarget.isEmptyDirectory(fd)
    }

    /// Creates and removes an empty file in folder `fd`: 0, or the errno that refused it.
    private static func probeWrite(_ fd: Int32) -> Int32 {
        let name = temporaryName()
        let probe = PathBytes.syscall(name) { openat(fd, $0, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600) }
        guard probe >= 0 else { return errno }
        close(probe)
        remove(name, in: fd)
        return 0
    }

    /// Why a target that refused a write cannot be restored into, and what to do.
    static func unwritableReason(_ code: Int32) -> String {
        switch code {
        case EROFS: return "it is on a read-only file system; " + advice(code)
        case EACCES, EPERM: return "you may not write to it (\(FileDescriptorIO.message(code))); " + advice(code)
        case ENOSPC, EDQUOT: return "there is no space left in it (\(FileDescriptorIO.message(code))); " + advice(code)
        default: return "it cannot be written (\(FileDescriptorIO.message(code))); " + advice(code)
        }
    }

    /// What to do about a target that refused a write with `code`.
    static func advice(_ code: Int32) -> String {
        switch code {
        case EROFS: return "remount it read-write, or restore somewhere else with '--target DIR'"
        case EACCES, EPERM: return "restore into a folder you can write with '--target DIR', or fix its permissions"
        case ENOSPC, EDQUOT: return "free some space, or restore somewhere else with '--target DIR'"
        default: return "restore somewhere else with '--target DIR'"
        }
    }

    /// The reason given for a path the target refused with `code`.
    static func notWritten(_ code: Int32) -> String {
        "could not be written (\(FileDescriptorIO.message(code)))"
    }

    /// Whether a failure to create something in the target stops the restore (nothing
    /// more can be written: the disk is full) rather than skipping one path. A read-only
    /// target is refused before the restore begins; met later (a read-only mount inside the
    /// target), it refuses only the paths below it.
    static func stopsRestore(_ code: Int32) -> Bool {
        code == ENOSPC || code == EDQUOT
    }

    /// The error that stops a restore into `target` (see `stopsRestore`), met while writing `path`.
    static func stoppingError(_ target: String, _ code: Int32, path: [UInt8]) -> EngineError {
        .targetUnusable(path: target,
                        reason: "\(FileDescriptorIO.message(code)) while writing \(PathBytes.display(path)); the unfinished file was removed; "
                            + advice(code))
    }

    /// `mkdir -p` on bytes; 0, or the errno of the folder that could not be made.
    private static func makeDirectories(_ path: [UInt8]) -> Int32 {
        var prefix: [UInt8] = path.first == UInt8(ascii: "/") ? [UInt8(ascii: "/")] : []
        for component in PathBytes.components(path) {
            prefix = PathBytes.join(prefix, component)
            if PathBytes.syscall(prefix, { mkdir($0, 0o777) }) != 0 && errno != EEXIST { return errno }
        }
        return 0
    }

    deinit {
        releaseChain(keeping: 0)
        close(rootFD)
    }

    /// Whether the folder had nothing in it when the restore began: then nothing in it can
    /// be in the way of a file but what this restore put there.
    let startedEmpty: Bool

    private static func isEmptyDirectory(_ fd: Int32) -> Bool {
        let copy = dup(fd)
        guard copy >= 0, let stream = fdopendir(copy) else {
            if copy >= 0 { close(copy) }
            return false
        }
        defer { closedir(stream) }
        while let entry = readdir(stream) {
            let name = PathBytes.name(of: entry)
            if name != [46] && name != [46, 46] { return false }
        }
        return true
    }

    // MARK: Paths

    /// An open descriptor of the directory `components` (relative to the target), made
    /// on the way when `create` is set. The descriptor belongs to the target: do not close.
    func directory(_ components: ArraySlice<[UInt8]>, create: Bool) throws -> Int32 {
        madeByLastCall = []
        if components.isEmpty { return rootFD }
        var common = 0
        for component in components {
            guard common < chain.count, chain[common].name == component else { break }
            common += 1
        }
        releaseChain(keeping: common)
        var fd = chain.last?.fd ?? rootFD
        for (depth, component) in zip((common + 1)..., components.dropFirst(common)) {
            let (next, made) = try RestoreTarget.openComponent(component, in: fd, create: create)
            if made { madeByLastCall.append(depth) }
            if chain.count < RestoreTarget.maximumChainDepth {
                chain.append((component, next))
            } else {
                if let deepFD { close(deepFD) }
                deepFD = next
            }
            fd = next
        }
        return fd
    }

    /// Closes the chain's folders beyond the first `count` (and any deeper one).
    private func releaseChain(keeping count: Int) {
        if let deepFD { close(deepFD) }
        deepFD = nil
        while chain.count > count { close(chain.removeLast().fd) }
    }

    /// Like `directory`, but from any folder `rootFD` (which stays open), and the caller owns
    /// (and closes) the descriptor: for a second folder needed at the same time (a hard
    /// link's target). Touches no target state, so any thread may call it.
    static func openDirectory(_ components: ArraySlice<[UInt8]>, in rootFD: Int32, create: Bool) throws -> Int32 {
        var fd = rootFD
        for component in components {
            let next: Int32
            do {
                next = try openComponent(component, in: fd, create: create).fd
            } catch {
                if fd != rootFD { close(fd) }
                throw error
            }
            if fd != rootFD { close(fd) }
            fd = next
        }
        return fd == rootFD ? dup(rootFD) : fd
    }

    /// Opens folder `component` inside `parent` without following a symlink, making it
    /// first when `create` is set and it is missing (`made` says whether this call made it).
    private static func openComponent(_ component: [UInt8], in parent: Int32,
                                      create: Bool) throws -> (fd: Int32, made: Bool) {
        var next = PathBytes.syscall(component) { openat(parent, $0, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
        var made = false
        if next < 0 && errno == ENOENT && create {
            made = PathBytes.syscall(component, { mkdirat(parent, $0, 0o755) }) == 0
            if !made && errno != EEXIST {
                // The target refused (no permission, read-only, full): nothing unsafe about the entry.
                throw Unwritable(code: errno)
            }
            next = PathBytes.syscall(component) { openat(parent, $0, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
        }
        guard next >= 0 else {
            let code = errno
            if code == ELOOP || code == ENOTDIR {
                throw Refusal(reason: "'\(PathBytes.display(component))' on the way is a symlink or not a folder; refusing to write through it")
            }
            throw Unwritable(code: code)
        }
        return (next, made)
    }

    // MARK: Names

    /// A fresh hidden name for writing before the final rename.
    static func temporaryName() -> [UInt8] {
        // A random part drawn once per process and a counter: no system call per file, and
        // O_EXCL still refuses a name that exists.
        let number = temporaryCounter.add(1, ordering: .relaxed).newValue
        return Array(".keepsake-\(temporaryPrefix)-\(String(number, radix: 16))".utf8)
    }

    private static let temporaryPrefix = String(UInt64.random(in: 0...UInt64.max), radix: 16)
    private static let temporaryCounter = Atomic<UInt64>(0)

    /// `lstat` of a name in a directory, or nil.
    static func existing(_ name: [UInt8], in directoryFD: Int32) -> stat? {
        var info = stat()
        return PathBytes.syscall(name, { fstatat(directoryFD, $0, &info, AT_SYMLINK_NOFOLLOW) }) == 0 ? info : nil
    }

    /// The target of symlink `name` in a directory, or nil when it is not one.
    static func linkTarget(_ name: [UInt8], in directoryFD: Int32) -> [UInt8]? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = PathBytes.syscall(name) { link in
            buffer.withUnsafeMutableBufferPointer { raw -> Int in
                guard let base = raw.baseAddress else { return -1 }
                return readlinkat(directoryFD, link, base, raw.count)
            }
        }
        guard count >= 0, count < buffer.count else { return nil }
        return buffer[0..<count].map { UInt8(bitPattern: $0) }
    }

    /// Renames within one directory, replacing what is there.
    static func rename(_ from: [UInt8], to: [UInt8], in directoryFD: Int32) -> Int32 {
        PathBytes.syscall(from) { source in
            PathBytes.syscall(to) { renameat(directoryFD, source, directoryFD, $0) }
        } == 0 ? 0 : errno
    }

    /// Removes a name (not a directory) from a directory.
    static func remove(_ name: [UInt8], in directoryFD: Int32) {
        _ = PathBytes.syscall(name) { unlinkat(directoryFD, $0, 0) }
    }
}
