import CPosix
import Foundation
import KeepsakeArchive
import KeepsakeHashing
import KeepsakeModel
import KeepsakeSupport

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

    /// Whether `header`, taken out of salvaged bytes (`FrameSalvage`), says nothing the
    /// manifest cannot vouch for: the entry's path, type, size and link, no extended
    /// attributes (the manifest holds none to check them against), and for entries other
    /// than files and folders (which a restore gives the manifest's metadata) the manifest's
    /// mode, owners, time and device.
    static func salvaged(_ header: ArchiveEntryHeader, agreesWith entry: ManifestEntry) -> Bool {
        guard header.path == entry.path, header.xattrs.isEmpty, mismatch(header, entry) == nil else { return false }
        if header.type == .file || header.type == .directory { return true }
        return RecordedAttributes(header) == RecordedAttributes(entry) && header.rdev == entry.rdev
    }

    /// Zeros shared by every hash of a hole: a hole is hashed from this one buffer, never
    /// from memory the size of the hole.
    private static let zeros = [UInt8](repeating: 0, count: 1 << 20)

    /// Feeds `count` zero bytes to a hash (the holes of a sparse file), checking for a stop
    /// between megabytes: a tiny archive can declare a terabyte of holes.
    static func hashZeros(_ count: Int64, into hasher: SHA256Hasher, cancellation: CancellationFlag) throws {
        var remaining = count
        try zeros.withUnsafeBytes { raw in
            while remaining > 0 {
                try cancellation.check()
                let chunk = Int(min(Int64(raw.count), remaining))
                hasher.update(UnsafeRawBufferPointer(rebasing: raw[0..<chunk]))
                remaining -= Int64(chunk)
            }
        }
    }

    /// Hashes the current entry's content as it would be restored; returns the hex digest
    /// and the logical size.
    static func hashContent(of reader: any EntryContentReader, declaredSize: Int64, cancellation: CancellationFlag) throws -> (sha256: String, size: Int64) {
        let hasher = SHA256Hasher()
        var end: Int64 = 0
        while let block = try reader.nextBlock() {
            try cancellation.check()
            if block.bytes.isEmpty { continue }
            if block.offset > end { try hashZeros(block.offset - end, into: hasher, cancellation: cancellation) }
            hasher.update(block.bytes)
            end = max(end, block.offset.addingReportingOverflow(Int64(block.bytes.count)).partialValue)
        }
        if end < declaredSize { try hashZeros(declaredSize - end, into: hasher, cancellation: cancellation) }
        return (hasher.finalizeHex(), max(end, declaredSize))
    }

    /// Hashes the file open as `fd` (`size` bytes, holes read as zeros without reading them),
    /// checking for a stop between megabytes; nil when it cannot be read.
    static func hashFile(_ fd: Int32, size: Int64, cancellation: CancellationFlag) throws -> String? {
        let hasher = SHA256Hasher()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var position: Int64 = 0
        while position < size {
            try cancellation.check()
            // The next data run; a file system without SEEK_DATA reads everything.
            var data = Int64(lseek(fd, off_t(position), KS_SEEK_DATA))
            if data < 0 { data = errno == ENXIO ? size : position }
            if data > position {
                try hashZeros(min(data, size) - position, into: hasher, cancellation: cancellation)
                position = min(data, size)
                continue
            }
            let wanted = Int(min(Int64(buffer.count), size - position))
            let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, wanted, off_t(position)) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return nil }
            buffer.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            position += Int64(count)
        }
        return hasher.finalizeHex()
    }

}
