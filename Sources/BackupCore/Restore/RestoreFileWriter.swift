import CPosix
import Dispatch
import Foundation
import KeepsakeArchive
import KeepsakeHashing
import KeepsakeModel
import KeepsakeSupport
import Synchronization

/// Writes restored files and hard links on a thread of its own, so that the restoring
/// thread only reads the archive and copies bytes: with everything on one thread, the
/// file system's work (open, write, rename) and the hashing made that thread the
/// bottleneck of a full restore.
///
/// The restoring thread queues operations, in order, into batches that each carry up to
/// `batchSize` bytes of content; a few batches are reused, so memory stays bounded however
/// far ahead the reading gets. `drain` waits for everything queued and hands back what
/// happened. Only one thread queues. The state marked "queue" is touched only by the
/// operations on `queue`, or by the caller after `drain` (which orders the two).
final class RestoreFileWriter: @unchecked Sendable {
    // MARK: Types

    /// How a written file is judged before it gets its final name.
    enum Check: Sendable {
        /// Against the manifest's SHA-256 (nil when the manifest records none), then placed.
        case verify(sha256: String?)
        /// Left under its temporary name until the archive's own manifest has been read;
        /// hashed only when that manifest is expected (a plain tarball has none).
        case wait(hashed: Bool)

        /// Whether the content must be hashed: not when there is nothing to compare with.
        var needsHash: Bool {
            switch self {
            case .verify(let sha256): return sha256 != nil
            case .wait(let hashed): return hashed
            }
        }
    }

    /// A regular file to write.
    struct FileJob: Sendable {
        /// The folder the file goes into.
        let directory: DirectoryHandle
        let components: [[UInt8]]
        let path: [UInt8]
        let header: ArchiveEntryHeader
        let check: Check
        /// It replaces an entry that was there (counted in `Outcome.replaced` once placed).
        var replaces = false
    }

    /// A hard link to make.
    struct LinkJob: Sendable {
        /// The folder the link goes into.
        let directory: DirectoryHandle
        let components: [[UInt8]]
        let path: [UInt8]
        /// The path of the file it names (where that file was restored) and its components.
        let linkPath: [UInt8]
        let linkParts: [[UInt8]]
        /// Waits with the files for the archive's own manifest.
        let deferred: Bool
        /// It replaces an entry that was there.
        var replaces = false
    }

    /// A file (or hard link) under a temporary name, waiting for the archive's manifest.
    struct Pending {
        let components: [[UInt8]]
        let path: [UInt8]
        let temporaryName: [UInt8]
        /// Nil for a link, and for a file that was not hashed (see `Check.wait`).
        let sha256: String?
        /// For a hard link: the path of the file it names.
        let linkOf: [UInt8]?
        /// For a file: which file was written, so that it is found again by descriptor, not
        /// by its name alone (nil for a hard link, or when it could not be read).
        let identity: RestoredMetadata.Identity?
        /// It replaces an entry that was there.
        let replaces: Bool
        /// For a file: what its tar header recorded, to compare with the manifest (nil for a link).
        let recorded: RecordedAttributes?
    }

    /// What the writer did since the last `drain`.
    struct Outcome: Sendable {
        var files: Int64 = 0
        var hardlinks: Int64 = 0
        var bytes: Int64 = 0
        /// Files and links placed over an entry that was there.
        var replaced: Int64 = 0
        var damaged: [PathWarning] = []
        var warnings: [PathWarning] = []
        /// A failure of the target itself (a full disk): the restore must stop.
        var failure: EngineError?
    }

    private enum Operation {
        case begin(FileJob)
        case data(offset: Int64, start: Int, count: Int)
        case end
        case abort
        case link(LinkJob)
    }

    /// Content bytes and the operations that use them, handed to the queue as one piece.
    private final class Batch: @unchecked Sendable {
        let buffer: FrameBuffer
        var operations: [Operation] = []
        /// Folder handles this batch introduced (each holds a descriptor while queued).
        var directories = 0
        init(capacity: Int) { buffer = FrameBuffer(capacity: capacity) }

        /// Lets go of what the batch holds (folder handles among it), keeping its room.
        func empty() {
            buffer.count = 0
            operations.removeAll(keepingCapacity: true)
            directories = 0
        }
    }

