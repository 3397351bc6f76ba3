import KeepsakeModel

/// What repairing one backup's manifest did.
public struct RepairOutcome: Sendable, Equatable {
    /// How it ended.
    public enum Kind: String, Sendable {
        /// The manifest beside the archive was rebuilt from the archive's own copy.
        case rebuilt
        /// The manifest beside the archive was fine; nothing was written.
        case intact
        /// The archive's own manifest could not be read either; nothing was written.
        case unrecoverable
    }

    public var id: BackupID
    public var archiveName: String
    public var kind: Kind
    /// Why (for `unrecoverable`), or what was wrong (for `rebuilt`).
    public var reason: String

    /// Creates an outcome.
    public init(id: BackupID, archiveName: String, kind: Kind, reason: String) {
        self.id = id
        self.archiveName = archiveName
        self.kind = kind
        self.reason = reason
    }
}
