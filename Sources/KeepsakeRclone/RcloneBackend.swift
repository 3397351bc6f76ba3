import Foundation
import KeepsakeJSON
import KeepsakeStorage
import KeepsakeSupport
import Synchronization

/// A destination on an rclone remote (`rclone:REMOTE:PATH`), reached by running the
/// `rclone` program (one run per operation; see `RcloneRunner`). Whatever the remote is
/// (sftp, a cloud drive, a local folder), the promises of `WritableStorage` are kept like this:
///
/// - store: `rclone rcat` reads the object from a pipe into `.tmp-NAME-PID-RANDOM` as it is
///   written (memory stays bounded, nothing is spooled on the local disk by Keepsake);
///   commit ends the input, checks the temporary's size and renames it onto the name with
///   `rclone moveto`. Abort kills rcat and deletes the temporary.
/// - read: `rclone cat` streams front to back; a read at an offset is `cat --offset --count`.
/// - list: `rclone lsjson` of the folder, without temporaries, the lock or other dot-names.
///   A command lists a destination several times (catalog, leftovers, change cache), and
///   each rclone run costs a process start and, over sftp, an SSH connection: a listing is
///   used again for `listingReuse` (also for the size `open` needs), and forgotten at once
///   when this backend changes the folder or takes the lock (so a command sees its own
///   changes, and what others did before it held the lock).
/// - lock: the object `keepsake.lock` (see `acquireLock`).
///
/// Object names follow `StoredObject.checkName`, temporaries its naming, so leftovers
/// are judged the same way.
public final class RcloneBackend: WritableStorage {
    // MARK: Constants

    /// The lock's object: the same name as in a local folder.
    static let lockName = FolderNaming.lockName
    /// The largest lock record read.
    private static let lockSizeLimit = 1 << 16
    /// The largest listing read (about a million objects).
    /// The most of `rclone lsjson`'s output a listing reads: about 200,000 files, far beyond
    /// any destination. Parsed whole, a listing costs several times its size in memory (a
    /// 250 MiB one took 1.7 GB); a remote that answers more is refused, not followed.
    static let listingLimit = 32 << 20
    /// How old an unreadable lock record must be to count as a crashed writer's, not one
    /// being written (generous: the clocks of hosts sharing a remote may differ).
    static let unreadableLockAge: TimeInterval = 600
    /// Bounds of the pause between writing the lock and reading it back.
    static let lockSettleRange: ClosedRange<Double> = 0.5...10
    /// Lock attempts before a lock that keeps changing is reported as held.
    private static let lockAttempts = 4
    /// How long a listing is used again by `list`, `removeLeftovers` and `open`, unless this
    /// backend changes the folder before.
    static let listingReuse: Duration = .seconds(30)

    // MARK: State

    /// The remote's name in rclone's configuration.
    public let remote: String
    /// The path on the remote (may be empty: the remote's root or home).
    public let path: String
    public var location: String { "rclone:\(remote):\(path)" }
    public let memo: ObjectMemo? = ObjectMemo()
    /// Runs rclone for this destination.
    let runner: RcloneRunner
    /// The folder's last listing, kept for `files()`.
    private let listingMemo = Mutex(ListingMemo())

    /// A backend for `path` on `remote`, running `rclone` (a path, or a name looked up on
    /// the PATH of `environment`) with `environment` (where RCLONE_CONFIG names the
    /// configuration). A set `cancellation` kills the rclone that is running.
    public init(remote: String, path: String, rclone: String = "rclone",
                environment: [String: String] = ProcessInfo.processInfo.environment, cancellation: CancellationFlag? = nil) {
        self.remote = remote
        self.path = path
        runner = RcloneRunner(program: rclone, environment: environment, destination: "rclone:\(remote):\(path)",
                              cancellation: cancellation)
    }

    // MARK: WritableStorage

    public func prepare() throws {
        forgetListing()
        let outcome = try runner.run("mkdir", paths: [objectPath(nil)])
        guard outcome.succeeded else { throw failure(outcome, operation: "create", name: nil) }
    }

    public func list() throws -> [StoredObject] {
        try files().compactMap { entry in
            guard !entry.name.hasPrefix("."), entry.name != RcloneBackend.lockName, !entry.name.contains("/") else { return nil }
            return StoredObject(name: entry.name, size: entry.size)
        }.sorted { $0.name < $1.name }
    }

