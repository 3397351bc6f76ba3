/// Manifest entries looked up by archive path (a later duplicate wins, as in tar). It
/// keeps each entry's position, not a copy: a dictionary of 60,000 whole entries held
/// about 26 MB more during a full restore.
public struct ManifestIndex: Sendable, Sequence {
    // MARK: State

    /// The entries, in manifest order (shared with the manifest, not copied).
    public let entries: [ManifestEntry]
    private let positions: [PathKey: Int]

    // MARK: Life cycle

    /// Indexes `entries`.
    public init(_ entries: [ManifestEntry]) {
        self.entries = entries
        var positions: [PathKey: Int] = [:]
        positions.reserveCapacity(entries.count)
        for (position, entry) in entries.enumerated() { positions[PathKey(entry.path)] = position }
        self.positions = positions
    }

    // MARK: Look-ups

    /// The entry for `key`, if the manifest has one.
    public subscript(key: PathKey) -> ManifestEntry? {
        positions[key].map { entries[$0] }
    }

    /// How many distinct paths there are.
    public var count: Int { positions.count }

    // MARK: Sequence

    /// Each distinct path with its entry, in no particular order.
    public struct Iterator: IteratorProtocol {
        fileprivate var inner: Dictionary<PathKey, Int>.Iterator
        fileprivate let entries: [ManifestEntry]

        public mutating func next() -> (key: PathKey, value: ManifestEntry)? {
            inner.next().map { ($0.key, entries[$0.value]) }
        }
    }

    public func makeIterator() -> Iterator {
        Iterator(inner: positions.makeIterator(), entries: entries)
    }
}
