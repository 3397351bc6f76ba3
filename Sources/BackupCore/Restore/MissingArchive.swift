import Foundation
import KeepsakeModel

/// An earlier archive an incremental backup relies on that a restore could not find: the
/// files whose content it holds were not restored.
public struct MissingArchive: Sendable, Equatable {
    // MARK: State

    /// The backup whose archive holds the files.
    public let backupID: BackupID
    /// The file name it is looked for under beside a lone archive (`HOST_ID.tar.zst`; the
    /// extension is the restored backup's, and any of Keepsake's is accepted).
    public let fileName: String
    /// The selected files it holds, as text, sorted.
    public let paths: [String]

    // MARK: Life cycle

    /// A missing archive of backup `backupID`, known as `fileName`, holding `paths`.
    public init(backupID: BackupID, fileName: String, paths: [String]) {
        self.backupID = backupID
        self.fileName = fileName
        self.paths = paths
    }

    // MARK: Naming

    /// `HOST_ID`, the archive's name without its extension.
    public var stem: String {
        guard let dot = fileName.range(of: ".tar") else { return fileName }
        return String(fileName[..<dot.lowerBound])
    }
}
