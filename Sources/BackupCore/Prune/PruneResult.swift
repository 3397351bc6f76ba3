import Foundation
import KeepsakeModel

/// What a prune run decided and did.
public struct PruneResult: Sendable {
    // MARK: Fields

    /// One decision for every backup in the destination, newest first.
    public var decisions: [PruneDecision]
    /// The backups removed, newest first; for a dry run, the ones that would be removed.
    public var removed: [BackupID]
    /// True when nothing was removed on purpose.
    public var dryRun: Bool
    /// Bytes of archives and manifests removed (or that would be, for a dry run), less what
    /// new supplements store (a dry run does not know that yet).
    public var freedBytes: Int64
    /// With consolidation: the files kept backups take from removed backups that are copied
    /// into supplements first (or would be), and their bytes before compression.
    public var supplementedFiles = 0
    public var supplementedBytes: Int64 = 0
    /// The supplements written, and the bytes they store (0 for a dry run).
    public var supplementsWritten = 0
    public var supplementStoredBytes: Int64 = 0

    // MARK: Creation

    /// Creates a result.
    public init(decisions: [PruneDecision], removed: [BackupID], dryRun: Bool, freedBytes: Int64) {
        self.decisions = decisions
        self.removed = removed
        self.dryRun = dryRun
        self.freedBytes = freedBytes
    }

    // MARK: Queries

    /// The backups kept, newest first.
    public var kept: [BackupID] { decisions.filter(\.keep).map(\.id) }
}
