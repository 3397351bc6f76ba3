import KeepsakeSupport

/// What can still be read out of a seekable zstd archive's damaged frames. A flipped byte
/// rarely spoils a whole frame: zstd usually decodes it to its end with a few wrong bytes
/// (only the frame's checksum notices), or stops inside one block. So a damaged frame is
/// decoded as far as it goes, and each entry that lies in what it gave can be taken out
/// alone and checked against the manifest (`ManifestCheck.salvaged`, in the core) (its header against the entry's line, a file's
/// content against its SHA-256) before anything of it is used. Nothing handed out here is
/// trusted; an entry that does not check out is lost, as before.
package final class FrameSalvage {
    // MARK: State

    private let source: RandomAccessSource
    private let table: SeekTable
    private let context: ZstdContext
    /// Decoded frames (whole, or as far as they decoded), the most recent last: entries are
    /// taken out in stream order, so only the few frames around the current one are kept.
    private var decoded: [(index: Int, bytes: [UInt8])] = []
    private static let framesKept = 3
    /// The largest entry taken out (its bytes are held in memory; the range comes from a
    /// manifest, which is never trusted with an allocation): 64 MiB.
    static let largestEntry: Int64 = 64 << 20

    // MARK: Life cycle

    /// Salvages from `source`, whose frames `table` lists (`RangedZstdSource.table(of:)`
    /// has bounded their sizes).
    package init(source: RandomAccessSource, table: SeekTable) throws {
        self.source = source
        self.table = table
        context = try ZstdContext(.decompression)
    }

    // MARK: Reading

    /// The tar stream's bytes `range`, or nil when some of them lie past where a damaged
    /// frame stopped decoding (or cannot be read at all).
    package func bytes(_ range: Range<Int64>) -> [UInt8]? {
        guard !range.isEmpty, range.upperBound - range.lowerBound <= FrameSalvage.largestEntry,
              let first = table.frameIndex(containing: range.lowerBound),
              let last = table.frameIndex(containing: range.upperBound - 1) else { return nil }
        var result: [UInt8] = []
        result.reserveCapacity(range.count)
        for index in first...last {
            let frame = table.frames[index]
            let wanted = range.clamped(to: frame.decompressedOffset..<(frame.decompressedOffset + Int64(frame.decompressedSize)))
            let start = Int(wanted.lowerBound - frame.decompressedOffset)
            let end = Int(wanted.upperBound - frame.decompressedOffset)
            guard let bytes = self.frame(index), bytes.count >= end else { return nil }
            result.append(contentsOf: bytes[start..<end])
        }
        return result
    }

    /// Frame `index` decoded: whole when it is intact, otherwise as far as it decodes.
    private func frame(_ index: Int) -> [UInt8]? {
        if let kept = decoded.first(where: { $0.index == index }) { return kept.bytes }
        let frame = table.frames[index]
        guard let compressed = try? source.bytes(at: frame.compressedOffset, count: frame.compressedSize) else { return nil }
        var output = [UInt8](repeating: 0, count: frame.decompressedSize)
        let produced = compressed.withUnsafeBytes { input in
            output.withUnsafeMutableBytes { out -> Int in
                if case .success(let size) = context.decompress(input, into: out), size == frame.decompressedSize { return size }
                return context.decompressAsFarAsPossible(input, into: out)
            }
        }
        output.removeSubrange(produced...)
        decoded.append((index, output))
        if decoded.count > FrameSalvage.framesKept { decoded.removeFirst() }
        return output
    }

    // MARK: Taking an entry out

    /// The one entry lying in `range` as a tar stream of its own, read by a reader whose
    /// first header is the entry's (nil when the bytes are not there or do not parse). The
    /// caller compares that header with the manifest before it reads the content.
    package func entry(_ range: Range<Int64>, name: String, cancellation: CancellationFlag) -> (reader: ArchiveReader, header: ArchiveEntryHeader)? {
        guard var bytes = bytes(range) else { return nil }
        // Two zero blocks end the stream as tar expects.
        bytes.append(contentsOf: [UInt8](repeating: 0, count: 1024))
        guard let reader = try? ArchiveReader(decoded: MemorySource(bytes), name: name, keepsakeTar: true, cancellation: cancellation),
              let header = try? reader.nextHeader() else { return nil }
        return (reader, header)
    }
}
