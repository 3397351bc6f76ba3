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
