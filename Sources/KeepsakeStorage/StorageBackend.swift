import Foundation
import KeepsakeHashing
import KeepsakeSupport

/// One stored object as a listing shows it.
public struct StoredObject: Sendable, Equatable {
    /// The object's name in the destination (no directories).
    public var name: String
    /// Its size in bytes.
    public var size: Int64

    /// Creates a listing row.
    public init(name: String, size: Int64) {
        self.name = name
        self.size = size
    }

    /// Object names are single path components that do not start with a dot (dot-names
    /// are the backends' own: temporaries, the lock), in every backend.
    public static func checkName(_ name: String) throws {
        guard !name.isEmpty, !name.contains("/"), !name.hasPrefix("."), !name.contains("\0") else {
            throw StorageError.io(name: name, operation: "use", reason: "not a valid object name")
        }
    }
}

/// Where backups live. Everything above this protocol talks to a destination only through
/// it, so nothing assumes a local path: a local folder, a folder holding a lone archive
/// (read-only), S3-compatible object storage and rclone remotes conform, and one
/// conformance suite (StorageConformanceTests) holds them all to the same promises.
///
/// Objects are write-once: `create` streams one in and `commit` makes it visible whole
/// (a backup commits its archive first and its manifest last, so a manifest always names a
/// complete archive); a committed object is read front to back or at any offset (a partial
/// restore fetches only the frames it needs).
public protocol StorageBackend: AnyObject {
    /// The destination as people name it, for messages (`/srv/backups`, `s3://…`).
    var location: String { get }

    /// True when nothing can be stored, deleted or locked here (a folder that merely holds
    /// an archive someone copied there): those calls throw `StorageError.readOnly`.
    var isReadOnly: Bool { get }

    /// Creates the destination when it does not exist yet (owner-only access).
    func prepare() throws

    /// Committed objects; never the temporary ones of a store in progress.
    func list() throws -> [StoredObject]

    /// Starts storing `name`; nothing is visible until `commit()`.
    func create(_ name: String) throws -> PendingObject

    /// Opens a committed object for reading, front to back or at any offset.
    func open(_ name: String) throws -> RandomAccessSource

    /// Removes a committed object.
    func delete(_ name: String) throws

    /// Gives a committed object another name (replacing an object of that name). Stores
    /// without a rename copy and then delete; only used to set a broken archive aside.
    func move(_ name: String, to newName: String) throws

    /// Takes the destination's lock, or throws `LockError.held` naming the holder. A lock
    /// left by a process that no longer runs on this host is taken over; the returned
    /// handle then names the previous holder.
    func acquireLock(_ owner: LockOwner) throws -> DestinationLock

    /// Removes what interrupted runs left behind (temporary objects). Call only while
    /// holding the lock. Returns the names removed.
    func removeLeftovers() throws -> [String]

    /// What was worked out from this destination's objects in this process (manifest
    /// summaries), or nil for a backend that remembers nothing.
    var memo: ObjectMemo? { get }
}

extension StorageBackend {
    /// Writable unless a backend says otherwise.
    public var isReadOnly: Bool { false }

    /// Nothing remembered unless a backend keeps a memo.
    public var memo: ObjectMemo? { nil }

    /// Stores a whole (small) object and commits it; nothing is left when that fails.
    public func writeObject(_ name: String, bytes: [UInt8]) throws {
        let object = try create(name)
        do {
            try bytes.withUnsafeBytes { try object.write($0) }
            try object.commit()
        } catch {
            object.abort()
            throw error
        }
    }

    /// Reads a whole (small) object into memory.
    public func readObject(_ name: String, limit: Int = 1 << 30) throws -> [UInt8] {
        let source = try open(name)
        defer { source.close() }
        return try source.readAll(limit: limit)
    }

    /// The SHA-256 (hex) of the object `name` as stored, read front to back, checking
    /// `cancellation` between chunks.
    package func sha256(of name: String, cancellation: CancellationFlag) throws -> String {
        let hashing = HashingSource(source: try open(name))
        defer { hashing.close() }
        try hashing.drain(cancellation: cancellation)
        return hashing.finalizeHex()
    }
}
