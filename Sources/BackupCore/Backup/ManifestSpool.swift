import Foundation
import KeepsakeArchive
import KeepsakeJSON
import KeepsakeModel

/// The two lists an archive ends with, gathered while its entries are written: the
/// manifest's entry lines and the `sha256sum -c` lines of SHA256SUMS. Both are spooled to
/// temporary files (a backup of millions of files must not hold them in memory) and
/// written as the archive's last entries; the manifest's lines also become the sidecar
/// manifest beside the archive.
final class ManifestSpool {
    // MARK: State

    /// The manifest's entry lines, in archive order.
    private let entries: SpoolFile
    /// `sha256sum -c` lines for the archive's SHA256SUMS file.
    private let checksums: SpoolFile
    private var line = JSONWriter()

    // MARK: Life cycle

    /// Two empty spools in `TMPDIR`.
    init() throws {
        entries = try SpoolFile()
        checksums = try SpoolFile()
    }

    // MARK: Gathering

    /// Adds the manifest line of `entry`.
    func append(_ entry: ManifestEntry) throws {
        line.bytes.removeAll(keepingCapacity: true)
        entry.write(to: &line)
        line.bytes.append(UInt8(ascii: "\n"))
        try entries.append(line.bytes)
    }

    /// Adds the SHA256SUMS line of a file stored at `path`, in GNU coreutils' format: names
    /// holding a newline or backslash are escaped and the line starts with a backslash.
    func appendChecksum(_ sha256: String, path: [UInt8]) throws {
        var escaped: [UInt8] = []
        var needsEscape = false
        for byte in path {
            switch byte {
            case UInt8(ascii: "\n"): escaped.append(contentsOf: [92, 110]); needsEscape = true
            case UInt8(ascii: "\\"): escaped.append(contentsOf: [92, 92]); needsEscape = true
            default: escaped.append(byte)
            }
        }
        var text: [UInt8] = needsEscape ? [92] : []
        text.append(contentsOf: Array(sha256.utf8))
        text.append(contentsOf: [32, 32])
        text.append(contentsOf: escaped)
        text.append(10)
        try checksums.append(text)
    }

    // MARK: Writing out

    /// Appends SHA256SUMS and the manifest (`summary`'s line, then the entry lines) to
    /// `writer` as the archive's last entries.
    func writeMetadataEntries(summary: BackupSummary, into writer: ArchiveWriter) throws {
        let summaryLine = Array((summary.json.serialized() + "\n").utf8)
        let seconds = Int64(summary.created.timeIntervalSince1970.rounded(.down))
        let owner = (uid: geteuid(), gid: getegid())
        try entries.flush()
        try checksums.flush()
        try writer.writeHeader(ArchiveEntryHeader(path: ArchiveLayout.checksumsEntryPath, type: .file, size: checksums.size,
                                                  permissions: 0o644, uid: owner.uid, gid: owner.gid, mtimeSeconds: seconds))
        try checksums.forEachChunk { try writer.writeData($0, path: ArchiveLayout.checksumsEntryPath) }
        try writer.writeHeader(ArchiveEntryHeader(path: ArchiveLayout.manifestEntryPath, type: .file,
                                                  size: Int64(summaryLine.count) + entries.size, permissions: 0o644,
                                                  uid: owner.uid, gid: owner.gid, mtimeSeconds: seconds))
        try summaryLine.withUnsafeBytes { try writer.writeData($0, path: ArchiveLayout.manifestEntryPath) }
        try entries.forEachChunk { try writer.writeData($0, path: ArchiveLayout.manifestEntryPath) }
    }

    /// Hands the manifest's entry lines to `body` in chunks: the sidecar manifest is made
    /// of them.
    func forEachEntryChunk(_ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        try entries.forEachChunk(body)
    }
}
