import KeepsakeArchive
import KeepsakeModel
import KeepsakeScan
import KeepsakeSupport

/// Which backups hold paths matching a pattern: the core of `keepsake find`.
///
/// The pattern follows the rules of `--exclude` (see `ExcludeRules`): without a slash it
/// matches an entry's name at any depth (`notes.txt`, `*.pdf`); with a leading or middle
/// slash it must match the whole archive path (`home/*/notes.txt`; a leading `/` is
/// optional, since archive paths are absolute paths without it); `**` spans folders; a
/// trailing `/` matches folders only. There is nothing to re-include, so a leading `!` is
/// an ordinary character here (`!important.txt` finds a file of that name).
///
/// A search reads each backup's manifest once, through the `BackupCatalog`, one backup at a
/// time, front to back without holding it, and keeps only the matching entries (a line is
/// judged from its path before it is decoded). A backup whose manifest cannot be read is
/// skipped and reported in `Result.skipped`; the search goes on.
public struct BackupSearch: Sendable {
    // MARK: Types

    /// One matching entry of one backup.
    public struct Match: Sendable {
        /// The backup holding it.
        public var backup: BackupSummary
        /// The entry, as its manifest records it.
        public var entry: ManifestEntry

        /// Creates a match.
        public init(backup: BackupSummary, entry: ManifestEntry) {
            self.backup = backup
            self.entry = entry
        }
    }

    /// A backup left out because its manifest could not be read.
    public struct Skipped: Sendable, Equatable {
        /// The backup's id (from the manifest's object name).
        public var id: BackupID
        /// Why its manifest could not be read.
        public var reason: String

        /// Creates a skipped backup.
        public init(id: BackupID, reason: String) {
            self.id = id
            self.reason = reason
        }
    }

    /// What a search over a destination found.
    public struct Result: Sendable {
        /// Every match: backups oldest first, entries in path order within a backup.
        public var matches: [Match]
        /// Backups whose manifest could not be read, oldest first.
        public var skipped: [Skipped]
        /// How many backups were searched (skipped ones not counted).
        public var searchedCount: Int

        /// The ids of the backups with at least one match, oldest first.
        public var backupIDs: [BackupID] {
            var ids: [BackupID] = []
            for match in matches where ids.last != match.backup.id { ids.append(match.backup.id) }
            return ids
        }
    }

    // MARK: Properties

    /// The pattern as given.
    public let pattern: String
    private let rules: ExcludeRules

    // MARK: Creating

    /// Compiles `pattern`.
    /// - Throws: `ExcludePatternError` when the pattern is empty or malformed.
    public init(pattern: String) throws(ExcludePatternError) {
        self.pattern = pattern
        // A leading `!` would negate the pattern, which means nothing for a search: make it literal.
        let compiled = pattern.hasPrefix("!") ? "\\" + pattern : pattern
        do {
            rules = try ExcludeRules(patterns: [compiled])
        } catch {
            throw ExcludePatternError(pattern: pattern, kind: error.kind)
        }
    }

    // MARK: Matching

    /// Whether an entry's archive path matches the pattern.
    public func matches(_ entry: ManifestEntry) -> Bool {
        matches(path: entry.path, type: entry.type)
    }

    /// Whether an archive path of that type matches the pattern.
    private func matches(path: [UInt8], type: EntryType) -> Bool {
        // Archive paths are absolute paths without the leading `/`, so the relative path is
        // the whole path; an empty absolute path keeps anchored patterns from being tried twice.
        rules.isExcluded(relativePath: path, absolutePath: [], isDirectory: type == .directory)
    }

    /// The matching entries of one manifest, in path order (a path listed twice counts once,
    /// with its later entry, as in tar).
    public func matches(in manifest: Manifest) -> [ManifestEntry] {
        var byPath: [[UInt8]: ManifestEntry] = [:]
        for entry in manifest.entries where matches(entry) { byPath[entry.path] = entry }
        return byPath.values.sorted { $0.path.lexicographicallyPrecedes($1.path) }
    }

    /// The matching entries of one backup's manifest, read front to back, in path order (a
    /// path listed twice counts once, with its later entry); and the backup's summary.
    private func matches(of item: BackupCatalog.Item, in catalog: BackupCatalog) throws -> (BackupSummary, [ManifestEntry]) {
        var byPath: [[UInt8]: ManifestEntry] = [:]
        let summary = try catalog.forEachEntry(of: item, keeping: { path, type in
            self.matches(path: Array(path), type: type)
        }) { entry in
            byPath[entry.path] = entry
        }
        return (summary, byPath.values.sorted { $0.path.lexicographicallyPrecedes($1.path) })
    }

    // MARK: Searching

    /// Searches every committed backup in `catalog`, oldest first.
    /// - Throws: when the destination cannot be listed, or `Interruption` when
    ///   `cancellation` is set. An unreadable manifest is not an error: see `Result.skipped`.
    /// Only the backups `including` accepts are searched (`--host`, `--source`).
    public func search(_ catalog: BackupCatalog, cancellation: CancellationFlag? = nil,
                       including: (BackupCatalog.Item) -> Bool = { _ in true }) throws -> Result {
        var result = Result(matches: [], skipped: [], searchedCount: 0)
        for item in try catalog.items() where including(item) {
            try cancellation?.check()
            guard item.summary != nil else {
                result.skipped.append(Skipped(id: item.id, reason: item.problem ?? "its first line cannot be read"))
                continue
            }
            let found: (summary: BackupSummary, entries: [ManifestEntry])
            do {
                found = try matches(of: item, in: catalog)
            } catch {
                result.skipped.append(Skipped(id: item.id, reason: "\(error)"))
                continue
            }
            result.searchedCount += 1
            for entry in found.entries {
                result.matches.append(Match(backup: found.summary, entry: entry))
            }
        }
        return result
    }
}
