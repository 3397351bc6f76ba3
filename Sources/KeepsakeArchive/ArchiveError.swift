/// Failures while writing or reading an archive.
public enum ArchiveError: Error, Sendable, Equatable, CustomStringConvertible {
    /// libarchive refused a setting (codec, level, format).
    case setup(String)
    /// Writing the archive failed.
    case write(path: String, reason: String)
    /// Reading the archive failed: it is damaged, truncated or not an archive.
    case damaged(archive: String, reason: String)

    public var description: String {
        switch self {
        case .setup(let reason): return "Cannot set up the archive: \(reason)"
        case .write(let path, let reason): return "Cannot write \(path) to the archive: \(reason)"
        case .damaged(let archive, let reason): return "\(archive) is damaged or not an archive: \(reason)"
        }
    }
}
