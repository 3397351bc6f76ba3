import KeepsakeModel

/// What the archives of backups verified in this run hold: for each backup, the SHA-256 of
/// every file stored in its own archive (the last line of a path wins, as in a restore).
///
/// Verifying an incremental backup checks that every backup it takes files from holds each
/// of them as recorded. Without this memo each of those manifests was read again for every
/// backup of the chain that relies on it: verifying the 25th backup of a chain read about
/// 300 manifests (78% of a nightly `run`). With it, each is read once per run.
///
/// Bounded by a number of files (the oldest backups are forgotten first); a backup no longer
/// held is checked by reading its manifest as before, so the bound costs time, never
/// correctness.
final class HeldFilesMemo {
    // MARK: State

    private var files: [BackupID: [PathKey: String]] = [:]
    /// Backups in the order they were kept, oldest first.
    private var order: [BackupID] = []
    private var total = 0
    private let limit: Int

    /// The most files kept across all backups: a full backup of 200,000 files takes about
    /// 40 MB.
    static let defaultLimit = 200_000

    /// A memo holding at most `limit` files across all backups.
    init(limit: Int = HeldFilesMemo.defaultLimit) {
        self.limit = limit
    }

    // MARK: Keeping

    /// Keeps what `manifest`, backup `id`'s own, says its archive holds. An archive holding
    /// more files than the whole limit is not kept.
    func keep(_ id: BackupID, manifest: Manifest) {
        let entries = manifest.entries
        guard limit > 0, files[id] == nil else { return }
        var held: [PathKey: String] = [:]
        for position in entries.indices {
            let key = PathKey(entries.path(at: position))
            if entries.type(at: position) == .file, entries.storedIn(at: position) == nil, let digest = entries.sha256(at: position) {
                held[key] = digest
            } else {
                held[key] = nil
            }
        }
        guard held.count <= limit else { return }
        while total + held.count > limit, !order.isEmpty {
            let oldest = order.removeFirst()
            total -= files.removeValue(forKey: oldest)?.count ?? 0
        }
        files[id] = held
        order.append(id)
        total += held.count
    }

    // MARK: Asking

    /// The files backup `id`'s archive holds (path → SHA-256), or nil when it is not kept.
    func held(by id: BackupID) -> [PathKey: String]? {
        files[id]
    }
}
