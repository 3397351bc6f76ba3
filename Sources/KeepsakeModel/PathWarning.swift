/// A problem with one path that did not stop the run.
public struct PathWarning: Sendable, Equatable {
    /// What kind of problem it was.
    public enum Kind: String, Sendable {
        /// The path could not be read (permission, I/O error, vanished).
        case unreadable
        /// The file changed while it was being read.
        case changed
        /// The path was skipped on purpose (unsafe, unsupported type, existing file kept).
        case skipped
        /// Content did not match the manifest, or the archive is damaged there.
        case damaged
        /// Metadata (owner, xattrs, times) could not be applied.
        case metadata
        /// A restore could not write the path into its target (permission, no descriptor
        /// left, a name the file system refuses): it is missing from the restore.
        case unwritable
    }

    public var kind: Kind
    /// The path as people read it.
    public var path: String
    public var reason: String

    /// Creates a warning.
    public init(kind: Kind, path: String, reason: String) {
        self.kind = kind
        self.path = path
        self.reason = reason
    }
}
