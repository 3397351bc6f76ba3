import Foundation
import KeepsakeModel

/// Whether prune keeps one backup, and why.
public struct PruneDecision: Sendable, Equatable {
    // MARK: Fields

    /// The backup.
    public var id: BackupID
    /// When it was created; nil when its manifest cannot be read.
    public var created: Date?
    /// True for an incremental backup.
    public var isIncremental: Bool
    /// True to keep it, false to remove it.
    public var keep: Bool
    /// Every reason it is kept (rules like `daily snapshot #3`, `needed by <id>`, or
    /// `manifest unreadable; kept`); empty when it is removed.
    public var reasons: [String]
    /// The backed-up paths (part of its group: host and sources).
    public var sources: [String]
    /// The host it was made on (part of its group).
    public var host: String

    // MARK: Creation

    /// Creates a decision.
    public init(id: BackupID, created: Date?, isIncremental: Bool, keep: Bool, reasons: [String], sources: [String],
                host: String) {
        self.id = id
        self.created = created
        self.isIncremental = isIncremental
        self.keep = keep
        self.reasons = reasons
        self.sources = sources
        self.host = host
    }
}