    /// The file being written, on the queue.
    private struct OpenFile {
        let job: FileJob
        let fd: Int32
        /// Its temporary name; nil for an unnamed file (see `UnnamedFiles`).
        let temporary: [UInt8]?
        var end: Int64 = 0
        /// False when there is no SHA-256 to compare the content with.
        let hashing: Bool
        /// What an unnamed file was made with (its metadata calls leave that out).
        var made: RestoredMetadata.Made? = nil
    }

    // MARK: Settings

    /// Content bytes per batch: large enough that a batch of small files is one hand-over.
    static let batchSize = 1 << 20
    /// Batches queued at most besides the one being filled.
    private static let queuedBatches = 4
    /// Operations per batch at most (empty files carry no bytes to fill a batch); an
    /// operation with its file's header takes a few hundred bytes.
    private static let maximumOperations = 1024
    /// New folder handles per batch at most: a tree of one small file per folder must not
    /// hold thousands of descriptors while its batches wait.
    static let maximumDirectoriesPerBatch = 16
    /// Descriptors the writer holds at most: the folders of every batch queued or being
    /// filled, and its copy of the target's.
    static let maximumDescriptors = (queuedBatches + 1) * maximumDirectoriesPerBatch + 1

    private let request: RestoreRequest
    private let rootFD: DirectoryHandle
    /// Set when the target started empty: files are then made unnamed and named once checked.
    private let unnamed: UnnamedFiles?
    /// The target started empty: a hard link gets its final name at once (it names a file
    /// already complete), with no temporary name.
    private let linksInPlace: Bool
    /// Checked while hashing: the holes of one sparse file can be a terabyte of zeros.
    private let cancellation: CancellationFlag

    // MARK: State (caller)

    private let queue = DispatchQueue(label: "keepsake.restore.write")
    private let slots = DispatchSemaphore(value: RestoreFileWriter.queuedBatches)
    private let spare = LockedValue<[Batch]>([])
    private var filling = Batch(capacity: RestoreFileWriter.batchSize)

    // MARK: State (shared)

    private let failed = Atomic<Bool>(false)
    private let liveFiles = Atomic<Int64>(0)
    private let liveBytes = Atomic<Int64>(0)

    // MARK: State (queue)

    private var outcome = Outcome()
    private var open: OpenFile?
    /// Hashes on this thread, from the batch: handing big files to a hashing thread of
    /// their own (another copy) measured 0.3 s slower on the 1 GiB set, and hashing on the
    /// restoring thread as it copies into the batch no faster (/usr/share into a tmpfs,
    /// 12 alternating rounds).
    private let hasher = SHA256Hasher()
    /// Files and links waiting for the archive's manifest, and where each path is in it.
    private var pendings: [Pending] = []
    private var pendingIndex: [PathKey: Int] = [:]

    // MARK: Life cycle

    /// A writer into the target whose folder is `rootFD`, applying `request`'s policy on
    /// owners and special bits, stopping its work once `cancellation` is set; nil when no
    /// descriptor is left for it. With `targetStartedEmpty`, files checked as they come are
    /// made unnamed where the target allows it (`unnamed`), and hard links go straight to
    /// their names: nothing there can be in the way but what this restore made.
    init?(rootFD: Int32, request: RestoreRequest, cancellation: CancellationFlag, targetStartedEmpty: Bool = false,
          unnamed: UnnamedFiles? = nil) {
        guard let root = DirectoryHandle(copying: rootFD) else { return nil }
        self.rootFD = root
        self.request = request
        self.cancellation = cancellation
        self.unnamed = targetStartedEmpty ? unnamed : nil
        linksInPlace = targetStartedEmpty
    }

    // MARK: Queueing (caller)

    /// Starts a file; its content follows with `write`, then `endFile` or `abortFile`.
    /// `newDirectory` says the job's folder handle was made for it (see
    /// `maximumDirectoriesPerBatch`).
    func beginFile(_ job: FileJob, newDirectory: Bool) {
        if newDirectory { noteDirectory() }
        append(.begin(job))
    }

