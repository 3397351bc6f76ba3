/// Whether one backup is kept, and every rule that keeps it.
///
/// Reasons read like restic's `forget` output plus each rule's running count:
/// `last snapshot #1`, `hourly snapshot #24`, `daily snapshot #3`, `oldest weekly snapshot #4`,
/// `within 7d`, `has tags [db, nightly]`, `has no tags`. A removed backup has no reasons.
public struct RetentionDecision: Sendable, Equatable {
    // MARK: Properties

    /// The backup's id, as given in its ``RetentionCandidate``.
    public let id: String
    /// True to keep the backup, false to remove it.
    public let keep: Bool
    /// Every reason the backup is kept, in rule order; empty when it is removed.
    public let reasons: [String]

    // MARK: Creation

    /// A decision as given.
    public init(id: String, keep: Bool, reasons: [String]) {
        self.id = id
        self.keep = keep
        self.reasons = reasons
    }

    // MARK: Amending

    /// The same decision, kept, with `reason` added after the existing reasons (unless it is
    /// already there).
    ///
    /// For rules applied after the planner, e.g. prune keeping a backup that a kept incremental
    /// backup needs: `decision.keeping(because: "base of 20261129T023000Z-3f9a1c2e")`.
    public func keeping(because reason: String) -> RetentionDecision {
        let amended = reasons.contains(reason) ? reasons : reasons + [reason]
        return RetentionDecision(id: id, keep: true, reasons: amended)
    }
}
