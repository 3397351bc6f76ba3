import KeepsakeArchive
import KeepsakeModel

/// What `Verifier` gathered while reading one archive front to back: the entries it saw, the
/// archive's own entries (marker, checksum list, manifest) and where reading was. It is then
/// judged against whichever manifest is known: the one beside the archive, the archive's
/// own, or one found at the end of a damaged archive.
struct ArchiveReadState {
    // MARK: Entries seen

    /// Which manifest positions the archive was seen to hold (a byte each, not a path);
    /// empty when no manifest beside the archive is known.
    var seen: [Bool]
    /// Without a manifest beside the archive: each file's digest and header, checked against
    /// the archive's own manifest at the end.
    var digests: [PathKey: (sha256: String?, header: ArchiveEntryHeader)] = [:]
    /// Without a manifest beside the archive: the files whose block entries it holds.
    var blockEntries = Set<PathKey>()
    /// User entries read (files, folders, links; not Keepsake's own).
    var entriesSeen = 0
    /// The entry being read, for messages ("the start of the archive" before the first).
    var current = "the start of the archive"

    // MARK: The archive's own entries

    /// Whether the `.keepsake` folder that begins every Keepsake archive was met.
    var sawMarker = false
    /// The manifest inside the archive, parsed (when none is known beside it).
    var innerManifest: Manifest?
    /// The fingerprint of the manifest inside, compared with the one beside.
    var inside: ManifestFingerprint?
    /// Whether the SHA256SUMS inside agrees with the manifest; nil when not checked yet.
    var checksumsMatch: Bool?
    /// The SHA256SUMS inside, held until the archive's own manifest is known.
    var checksums: [UInt8]?
    /// A damaged lone archive's manifest found at its end, and what of it was seen.
    var recovered: (manifest: Manifest, index: ManifestIndex, seen: [Bool])?

    /// Nothing read yet, with `positions` manifest entries to see.
    init(positions: Int) {
        seen = [Bool](repeating: false, count: positions)
    }
}