    /// Queues a copy of `bytes`, which belong at `offset` of the file begun last.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) {
        var rest = bytes
        var position = offset
        while !rest.isEmpty {
            if filling.buffer.count == filling.buffer.capacity { submit() }
            let start = filling.buffer.count
            let taken = filling.buffer.append(rest)
            filling.operations.append(.data(offset: position, start: start, count: taken))
            rest = UnsafeRawBufferPointer(rebasing: rest[taken...])
            position += Int64(taken)
        }
    }

    /// The file begun last is complete: check it and place it (or leave it waiting).
    func endFile() { append(.end) }

    /// The file begun last cannot be completed (the archive broke off): remove it.
    func abortFile() { append(.abort) }

    /// Queues a hard link, made after every file queued before it.
    func link(_ job: LinkJob, newDirectory: Bool) {
        if newDirectory { noteDirectory() }
        append(.link(job))
    }

    /// True once the target failed (a full disk): the caller should stop and `drain`.
    var hasFailed: Bool { failed.load(ordering: .relaxed) }

    /// Files and bytes written since the last `drain`, for progress.
    var progress: (files: Int64, bytes: Int64) {
        (liveFiles.load(ordering: .relaxed), liveBytes.load(ordering: .relaxed))
    }

    /// Waits until everything queued is done, and returns what happened since the last drain.
    func drain() -> Outcome {
        submit()
        let done = queue.sync {
            let done = outcome
            outcome = Outcome()
            liveFiles.store(0, ordering: .relaxed)
            liveBytes.store(0, ordering: .relaxed)
            return done
        }
        // Every batch is back: none keeps a folder open past this point.
        spare.withLock { $0.forEach { $0.empty() } }
        return done
    }

    /// Hands over the waiting files and links (after `drain`), and forgets them.
    func takePendings() -> [Pending] {
        queue.sync {
            let taken = pendings
            pendings = []
            pendingIndex = [:]
            return taken
        }
    }

    private func append(_ operation: Operation) {
        filling.operations.append(operation)
        if filling.operations.count >= RestoreFileWriter.maximumOperations { submit() }
    }

    private func noteDirectory() {
        if filling.directories >= RestoreFileWriter.maximumDirectoriesPerBatch { submit() }
        filling.directories += 1
    }

    /// Hands the batch being filled to the queue and takes an empty one (waiting while
    /// `queuedBatches` are queued).
    private func submit() {
        guard !filling.operations.isEmpty else { return }
        let batch = filling
        slots.wait()
        queue.async { [self] in
            run(batch)
            spare.withLock { $0.append(batch) }
            slots.signal()
        }
        // What a used batch holds (each file's header, path and parts) is let go here, on
        // the restoring thread: the writer's thread is the one a restore waits for.
        if let used = spare.withLock({ $0.popLast() }) {
            used.empty()
            filling = used
        } else {
            filling = Batch(capacity: RestoreFileWriter.batchSize)
        }
    }

    // MARK: Writing (queue)

    private func run(_ batch: Batch) {
        // Read in place: iterating the array would copy each operation (retaining what it
        // holds) and let the copy go, all on this thread.
        batch.operations.withUnsafeBufferPointer { operations in
            for index in operations.indices { run(operations[index], in: batch) }
        }
    }

    private func run(_ operation: borrowing Operation, in batch: Batch) {
        switch operation {
        case .begin(let job):
            begin(job)
        case .data(let offset, let start, let count):
            writeNow(UnsafeRawBufferPointer(rebasing: batch.buffer.bytes[start..<(start + count)]), at: offset)
        case .end:
            finish()
        case .abort:
            abandon()
        case .link(let job):
            makeLink(job)
        }
    }

    private func begin(_ job: FileJob) {
        abandon() // a file never ended (not expected): its temporary must not stay
        // After a stop, what is still queued is dropped; the caller throws `interrupted`.
        guard outcome.failure == nil, !cancellation.isCancelled else { return }
        if let unnamed, case .verify = job.check, !job.replaces {
            // Made with the mode it gets: where the umask takes nothing from it, no fchmod follows.
            let mode = RestoredMetadata.permissions(job.header.permissions, request: request)
            let fd = unnamed.create(in: job.directory.fd, mode: mode)
            if fd >= 0 {
                open = OpenFile(job: job, fd: fd, temporary: nil, hashing: job.check.needsHash,
                                made: RestoredMetadata.Made(mode: unnamed.modeAtCreation(mode), uid: unnamed.owner.uid,
                                                            gid: unnamed.owner.gid))
                return
            }
            let code = errno
            guard UnnamedFiles.refusesUnnamedFiles(code) else {
                problem(job.path, code)
                return
            }
        }
        let temporary = RestoreTarget.temporaryName()
        let fd = PathBytes.syscall(temporary) {
            openat(job.directory.fd, $0, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        }
        guard fd >= 0 else {
            problem(job.path, errno)
            return
        }
        open = OpenFile(job: job, fd: fd, temporary: temporary, hashing: job.check.needsHash)
    }

    private func writeNow(_ bytes: UnsafeRawBufferPointer, at offset: Int64) {
        guard var file = open, let base = bytes.baseAddress else { return }
        if file.hashing {
            if offset > file.end {
                do {
                    try ManifestCheck.hashZeros(offset - file.end, into: hasher, cancellation: cancellation)
                } catch {
                    abandon()
                    return
                }
            }
            hasher.update(bytes)
        }
        var written = 0
        while written < bytes.count {
            let count = pwrite(file.fd, base + written, bytes.count - written, off_t(offset) + off_t(written))
            if count < 0 {
                if errno == EINTR { continue }
                let code = errno
                abandon()
                fail(RestoreTarget.stoppingError(request.target, code, path: file.job.path))
                return
            }
            written += count
        }
        file.end = max(file.end, offset + Int64(bytes.count))
        open = file
    }

    private func finish() {
        guard let file = open else { return }
        open = nil
        let job = file.job
        let size = job.header.size
        var sha256: String?
        if file.hashing {
            do {
                if file.end < size { try ManifestCheck.hashZeros(size - file.end, into: hasher, cancellation: cancellation) }
            } catch {
                open = file
                abandon()
                return
            }
            sha256 = hasher.finalizeHex()
        }
        // Only a file that ends in a hole needs its length set.
        if file.end < size, ftruncate(file.fd, off_t(size)) != 0 {
            let code = errno
            discard(file)
            fail(RestoreTarget.stoppingError(request.target, code, path: job.path))
            return
        }
        RestoredMetadata.apply(job.header, fd: file.fd, request: request, path: job.path, warnings: &outcome.warnings,
                               made: file.made)
        outcome.bytes += size
        liveBytes.add(size, ordering: .relaxed)
        switch job.check {
        case .verify(let expected):
            guard expected == nil || expected == sha256 else {
                discard(file)
                outcome.damaged.append(PathWarning(kind: .damaged, path: PathBytes.display(job.path),
                                                   reason: "content does not match its SHA-256 in the manifest; not restored"))
                return
            }
            let name = job.components[job.components.count - 1]
            let placed: Bool
            if let temporary = file.temporary {
                close(file.fd)
                placed = place(temporary, as: name, in: job.directory.fd, path: job.path)
            } else {
                placed = nameUnnamed(file, as: name)
            }
            if placed {
                outcome.files += 1
                if job.replaces { outcome.replaced += 1 }
                liveFiles.add(1, ordering: .relaxed)
            }
        case .wait:
            let identity = RestoredMetadata.Identity(fd: file.fd)
            close(file.fd)
            // A waiting file always has a temporary name: only checked files are made unnamed.
            pendingIndex[PathKey(job.path)] = pendings.count
            pendings.append(Pending(components: job.components, path: job.path, temporaryName: file.temporary ?? [],
                                    sha256: sha256, linkOf: nil, identity: identity, replaces: job.replaces,
                                    recorded: RecordedAttributes(job.header)))
        }
    }

    /// Removes the file being written, and starts the digest over.
    private func abandon() {
        guard let file = open else { return }
        open = nil
        if file.hashing { _ = hasher.finalizeHex() }
        discard(file)
    }

    /// Closes a file that is not to be placed and removes its temporary name (an unnamed file
    /// goes with its descriptor).
    private func discard(_ file: OpenFile) {
        close(file.fd)
        if let temporary = file.temporary { RestoreTarget.remove(temporary, in: file.job.directory.fd) }
    }

    /// Gives a finished, checked unnamed file its name, and closes it; false (with the
    /// problem noted) when that failed.
    private func nameUnnamed(_ file: OpenFile, as name: [UInt8]) -> Bool {
        guard let unnamed else { return false }
        defer { close(file.fd) }
        let directoryFD = file.job.directory.fd
        var code = unnamed.name(file.fd, as: name, in: directoryFD)
        if code == EEXIST {
            // The archive held this path before: the later copy replaces it, as a rename would.
            let temporary = RestoreTarget.temporaryName()
            code = unnamed.name(file.fd, as: temporary, in: directoryFD)
            if code == 0 { return place(temporary, as: name, in: directoryFD, path: file.job.path) }
        }
        guard code == 0 else {
            problem(file.job.path, code)
            return false
        }
        return true
    }

    private func makeLink(_ job: LinkJob) {
        guard outcome.failure == nil, !cancellation.isCancelled else { return }
        var sourceParts = job.linkParts
        if let index = pendingIndex[PathKey(job.linkPath)] {
            // The file it names is still waiting under its temporary name.
            sourceParts = pendings[index].components.dropLast() + [pendings[index].temporaryName]
        }
        let notRestored = "the file it links to (\(PathBytes.display(job.linkPath))) was not restored"
        guard let sourceFD = try? RestoreTarget.openDirectory(sourceParts.dropLast()[...], in: rootFD.fd, create: false) else {
            outcome.warnings.append(PathWarning(kind: .unwritable, path: PathBytes.display(job.path), reason: notRestored))
            return
        }
        defer { close(sourceFD) }
        let name = job.components[job.components.count - 1]
        if linksInPlace && !job.deferred && !job.replaces {
            // Straight to its name; only a name the archive already used takes the way below.
            let status = PathBytes.syscall(sourceParts[sourceParts.count - 1]) { source in
                PathBytes.syscall(name) { linkat(sourceFD, source, job.directory.fd, $0, 0) }
            }
            if status == 0 {
                outcome.hardlinks += 1
                liveFiles.add(1, ordering: .relaxed)
                return
            }
        }
        let temporary = RestoreTarget.temporaryName()
        let status = PathBytes.syscall(sourceParts[sourceParts.count - 1]) { source in
            PathBytes.syscall(temporary) { linkat(sourceFD, source, job.directory.fd, $0, 0) }
        }
        guard status == 0 else {
            outcome.warnings.append(PathWarning(kind: .unwritable, path: PathBytes.display(job.path), reason: notRestored))
            return
        }
        if job.deferred {
            pendings.append(Pending(components: job.components, path: job.path, temporaryName: temporary, sha256: nil,
                                    linkOf: job.linkPath, identity: nil, replaces: job.replaces, recorded: nil))
        } else if place(temporary, as: name, in: job.directory.fd, path: job.path) {
            outcome.hardlinks += 1
            if job.replaces { outcome.replaced += 1 }
            liveFiles.add(1, ordering: .relaxed)
        }
    }

    // MARK: Placing and problems (queue)

    /// Renames a finished temporary name into place; false (with the problem noted) when
    /// that failed.
    private func place(_ temporary: [UInt8], as name: [UInt8], in directoryFD: Int32, path: [UInt8]) -> Bool {
        let code = RestoreTarget.rename(temporary, to: name, in: directoryFD)
        guard code != 0 else { return true }
        RestoreTarget.remove(temporary, in: directoryFD)
        problem(path, code)
        return false
    }

    /// A failure to create something: fatal when the target is full,
    /// otherwise a warning for that path.
    private func problem(_ path: [UInt8], _ code: Int32) {
        if RestoreTarget.stopsRestore(code) {
            fail(RestoreTarget.stoppingError(request.target, code, path: path))
        } else {
            outcome.warnings.append(PathWarning(kind: .unwritable, path: PathBytes.display(path),
                                                reason: RestoreTarget.notWritten(code)))
        }
    }

    private func fail(_ error: EngineError) {
        if outcome.failure == nil { outcome.failure = error }
        failed.store(true, ordering: .relaxed)
    }
}
