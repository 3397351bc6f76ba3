import KeepsakeArchive
import KeepsakeModel
import KeepsakeStorage
import KeepsakeSupport

/// The manifest a Keepsake archive carries as its last entry, found from the archive's end:
/// for a lone archive file whose reading stopped at damage long before it. The seek table
/// says where the last frames are; they are decoded back from the end until the ustar
/// header of `.keepsake/manifest.jsonl` turns up at a block boundary of the tar stream, and
/// the entry is read from there. What it returns is a manifest's text, as untrusted as any:
/// the caller parses it within the usual limits.
enum TailManifest {
    // MARK: Limits

    /// How many frames are searched back from the end (256 MiB of tar stream in Keepsake's
    /// 4 MiB frames: the manifest of a few million entries).
    static let framesSearched = 64

    // MARK: Finding

    /// The manifest at the end of `archive`, parsed; nil when it has no seek table, no
    /// intact manifest entry lies in its last frames, it does not parse, or it is not of the
    /// backup the archive's name gives (`HOST_ID.tar.zst`; an archive renamed otherwise gets
    /// none). A file inside the archive could hold a decoy manifest entry at a block boundary,
    /// but not the backup's id, which was drawn after its content was read.
    static func manifest(of archive: RandomAccessSource, name: String, cancellation: CancellationFlag) throws -> Manifest? {
        let fileName = name.split(separator: "/").last.map(String.init) ?? name
        guard let stem = BackupNaming.stem(of: fileName), stem.count >= 25, let id = BackupID(String(stem.suffix(25))),
              let table = RangedZstdSource.table(of: archive),
              let bytes = try read(from: archive, table: table, name: name, cancellation: cancellation),
              let manifest = try? Manifest.parse(bytes), manifest.summary.id == id else { return nil }
        return manifest
    }

    /// The manifest's bytes, or nil when no intact manifest entry lies in the last frames.
    static func read(from source: RandomAccessSource, table: SeekTable, name: String,
                     cancellation: CancellationFlag) throws -> [UInt8]? {
        let salvage = try FrameSalvage(source: source, table: table)
        let end = table.decompressedSize
        for index in stride(from: table.frames.count - 1, through: max(0, table.frames.count - framesSearched), by: -1) {
            try cancellation.check()
            let frame = table.frames[index]
            let span = frame.decompressedOffset..<(frame.decompressedOffset + Int64(frame.decompressedSize))
            guard let bytes = salvage.bytes(span) else { continue }
            // Block boundaries of the tar stream that lie in this frame, last first.
            let block = Int64(TarHeaderBlock.size)
            var offset = (span.upperBound - block) / block * block
            while offset >= span.lowerBound {
                let start = Int(offset - span.lowerBound)
                if start + TarHeaderBlock.size <= bytes.count,
                   isManifestHeader(bytes[start..<(start + TarHeaderBlock.size)]),
                   let manifest = try readEntry(at: offset, end: end, from: source, table: table, name: name,
                                                cancellation: cancellation) {
                    return manifest
                }
                offset -= block
            }
        }
        return nil
    }

    /// Whether `block` is an intact ustar header of a regular file named
    /// `.keepsake/manifest.jsonl`.
    private static func isManifestHeader(_ block: ArraySlice<UInt8>) -> Bool {
        let name = ArchiveLayout.manifestEntryPath
        guard block.starts(with: name), block[block.startIndex + name.count] == 0 else { return false }
        let type = block[block.startIndex + 156]
        guard type == UInt8(ascii: "0") || type == 0 else { return false }
        return Array(block).withUnsafeBytes { UstarHeaderView($0).checksumMatches }
    }

    /// The content of the entry whose header lies at `offset` of the tar stream, read to
    /// the stream's end (`end`) through the frames that hold it.
    private static func readEntry(at offset: Int64, end: Int64, from source: RandomAccessSource, table: SeekTable,
                                  name: String, cancellation: CancellationFlag) throws -> [UInt8]? {
        let ranged = RangedZstdSource(source: source, table: table, ranges: [offset..<end], name: name, workers: 1)
        do {
            let reader = try ArchiveReader(decoded: ranged, name: name, keepsakeTar: true, cancellation: cancellation)
            guard let header = try reader.nextHeader(), header.path == ArchiveLayout.manifestEntryPath else { return nil }
            let manifest = try reader.readManifest(name: "the manifest inside \(name)")
            // The manifest is the archive's last entry: the end of the archive follows it.
            guard try reader.nextHeader() == nil else { return nil }
            return manifest
        } catch is ArchiveError {
            return nil
        } catch is ManifestError {
            return nil
        } catch is StorageError {
            return nil
        }
    }
}
