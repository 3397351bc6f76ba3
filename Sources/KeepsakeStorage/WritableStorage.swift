import Foundation
import KeepsakeSupport

/// Where backups live: a destination, which is read (see `ReadableStorage`) and also
/// written, pruned and locked. Everything above storage talks to a destination only through
/// this protocol, so nothing assumes a local path: a local folder, S3-compatible object
/// storage and rclone remotes conform, and one conformance suite (StorageConformanceSuite)
/// holds them all to the same promises.
///
/// Objects are write-once: `create` streams one in and `commit` makes it visible whole
/// (a backup commits its archive first and its manifest last, so a manifest always names a
/// complete archive).
public protocol WritableStorage: ReadableStorage {
    /// Creates the destination when it does not exist yet (owner-only access).
    func prepare() throws

    /// Starts storing `name`; nothing is visible until `commit()`.
    func create(_ name: String) throws -> PendingObject

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
}

extension WritableStorage {
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
}
