import KeepsakeModel

/// Which entries of a backup's manifest an archive was seen to hold, so that what it lacks
/// can be named afterwards. With the manifest known before reading, a byte per manifest
/// position (no path is kept). A lone archive's manifest is its last entry: until it is
/// read there is nothing to index by, so the archive paths met are kept, packed, and
/// looked up once it is (`resolve(against:)`).
struct SeenEntries {
    // MARK: State

    /// Whether the manifest position of each entry was seen.
    private var positions: [Bool]
    /// Whether no manifest is known yet, so paths are kept instead of positions.
    private let keepsPaths: Bool
    /// The archive paths met while `keepsPaths`, each followed by a NUL (no path holds one:
    /// names come from C strings).
    private var paths: [UInt8] = []

    // MARK: Life cycle

    /// Marks by position in a manifest of `count` entries, known before reading.
    init(positions count: Int) {
        self.init(positions: [Bool](repeating: false, count: count), keepsPaths: false)
    }

    /// Keeps the archive paths met, for a manifest read only at the archive's end.
    static func byPath() -> SeenEntries {
        SeenEntries(positions: [], keepsPaths: true)
    }

    private init(positions: [Bool], keepsPaths: Bool) {
        self.positions = positions
        self.keepsPaths = keepsPaths
    }

    // MARK: Marking

    /// Notes that the archive held the entry at archive path `path`, whose manifest
    /// position is `position` when a manifest is known (nil when it lists no such path).
    mutating func mark(_ position: Int?, path: [UInt8]) {
        if let position {
            positions[position] = true
        } else if keepsPaths {
            paths.append(contentsOf: path)
            paths.append(0)
        }
    }

    /// Looks the paths kept up in the manifest read at the archive's end (`index`), and
    /// from then on answers by its positions.
    mutating func resolve(against index: ManifestIndex) {
        guard keepsPaths else { return }
        positions = [Bool](repeating: false, count: index.entries.count)
        var start = paths.startIndex
        while let end = paths[start...].firstIndex(of: 0) {
            if let position = index.position(of: paths[start..<end]) { positions[position] = true }
            start = end + 1
        }
        paths = []
    }

    // MARK: Answers

    /// Whether the entry at manifest position `position` was seen.
    subscript(position: Int) -> Bool {
        positions.indices.contains(position) && positions[position]
    }
}
