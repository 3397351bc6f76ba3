import Foundation
import KeepsakeArchive
import KeepsakeModel
import KeepsakeSupport

/// What one restore does with each archive entry, decided from the request and the
/// manifest alone (it looks at nothing on disk): which entries it takes (the selection,
/// and the files that selected hard links need), where each lands (`--strip-components`),
/// with which metadata, and what the overwrite policy does when something is already there.
struct RestorePlan {
    // MARK: Types

    /// An archive entry to restore, and where.
    struct Step {
        /// Its header, with the manifest's metadata where the manifest is the record.
        let header: ArchiveEntryHeader
        /// Where it lands, as safe components relative to the target.
        let components: [[UInt8]]
        /// The path it is restored and reported as: the archive's own, or, for a file the
        /// selection left out, the selected hard link that takes its content in.
        let path: [UInt8]
        /// Its manifest entry, when a manifest is known.
        let entry: ManifestEntry?
    }

    /// What becomes of an archive entry.
    enum Decision {
        /// Restored as the step says.
        case restore(Step)
        /// Not part of this restore (or of this archive's phase): its content is passed over.
        case skip
        /// An unsafe path (see `ArchivePath`): never written.
        case refuse(path: [UInt8], reason: String)
        /// It disagrees with the manifest: never written.
        case damaged(path: [UInt8], reason: String)
    }

    /// What an entry does about something already at its place in the target.
    enum Meeting: Equatable {
        /// A folder of the backup finds a folder: nothing is made; with `takesMetadata`, the
        /// folder gets the backup's mode and time at the end.
        case folderThere(takesMetadata: Bool)
        /// A folder of the backup finds something else there: that is left alone.
        case notAFolderInTheWay
        /// A folder is where something else of the backup goes: it is left alone.
        case folderInTheWay
        /// The policy keeps what is there.
        case keep
        /// The backup's entry replaces what is there.
        case replace
    }

    // MARK: State

    /// The paths and patterns asked for.
    let selection: RestoreSelection
    /// With a manifest and a selection, the entries to look up: the selected ones and the
    /// files their hard links need. Nil means every entry.
    let wanted: ManifestEntries?
    private let stripComponents: Int
    private let overwrite: OverwritePolicy
    /// Hard-link targets left out by the selection → the first selected name of each: the
    /// content is restored under that name instead, and further names link to it.
    private let redirects: [PathKey: [UInt8]]

    // MARK: Life cycle

    /// The plan of `request` for a backup described by `manifest` (nil when the manifest
    /// is read only at the end of the archive); throws on a selection pattern that is not
    /// valid.
    init(manifest: Manifest?, request: RestoreRequest) throws {
        self.init(manifest: manifest, selection: try RestoreSelection(request.selectionPaths),
                  stripComponents: request.stripComponents, overwrite: request.overwrite)
    }

    /// The plan of restoring `selection` from a backup described by `manifest`.
    init(manifest: Manifest?, selection: RestoreSelection, stripComponents: Int = 0, overwrite: OverwritePolicy = .never) {
        self.selection = selection
        self.stripComponents = stripComponents
        self.overwrite = overwrite
        var redirects: [PathKey: [UInt8]] = [:]
        if let manifest, !selection.isEverything {
            for entry in manifest.entries where entry.type == .hardlink {
                // Both names must be safe to write: an unsafe one is refused where it is met.
                guard let linkTarget = entry.linkTarget, redirects[PathKey(linkTarget)] == nil,
                      case .success = ArchivePath.components(of: entry.path),
                      case .success = ArchivePath.components(of: linkTarget),
                      selection.matches(entry.path, isDirectory: false),
                      !selection.matches(linkTarget, isDirectory: false) else { continue }
                redirects[PathKey(linkTarget)] = entry.path
            }
        }
        self.redirects = redirects
        // With a selection, only the selected entries (and the files their hard links need)
        // are looked up: entries left out are skipped before any look-up.
        if let manifest, !selection.isEverything {
            wanted = ManifestEntries(manifest.entries.lazy.filter { entry in
                redirects[PathKey(entry.path)] != nil || selection.matches(entry.path, isDirectory: entry.type == .directory)
            })
        } else {
            wanted = nil
        }
    }

    // MARK: Entries

