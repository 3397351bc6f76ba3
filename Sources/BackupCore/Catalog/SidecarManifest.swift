import Foundation
import KeepsakeArchive
import KeepsakeEncryption
import KeepsakeModel
import KeepsakeStorage
import KeepsakeSupport

/// The manifest copy beside an archive in a destination: the same JSON lines as the
/// archive's own `.keepsake/manifest.jsonl`, but with the archive's size and SHA-256 in the
/// summary, compressed with zstd (`HOST_ID.manifest.jsonl.zst`; `zstd -dc` reads it): the
/// summary line as a frame of its own, so listing decompresses only that, then the entry
/// lines in frames of 4 MiB, compressed in parallel; each frame carries its checksum. Manifests
/// written before they were compressed (`HOST_ID.manifest.jsonl`) are read the same way:
/// readers go by the bytes, not the name.
public enum SidecarManifest {
    // MARK: Settings

    /// zstd level. Manifests are mostly paths, JSON keys and hex digests; on those, level 1
    /// came out both smaller and twice as fast as level 3 (60k files: 25.9 MB to 4.64 MB
    /// in 0.09 s, against 4.93 MB in 0.16 s on one core), and every backup writes one.
    static let level = 1
    /// The most of a damaged manifest read (plain bytes); whole manifests are read within
    /// `ManifestSizeLimit`.
    static let readLimit = ManifestSizeLimit.hardLimit
    /// The longest summary line believed.
    private static let summaryLimit = 1 << 20

    // MARK: Writing

    /// Writes a manifest to `sink` (which the caller commits): `summaryLine` (ending in a
    /// newline) as its own frame, then whatever `entries` writes, compressed by up to
    /// `workers` threads.
    static func write(summaryLine: [UInt8], to sink: ByteSink, workers: Int,
                      entries: (ByteSink) throws -> Void) throws {
        // No seek table: a manifest is read front to back, and every byte of it should be
        // covered by a frame checksum.
        let compressor = try SeekableZstdSink(downstream: sink, level: level, workers: max(1, workers), seekTable: false)
        try summaryLine.withUnsafeBytes { try compressor.write($0) }
        try compressor.endFrame()
        try entries(compressor)
        try compressor.finish()
    }

    // MARK: Reading

    /// The manifest object `name` decompressed as it is read (plain ones as they are).
    static func open(_ name: String, in storage: KeyedStorage, workers: Int = DecodedArchiveSource.workers) throws -> ByteSource {
        try decompressing(try storage.open(name), name: name, workers: workers)
    }

    /// `source` decompressed as it is read; closes it when that cannot start.
    private static func decompressing(_ source: ByteSource, name: String, workers: Int) throws -> ByteSource {
        do {
            return try DecodedArchiveSource.wrap(source, name: name, workers: workers)
        } catch {
            source.close()
            throw error
        }
    }

    /// The whole manifest object `name`, decompressed.
    public static func read(_ name: String, from storage: KeyedStorage) throws -> [UInt8] {
        let source = try open(name, in: storage)
        defer { source.close() }
        return try decoding { try ManifestSizeLimit.read(source, name: "the manifest \(name)") }
    }

    /// The manifest object `name`, parsed as it is decompressed (its text is never held
    /// whole), keeping the entries `keeping` accepts (all without it).
    /// `observing` sees every decompressed byte, in order (verify fingerprints them).
    public static func load(_ name: String, from storage: KeyedStorage, keeping: Manifest.EntryFilter? = nil,
                            observing: ((UnsafeRawBufferPointer) -> Void)? = nil) throws -> Manifest {
        let source = try open(name, in: storage)
        defer { source.close() }
        return try decoding {
            try ManifestParser.read(source, name: "the manifest \(name)", keeping: keeping, observing: observing)
        }
    }

    /// Reads the manifest object `name` front to back, handing each entry `keeping` accepts
    /// to `visit` and keeping none; returns the summary. An error can come after some
    /// entries were visited.
    public static func forEachEntry(_ name: String, in storage: KeyedStorage, keeping: Manifest.EntryFilter? = nil,
                                    _ visit: (ManifestEntry) throws -> Void) throws -> BackupSummary {
        let source = try open(name, in: storage)
        defer { source.close() }
        return try withoutActuallyEscaping(visit) { visit in
            try decoding {
                try ManifestParser.read(source, name: "the manifest \(name)", keeping: keeping, visit: visit).summary
            }
        }
    }

    /// As much of the manifest object `name` as decompresses, up to the first damage.
    static func readUndamagedPart(_ name: String, from storage: KeyedStorage) throws -> [UInt8] {
        let source = try open(name, in: storage)
        defer { source.close() }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while bytes.count < readLimit,
              let count = try? chunk.withUnsafeMutableBytes({ try source.read(into: $0) }), count > 0 {
            bytes.append(contentsOf: chunk[0..<count])
        }
        return bytes
    }

    /// The first line of the manifest object `name` (its summary), decoding no more than
    /// the frame that holds it.
    static func firstLine(_ name: String, in storage: KeyedStorage) throws -> [UInt8] {
        // One worker: the next frames (the entries) are not decompressed ahead.
        let source = try open(name, in: storage, workers: 1)
        defer { source.close() }
        var line: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while line.count < summaryLimit {
            let count = try decoding { try chunk.withUnsafeMutableBytes { try source.read(into: $0) } }
            if count == 0 { break }
            if let newline = chunk[0..<count].firstIndex(of: UInt8(ascii: "\n")) {
                line.append(contentsOf: chunk[0..<newline])
                return line
            }
            line.append(contentsOf: chunk[0..<count])
        }
        return line
    }

    /// Runs `body`, reporting damage to the compressed stream as a damaged manifest
    /// (the decompressor speaks of archives).
    static func decoding<Result>(_ body: () throws -> Result) throws -> Result {
        do {
            return try body()
        } catch ArchiveError.damaged(_, let reason) {
            throw ManifestError.compressionDamaged(reason: reason)
        }
    }
}
