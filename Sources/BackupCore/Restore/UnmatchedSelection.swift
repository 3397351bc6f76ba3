import Foundation
import KeepsakeModel

/// Paths given to restore that name nothing in the backup, not even read as a name, a
/// relative path or the original path (`SelectionResolver`): the error says which, with the
/// closest paths the backup holds.
public struct UnmatchedSelection: Error, Sendable, Equatable, CustomStringConvertible {
    /// The backup searched.
    public let backup: BackupID
    /// The paths as given, as bytes.
    public let paths: [[UInt8]]
    /// Each path shown with the closest paths of the backup, as the message lists them.
    public let shown: [String]
    /// Which other backups hold the paths, as a sentence (the command line finds them);
    /// nil for the usual advice on how to name a path.
    public var elsewhere: String?

    /// Creates the error.
    public init(backup: BackupID, paths: [[UInt8]], shown: [String]) {
        self.backup = backup
        self.paths = paths
        self.shown = shown
    }

    public var description: String {
        let head = "Nothing in backup \(backup) matches \(shown.joined(separator: ", "))"
        if let elsewhere { return head + "; " + elsewhere }
        return head + ". Give a path as 'keepsake list \(backup)' or 'keepsake find' prints it, the original path, "
            + "or one relative to a source folder"
    }
}