    public func create(_ name: String) throws -> PendingObject {
        try StoredObject.checkName(name)
        // An object of this name is to be written: what it held no longer holds.
        memo?.forget(name)
        let temporary = FolderNaming.temporaryName(stem: name)
        forgetListing()
        // No streaming cutoff: rclone would otherwise hold the first 100 KiB in memory and
        // make a small object appear only at its end; this way the temporary exists from
        // the start, as a local folder's does.
        let upload = try runner.start("rcat", options: ["--streaming-upload-cutoff", "0"], paths: [objectPath(temporary)],
                                      input: .pipe)
        return RclonePendingObject(backend: self, upload: upload, temporaryName: temporary, finalName: name)
    }

    public func open(_ name: String) throws -> RandomAccessSource {
        try StoredObject.checkName(name)
        // Looked up first (in the kept listing, or by itself): `rclone cat` of a folder would
        // print every file in it.
        let size = try listedFile(name)?.size ?? existingObject(name, operation: "open").size
        return RcloneObjectSource(backend: self, name: name, size: size)
    }

    public func delete(_ name: String) throws {
        try StoredObject.checkName(name)
        forgetListing()
        memo?.forget(name)
        let outcome = try runner.run("deletefile", paths: [objectPath(name)])
        guard !outcome.succeeded else { return }
        // rclone 1.60 gives the generic status for a missing file: a missing object is
        // deleted already (as in a local folder), any other failure is one.
        if try entry(name) == nil { return }
        throw failure(outcome, operation: "delete", name: name)
    }

    public func move(_ name: String, to newName: String) throws {
        try StoredObject.checkName(name)
        try StoredObject.checkName(newName)
        memo?.forget(name)
        memo?.forget(newName)
        // Looked up first: for a missing file `rclone moveto` tries to move a folder of that name.
        _ = try existingObject(name, operation: "rename")
        try rename(name, to: newName)
    }

    public func removeLeftovers() throws -> [String] {
        var removed: [String] = []
        defer { if !removed.isEmpty { forgetListing() } }
        for entry in try files() where FolderNaming.isLeftoverTemporary(entry.name) {
            if try runner.run("deletefile", paths: [objectPath(entry.name)]).succeeded { removed.append(entry.name) }
        }
        return removed
    }

    // MARK: Locking
    //
    // The lock is the object keepsake.lock: the holder's LockOwner record plus a random token.
    // rclone has no conditional write (create-if-absent), so a run takes the lock by writing
    // the record when there is none (or when it names a process that no longer runs on this
    // host), pauses, and reads it back: the lock is its own only if the token is still its
    // own. Of runs that write at about the same time the last writer keeps it; the others read
    // its token and report it as the holder. The pause lasts twice as long as looking and
    // writing took (half a second at least), so a rival's write that lands later than that is
    // what escapes: two runs starting within the same second on different hosts (or a remote
    // whose listings lag behind its writes) could both believe they hold the lock. Nothing
    // better is possible without a compare-and-swap on the remote.

    public func acquireLock(_ owner: LockOwner) throws -> DestinationLock {
        let token = HexEncoding.encode((0..<16).map { _ in UInt8.random(in: 0...255) })
        var record = owner.json.objectValue ?? JSONObject()
        record["token"] = .string(token)
        let content = Array((JSONValue.object(record).serialized() + "\n").utf8)
        var lastHolder: LockOwner?
        // Not cancellable: a run stopped between writing the lock and knowing it holds it
        // would leave a lock behind.
        for _ in 0..<RcloneBackend.lockAttempts {
            let started = ContinuousClock.now
            var previous: LockOwner?
            switch try readLock() {
            case .absent:
                break
            case .present(let holder?, _, _):
                lastHolder = holder
                guard holder.isStaleOnThisHost else { throw LockError.held(by: holder, destination: location) }
                previous = holder
            case .present(nil, _, let modified):
                // Unreadable: being written right now, unless old (a crash while writing it).
                guard let modified, Date().timeIntervalSince(modified) > RcloneBackend.unreadableLockAge else {
                    throw LockError.held(by: .unknownHolder, destination: location)
                }
            }
            let written = try runner.run("rcat", paths: [objectPath(RcloneBackend.lockName)], input: content, cancellable: false)
            // Another run wrote the record while this one did (rclone then finds a hash other
            // than what it sent): a race lost, not a failure. Look again.
            if !written.succeeded, written.errorText.contains("corrupted on transfer") { continue }
            guard written.succeeded else { throw failure(written, operation: "write the lock", name: RcloneBackend.lockName) }
            let took = ContinuousClock.now - started
            let seconds = Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18
            let range = RcloneBackend.lockSettleRange
            Thread.sleep(forTimeInterval: min(range.upperBound, max(range.lowerBound, 2 * seconds)))
            if case .present(_, token?, _) = try readLock() {
                // What was listed before holding the lock may have changed while waiting for it.
                forgetListing()
                return RcloneLock(backend: self, token: token, tookOverFrom: previous)
            }
            // Another run's record replaced ours: look again, to name it (or take it over if
            // it is stale after all).
        }
        throw LockError.held(by: lastHolder ?? .unknownHolder, destination: location)
    }

