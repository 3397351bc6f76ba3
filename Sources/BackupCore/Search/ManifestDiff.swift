import KeepsakeArchive
import KeepsakeModel
import KeepsakeSupport

/// What changed between two backups, path by path: the core of `keepsake diff`.
///
/// Entries are matched by their raw archive path (bytes, so names that are not UTF-8 work),
/// through a `ManifestIndex` of each side: the comparison is linear in the number of entries, plus one sort
/// of the changed paths. Each path that differs becomes one `Row`:
///
/// - **added** / **removed**: the path is only in the newer / older backup;
/// - **modified**: the content changed — a file's size or SHA-256, a device's number — or the
///   entry's type did (a file became a folder, …);
/// - **metadata**: the content is the same, but the mode, owner, modification time, a
///   symlink's target or a file's hard-link grouping changed (`changes` says which).
///
/// A rename is a removed and an added path; when their content is the same, each row names
/// the other in `sameContentAs`.
///
/// Content is compared by SHA-256 and size only, never by where it is stored: an entry of an
/// incremental backup whose content lives in an earlier backup's archive (`storedIn`) equals
/// a full backup's entry with the same hash. A file and a hard link are the same kind of
/// entry (a hard link repeats its file's size and SHA-256), so a file that gains or loses a
/// further name is a metadata change (`hardlink`), not a type change. When either side has no
/// SHA-256 (a plain tarball listed from its headers), a changed modification time counts as
/// possibly changed content, the way `rsync` decides without reading files.
/// Status-change time, inode and device number are never compared: they change on every
/// copy or restore without the file changing for its user.
public struct ManifestDiff: Sendable {
    // MARK: Types

    /// How a path differs between the two backups.
    public enum Status: String, Sendable, CaseIterable {
        /// Only in the newer backup.
        case added
        /// Only in the older backup.
        case removed
        /// Content or type changed.
        case modified
        /// Same content; mode, owner, time or link changed.
        case metadata
    }

    /// One way an entry changed; `rawValue` is the word `--json` uses.
    public enum Change: String, Sendable, CaseIterable {
        /// The kind of entry changed (file, dir, symlink, …).
        case type
        /// A file's size changed.
        case size
        /// A file's SHA-256 changed (or, without hashes, possibly its content).
        case content
        /// A device node's device number changed.
        case device
        /// The permission bits changed.
        case mode
        /// The owning user or group id changed.
        case owner
        /// The modification time changed.
        case mtime
        /// A symlink's target changed.
        case target
        /// A file became, or stopped being, a further name of another file, or names another one.
        case hardlink

        /// Whether the change is to content (making the row `modified`) rather than metadata.
        public var isContent: Bool {
            switch self {
            case .type, .size, .content, .device: return true
            case .mode, .owner, .mtime, .target, .hardlink: return false
            }
        }
    }

    /// One path that differs.
    public struct Row: Sendable, Equatable {
        /// The archive path (raw bytes).
        public var path: [UInt8]
        /// How it differs.
        public var status: Status
        /// The entry in the older backup; nil when added.
        public var before: ManifestEntry?
        /// The entry in the newer backup; nil when removed.
        public var after: ManifestEntry?
        /// What changed, content changes first; empty for added and removed paths.
        public var changes: [Change]
        /// For an added file: a removed file with the same content (non-empty, same SHA-256),
        /// and for a removed file an added one — most likely it was renamed or moved.
        public var sameContentAs: [UInt8]?

        /// Creates a row.
        public init(path: [UInt8], status: Status, before: ManifestEntry?, after: ManifestEntry?, changes: [Change],
                    sameContentAs: [UInt8]? = nil) {
            self.path = path
            self.status = status
            self.before = before
            self.after = after
            self.changes = changes
            self.sameContentAs = sameContentAs
        }

        /// The path for people (invalid bytes escaped).
        public var displayPath: String { PathBytes.display(path) }

        /// The content size in the older backup; nil when absent or not a file.
        public var sizeBefore: Int64? { before.flatMap(ManifestDiff.contentSize) }

        /// The content size in the newer backup; nil when absent or not a file.
        public var sizeAfter: Int64? { after.flatMap(ManifestDiff.contentSize) }
    }

    // MARK: Result

    /// Every path that differs, sorted by path (byte order).
    public let rows: [Row]

    /// The number of rows of each status.
    public func count(_ status: Status) -> Int {
        rows.reduce(0) { $1.status == status ? $0 + 1 : $0 }
    }

    /// The rows of one status, in path order.
    public func rows(_ status: Status) -> [Row] {
        rows.filter { $0.status == status }
    }

    /// True when the two backups hold the same paths with the same content and metadata.
    public var isEmpty: Bool { rows.isEmpty }

    // MARK: Comparing

    /// Compares an older manifest (`from`) with a newer one (`to`).
    public init(from older: Manifest, to newer: Manifest) {
        self.init(before: older.entries, after: newer.entries)
    }

    /// Compares the entries of an older backup with those of a newer one. A path listed twice
    /// counts with its later entry, as in tar.
    public init(before older: [ManifestEntry], after newer: [ManifestEntry]) {
        self.init(before: ManifestEntries(older), after: ManifestEntries(newer))
    }

    /// Compares the entries of an older backup with those of a newer one (see above).
    public init(before older: ManifestEntries, after newer: ManifestEntries) {
        var builder = Builder(before: older)
        for entry in newer { builder.add(entry) }
        self = builder.finish()
    }

    /// The rows found.
    private init(rows: [Row]) {
        self.rows = rows
    }

