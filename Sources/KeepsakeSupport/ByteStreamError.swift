/// Why a byte stream could not be read as asked.
public enum ByteStreamError: SourceFailure, Sendable, Equatable, CustomStringConvertible {
    /// `readAll(limit:)` met more bytes than its limit: the object is refused rather than
    /// held in memory whole.
    case tooLarge(limit: Int)
    /// `name` was read after it was closed.
    case closed(name: String)

    public var description: String {
        switch self {
        case .tooLarge(let limit): return "Object is larger than \(limit) bytes"
        case .closed(let name): return "Cannot read \(name): closed"
        }
    }
}
