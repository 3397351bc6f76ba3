import KeepsakeModel
import KeepsakeStorage

/// Finishes what an interrupted prune began: a backup whose removal marker
/// (`HOST_ID.pruning`) is there and whose manifest is gone was being removed, so what is
/// left of it goes too (a manifest lost otherwise is rebuilt instead, by the backup).
enum InterruptedRemovals {
    /// Deletes the rest of every backup a prune was removing, then the markers; returns the
    /// names deleted. Call holding the lock, with `objects` as just listed.
    static func finish(in storage: any WritableStorage, objects: [StoredObject]) throws -> [String] {
        var removed: [String] = []
        let names = Set(objects.map(\.name))
        for marker in objects where marker.name.hasSuffix(BackupNaming.pruneMarkerSuffix) {
            let stem = String(marker.name.dropLast(BackupNaming.pruneMarkerSuffix.count))
            if !BackupNaming.manifestSuffixes.contains(where: { names.contains(stem + $0) }) {
                for object in objects where object.name != marker.name && BackupNaming.stem(of: object.name) == stem {
                    try storage.delete(object.name)
                    removed.append(object.name)
                }
            }
            try storage.delete(marker.name)
        }
        return removed
    }
}
