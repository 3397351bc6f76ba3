import CPosix
import Foundation
import KeepsakeJSON
import KeepsakeSupport

/// A destination that is a folder on a local (or mounted) file system.
public final class LocalFolderBackend: WritableStorage {
    // MARK: State

    /// The folder's path.
    public let path: String
    public var location: String { path }
    public var localFolder: String? { path }
    public let memo: ObjectMemo? = ObjectMemo()

    /// A backend for the folder at `path` (not created until `prepare()`).
    public init(path: String) {
        self.path = path
    }

    // MARK: WritableStorage

    public func prepare() throws {
        var info = stat()
        if stat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFDIR else {
                throw StorageError.unusable(destination: path, reason: "it exists and is not a directory")
            }
            guard access(path, W_OK | X_OK) == 0 else {
                throw StorageError.unusable(destination: path, reason: FileDescriptorIO.message(errno))
            }
            return
        }
        // Create parents as usual, the destination itself for its owner only.
        let parent = (path as NSString).deletingLastPathComponent
        if !parent.isEmpty, parent != path {
            do {
                try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
            } catch {
                throw StorageError.unusable(destination: path, reason: "cannot create \(parent): \(error.localizedDescription)")
            }
        }
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw StorageError.unusable(destination: path, reason: FileDescriptorIO.message(errno))
        }
    }

    public func list() throws -> [StoredObject] {
        guard let directory = opendir(path) else {
            if errno == ENOENT { return [] }
            throw StorageError.unusable(destination: path, reason: FileDescriptorIO.message(errno))
        }
        defer { closedir(directory) }
        let fd = dirfd(directory)
        var objects: [StoredObject] = []
        while let entry = readdir(directory) {
            let name = PathBytes.name(of: entry)
            guard let text = PathBytes.validString(name), !text.hasPrefix("."),
                  text != FolderNaming.lockName else { continue }
            var info = stat()
            guard fstatat(fd, text, &info, AT_SYMLINK_NOFOLLOW) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
            objects.append(StoredObject(name: text, size: Int64(info.st_size)))
        }
        return objects.sorted { $0.name < $1.name }
    }

    public func create(_ name: String) throws -> PendingObject {
        try StoredObject.checkName(name)
        // An object of this name is to be written: what it held no longer holds.
        memo?.forget(name)
        let (fd, temporary) = try LocalFolderBackend.createTemporary(in: path, stem: name, operation: "create")
        return LocalPendingObject(fd: fd, folder: path, temporaryName: temporary, finalName: name)
    }

    public func open(_ name: String) throws -> RandomAccessSource {
        try StoredObject.checkName(name)
        let full = path + "/" + name
        // Never through a symlink: a name in the destination is a file Keepsake wrote there
        // (listing leaves symlinks out too), not a way to read something elsewhere.
        let fd = Glibc.open(full, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT { throw StorageError.notFound(name: name, destination: path) }
            if code == ELOOP {
                throw StorageError.io(name: full, operation: "open",
                                      reason: "it is a symbolic link, which Keepsake never follows in a destination; remove it")
            }
            throw StorageError.io(name: full, operation: "open", reason: FileDescriptorIO.message(code))
        }
        posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL)
        return FileByteSource(fd: fd, name: full)
    }

    public func delete(_ name: String) throws {
        try StoredObject.checkName(name)
        memo?.forget(name)
        if unlink(path + "/" + name) != 0 && errno != ENOENT {
            throw StorageError.io(name: path + "/" + name, operation: "delete", reason: FileDescriptorIO.message(errno))
        }
        LocalFolderBackend.syncDirectory(path)
    }

    public func move(_ name: String, to newName: String) throws {
        try StoredObject.checkName(name)
        try StoredObject.checkName(newName)
        memo?.forget(name)
        memo?.forget(newName)
        guard rename(path + "/" + name, path + "/" + newName) == 0 else {
            let code = errno
            if code == ENOENT { throw StorageError.notFound(name: name, destination: path) }
            throw StorageError.io(name: path + "/" + name, operation: "rename", reason: FileDescriptorIO.message(code))
        }
        LocalFolderBackend.syncDirectory(path)
    }

    // MARK: Locking
    //
    // The lock is the file keepsake.lock, and its holder keeps an exclusive flock(2) on it for
    // as long as it holds the lock. The flock is the proof of life: the kernel drops it when the
    // holder ends, however it ends, and only one open file can hold it. The pid, host and start
    // time in the file name the holder for messages, and decide only for a lock file nobody
    // has a flock on (the holder died, or it is a lock of an older keepsake or from a file
    // system without flock): a lock whose flock is held is never judged stale.
    //
    // The name keepsake.lock changes in two ways only: link() of a new, already flocked file
    // onto the free name, and — by a run holding the flock of the very file at the name
    // (checked by device and inode after taking the flock) — rename() of its new file over it
    // (taking over a stale lock) or unlink() (release). So of many runs taking over one stale
    // lock exactly one gets its flock and replaces it; the others meet a held flock, or a name
    // that now points at another file, and look again: they find the winner's lock (exit 5).
    // Renaming a live lock aside, as an earlier design did, left the name free for a moment
    // and let two runs hold the lock at once.

    public func acquireLock(_ owner: LockOwner) throws -> DestinationLock {
        let lockPath = path + "/" + FolderNaming.lockName
        let content: [UInt8] = Array((owner.json.serialized() + "\n").utf8)
        let (fd, candidate) = try LocalFolderBackend.createTemporary(in: path, stem: "lock", operation: "write a lock file for")
        var handedOver = false
        defer {
            if !handedOver {
                unlink(path + "/" + candidate)
                close(fd)
            }
        }
        // Flocked before it gets the lock's name, so it is never visible unclaimed.
        _ = flock(fd, LOCK_EX | LOCK_NB)
        let writeError = content.withUnsafeBytes { FileDescriptorIO.writeAll(fd, $0) }
        if writeError == 0 { fsync(fd) }
        if writeError != 0 {
            if writeError == ENOSPC || writeError == EDQUOT { throw StorageError.full(destination: path) }
            throw StorageError.unusable(destination: path, reason: "cannot write a lock file: " + FileDescriptorIO.message(writeError))
        }
        let warnings = accessWarnings()
        var previous: LockOwner?
        var waitedForTakeover = 0
        var lastHolder: LockOwner?
        // Bounded: a name that keeps changing under us is reported as held.
        for _ in 0..<100 {
            // link() fails when the name exists: an atomic create-with-content.
            if link(path + "/" + candidate, lockPath) == 0 {
                handedOver = true
                unlink(path + "/" + candidate)
                LocalFolderBackend.syncDirectory(path)
                return LocalLock(fd: fd, path: lockPath, tookOverFrom: previous, warnings: warnings)
            }
            guard errno == EEXIST else {
                throw StorageError.unusable(destination: path, reason: "cannot take the lock: " + FileDescriptorIO.message(errno))
            }
            switch try inspectLock(lockPath) {
            case .gone:
                continue
            case .held(let holder, let beingTakenOver):
                lastHolder = holder
                // A run holding the flock of a lock that looks stale is replacing it right now:
                // look again shortly to name the new holder rather than the dead one.
                if beingTakenOver && waitedForTakeover < 50 {
                    waitedForTakeover += 1
                    usleep(2000)
                    continue
                }
                throw LockError.held(by: holder ?? .unknownHolder, destination: path)
            case .stale(let staleFD, let holder):
                defer { close(staleFD) }
                previous = holder
                guard rename(path + "/" + candidate, lockPath) == 0 else {
                    throw StorageError.unusable(destination: path, reason: "cannot take over the stale lock: "
                        + FileDescriptorIO.message(errno))
                }
                handedOver = true
                LocalFolderBackend.syncDirectory(path)
                return LocalLock(fd: fd, path: lockPath, tookOverFrom: previous, warnings: warnings)
            }
        }
        throw LockError.held(by: lastHolder ?? .unknownHolder, destination: path)
    }

    /// What `inspectLock` found at the lock's name.
    private enum LockState {
        /// Nothing, or the name changed while looking: try again.
        case gone
        /// A live holder (nil when its file cannot be read); `beingTakenOver` when its flock is
        /// held but its content looks stale.
        case held(LockOwner?, beingTakenOver: Bool)
        /// A stale lock, still at the name, whose flock this run now holds through `fd`.
        case stale(fd: Int32, holder: LockOwner?)
    }

    /// Opens the lock file at `lockPath` (never through a symbolic link), tries its flock and
    /// judges it.
    private func inspectLock(_ lockPath: String) throws -> LockState {
        let fd = Glibc.open(lockPath, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT { return .gone }
            // Another user's lock we may not read: held by someone we cannot name.
            if code == EACCES { return .held(nil, beingTakenOver: false) }
            if code == ELOOP {
                throw StorageError.unusable(destination: path, reason: "\(lockPath) is a symbolic link, which keepsake never "
                    + "makes (someone else planted it); remove it, and keep others from writing to \(path)")
            }
            throw StorageError.unusable(destination: path, reason: "cannot read the lock \(lockPath): " + FileDescriptorIO.message(code))
        }
        var opened = stat()
        guard fstat(fd, &opened) == 0, opened.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw StorageError.unusable(destination: path, reason: "\(lockPath) is not a regular file, which keepsake never "
                + "makes; remove it, and keep others from writing to \(path)")
        }
        // EWOULDBLOCK: a live run holds it. Any other failure (a file system without flock)
        // leaves the judgement to the recorded pid, as before flock was used.
        let busy = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK
        let holder = LocalFolderBackend.readLockOwner(fd)
        if busy {
            close(fd)
            return .held(holder, beingTakenOver: holder?.isStaleOnThisHost ?? true)
        }
        // Only the file still at the name may be replaced.
        var current = stat()
        guard lstat(lockPath, &current) == 0, current.st_dev == opened.st_dev, current.st_ino == opened.st_ino else {
            close(fd)
            return .gone
        }
        guard let holder else {
            // Unreadable: a crash while an older keepsake wrote it. Stale only once old, so a
            // writer in progress is not robbed.
            if time(nil) - opened.st_mtim.tv_sec > 60 { return .stale(fd: fd, holder: nil) }
            close(fd)
            return .held(nil, beingTakenOver: false)
        }
        guard holder.isStaleOnThisHost else {
            close(fd)
            return .held(holder, beingTakenOver: false)
        }
        return .stale(fd: fd, holder: holder)
    }

    /// The holder a lock file names; nil when it names none (empty, not JSON, too large).
    private static func readLockOwner(_ fd: Int32) -> LockOwner? {
        let limit = 1 << 16
        var bytes = [UInt8](repeating: 0, count: limit + 1)
        var count = 0
        while count < bytes.count {
            let got = bytes.withUnsafeMutableBytes { buffer -> Int in
                guard let base = buffer.baseAddress else { return -1 }
                return pread(fd, base + count, buffer.count - count, off_t(count))
            }
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { break }
            count += got
        }
        guard count <= limit else { return nil }
        return (try? JSONParser.parse(Array(bytes[..<count]))).flatMap(LockOwner.init(json:))
    }

    // MARK: Access

    /// Why other users could tamper with the destination, one sentence each (empty when only
    /// this user can write to it): a folder writable by others (world-writable, or
    /// group-writable without the sticky bit), or owned by another user than the one running.
    func accessWarnings() -> [String] {
        var info = stat()
        guard stat(path, &info) == 0 else { return [] }
        var warnings: [String] = []
        let mode = info.st_mode & 0o7777
        if mode & S_IWOTH != 0 || (mode & S_IWGRP != 0 && mode & S_ISVTX == 0) {
            warnings.append("destination \(path) is writable by other users (mode \(String(mode, radix: 8))): they could plant "
                + "or replace files in it, the lock among them; run 'chmod go-w \(path)'")
        }
        let me = geteuid()
        if info.st_uid != me {
            let owner = UserNames.shared.userName(for: info.st_uid) ?? "uid \(info.st_uid)"
            let runner = UserNames.shared.userName(for: me) ?? "uid \(me)"
            warnings.append("destination \(path) is owned by \(owner), not by \(runner) who runs keepsake: \(owner) could plant "
                + "or replace files in it; run 'chown \(runner) \(path)', or back up as \(owner)")
        }
        return warnings
    }

    public func removeLeftovers() throws -> [String] {
        guard let directory = opendir(path) else { return [] }
        defer { closedir(directory) }
        var removed: [String] = []
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = PathBytes.name(of: entry)
            if let text = PathBytes.validString(name), text.hasPrefix(FolderNaming.temporaryPrefix) {
                names.append(text)
            }
        }
        for name in names where FolderNaming.isLeftoverTemporary(name) {
            if unlink(path + "/" + name) == 0 { removed.append(name) }
        }
        return removed
    }

    // MARK: Helpers

    /// Creates a new temporary file `.tmp-STEM-PID-RANDOM` in `folder` for writing. O_EXCL and
    /// O_NOFOLLOW: a name planted by someone else (a symbolic link pointing outside, above
    /// all) is never opened; another random name is tried instead.
    static func createTemporary(in folder: String, stem: String, operation: String) throws -> (fd: Int32, name: String) {
        var code: Int32 = 0
        var name = ""
        for _ in 0..<8 {
            name = FolderNaming.temporaryName(stem: stem)
            let fd = Glibc.open(folder + "/" + name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if fd >= 0 { return (fd, name) }
            code = errno
            guard code == EEXIST else { break }
        }
        if code == ENOSPC || code == EDQUOT { throw StorageError.full(destination: folder) }
        throw StorageError.io(name: folder + "/" + name, operation: operation, reason: FileDescriptorIO.message(code))
    }

    /// Makes a rename or unlink in `folder` durable.
    static func syncDirectory(_ folder: String) {
        let fd = Glibc.open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }
}

