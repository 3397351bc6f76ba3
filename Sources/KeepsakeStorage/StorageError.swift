import KeepsakeSupport

/// Failures of a destination.
public enum StorageError: SourceFailure, Sendable, Equatable, CustomStringConvertible {
    /// The destination cannot be used (missing, not a directory, no permission).
    case unusable(destination: String, reason: String)
    /// An object is not in the destination.
    case notFound(name: String, destination: String)
    /// Reading or writing an object failed.
    case io(name: String, operation: String, reason: String)
    /// The destination has no room left.
    case full(destination: String)

    public var description: String {
        switch self {
        case .unusable(let destination, let reason): return "Cannot use destination \(destination): \(reason)"
        case .notFound(let name, let destination): return "\(name) is not in \(destination)"
        case .io(let name, let operation, let reason): return "Cannot \(operation) \(name): \(reason)"
        case .full(let destination): return "No space left in \(destination); free some space or prune old backups"
        }
    }
}