    /// What to do with the archive entry `archived`. With `holder` nil the archive is the
    /// restored backup's own, otherwise the earlier backup `holder`'s, of which only the
    /// files `expected` says it holds are taken. `expected` is the manifest known before
    /// reading (nil for a lone archive); the entry is marked in `seen` when the archive
    /// meets it (by its manifest position, or for a lone archive by its path, checked
    /// against the archive's own manifest once read), so that what the archive lacks can
    /// be named afterwards.
    func decide(_ archived: ArchiveEntryHeader, holder: BackupID?, expected: ManifestIndex?,
                seen: inout SeenEntries) -> Decision {
        var header = archived
        // `./` in a tarball made with `tar -C DIR .`: the target itself, which the restore
        // leaves as it is (its mode and owner are the user's, not the archive's).
        if header.type == .directory, ArchivePath.namesTheTarget(header.path) { return .skip }
        var components: [[UInt8]]
        switch ArchivePath.components(of: header.path) {
        case .failure(let refusal): return .refuse(path: header.path, reason: refusal.reason)
        case .success(let parts): components = parts
        }
        // The archive's path as it is when it is already in normal form (the usual case):
        // the joined components are that long only when they are the same bytes.
        var path = components.reduce(components.count - 1) { $0 + $1.count } == header.path.count
            ? header.path : components.dropFirst().reduce(components[0]) { PathBytes.join($0, $1) }
        let archivePath = path
        let archiveKey = PathKey(archivePath)
        // The manifest's entry for the path, looked up once.
        let position = expected?.position(of: path[...])
        let known = position.flatMap { expected?.entries[$0] }
        if stripComponents > 0 {
            // Placed without its first components; the archive path stays its name here.
            guard components.count > stripComponents else {
                seen.mark(position, path: path)
                return .skip
            }
            components.removeFirst(stripComponents)
        }
        if let holder {
            // An earlier backup's archive: only the files the restored backup takes from it,
            // with the restored backup's metadata.
            guard header.type == .file, let entry = known, entry.storedIn == holder else { return .skip }
            header = RestorePlan.header(header, describedBy: entry)
        } else if let entry = known {
            if entry.storedIn != nil { return .skip }
            // The manifest is the record: a damaged tar header must not change the metadata.
            if header.type == .file || header.type == .directory { header = RestorePlan.header(header, describedBy: entry) }
        }
        if !selection.matches(path, isDirectory: header.type == .directory) {
            // A file left out whose other (selected) name is a hard link: restore it there.
            guard header.type == .file, let redirected = redirects[archiveKey],
                  case .success(let parts)? = placement(of: redirected) else { return .skip }
            path = redirected
            components = parts
        } else if header.type == .hardlink, let linkTarget = header.linkTarget, redirects[PathKey(linkTarget)] == path {
            // This name already holds the content (see above).
            seen.mark(position, path: path)
            return .skip
        }
        // Met: checked against the manifest known, or the archive's own once it is read.
        seen.mark(position, path: archivePath)
        if expected != nil, let problem = ManifestCheck.mismatch(header, known) {
            return .damaged(path: path, reason: problem)
        }
        return .restore(Step(header: header, components: components, path: path, entry: known))
    }

    /// Where the archive path `path` lands in the target: its safe components less the
    /// first `--strip-components`; nil when none is left (it is not restored).
    func placement(of path: [UInt8]) -> Result<[[UInt8]], ArchivePath.Refusal>? {
        switch ArchivePath.components(of: path) {
        case .failure(let refusal): return .failure(refusal)
        case .success(let parts):
            guard stripComponents > 0 else { return .success(parts) }
            return parts.count > stripComponents ? .success(Array(parts.dropFirst(stripComponents))) : nil
        }
    }

    /// Whether the file at archive path `path`, left out by the selection, is restored under
    /// a selected hard link's name instead.
    func isRedirected(_ path: [UInt8]) -> Bool {
        redirects[PathKey(path)] != nil
    }

    /// The archive path whose restored file a hard link to `original` names: `original`,
    /// or the selected name its content was restored under when `original` was left out.
    func linkedPath(_ original: [UInt8]) -> [UInt8] {
        redirects[PathKey(original)] ?? original
    }

    /// The archive header with the metadata the manifest records for the restored backup
    /// (an unchanged file may have a new mode, owner or time since the archive was made).
    private static func header(_ header: ArchiveEntryHeader, describedBy entry: ManifestEntry) -> ArchiveEntryHeader {
        var described = header
        described.permissions = entry.mode
        described.uid = entry.uid
        described.gid = entry.gid
        described.userName = entry.userName
        described.groupName = entry.groupName
        (described.mtimeSeconds, described.mtimeNanoseconds) = entry.mtimeParts
        return described
    }

    // MARK: What is already there

    /// Whether an entry of `type` must look for something already at its place: in a
    /// folder that started empty, only folders can be there (made on the way to another).
    func mayMeetExisting(_ type: EntryType, targetStartedEmpty: Bool) -> Bool {
        !targetStartedEmpty || type == .directory
    }

    /// What the entry `header` does about `existing` (`lstat` of what is at its place).
    func meeting(_ existing: stat, for header: ArchiveEntryHeader) -> Meeting {
        let isFolder = existing.st_mode & S_IFMT == S_IFDIR
        if header.type == .directory {
            return isFolder ? .folderThere(takesMetadata: overwrite == .always) : .notAFolderInTheWay
        }
        if RestorePlan.keeps(existing, for: header, policy: overwrite) { return .keep }
        return isFolder ? .folderInTheWay : .replace
    }

    /// Whether a hard link recorded only in the manifest (its content is in an earlier
    /// archive) keeps what is at its place: only `--overwrite never` keeps it.
    var keepsExistingForRecordedLinks: Bool { overwrite == .never }

    /// Whether `policy` keeps `existing` rather than putting the backup's `header` there.
    private static func keeps(_ existing: stat, for header: ArchiveEntryHeader, policy: OverwritePolicy) -> Bool {
        switch policy {
        case .never: return true
        case .ifNewer:
            let existingTime = Int64(existing.st_mtim.tv_sec) * 1_000_000_000 + Int64(existing.st_mtim.tv_nsec)
            return existingTime >= header.mtimeTotalNanoseconds
        case .always: return false
        }
    }
}
