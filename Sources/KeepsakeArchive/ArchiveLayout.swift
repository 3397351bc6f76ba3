/// The entries every archive Keepsake writes has, besides the user's files: a first entry
/// that marks it, and its manifest (with a checksum file) as its last.
public enum ArchiveLayout {
    // MARK: Keepsake's own entries

    /// The archive's first entry, a folder: it marks a Keepsake archive, which must end
    /// with its manifest — so an archive that begins with it and ends without one is known
    /// to be damaged, even when a decompressor turned the damage into plausible bytes.
    public static let markerEntryPath = Array(".keepsake".utf8)
    /// The manifest's name inside the archive; it is the archive's last entry.
    public static let manifestEntryPath = Array(".keepsake/manifest.jsonl".utf8)
    /// A `sha256sum -c` file inside the archive, for checking a restore made with plain tar.
    public static let checksumsEntryPath = Array(".keepsake/SHA256SUMS".utf8)

    /// True for the archive entries that are Keepsake's own (never restored as user files).
    public static func isMetadataEntry(_ path: [UInt8]) -> Bool {
        path == manifestEntryPath || path == checksumsEntryPath || path == markerEntryPath
    }
}
