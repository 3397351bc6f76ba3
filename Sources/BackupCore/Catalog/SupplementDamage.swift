/// A supplement (or an archive a file was to be copied from into one) that is not what its
/// manifest records: prune stops before removing anything, verify and repair say which.
/// Exit 4, like any backup found damaged.
public struct SupplementDamage: Error, Sendable, CustomStringConvertible {
    /// What is wrong, naming the object.
    public var reason: String

    /// A damage described by `reason`.
    public init(reason: String) {
        self.reason = reason
    }

    public var description: String { reason }
}
