/// The entries every archive Keepsake writes has, besides the user's files: a first entry
/// that marks it, and its manifest (with a checksum file) as its last; and, in an
/// incremental backup, the changed blocks of big files.
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

    /// What the name of a block entry starts with: `.keepsake/blocks/` and the file's
    /// archive path. Its data are the blocks of the file the backup stores, each at its offset
    /// in the file (a sparse entry whose size is the file's), so `tar -x` never writes them
    /// over the file itself.
    public static let blocksEntryPrefix = Array(".keepsake/blocks/".utf8)

    /// The block entry of the file at archive path `path`.
    public static func blocksEntryPath(for path: [UInt8]) -> [UInt8] {
        blocksEntryPrefix + path
    }

    /// The file whose block entry is at `path`; nil when `path` is no block entry's.
    public static func fileOfBlocksEntry(_ path: [UInt8]) -> [UInt8]? {
        guard path.count > blocksEntryPrefix.count, path.starts(with: blocksEntryPrefix) else { return nil }
        return Array(path[blocksEntryPrefix.count...])
    }

    /// True for the archive entries that are Keepsake's own (never restored as user files):
    /// the marker, the checksum list, the manifest, and block entries.
    public static func isMetadataEntry(_ path: [UInt8]) -> Bool {
        path == manifestEntryPath || path == checksumsEntryPath || path == markerEntryPath || path.starts(with: blocksEntryPrefix)
    }
}