// MARK: - Pending object

/// A temporary file in the destination that becomes the object on commit.
final class LocalPendingObject: PendingObject {
    private var fd: Int32
    private let folder: String
    private let temporaryName: String
    private let finalName: String
    private var buffer: [UInt8] = []
    private let bufferCapacity = 1 << 20
    private(set) var bytesWritten: Int64 = 0
    private var finished = false
    /// Bytes handed to the file so far, and up to where writing them back to the disk was
    /// started: it starts every few MiB, so the fsync of `commit` has little left to wait
    /// for (0.34 s of a 1 GiB backup's 4.5 s went to that fsync before).
    private var fileOffset: Int64 = 0
    private var writebackStarted: Int64 = 0
    private static let writebackStep: Int64 = 8 << 20

    init(fd: Int32, folder: String, temporaryName: String, finalName: String) {
        self.fd = fd
        self.folder = folder
        self.temporaryName = temporaryName
        self.finalName = finalName
        buffer.reserveCapacity(bufferCapacity)
    }

    deinit { abort() }

    func write(_ bytes: UnsafeRawBufferPointer) throws {
        guard !finished else { throw StorageError.io(name: finalName, operation: "write", reason: "already finished") }
        bytesWritten += Int64(bytes.count)
        if buffer.count + bytes.count > bufferCapacity { try flush() }
        if bytes.count >= bufferCapacity {
            try check(FileDescriptorIO.writeAll(fd, bytes))
            wrote(bytes.count)
        } else {
            buffer.append(contentsOf: bytes)
        }
    }