    /// What `readLock` found at the lock's name.
    enum LockState {
        /// No lock record.
        case absent
        /// A record: its holder and token (nil when it cannot be read) and, for a record that
        /// cannot be read, its age.
        case present(holder: LockOwner?, token: String?, modified: Date?)
    }

    /// The lock record now (never cancelled: it is part of taking or giving back the lock).
    /// `cat` alone where the record is absent or readable, as it nearly always is (one rclone
    /// run, not two); a lookup only for what an unreadable record needs: its age, and whether
    /// the name is a folder (whose `cat` would print the files inside it).
    func readLock() throws -> LockState {
        let path = try objectPath(RcloneBackend.lockName)
        let outcome = try runner.run("cat", paths: [path], outputLimit: RcloneBackend.lockSizeLimit + 1, cancellable: false)
        if outcome.isNotFound { return .absent }
        guard outcome.succeeded else { throw failure(outcome, operation: "read the lock", name: RcloneBackend.lockName) }
        if outcome.output.count <= RcloneBackend.lockSizeLimit, let json = try? JSONParser.parse(outcome.output),
           let holder = LockOwner(json: json) {
            return .present(holder: holder, token: json["token"]?.stringValue, modified: nil)
        }
        guard let entry = try entry(RcloneBackend.lockName, cancellable: false) else { return .absent }
        guard !entry.isDirectory else {
            throw StorageError.unusable(destination: location, reason: "\(displayName(RcloneBackend.lockName)) is a folder, "
                + "which Keepsake never makes; remove it")
        }
        return .present(holder: nil, token: nil, modified: entry.modified)
    }

    /// Removes the lock if its record still holds `token` (a run that judged this one's lock
    /// stale and took it over keeps its own).
    func releaseLock(token: String) {
        guard case .present(_, token?, _)? = try? readLock() else { return }
        _ = try? runner.run("deletefile", paths: [objectPath(RcloneBackend.lockName)], cancellable: false)
    }

    // MARK: Paths

    /// The rclone path of `name` in the destination, or of the destination itself for nil.
    func objectPath(_ name: String?) throws -> String {
        // A remote name that rclone would read as something else (a flag, a path with a colon).
        guard !remote.isEmpty, !remote.hasPrefix("-"), !remote.contains(":"), !remote.contains("/"),
              !remote.contains("\0"), !path.contains("\0") else {
            throw StorageError.unusable(destination: location, reason: "'\(remote)' is not an rclone remote name")
        }
        let base = remote + ":" + path
        guard let name else { return base }
        return path.isEmpty || path.hasSuffix("/") ? base + name : base + "/" + name
    }

    /// `name` as people see it in messages (`rclone:REMOTE:PATH/NAME`).
    func displayName(_ name: String) -> String {
        "rclone:" + ((try? objectPath(name)) ?? name)
    }

    // MARK: Helpers

    /// Every file in the destination's folder, temporaries and the lock among them; none when
    /// the folder does not exist yet.
    private func files() throws -> [RcloneEntry] {
        let now = ContinuousClock.now
        let (kept, generation) = listingMemo.withLock { memo in (memo.files(at: now), memo.generation) }
        if let kept { return kept }
        let outcome = try runner.run("lsjson", options: ["--files-only", "--no-modtime", "--no-mimetype"], paths: [objectPath(nil)],
                                     outputLimit: RcloneBackend.listingLimit)
        if outcome.termination.exitStatus == 3 { return [] }
        guard outcome.succeeded else { throw failure(outcome, operation: "list", name: nil) }
        guard outcome.output.count < RcloneBackend.listingLimit else {
            throw StorageError.unusable(destination: location, reason: "its listing ('rclone lsjson') is larger than "
                + "\(RcloneBackend.listingLimit >> 20) MiB, more than any Keepsake destination holds: check the remote and path")
        }
        guard let entries = RcloneEntry.listing(outcome.output) else {
            throw StorageError.unusable(destination: location, reason: "'rclone lsjson' printed something that is not a listing")
        }
        let files = entries.filter { !$0.isDirectory }
        listingMemo.withLock { $0.keep(files, taken: now, generation: generation) }
        return files
    }

    /// The file `name` in the kept listing, while it is kept (a listing holds no folders).
    private func listedFile(_ name: String) -> RcloneEntry? {
        listingMemo.withLock { $0.files(at: .now) }?.first { $0.name == name }
    }

