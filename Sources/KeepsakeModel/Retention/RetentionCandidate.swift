import Foundation

/// One backup as the retention planner sees it: its id, when it was made, and its tags.
public struct RetentionCandidate: Sendable, Equatable {
    // MARK: Properties

    /// The backup's id, copied into its ``RetentionDecision``.
    public let id: String
    /// When the backup was made; buckets and `keepWithin` use this.
    public let date: Date
    /// The backup's tags, matched by ``RetentionPolicy/keepTags``.
    public let tags: [String]

    // MARK: Creation

    /// A candidate for the planner.
    public init(id: String, date: Date, tags: [String] = []) {
        self.id = id
        self.date = date
        self.tags = tags
    }
}
