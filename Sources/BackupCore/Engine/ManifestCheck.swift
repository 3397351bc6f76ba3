/// The comparisons restore and verify share: an archive entry against its manifest line.
enum ManifestCheck {
    /// What makes an archive entry disagree with its manifest entry, if anything.
    static func mismatch(_ header: ArchiveEntryHeader, _ entry: ManifestEntry?) -> String? {
        guard let entry else { return "not in the backup's manifest; not restored" }
        guard entry.type == header.type else {
            return "the archive holds a \(header.type.rawValue) where the manifest says \(entry.type.rawValue)"
        }
        if header.type == .file, entry.size != header.size {
            return "the archive says \(header.size) bytes where the manifest says \(entry.size)"
        }
        if header.type == .symlink || header.type == .hardlink, entry.linkTarget != header.linkTarget {
            return "its link target differs from the manifest"
        }
        return nil
    }

    private static let zeros = [UInt8](repeating: 0, count: 1 << 16)

    /// Feeds `count` zero bytes to a hash (the holes of a sparse file).
    static func hashZeros(_ count: Int64, into hasher: SHA256Hasher) {
        var remaining = count
        zeros.withUnsafeBytes { raw in
            while remaining > 0 {
                let chunk = Int(min(Int64(raw.count), remaining))
                hasher.update(UnsafeRawBufferPointer(rebasing: raw[0..<chunk]))
                remaining -= Int64(chunk)
            }
        }
    }

    /// Hashes the current entry's content as it would be restored; returns the hex digest
    /// and the logical size.
    static func hashContent(of reader: ArchiveReader, declaredSize: Int64, cancellation: CancellationFlag) throws -> (sha256: String, size: Int64) {
        let hasher = SHA256Hasher()
        var end: Int64 = 0
        while let block = try reader.nextBlock() {
            try cancellation.check()
            if block.bytes.isEmpty { continue }
            if block.offset > end { hashZeros(block.offset - end, into: hasher) }
            hasher.update(block.bytes)
            end = max(end, block.offset + Int64(block.bytes.count))
        }
        if end < declaredSize { hashZeros(declaredSize - end, into: hasher) }
        return (hasher.finalizeHex(), max(end, declaredSize))
    }
}
