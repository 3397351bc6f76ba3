/// Manifest entries looked up by archive path (a later duplicate wins, as in tar). It keeps
/// each path's position in an open-addressing table of 32-bit numbers, hashing the path
/// where the entries store it: no copy of a path or an entry (a dictionary keyed by path
/// copies took about 120 bytes an entry more).
public struct ManifestIndex: Sendable, Sequence {
    // MARK: State

    /// The entries, in manifest order (shared with the manifest, not copied).
    public let entries: ManifestEntries
    /// Position + 1 of the entry whose path hashes here (or after, on a collision); 0 is free.
    private let slots: [UInt32]
    /// How many distinct paths there are.
    public let count: Int
    /// The positions indexed, when not all of them.
    private let subset: [Int]?

    // MARK: Life cycle

    /// Indexes `entries`.
    public init(_ entries: ManifestEntries) {
        self.init(entries, subset: nil)
    }

    /// Indexes the entries of `entries` at `positions` only (the files one earlier backup
    /// holds, say), sharing `entries` rather than copying those entries out.
    public init(_ entries: ManifestEntries, positions: [Int]) {
        self.init(entries, subset: positions)
    }

    private init(_ entries: ManifestEntries, subset: [Int]?) {
        self.entries = entries
        self.subset = subset
        var capacity = 16
        while capacity < (subset?.count ?? entries.count) * 2 { capacity <<= 1 }
        var slots = [UInt32](repeating: 0, count: capacity)
        var distinct = 0
        for position in subset ?? Array(entries.indices) {
            var slot = ManifestIndex.hash(entries, position) & (capacity - 1)
            while true {
                let taken = slots[slot]
                if taken == 0 {
                    slots[slot] = UInt32(position + 1)
                    distinct += 1
                    break
                }
                if entries.paths(at: Int(taken) - 1, and: position) {
                    slots[slot] = UInt32(position + 1)
                    break
                }
                slot = (slot + 1) & (capacity - 1)
            }
        }
        self.slots = slots
        count = distinct
    }

    /// Indexes `entries`.
    public init(_ entries: [ManifestEntry]) {
        self.init(ManifestEntries(entries))
    }

    /// The hash of the path of the entry at `position` (equal to `hash` of the same path as bytes).
    private static func hash(_ entries: ManifestEntries, _ position: Int) -> Int {
        var hasher = Hasher()
        entries.hashPath(at: position, into: &hasher)
        return hasher.finalize()
    }

    private static func hash(_ path: ArraySlice<UInt8>) -> Int {
        var hasher = Hasher()
        path.withUnsafeBytes { hasher.combine(bytes: $0) }
        return hasher.finalize()
    }

    // MARK: Look-ups

    /// The position in `entries` of the entry for `path`, if the manifest has one.
    public func position(of path: ArraySlice<UInt8>) -> Int? {
        let mask = slots.count - 1
        var slot = ManifestIndex.hash(path) & mask
        while true {
            let taken = slots[slot]
            if taken == 0 { return nil }
            if entries.path(at: Int(taken) - 1, equals: path) { return Int(taken) - 1 }
            slot = (slot + 1) & mask
        }
    }

    /// The position of the entry indexed for the path of the entry at `position`.
    private func position(ofEntryAt position: Int) -> Int? {
        let mask = slots.count - 1
        var slot = ManifestIndex.hash(entries, position) & mask
        while true {
            let taken = slots[slot]
            if taken == 0 { return nil }
            if entries.paths(at: Int(taken) - 1, and: position) { return Int(taken) - 1 }
            slot = (slot + 1) & mask
        }
    }

    /// The position in `entries` of the entry for `path`, if the manifest has one.
    public func position(of path: [UInt8]) -> Int? {
        position(of: path[...])
    }

    /// The entry for `key`, if the manifest has one.
    public subscript(key: PathKey) -> ManifestEntry? {
        position(of: key.bytes[...]).map { entries[$0] }
    }

    /// Whether the manifest has an entry for `path`.
    public func contains(_ path: [UInt8]) -> Bool {
        position(of: path[...]) != nil
    }

    /// The positions indexed, in manifest order: all of them, or the subset asked for.
    public var indexedPositions: [Int] {
        subset ?? Array(entries.indices)
    }

    /// The position of each distinct path's entry (the last of its duplicates), in manifest order.
    public var distinctPositions: [Int] {
        // As many distinct paths as positions: no duplicates, every position is its path's
        // (the usual case, and no path is hashed again).
        if count == subset?.count ?? entries.count { return indexedPositions }
        let isLast = { (candidate: Int) in position(ofEntryAt: candidate) == candidate }
        return subset.map { $0.filter(isLast) } ?? entries.indices.filter(isLast)
    }

    // MARK: Sequence

    /// Each distinct path with its entry, in no particular order.
    public struct Iterator: IteratorProtocol {
        fileprivate var slot = 0
        fileprivate let index: ManifestIndex

        public mutating func next() -> (key: PathKey, value: ManifestEntry)? {
            while slot < index.slots.count {
                let taken = index.slots[slot]
                slot += 1
                if taken != 0 {
                    let entry = index.entries[Int(taken) - 1]
                    return (PathKey(entry.path), entry)
                }
            }
            return nil
        }
    }

    public func makeIterator() -> Iterator {
        Iterator(index: self)
    }
}