    /// Makes the next `list` or `removeLeftovers` ask the remote again: called before this
    /// backend changes the folder, and once it holds the lock.
    func forgetListing() {
        listingMemo.withLock { $0.forget() }
    }

    /// What `rclone lsjson --stat` says of `name`; nil when there is nothing of that name.
    func entry(_ name: String, cancellable: Bool = true) throws -> RcloneEntry? {
        let outcome = try runner.run("lsjson", options: ["--stat", "--no-mimetype"], paths: [objectPath(name)],
                                     outputLimit: RcloneBackend.lockSizeLimit, cancellable: cancellable)
        if outcome.isNotFound { return nil }
        guard outcome.succeeded else { throw failure(outcome, operation: "look up", name: name) }
        guard let entry = RcloneEntry.stat(outcome.output) else {
            throw StorageError.io(name: displayName(name), operation: "look up", reason: "'rclone lsjson --stat' printed something else")
        }
        return entry
    }

    /// The entry of the object `name`, which must exist and not be a folder.
    private func existingObject(_ name: String, operation: String) throws -> RcloneEntry {
        guard let entry = try entry(name) else { throw StorageError.notFound(name: name, destination: location) }
        guard !entry.isDirectory else {
            throw StorageError.io(name: displayName(name), operation: operation, reason: "it is a folder, not an object Keepsake stored")
        }
        return entry
    }

    /// Renames `name` onto `newName`, replacing it. `--ignore-times`: without it rclone 1.60
    /// judges an existing object of the same size and modification time to be the same,
    /// keeps it and deletes the source — losing the new bytes (likely on remotes that keep
    /// times to the second).
    func rename(_ name: String, to newName: String) throws {
        forgetListing()
        let outcome = try runner.run("moveto", options: ["--ignore-times"], paths: [objectPath(name), objectPath(newName)])
        guard outcome.succeeded else { throw failure(outcome, operation: "rename", name: name) }
    }

    /// The error for a failed run about `name` (about the destination for nil).
    func failure(_ outcome: RcloneRunner.Outcome, operation: String, name: String?) -> Error {
        if outcome.isUnknownRemote {
            let configuration = (runner.environment["RCLONE_CONFIG"] ?? "").isEmpty
                ? "rclone's configuration file" : "the rclone configuration file RCLONE_CONFIG names"
            return StorageError.unusable(destination: location, reason: "\(configuration) has no remote '\(remote)'; "
                + "see 'rclone listremotes', or add it with 'rclone config'")
        }
        guard let name else { return StorageError.unusable(destination: location, reason: runner.reason(outcome)) }
        if outcome.isNotFound { return StorageError.notFound(name: name, destination: location) }
        return StorageError.io(name: displayName(name), operation: operation, reason: runner.reason(outcome))
    }

    /// The error for a failure while streaming to or from `process` about `name`: rclone's
    /// own words once it has ended (EPIPE means it stopped reading).
    func failure(of process: ChildProcess, after error: Error, operation: String, name: String) -> Error {
        switch error as? ChildProcess.Failure {
        case .io(let code)?:
            if (try? process.finish()) == nil { process.terminate() }
            let outcome = RcloneRunner.Outcome(of: process)
            if outcome.succeeded {
                return StorageError.io(name: displayName(name), operation: operation, reason: FileDescriptorIO.message(code))
            }
            return failure(outcome, operation: operation, name: name)
        case .cancelled?:
            process.terminate()
            return Interruption()
        default:
            process.terminate()
            return error
        }
    }
}

// MARK: - Listing memo

/// The last listing of an rclone destination's folder, for as long as it may be used again.
private struct ListingMemo {
    /// The files listed, and when; nil when forgotten.
    private var kept: (files: [RcloneEntry], taken: ContinuousClock.Instant)?
    /// Counts `forget()` calls: a listing that was running meanwhile is not kept, as it may
    /// predate the change.
    private(set) var generation = 0

    /// The kept listing, while younger than `RcloneBackend.listingReuse`.
    func files(at now: ContinuousClock.Instant) -> [RcloneEntry]? {
        guard let kept, now - kept.taken < RcloneBackend.listingReuse else { return nil }
        return kept.files
    }

    /// Keeps `files`, listed from `taken` on, unless the folder changed since (`generation`
    /// read before listing).
    mutating func keep(_ files: [RcloneEntry], taken: ContinuousClock.Instant, generation: Int) {
        guard generation == self.generation else { return }
        kept = (files, taken)
    }

    mutating func forget() {
        kept = nil
        generation += 1
    }
}
