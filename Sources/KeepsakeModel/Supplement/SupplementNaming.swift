import KeepsakeArchive
import KeepsakeSupport

/// How supplements are named in a destination. A supplement (see `SupplementManifest`)
/// holds the files a kept backup takes from backups prune let go; it has an id of its own,
/// made like a backup's, and two objects: `HOST_ID.supplement.tar.zst` (the archive) and
/// `HOST_ID.supplement.jsonl.zst` (its manifest, written last: it commits the supplement).
/// Encrypted, both end in `.age` as a backup's do, and `HOST_ID.supplement.summary.json`
/// beside them says in the clear what the supplement is and whose files it holds
/// (`SupplementSummary`). No name ends like a backup's archive or manifest, so a reader that
/// knows nothing of supplements (an older Keepsake) lists no backup for them and removes none.
public enum SupplementNaming {
    // MARK: Names

    /// What follows `HOST_ID` in both names.
    public static let infix = ".supplement"
    /// The manifest's ending: JSON lines compressed with zstd (`zstd -dc` reads it).
    public static let manifestSuffix = infix + ".jsonl.zst"
    /// The archive's ending: a pax tar compressed with zstd, like a backup's.
    public static let archiveSuffix = infix + Compression.zstd.fileExtension

    /// The encrypted manifest's ending.
    public static let encryptedManifestSuffix = manifestSuffix + BackupNaming.encryptedSuffix
    /// The encrypted archive's ending.
    public static let encryptedArchiveSuffix = archiveSuffix + BackupNaming.encryptedSuffix
    /// The ending of the summary in the clear beside an encrypted supplement.
    public static let summarySuffix = infix + BackupNaming.publicSummarySuffix

    /// `HOST_ID.supplement.tar.zst`, `….age` when encrypted.
    public static func archiveName(host: String, id: BackupID, encrypted: Bool = false) -> String {
        "\(host)_\(id.rawValue)\(encrypted ? encryptedArchiveSuffix : archiveSuffix)"
    }

    /// `HOST_ID.supplement.jsonl.zst`, `….age` when encrypted.
    public static func manifestName(host: String, id: BackupID, encrypted: Bool = false) -> String {
        "\(host)_\(id.rawValue)\(encrypted ? encryptedManifestSuffix : manifestSuffix)"
    }

    /// `HOST_ID.supplement.summary.json`: an encrypted supplement's summary in the clear.
    public static func summaryName(host: String, id: BackupID) -> String {
        "\(host)_\(id.rawValue)\(summarySuffix)"
    }

    /// The last entry of a supplement's archive: a copy of its manifest without the
    /// archive's own size and SHA-256 (which it cannot know), so that a supplement whose
    /// manifest object was lost is committed again from the archive alone.
    public static let innerManifestPath = Array(".keepsake/supplement.jsonl".utf8)

    /// The entry holding blocks of backup `origin`'s version of the file at `path`
    /// (`HeldBlocks`): `.keepsake/blocks/ORIGIN/PATH`. The origin is in the name because one
    /// supplement may hold blocks of the same file from two versions.
    public static func blocksEntryPath(origin: BackupID, path: [UInt8]) -> [UInt8] {
        ArchiveLayout.blocksEntryPrefix + Array(origin.rawValue.utf8) + [UInt8(ascii: "/")] + path
    }

    // MARK: Reading names

    /// The host and id of a supplement's manifest name (encrypted or not), or nil when
    /// `name` is not one.
    public static func parts(ofManifestName name: String) -> (host: String, id: BackupID)? {
        parts(of: name, endingIn: [manifestSuffix, encryptedManifestSuffix])
    }

    /// The host and id of a supplement's archive name (encrypted or not), or nil when `name`
    /// is not one.
    public static func parts(ofArchiveName name: String) -> (host: String, id: BackupID)? {
        parts(of: name, endingIn: [archiveSuffix, encryptedArchiveSuffix])
    }

    /// The host and id of an encrypted supplement's summary name, or nil when `name` is not one.
    public static func parts(ofSummaryName name: String) -> (host: String, id: BackupID)? {
        parts(of: name, endingIn: [summarySuffix])
    }

    /// The manifest name that commits the supplement archive `name` (encrypted like it); nil
    /// when `name` is not a supplement's archive.
    public static func manifestName(forArchive name: String) -> String? {
        guard let parts = parts(ofArchiveName: name) else { return nil }
        return manifestName(host: parts.host, id: parts.id, encrypted: BackupNaming.isEncrypted(name))
    }

    /// The host and id before the first of `suffixes` that `name` ends in.
    private static func parts(of name: String, endingIn suffixes: [String]) -> (host: String, id: BackupID)? {
        guard let suffix = suffixes.first(where: { name.hasSuffix($0) }) else { return nil }
        return BackupNaming.parts(ofStem: name.dropLast(suffix.count))
    }
}
