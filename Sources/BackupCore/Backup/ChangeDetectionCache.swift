import Foundation
import KeepsakeHashing
import KeepsakeModel
import KeepsakeStorage

/// What a backup host keeps of its own encrypted backups so the next one can be
/// incremental: with public-key encryption it cannot read their manifests back from the
/// destination. It keeps a copy of each manifest it wrote (the metadata and SHA-256 of its
/// own files: names, sizes, times, modes; never contents) in a folder of its own under
/// `$XDG_CACHE_HOME/keepsake` (`~/.cache/keepsake`), mode 0700, one folder per destination.
/// Losing it costs one full backup, never a wrong one: a cached manifest is used only for a
/// backup the destination still lists under the same id.
public final class ChangeDetectionCache {
    // MARK: Settings

    /// How many manifests a destination's folder keeps (the newest): the next backup needs
    /// one; a few more cover source sets backed up in turn to the same destination.
    static let kept = 6

    // MARK: State

    /// The folder of this destination's manifests.
    let storage: LocalFolderBackend
    private let root: String

    /// The cache of the destination `location` under `root` (`…/keepsake`).
    public init(root: String, destination location: String) {
        self.root = root
        let key = SHA256Hasher.hex(of: Array(location.utf8)).prefix(24)
        storage = LocalFolderBackend(path: root + "/" + key)
    }

    /// The folder, for messages.
    public var location: String { storage.location }

    // MARK: Trust

    /// Why the cache must not be used, or nil: the root and this destination's folder, where
    /// they exist, must be folders (not symbolic links) owned by this user with no access for
    /// group or others. Someone else's folder there could hold a forged manifest that makes
    /// the next backup take a changed file for unchanged (and verify, going by the
    /// manifest, would call that backup intact).
    public var problem: String? {
        for folder in [root, storage.location] {
            var info = stat()
            guard lstat(folder, &info) == 0 else {
                if errno == ENOENT { continue }
                return "cannot look at the change-detection cache \(folder): \(String(cString: strerror(errno)))"
            }
            guard info.st_mode & S_IFMT == S_IFDIR else {
                return "the change-detection cache \(folder) is not a folder (a symbolic link, say); it is not used: remove it"
            }
            guard info.st_uid == geteuid() else {
                return "the change-detection cache \(folder) belongs to user \(info.st_uid), not to this user; it is not used: "
                    + "remove it (someone else could forge what it holds)"
            }
            guard info.st_mode & 0o077 == 0 else {
                return "the change-detection cache \(folder) is open to group or others (mode "
                    + String(info.st_mode & 0o777, radix: 8) + "); it is not used: run 'chmod 700 \(folder)'"
            }
        }
        return nil
    }

    // MARK: Reading

    /// The cached summaries (with their sources), by backup id.
    func summaries() -> [BackupID: (manifestName: String, summary: BackupSummary)] {
        var found: [BackupID: (manifestName: String, summary: BackupSummary)] = [:]
        guard let items = try? BackupCatalog(storage: storage, keyring: .empty).items() else { return found }
        for item in items {
            if let summary = item.summary { found[item.id] = (item.manifestName, summary) }
        }
        return found
    }

    // MARK: Writing

    /// Starts keeping a copy of the manifest `name` (its plain, compressed form); nil when
    /// the folder cannot be used, which costs the next backup its incrementality only.
    func begin(_ name: String) -> PendingObject? {
        let parent = (root as NSString).deletingLastPathComponent
        try? FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        guard mkdir(root, 0o700) == 0 || errno == EEXIST else { return nil }
        do {
            try storage.prepare()
            // Checked again once made: a folder someone slipped in meanwhile is not written to.
            guard problem == nil else { return nil }
            return try storage.create(name)
        } catch {
            return nil
        }
    }

    /// Forgets the manifests of backups the destination no longer holds, and all but the
    /// newest `kept`.
    func trim(keeping present: Set<BackupID>) {
        guard let objects = try? storage.list() else { return }
        let cached = objects.compactMap { object in BackupNaming.id(fromManifestName: object.name).map { ($0, object.name) } }
            .sorted { $0.0 > $1.0 }
        let kept = Set(cached.filter { present.contains($0.0) }.prefix(ChangeDetectionCache.kept).map(\.1))
        for entry in cached where !kept.contains(entry.1) {
            try? storage.delete(entry.1)
        }
        _ = try? storage.removeLeftovers()
    }
}
