import KeepsakeArchive
import KeepsakeSupport

/// How backups are named in a destination (the entries inside an archive: `ArchiveLayout`).
public enum BackupNaming {
    // MARK: In the destination

    /// The manifest copy beside an archive ends with this: JSON lines compressed with zstd
    /// (`zstd -dc` reads it).
    public static let manifestSuffix = ".manifest.jsonl.zst"
    /// How manifests beside archives ended before they were compressed; still read.
    public static let plainManifestSuffix = ".manifest.jsonl"
    /// What an encrypted object's name ends with: it is an age file (`age -d` reads it).
    public static let encryptedSuffix = ".age"
    /// The manifest beside an encrypted archive: the same compressed JSON lines, encrypted.
    public static let encryptedManifestSuffix = manifestSuffix + encryptedSuffix
    /// Every ending a manifest beside an archive can have, the current one first.
    public static let manifestSuffixes = [manifestSuffix, plainManifestSuffix, encryptedManifestSuffix]
    /// Beside an encrypted backup: its summary without names (no sources, no paths), in the
    /// clear, so the backups can be listed, pruned, copied and checked without a key.
    public static let publicSummarySuffix = ".summary.json"
    /// Beside a signed backup: its signature (`BackupSignature`).
    public static let signatureSuffix = ".signature"

    /// True for the objects beside a backup that are neither its archive nor its manifest
    /// (an encrypted backup's clear summary, a signature).
    public static func isSideObject(_ name: String) -> Bool {
        name.hasSuffix(publicSummarySuffix) || name.hasSuffix(signatureSuffix)
    }

    /// `HOST_ID.signature` for the backup named `stem` (`HOST_ID`).
    public static func signatureName(forStem stem: String) -> String { stem + signatureSuffix }

    /// True when `name` names an encrypted object.
    public static func isEncrypted(_ name: String) -> Bool { name.hasSuffix(encryptedSuffix) }

    /// `HOST_ID.summary.json` for the backup whose manifest is `manifestName`.
    public static func publicSummaryName(forManifest manifestName: String) -> String? {
        guard isEncrypted(manifestName), let stem = stem(of: manifestName) else { return nil }
        return stem + publicSummarySuffix
    }

    /// The ending of `name` if it names a manifest beside an archive.
    public static func manifestSuffix(of name: String) -> String? {
        manifestSuffixes.first { name.hasSuffix($0) }
    }

    /// True when `name` names a manifest beside an archive (compressed or plain).
    public static func isManifestName(_ name: String) -> Bool { manifestSuffix(of: name) != nil }

    /// Marks a backup prune is removing: written before its manifest is deleted, removed
    /// after its archive is, so a crash in between is finished, not undone, by the next run.
    public static let pruneMarkerSuffix = ".pruning"

    /// Marks a backup found damaged (`HOST_ID.damaged`, see `DamageRecord`): the next backup
    /// of its chain starts a new one instead of building on it.
    public static let damageMarkerSuffix = ".damaged"

    /// `HOST_ID.tar.zst` (`.tar.zst.age` encrypted): host, time and id readable from the name.
    public static func archiveName(host: String, id: BackupID, compression: Compression, encrypted: Bool = false) -> String {
        "\(host)_\(id.rawValue)\(compression.fileExtension)\(encrypted ? encryptedSuffix : "")"
    }

    /// `HOST_ID.manifest.jsonl.zst` (`.age` encrypted), beside the archive.
    public static func manifestName(host: String, id: BackupID, encrypted: Bool = false) -> String {
        "\(host)_\(id.rawValue)\(encrypted ? encryptedManifestSuffix : manifestSuffix)"
    }

    /// The id in a manifest object's name, if it is one.
    public static func id(fromManifestName name: String) -> BackupID? {
        guard let suffix = manifestSuffix(of: name) else { return nil }
        let stem = name.dropLast(suffix.count)
        guard stem.count >= 25 else { return nil }
        return BackupID(String(stem.suffix(25)))
    }

    /// The host and the id a manifest object's name gives (`HOST_ID.manifest…`), or nil
    /// when it is not of that form. A file-safe host has no `_`, so the split is unique.
    public static func parts(ofManifestName name: String) -> (host: String, id: BackupID)? {
        guard let suffix = manifestSuffix(of: name) else { return nil }
        return parts(ofStem: name.dropLast(suffix.count))
    }

    /// The host and the id of a name's stem (`HOST_ID`, see `stem(of:)`), or nil when it is
    /// not of that form.
    public static func parts(ofStem stem: Substring) -> (host: String, id: BackupID)? {
        guard stem.count > 26, let id = BackupID(String(stem.suffix(25))) else { return nil }
        let withSeparator = stem.dropLast(25)
        guard withSeparator.last == "_" else { return nil }
        let host = String(withSeparator.dropLast())
        guard HostIdentity.fileSafe(host) == host else { return nil }
        return (host, id)
    }

    /// The name without any archive or manifest extension (`HOST_ID`).
    public static func stem(of name: String) -> String? {
        if let suffix = manifestSuffix(of: name) { return String(name.dropLast(suffix.count)) }
        if name.hasSuffix(publicSummarySuffix) { return String(name.dropLast(publicSummarySuffix.count)) }
        if name.hasSuffix(signatureSuffix) { return String(name.dropLast(signatureSuffix.count)) }
        let archive = isEncrypted(name) ? String(name.dropLast(encryptedSuffix.count)) : name
        for codec in Compression.allCases where archive.hasSuffix(codec.fileExtension) {
            return String(archive.dropLast(codec.fileExtension.count))
        }
        return nil
    }

    /// The names the manifest beside an archive can have, the likeliest first
    /// (`X.tar.zst` → `X.manifest.jsonl.zst`, `X.manifest.jsonl`; `X.tar.zst.age` →
    /// `X.manifest.jsonl.zst.age`, then those).
    public static func sidecarNames(forArchive name: String) -> [String] {
        guard let stem = stem(of: name), !isManifestName(name), !isSideObject(name) else { return [] }
        let plain = [stem + manifestSuffix, stem + plainManifestSuffix]
        return isEncrypted(name) ? [stem + encryptedManifestSuffix] + plain : plain
    }
}