    /// Counts bytes written to the file, and starts their writeback every few MiB.
    private func wrote(_ count: Int) {
        fileOffset += Int64(count)
        guard fileOffset - writebackStarted >= LocalPendingObject.writebackStep else { return }
        // Only a hint: a failure here shows up in the fsync of `commit`.
        _ = ks_start_writeback(fd, writebackStarted, fileOffset - writebackStarted)
        writebackStarted = fileOffset
    }

    func commit() throws {
        guard !finished else { return }
        try flush()
        if fsync(fd) != 0 { try check(errno) }
        close(fd)
        fd = -1
        finished = true
        if rename(folder + "/" + temporaryName, folder + "/" + finalName) != 0 {
            let code = errno
            unlink(folder + "/" + temporaryName)
            try check(code)
        }
        LocalFolderBackend.syncDirectory(folder)
    }

    func abort() {
        guard !finished else { return }
        finished = true
        if fd >= 0 { close(fd) }
        fd = -1
        unlink(folder + "/" + temporaryName)
    }

    private func flush() throws {
        guard !buffer.isEmpty else { return }
        let code = buffer.withUnsafeBytes { FileDescriptorIO.writeAll(fd, $0) }
        let count = buffer.count
        buffer.removeAll(keepingCapacity: true)
        try check(code)
        wrote(count)
    }

