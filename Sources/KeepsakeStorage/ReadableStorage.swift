import KeepsakeHashing
import KeepsakeSupport

/// A place backups can be read from: a destination, or a folder holding a lone archive
/// file. Everything that only reads backups (list, restore, verify, diff, find, the source
/// of a copy) is given one of these, so the compiler proves it stores, deletes and locks
/// nothing; `WritableStorage` adds what a destination alone can do.
///
/// A committed object is read front to back or at any offset (a partial restore fetches
/// only the frames it needs).
public protocol ReadableStorage: AnyObject {
    /// The destination as people name it, for messages (`/srv/backups`, `s3://…`).
    var location: String { get }

    /// Whether names here are Keepsake's own (a destination) or a person's (see `ObjectNaming`).
    var naming: ObjectNaming { get }

    /// The folder on this machine that holds the objects, when they are files in one (the
    /// backup leaves it out of its own scan); nil for remote stores.
    var localFolder: String? { get }

    /// What was worked out from this store's objects in this process (manifest
    /// summaries), or nil for a store that remembers nothing.
    var memo: ObjectMemo? { get }

    /// Committed objects; never the temporary ones of a store in progress.
    func list() throws -> [StoredObject]

    /// Opens a committed object for reading, front to back or at any offset.
    func open(_ name: String) throws -> RandomAccessSource
}

extension ReadableStorage {
    /// Keepsake's own names unless a store says otherwise.
    public var naming: ObjectNaming { .keepsake }

    /// Not a local folder unless a store says so.
    public var localFolder: String? { nil }

    /// Nothing remembered unless a store keeps a memo.
    public var memo: ObjectMemo? { nil }

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
