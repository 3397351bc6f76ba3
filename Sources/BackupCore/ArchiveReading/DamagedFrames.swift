import KeepsakeArchive
import KeepsakeModel
import KeepsakeSupport

/// The frames of a seekable zstd archive found damaged, so that a reader can go on past
/// them: the archive's frames are independent, and the manifest says where each entry lies
/// in the tar stream, so every entry that lies wholly in intact frames can still be read
/// (issue 25 §2.3: one flipped byte must cost the entries of one frame, not the rest of the
/// archive).
struct DamagedFrames {
    // MARK: State

    /// The archive's seek table (from the archive: its frame sizes are checked by the
    /// decoder, and a lying table only costs what it misplaces).
    let table: SeekTable
    /// Indexes (in `table`) of the frames found damaged.
    private(set) var frames: Set<Int> = []

    // MARK: Life cycle

    /// The damage bookkeeping of `source`, or nil when it cannot be read in parts (no seek
    /// table, or frames larger than Keepsake decompresses in one piece). No frame is known
    /// damaged yet: each is added as reading meets it (one the table places past the end of
    /// the file too, when it is read short).
    init?(source: RandomAccessSource) {
        guard let table = RangedZstdSource.table(of: source), !table.frames.isEmpty else { return nil }
        self.table = table
    }

    /// No frame damaged yet, of `table`.
    private init(table: SeekTable) {
        self.table = table
    }

    // MARK: Recording

    /// Records `frame` as damaged; false when it was known already or is not a frame of the
    /// table (reading around it again would meet the same damage).
    mutating func add(_ frame: Int) -> Bool {
        guard table.frames.indices.contains(frame) else { return false }
        return frames.insert(frame).inserted
    }

    // MARK: Answers

    /// Whether any of the tar stream's bytes `range` lie in a damaged frame (an empty range
    /// counts by its start).
    func touches(_ range: Range<Int64>) -> Bool {
        guard let first = table.frameIndex(containing: range.lowerBound) else { return true }
        let last = range.isEmpty ? first : (table.frameIndex(containing: range.upperBound - 1) ?? table.frames.count - 1)
        if last - first < frames.count {
            return (first...last).contains(where: frames.contains)
        }
        return frames.contains { (first...last).contains($0) }
    }

    /// The entries of `scope` not `done`, split into those lying (at least partly) in a
    /// damaged frame and the others, each in manifest order; nil when one of them has no
    /// place in the tar stream (a manifest without `at`/`len`), so that nothing is read around.
    func split(_ scope: ManifestIndex, unless done: (Int) -> Bool) -> (lost: [Int], rest: [Int])? {
        var lost: [Int] = []
        var rest: [Int] = []
        for position in scope.distinctPositions where !done(position) {
            guard let location = scope.entries.location(at: position) else { return nil }
            if touches(location) { lost.append(position) } else { rest.append(position) }
        }
        return (lost, rest)
    }

    /// The frame where the first entry of `scope` (by its place in the tar stream) that is
    /// not `done` begins: where reading stopped when damage gave no frame of its own.
    func firstFrame(of scope: ManifestIndex, unless done: (Int) -> Bool) -> Int? {
        var first: Int64?
        for position in scope.distinctPositions where !done(position) {
            guard let start = scope.entries.location(at: position)?.lowerBound else { continue }
            first = min(first ?? start, start)
        }
        return first.flatMap(table.frameIndex(containing:))
    }

    /// The damaged frames that `range` of the tar stream touches, as `description` says them
    /// ("frame 7"): what an entry lying there was lost to (all of them when it touches none).
    func description(of range: Range<Int64>) -> String {
        guard let first = table.frameIndex(containing: range.lowerBound) else { return "past the end of the archive" }
        let last = range.isEmpty ? first : (table.frameIndex(containing: range.upperBound - 1) ?? table.frames.count - 1)
        var touched = DamagedFrames(table: table)
        for frame in first...last where frames.contains(frame) { touched.frames.insert(frame) }
        // An entry cut short by damage no frame was found for: every frame found so far.
        return touched.frames.isEmpty ? description : touched.description
    }

    /// "frame 7" or "frames 7 and 9", for messages.
    var description: String {
        let sorted = frames.sorted().map(String.init)
        switch sorted.count {
        case 0: return "no frame"
        case 1: return "frame \(sorted[0])"
        default: return "frames " + sorted.dropLast().joined(separator: ", ") + " and " + sorted[sorted.count - 1]
        }
    }
}