    /// Compares an older backup's entries, held, with a newer backup's entries handed in one
    /// at a time (read front to back, never held): only the rows that differ hold entries.
    public struct Builder {
        private let older: ManifestEntries
        private let oldIndex: ManifestIndex
        /// For each older position (the last entry of its path): not met yet, met unchanged,
        /// or the number of its row.
        private var outcome: [Int32]
        private static let notMet: Int32 = -1
        private static let unchanged: Int32 = -2
        /// Rows so far; nil where a later line of the same path replaced the row.
        private var rows: [Row?] = []
        /// The row of each path only the newer backup has.
        private var added: [PathKey: Int] = [:]

        /// A comparison against `older`.
        public init(before older: ManifestEntries) {
            self.older = older
            oldIndex = ManifestIndex(older)
            outcome = [Int32](repeating: Builder.notMet, count: older.count)
        }

        /// Compares the next entry of the newer backup (a later line of a path replaces an
        /// earlier one, as in tar).
        public mutating func add(_ entry: ManifestEntry) {
            guard let position = oldIndex.position(of: entry.path[...]) else {
                let key = PathKey(entry.path)
                if let earlier = added[key] { rows[earlier] = nil }
                added[key] = rows.count
                rows.append(Row(path: entry.path, status: .added, before: nil, after: entry, changes: []))
                return
            }
            if outcome[position] >= 0 { rows[Int(outcome[position])] = nil }
            let previous = older[position]
            let changes = ManifestDiff.changes(from: previous, to: entry)
            guard !changes.isEmpty else {
                outcome[position] = Builder.unchanged
                return
            }
            let status: Status = changes.contains(where: \.isContent) ? .modified : .metadata
            outcome[position] = Int32(rows.count)
            rows.append(Row(path: entry.path, status: status, before: previous, after: entry, changes: changes))
        }

        /// The rows, with every older path the newer backup did not have as removed.
        public func finish() -> ManifestDiff {
            var rows = self.rows.compactMap { $0 }
            for position in oldIndex.distinctPositions where outcome[position] == Builder.notMet {
                let entry = older[position]
                rows.append(Row(path: entry.path, status: .removed, before: entry, after: nil, changes: []))
            }
            rows.sort { $0.path.lexicographicallyPrecedes($1.path) }
            ManifestDiff.pairRenames(&rows)
            return ManifestDiff(rows: rows)
        }
    }

    /// Points added and removed files with the same content at each other (first in path
    /// order wins when several share it). Empty files are left alone: they all look alike.
    private static func pairRenames(_ rows: inout [Row]) {
        var removedByHash: [String: [UInt8]] = [:]
        var addedByHash: [String: [UInt8]] = [:]
        for row in rows {
            if row.status == .removed, let entry = row.before, let hash = renameKey(entry), removedByHash[hash] == nil {
                removedByHash[hash] = row.path
            } else if row.status == .added, let entry = row.after, let hash = renameKey(entry), addedByHash[hash] == nil {
                addedByHash[hash] = row.path
            }
        }
        guard !removedByHash.isEmpty && !addedByHash.isEmpty else { return }
        for index in rows.indices {
            switch rows[index].status {
            case .added: rows[index].sameContentAs = rows[index].after.flatMap(renameKey).flatMap { removedByHash[$0] }
            case .removed: rows[index].sameContentAs = rows[index].before.flatMap(renameKey).flatMap { addedByHash[$0] }
            case .modified, .metadata: break
            }
        }
    }

    /// The hash that identifies a non-empty file's content, nil for anything else.
    private static func renameKey(_ entry: ManifestEntry) -> String? {
        hasFileContent(entry.type) && entry.size > 0 ? entry.sha256 : nil
    }

    /// What changed from `old` to `new` (the same path), content changes first; empty when
    /// nothing that matters did.
    public static func changes(from old: ManifestEntry, to new: ManifestEntry) -> [Change] {
        let oldHasContent = hasFileContent(old.type)
        if oldHasContent != hasFileContent(new.type) || (!oldHasContent && old.type != new.type) {
            return [.type]
        }
        var changes: [Change] = []
        let mtimeChanged = old.mtimeNanoseconds != new.mtimeNanoseconds
        if oldHasContent {
            if old.size != new.size { changes.append(.size) }
            if let oldHash = old.sha256, let newHash = new.sha256 {
                if oldHash != newHash { changes.append(.content) }
            } else if old.size == new.size && mtimeChanged {
                // No hash to go by: a new modification time may mean new content.
                changes.append(.content)
            }
        }
        if (old.type == .characterDevice || old.type == .blockDevice) && old.rdev != new.rdev {
            changes.append(.device)
        }
        if old.mode != new.mode { changes.append(.mode) }
        if old.uid != new.uid || old.gid != new.gid { changes.append(.owner) }
        if mtimeChanged { changes.append(.mtime) }
        if old.type == .symlink && old.linkTarget != new.linkTarget { changes.append(.target) }
        if oldHasContent && (old.type != new.type || (old.type == .hardlink && old.linkTarget != new.linkTarget)) {
            changes.append(.hardlink)
        }
        return changes
    }

    // MARK: Helpers

    /// Files and hard links carry content (a hard link repeats its file's size and hash).
    private static func hasFileContent(_ type: EntryType) -> Bool {
        type == .file || type == .hardlink
    }

    /// The size worth showing: a file's or hard link's content size, nil for other kinds.
    static func contentSize(_ entry: ManifestEntry) -> Int64? {
        hasFileContent(entry.type) ? entry.size : nil
    }
}
