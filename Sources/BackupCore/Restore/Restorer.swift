import Foundation
import KeepsakeModel
import KeepsakeSigning
import KeepsakeSupport

/// Restores all or part of an archive into a target folder. Every file gets its name only
/// once its SHA-256 matches the manifest: written unnamed and linked in (a target that
/// started empty), or under a temporary name and renamed into place. With the manifest
/// known in advance (the copy beside the archive), each file lands as soon as it checks
/// out; without it (a lone archive), files wait under temporary names until the manifest —
/// the archive's last entry — has been read.
///
/// This type finds what a request means in a backup; each run is a `RestoreRun`, made of
/// parts with one job each (`RestorePlan`, `RestorePlacement`, `PendingCommit`,
/// `FolderFixes`).
public final class Restorer {
    // MARK: Dependencies

    private weak var events: EngineEventSink?
    private let cancellation: CancellationFlag
    /// Added to the names of files restored from a damaged archive that has no manifest.
    public static let unverifiedSuffix = ".unverified"

    /// A restorer reporting to `events`.
    public init(events: EngineEventSink?, cancellation: CancellationFlag) {
        self.events = events
        self.cancellation = cancellation
    }

    // MARK: Restoring

    /// Finds the archive of an earlier backup that an incremental one relies on; nil when
    /// it cannot be found.
    public typealias ArchiveLocator = (BackupID) throws -> (source: RandomAccessSource, name: String)?
    /// Points the files of a manifest that lie in backups no longer there at the supplements
    /// that hold them (`LocatedBackup.relocatingToSupplements`), before they are restored.
    public typealias Relocator = (inout Manifest) throws -> Void

    /// Restores a backup found by `BackupLocator`: the manifest beside its archive (when
    /// there is one) checks every file as it comes, and the earlier archives of its chain are
    /// reached through it.
    public func restore(_ backup: LocatedBackup, request: RestoreRequest) throws -> RestoreResult {
        var request = request
        // Before anything of the backup is read as a backup: a forged one must not even
        // pick what is restored.
        if let key = request.signedBy { try backup.requireSignatures(SignatureCheck(key: key), cancellation: cancellation) }
        var manifest: Manifest?
        // A manifest beside the archive that cannot be read: the archive carries its own
        // copy, so the restore goes on with that (as from a lone archive file), and says so.
        var unreadableManifest: String?
        do {
            manifest = try backup.manifest(forRestoringPaths: request.selectionPaths)
        } catch EngineError.manifestUnreadable(let name, let reason) where backup.archiveName != nil {
            unreadableManifest = "the manifest \(name) cannot be read (\(reason)); the copy inside the archive was used "
                + "instead: run 'keepsake repair' to rebuild it"
        }
        if let partial = manifest, let resolved = try resolveSelections(request.selectionPaths, in: partial, of: backup) {
            request.selectionPaths = resolved
            manifest = try backup.manifest(forRestoringPaths: resolved)
        }
        let archive = try backup.openArchive()
        defer { archive.close() }
        var result = try restore(archive: archive, archiveName: backup.archiveLabel, manifest: manifest, request: request,
                                 locateArchive: { holder in try backup.earlierArchive(holder) },
                                 // Files of backups prune let go: from the supplements that hold them.
                                 relocate: { [cancellation] manifest in try backup.relocatingToSupplements(&manifest, cancellation: cancellation) })
        // The backup is damaged though every file may have come back: exit 4 all the same.
        if let unreadableManifest { result.noteArchiveProblem(unreadableManifest) }
        return result
    }

    /// The selections with every path that names nothing in the backup as given replaced
    /// by the paths it means (see `SelectionResolver`); nil when each named something
    /// already (`partial`: the manifest read for them). A path that means nothing is an
    /// error naming it, with the closest paths of the backup.
    private func resolveSelections(_ selections: [[UInt8]], in partial: Manifest, of backup: LocatedBackup) throws -> [[UInt8]]? {
        let isPattern: ([UInt8]) -> Bool = { $0.contains(where: { "*?[".utf8.contains($0) }) }
        let literal = RestoreSelection.normalized
        let unmatched = selections.filter { given in
            guard !isPattern(given), let path = literal(given) else { return false }
            return !partial.entries.contains { PathBytes.isSameOrBelow($0.path, path) }
        }
        guard !unmatched.isEmpty, let whole = try backup.manifest() else { return nil }
        let resolver = SelectionResolver(manifest: whole, workingDirectory: PathBytes.from(FileManager.default.currentDirectoryPath))
        var resolved = selections.filter { !unmatched.contains($0) }
        var nothing: [String] = []
        var nothingPaths: [[UInt8]] = []
        for given in unmatched {
            let resolution = resolver.resolve(given)
            if resolution.paths.isEmpty {
                let closest = resolution.suggestions.isEmpty ? ""
                    : " (closest: \(resolution.suggestions.map { "'\($0)'" }.joined(separator: ", ")))"
                nothing.append("'\(PathBytes.display(given))'\(closest)")
                nothingPaths.append(given)
                continue
            }
            let shown = resolution.paths.prefix(3).map(PathBytes.display).joined(separator: ", ")
            let more = resolution.paths.count > 3 ? " and \(resolution.paths.count - 3) more" : ""
            events?.handle(.notice("'\(PathBytes.display(given))' is \(shown)\(more) in backup \(whole.summary.id)"))
            resolved += resolution.paths
        }
        if !nothing.isEmpty {
            throw UnmatchedSelection(backup: whole.summary.id, paths: nothingPaths, shown: nothing)
        }
        return resolved
    }

    /// Restores from `archive`. `manifest` is the copy beside the archive when there is
    /// one; otherwise the archive's own manifest is used once it has been read. Files of an
    /// incremental backup that did not change live in earlier archives: `locateArchive`
    /// opens those, and each is read once, front to back.
    public func restore(archive: RandomAccessSource, archiveName: String, manifest: Manifest?, request: RestoreRequest,
                        locateArchive: ArchiveLocator? = nil, relocate: Relocator? = nil) throws -> RestoreResult {
        let run = try RestoreRun(manifest: manifest, request: request, events: events, cancellation: cancellation)
        return try run.restore(archive: archive, archiveName: archiveName, manifest: manifest, locateArchive: locateArchive,
                               relocate: relocate)
    }
}
