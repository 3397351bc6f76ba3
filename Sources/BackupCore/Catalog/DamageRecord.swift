import Foundation
import KeepsakeJSON
import KeepsakeModel
import KeepsakeStorage
import KeepsakeSupport

/// A note in the destination that a backup was found damaged, so that the next backup of
/// its chain starts a new chain by itself instead of building on it every night.
///
/// The note is a small object beside the backup, `HOST_ID.damaged`, holding one JSON line
/// (the backup's id, when and by what it was found: never a file name, since it is stored
/// in the clear beside encrypted backups too). `verify` writes it when it finds the backup's
/// own archive or manifest damaged and removes it when the backup verifies intact again (a
/// repaired or copied-back archive); a backup writes it when its parent's manifest breaks
/// off while read; prune removes it with its backup.
public struct DamageRecord: Sendable, Equatable {
    // MARK: Fields

    /// The backup found damaged.
    public let id: BackupID
    /// When it was found.
    public let found: Date
    /// What found it: `verify`, or `backup` (reading the parent's manifest).
    public let foundBy: String

    /// A record of `id` found damaged by `foundBy` at `found`.
    public init(id: BackupID, found: Date, foundBy: String) {
        self.id = id
        self.found = found
        self.foundBy = foundBy
    }

    // MARK: Naming

    /// The record's object name for the backup whose manifest is `manifestName`.
    public static func name(forManifest manifestName: String) -> String? {
        BackupNaming.stem(of: manifestName).map { $0 + BackupNaming.damageMarkerSuffix }
    }

    // MARK: Reading and writing

    /// The record stored for `item`, when there is one (`names`: the destination's object
    /// names, listed by the caller); a record that cannot be read still counts, found now.
    public static func stored(for item: BackupCatalog.Item, names: Set<String>, in storage: any ReadableStorage) -> DamageRecord? {
        guard let name = name(forManifest: item.manifestName), names.contains(name) else { return nil }
        guard let bytes = try? storage.readObject(name, limit: 1 << 16), let json = try? JSONParser.parse(bytes),
              let found = json["found"]?.stringValue.flatMap(Timestamp.parseISO8601) else {
            return DamageRecord(id: item.id, found: Date(), foundBy: "verify")
        }
        return DamageRecord(id: item.id, found: found, foundBy: json["by"]?.stringValue ?? "verify")
    }

    /// Stores the record beside `item`. Call while holding the destination's lock.
    public func store(for item: BackupCatalog.Item, in storage: any WritableStorage) throws {
        guard let name = DamageRecord.name(forManifest: item.manifestName) else { return }
        let line = JSONValue.object(JSONObject([
            ("keepsake", .string("damage")),
            ("backup", .string(id.rawValue)),
            ("found", .string(Timestamp.iso8601(found))),
            ("by", .string(foundBy)),
        ])).serialized() + "\n"
        try storage.writeObject(name, bytes: Array(line.utf8))
    }

    /// Removes the record of `item`, if there is one. Call while holding the destination's lock.
    public static func remove(for item: BackupCatalog.Item, in storage: any WritableStorage) throws {
        guard let name = name(forManifest: item.manifestName) else { return }
        do {
            try storage.delete(name)
        } catch StorageError.notFound {
            // Gone already: what removing it was for.
        }
    }

    // MARK: Words

    /// "found damaged by verify on 2026-12-01".
    public var description: String {
        "found damaged by \(foundBy == "backup" ? "a backup reading its manifest" : "verify") on \(Timestamp.iso8601(found).prefix(10))"
    }

    /// What fixes a damaged chain, for every message that names one.
    public static let remedy = "the next backup starts a new chain by itself; `keepsake backup --full` starts one now"
}
