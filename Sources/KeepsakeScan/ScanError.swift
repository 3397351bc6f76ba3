/// Why a scan could not start at a source (not why one path under it was left out: those
/// are warnings, and the scan goes on).
public enum ScanError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A source given to back up is missing, empty or cannot be opened.
    case sourceUnusable(path: String, reason: String)

    public var description: String {
        switch self {
        case .sourceUnusable(let path, let reason): return "Cannot back up '\(path)': \(reason)"
        }
    }
}
