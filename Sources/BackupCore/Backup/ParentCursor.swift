import KeepsakeModel
import KeepsakeScan
import KeepsakeSupport

/// What an incremental backup needs of its parent: each scanned file's entry in the
/// parent's manifest. The manifest is read a line at a time, in step with the scan (both
/// are in `ScanOrder`), so memory does not grow with the number of files.
final class ParentCursor {
    // MARK: State

    /// The parent backup.
    let id: BackupID
    /// Nil once closed.
    private var source: ByteSource?
    private let name: String
    private var buffer: [UInt8] = []
    private var start = 0
    private var ended = false
    private var lineNumber = 0
    /// The next entry of the parent not yet passed by the scan.
    private var upcoming: ManifestEntry?
    /// Why the rest of the parent's manifest could not be read (files from there on are
    /// stored again, which is always correct).
    private(set) var problem: String?
    private static let chunk = 1 << 20

    // MARK: Life cycle

    /// Reads the parent's manifest `name` from `source`, starting with its summary line.
    init(id: BackupID, source: ByteSource, name: String) throws {
        self.id = id
        self.source = source
        self.name = name
        guard let summary = try nextLine() else { throw ManifestError.notAManifest(reason: "it is empty") }
        _ = try Manifest.parseSummary(summary)
        advance()
    }

    deinit { source?.close() }

    /// Stops reading (the scan is over) and frees the decompressor's buffers, before the
    /// new manifest is compressed.
    func close() {
        source?.close()
        source = nil
        buffer = []
        start = 0
        ended = true
        upcoming = nil
    }

    // MARK: Looking up

    /// The parent's entry for `path` when the parent had a regular file there. Paths must
    /// be asked for in scan order (others are skipped over).
    func entry(for path: [UInt8]) -> ManifestEntry? {
        while let candidate = upcoming {
            let order = ScanOrder.compare(candidate.path, path)
            if order > 0 { return nil }
            advance()
            if order == 0 { return candidate.type == .file ? candidate : nil }
        }
        return nil
    }

    // MARK: Reading

    private func advance() {
        upcoming = nil
        guard problem == nil else { return }
        do {
            while let line = try nextLine() {
                if line.isEmpty { continue }
                upcoming = try line.withUnsafeBufferPointer { try Manifest.parseEntryLine($0, lineNumber: lineNumber) }
                return
            }
        } catch {
            problem = "\(name): \(error)"
        }
    }

    /// The next line without its newline; nil at the end.
    private func nextLine() throws -> [UInt8]? {
        while true {
            if let newline = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(buffer[start..<newline])
                start = newline + 1
                lineNumber += 1
                return line
            }
            if ended {
                guard start < buffer.count else { return nil }
                let line = Array(buffer[start...])
                start = buffer.count
                lineNumber += 1
                return line
            }
            guard let source else {
                ended = true
                continue
            }
            // Keep what is left of the buffer and read on.
            buffer.removeSubrange(0..<start)
            start = 0
            let filled = buffer.count
            buffer.appendZeros(ParentCursor.chunk)
            let count = try SidecarManifest.decoding {
                try buffer.withUnsafeMutableBytes {
                    try source.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[filled...]))
                }
            }
            buffer.removeSubrange((filled + count)...)
            if count == 0 { ended = true }
        }
    }
}