    private func check(_ code: Int32) throws {
        guard code != 0 else { return }
        if code == ENOSPC || code == EDQUOT { throw StorageError.full(destination: folder) }
        throw StorageError.io(name: folder + "/" + finalName, operation: "write", reason: FileDescriptorIO.message(code))
    }
}

// MARK: - Lock

/// The lock file, held by an exclusive flock on `fd`; removed on release only while it is
/// still this run's own file.
final class LocalLock: DestinationLock {
    private let fd: Int32
    private let path: String
    private var released = false
    let tookOverFrom: LockOwner?
    let warnings: [String]

    init(fd: Int32, path: String, tookOverFrom: LockOwner?, warnings: [String]) {
        self.fd = fd
        self.path = path
        self.tookOverFrom = tookOverFrom
        self.warnings = warnings
    }

    deinit { release() }

    func release() {
        guard !released else { return }
        released = true
        // Still holding the flock: nobody else changes the name while it points at our file.
        var mine = stat()
        var current = stat()
        if fstat(fd, &mine) == 0, lstat(path, &current) == 0, mine.st_dev == current.st_dev, mine.st_ino == current.st_ino {
            unlink(path)
            LocalFolderBackend.syncDirectory((path as NSString).deletingLastPathComponent)
        }
        close(fd)
    }
}
