import KeepsakeSupport

/// Failures that stop a command. Each names the thing and says what to do.
public enum EngineError: SourceFailure, Sendable, Equatable, CustomStringConvertible {
    /// An id, prefix or `latest` matched no backup.
    case backupNotFound(reference: String, destination: String)
    /// A prefix matched several backups.
    case ambiguousReference(reference: String, candidates: [String])
    /// The restore target cannot be used.
    case targetUnusable(path: String, reason: String)
    /// The backup's manifest beside the archive cannot be read.
    case manifestUnreadable(name: String, reason: String)
    /// A backup's manifest is there but its archive is gone: an integrity failure.
    case archiveMissing(name: String, backup: String, destination: String)
    /// A backup's objects are not the backup their names say (planted, swapped or edited by
    /// someone who can write the destination): nothing of it is used, not even the copy of
    /// the manifest inside its archive. An integrity failure.
    case misnamed(name: String, reason: String)
    /// Reading stdin failed.
    case stdinUnreadable(reason: String)
    /// A value the engine was given is not acceptable.
    case invalidRequest(String)

    public var description: String {
        switch self {
        case .backupNotFound(let reference, let destination):
            return "No backup '\(reference)' in \(destination); run 'keepsake list' to see the backups"
        case .ambiguousReference(let reference, let candidates):
            return "'\(reference)' matches \(candidates.count) backups (\(candidates.prefix(5).joined(separator: ", "))); give more of the id"
        case .targetUnusable(let path, let reason): return "Cannot restore into '\(path)': \(reason)"
        case .manifestUnreadable(let name, let reason):
            return "Cannot read the manifest \(name): \(reason); run 'keepsake repair' to rebuild it from its archive"
        case .archiveMissing(let name, let backup, let destination):
            return "The archive \(name) of backup \(backup) is missing from \(destination); the backup cannot be restored (run 'keepsake verify')"
        case .misnamed(let name, let reason):
            return "\(name) is not the backup its name says: \(reason). Nothing of it was used; someone who can write the "
                + "destination put it there or changed it (run 'keepsake verify', and see docs/threat-model.md)"
        case .stdinUnreadable(let reason): return "Cannot read standard input: \(reason)"
        case .invalidRequest(let reason): return reason
        }
    }
}
