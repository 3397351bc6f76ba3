import KeepsakeSupport

/// The parts of a seekable zstd archive's tar stream that a partial restore needs, as one
/// tar stream: only the frames that hold those byte ranges are read and decompressed
/// (several at once), the ranges are cut out of them and handed out in order, and two
/// zero blocks end the stream as tar expects.
package final class RangedZstdSource: LendingSource {
    // MARK: State

    private let source: RandomAccessSource
    private let table: SeekTable
    private let name: String
    /// Sorted, disjoint ranges of the decompressed stream.
    private let ranges: [Range<Int64>]
    private let decoder: ParallelFrameDecoder
    /// The frames to decompress, in order, and the next one to submit.
    private let frameIndexes: [Int]
    private var nextSubmission = 0
    private var nextDelivery = 0
    /// Pieces of the current frame to hand out: ranges within `current`.
    private var current: FrameBuffer?
    private var pieces: [Range<Int>] = []
    private var trailer = 1024
    private var closed = false
    /// The frame the archive ends inside, once met: nothing is submitted after it.
    private var truncatedFrame: Int?

    /// The frame (its index in the table) that could not be read, once reading stopped at
    /// damage; nil before that.
    package private(set) var unreadableFrame: Int?

    /// Compressed bytes read from the archive so far.
    package var compressedBytesRead: Int64 { decoder.compressedBytes }

    // MARK: Life cycle

    /// Reads `ranges` (offsets in the decompressed stream; any order, may overlap) of the
    /// archive `source` described by `table`.
    package init(source: RandomAccessSource, table: SeekTable, ranges: [Range<Int64>], name: String, workers: Int) {
        self.source = source
        self.table = table
        self.name = name
        self.ranges = RangedZstdSource.merged(ranges, limit: table.decompressedSize)
        decoder = ParallelFrameDecoder(workers: workers, name: name)
        var indexes: [Int] = []
        for range in self.ranges {
            guard let first = table.frameIndex(containing: range.lowerBound),
                  let last = table.frameIndex(containing: range.upperBound - 1) else { continue }
            for index in first...last where indexes.last.map({ $0 < index }) ?? true { indexes.append(index) }
        }
        frameIndexes = indexes
    }

    /// The seek table of `source` when it can be read in parts: it has one, and no frame is
    /// bigger than Keepsake decompresses in one piece (the table comes from the archive;
    /// such an archive is read the ordinary way).
    package static func table(of source: RandomAccessSource) -> SeekTable? {
        guard let size = try? source.size(),
              let table = try? SeekTable.read(streamSize: size, read: { try source.bytes(at: $0, count: $1) }),
              table.largestFrame <= ZstdContext.compressBound(ParallelZstdSource.largestParallelFrame) else { return nil }
        return table
    }

    /// Sorted, overlapping and touching ranges joined, clipped to the stream.
    static func merged(_ ranges: [Range<Int64>], limit: Int64) -> [Range<Int64>] {
        var result: [Range<Int64>] = []
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            // Offsets come from a manifest: never trust them to be inside the stream.
            let lower = max(0, range.lowerBound)
            let upper = min(limit, range.upperBound)
            guard lower < upper else { continue }
            let clipped = lower..<upper
            if let last = result.last, clipped.lowerBound <= last.upperBound {
                result[result.count - 1] = last.lowerBound..<max(last.upperBound, clipped.upperBound)
            } else {
                result.append(clipped)
            }
        }
        return result
    }

    package func close() {
        closed = true
        source.close()
    }

    // MARK: Reading

    package func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard !closed else { throw ByteStreamError.closed(name: name) }
        guard let destination = buffer.baseAddress, !buffer.isEmpty else { return 0 }
        guard let piece = try nextPiece(upTo: buffer.count) else { return trailerBytes(into: buffer) }
        if let start = piece.baseAddress { destination.copyMemory(from: start, byteCount: piece.count) }
        return piece.count
    }

    /// The next piece where it lies in its decompressed frame, valid until the next call (no
    /// copy: a 1 GiB file is not moved through the caller's buffer); the trailer's zeros in
    /// `scratch`.
    package func lend(scratch: UnsafeMutableRawBufferPointer) throws -> UnsafeRawBufferPointer {
        guard !closed else { throw ByteStreamError.closed(name: name) }
        if let piece = try nextPiece(upTo: Int.max) { return piece }
        return UnsafeRawBufferPointer(rebasing: scratch[0..<trailerBytes(into: scratch)])
    }

    /// Up to `limit` bytes of the current piece, taken; the frame before is recycled first
    /// (its view was the caller's until this call). Nil once every range is handed out.
    private func nextPiece(upTo limit: Int) throws -> UnsafeRawBufferPointer? {
        while true {
            if let current, let piece = pieces.first, let start = current.bytes.baseAddress {
                let count = min(limit, piece.count)
                if count == piece.count { pieces.removeFirst() } else { pieces[0] = (piece.lowerBound + count)..<piece.upperBound }
                return UnsafeRawBufferPointer(start: start + piece.lowerBound, count: count)
            }
            if let finished = current {
                decoder.recycle(finished)
                current = nil
            }
            try submitFrames()
            let next: FrameBuffer?
            do {
                next = try decoder.next()
            } catch {
                unreadableFrame = frameIndexes[nextDelivery]
                throw error
            }
            guard let frame = next else {
                if let truncatedFrame {
                    unreadableFrame = truncatedFrame
                    throw ArchiveError.damaged(archive: name, reason: "it ends inside frame \(truncatedFrame) (truncated)")
                }
                return nil
            }
            let index = frameIndexes[nextDelivery]
            nextDelivery += 1
            current = frame
            pieces = piecesOf(table.frames[index])
        }
    }

    /// The zero blocks that end the tar stream, as many as fit in `buffer`; 0 once given.
    private func trailerBytes(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let count = min(trailer, buffer.count)
        guard count > 0, let destination = buffer.baseAddress else { return 0 }
        _ = destination.initializeMemory(as: UInt8.self, repeating: 0, count: count)
        trailer -= count
        return count
    }

    private func submitFrames() throws {
        while !decoder.isFull && nextSubmission < frameIndexes.count && truncatedFrame == nil {
            let index = frameIndexes[nextSubmission]
            let frame = table.frames[index]
            do {
                // Read straight into the decoder's buffer: no array to zero, fault in and copy.
                try decoder.submit(compressedSize: frame.compressedSize, contentSize: frame.decompressedSize,
                                   frameNumber: index) { room in
                    var filled = 0
                    while filled < room.count {
                        let got = try source.read(at: frame.compressedOffset + Int64(filled),
                                                  into: UnsafeMutableRawBufferPointer(rebasing: room[filled...]))
                        if got == 0 { break }
                        filled += got
                    }
                    return filled
                }
            } catch is ParallelFrameDecoder.FillEnded {
                // Thrown once the frames before it are handed out, as the whole-stream reader does.
                truncatedFrame = index
                return
            }
            nextSubmission += 1
        }
    }

    /// The parts of `frame` that lie in the wanted ranges, as offsets within the frame.
    private func piecesOf(_ frame: SeekTable.Frame) -> [Range<Int>] {
        let frameRange = frame.decompressedOffset..<(frame.decompressedOffset + Int64(frame.decompressedSize))
        return ranges.compactMap { range in
            let overlap = range.clamped(to: frameRange)
            guard !overlap.isEmpty else { return nil }
            return Int(overlap.lowerBound - frame.decompressedOffset)..<Int(overlap.upperBound - frame.decompressedOffset)
        }
    }
}
