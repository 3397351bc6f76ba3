import KeepsakeArchive
import KeepsakeSupport

/// How supplements are named in a destination. A supplement (see `SupplementManifest`)
/// holds the files a kept backup takes from backups prune let go; it has an id of its own,
/// made like a backup's, and two objects: `HOST_ID.supplement.tar.zst` (the archive) and
/// `HOST_ID.supplement.jsonl.zst` (its manifest, written last: it commits the supplement).
/// Neither name ends like a backup's archive or manifest, so a reader that knows nothing of
/// supplements (an older Keepsake) lists no backup for them and removes neither.
public enum SupplementNaming {
    // MARK: Names

    /// What follows `HOST_ID` in both names.
    public static let infix = ".supplement"
    /// The manifest's ending: JSON lines compressed with zstd (`zstd -dc` reads it).
    public static let manifestSuffix = infix + ".jsonl.zst"
    /// The archive's ending: a pax tar compressed with zstd, like a backup's.
    public static let archiveSuffix = infix + Compression.zstd.fileExtension

    /// `HOST_ID.supplement.tar.zst`.
    public static func archiveName(host: String, id: BackupID) -> String {
        "\(host)_\(id.rawValue)\(archiveSuffix)"
    }

    /// `HOST_ID.supplement.jsonl.zst`.
    public static func manifestName(host: String, id: BackupID) -> String {
        "\(host)_\(id.rawValue)\(manifestSuffix)"
    }

    /// The last entry of a supplement's archive: a copy of its manifest without the
    /// archive's own size and SHA-256 (which it cannot know), so that a supplement whose
    /// manifest object was lost is committed again from the archive alone.
    public static let innerManifestPath = Array(".keepsake/supplement.jsonl".utf8)

    // MARK: Reading names

    /// The host and id of a supplement's manifest name, or nil when `name` is not one.
    public static func parts(ofManifestName name: String) -> (host: String, id: BackupID)? {
        guard name.hasSuffix(manifestSuffix) else { return nil }
        return BackupNaming.parts(ofStem: name.dropLast(manifestSuffix.count))
    }

    /// The host and id of a supplement's archive name, or nil when `name` is not one.
    public static func parts(ofArchiveName name: String) -> (host: String, id: BackupID)? {
        guard name.hasSuffix(archiveSuffix) else { return nil }
        return BackupNaming.parts(ofStem: name.dropLast(archiveSuffix.count))
    }

    /// The manifest name that commits the supplement archive `name`; nil when `name` is not
    /// a supplement's archive.
    public static func manifestName(forArchive name: String) -> String? {
        guard name.hasSuffix(archiveSuffix) else { return nil }
        return String(name.dropLast(archiveSuffix.count)) + manifestSuffix
    }
}
