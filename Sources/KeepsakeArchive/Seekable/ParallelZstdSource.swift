import KeepsakeSupport

/// Decompresses a zstd stream read front to back. A stream of independent frames that
/// declare their sizes (as Keepsake writes them) is decompressed several frames at once on
/// worker threads; any other zstd stream (one long frame, as `zstd` or libarchive write
/// it) falls back to ordinary streaming decompression from that point on.
final class ParallelZstdSource: LendingSource {
    // MARK: Limits

    /// Frames declaring more than this are streamed instead (a hostile header cannot make
    /// us allocate much, and one huge frame gains nothing from workers).
    static let largestParallelFrame = 16 << 20
    /// A seek table larger than this is skipped unchecked (a million frames' worth).
    static let largestSeekTable = 8 << 20 + 64
    private static let readSize = 1 << 20

    // MARK: State

    private let source: ByteSource
    private let name: String
    private let decoder: ParallelFrameDecoder
    /// Compressed bytes read but not yet used: `input.filled[inputStart...]`.
    private var input: FrameBuffer
    private var inputStart = 0
    private var consumedBefore: Int64 = 0
    private var sourceEnded = false
    /// The frame being handed out, and how far.
    private var current: FrameBuffer?
    private var currentPosition = 0
    private var framesSubmitted = 0
    /// The frames decompressed so far, to check the seek table against.
    private var framesSeen = SeekTable()
    /// What is wrong with the seek table, if anything. Not thrown while reading: the frames
    /// themselves are intact, so a restore goes on; `verify` asks (see `ArchiveReader.readToEnd`).
    private(set) var seekTableProblem: String?
    /// Set when a frame cannot be decompressed on its own; streaming starts once the
    /// frames before it have been handed out.
    private var streamingRequested = false
    private var streaming: ZstdContext?
    private var streamStatus = 0
    private var closed = false
    /// What is wrong with the input past the frames submitted (it ends inside a frame, or
    /// holds bytes that are no frame): thrown once the frames before it have been handed
    /// out, so a reader gets every intact frame first.
    private var pendingFailure: ArchiveError?
    /// Frames handed out so far (whole or in part).
    private var framesDelivered = 0
    /// The first frame that could not be handed out, once reading stopped at damage in the
    /// frames; nil before that, and for damage met while streaming.
    private(set) var unreadableFrame: Int?

    // MARK: Life cycle

    /// Decompresses `source`, whose first bytes (`prefix`) were already read from it.
    init(source: ByteSource, prefix: [UInt8], name: String, workers: Int) {
        self.source = source
        self.name = name
        decoder = ParallelFrameDecoder(workers: workers, name: name)
        input = FrameBuffer(capacity: max(ParallelZstdSource.readSize, prefix.count))
        prefix.withUnsafeBytes { _ = input.append($0) }
    }

    func close() {
        closed = true
        source.close()
    }

    // MARK: Reading

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard !closed else { throw ByteStreamError.closed(name: name) }
        guard !buffer.isEmpty else { return 0 }
        guard try advanceFrame(), let current, let destination = buffer.baseAddress, let start = current.bytes.baseAddress else {
            return streaming != nil ? try readStreaming(into: buffer) : 0
        }
        let count = min(buffer.count, current.count - currentPosition)
        destination.copyMemory(from: start + currentPosition, byteCount: count)
        currentPosition += count
        return count
    }

    func lend(scratch: UnsafeMutableRawBufferPointer) throws -> UnsafeRawBufferPointer {
        guard !closed else { throw ByteStreamError.closed(name: name) }
        guard try advanceFrame(), let current else {
            let count = streaming != nil ? try readStreaming(into: scratch) : 0
            return UnsafeRawBufferPointer(rebasing: scratch[0..<count])
        }
        // The frame is recycled on the next call, once the caller is done with it.
        let view = UnsafeRawBufferPointer(rebasing: current.bytes[currentPosition..<current.count])
        currentPosition = current.count
        return view
    }

    /// Makes `current` a frame with bytes left to hand out, recycling the one that was
    /// handed out; false when no frame is left (the stream ended, or it is streamed now).
    private func advanceFrame() throws -> Bool {
        while true {
            if let current, currentPosition < current.count { return true }
            if let finished = current {
                decoder.recycle(finished)
                current = nil
            }
            if streaming != nil { return false }
            if pendingFailure == nil {
                do {
                    try fillPipeline()
                } catch let failure as ArchiveError {
                    pendingFailure = failure
                }
            }
            let next: FrameBuffer?
            do {
                next = try decoder.next()
            } catch {
                unreadableFrame = framesDelivered
                throw error
            }
            guard let frame = next else {
                if let pendingFailure {
                    unreadableFrame = framesDelivered
                    throw pendingFailure
                }
                if streamingRequested {
                    streaming = try decoder.streamingContext()
                    continue
                }
                return false
            }
            current = frame
            currentPosition = 0
            framesDelivered += 1
        }
    }

    // MARK: Frames

    /// Starts decompressing frames until the pool is full, the stream ends, or a frame
    /// needs streaming.
    private func fillPipeline() throws {
        while !decoder.isFull && !streamingRequested {
            try ensureInput(8)
            let available = input.count - inputStart
            if available == 0 { return }
            guard available >= 8 else {
                throw damaged("it ends inside a frame header (byte \(consumedBefore + Int64(inputStart)))")
            }
            let magic = littleEndian(at: inputStart)
            if ZstdContext.isSkippable(magic) {
                guard available >= 8 else { throw damaged("it ends inside a skippable frame") }
                let size = 8 + Int(littleEndian(at: inputStart + 4))
                if try isSeekTable(magic: magic, size: size) {
                    try checkSeekTable(size: size)
                } else {
                    try skip(size)
                }
                continue
            }
            guard magic == ZstdContext.frameMagic else {
                throw damaged("no zstd frame starts at byte \(consumedBefore + Int64(inputStart))")
            }
            try ensureInput(18) // the longest frame header
            guard let declared = ZstdContext.frameContentSize(remainingInput),
                  declared <= UInt64(ParallelZstdSource.largestParallelFrame) else {
                streamingRequested = true
                return
            }
            let contentSize = Int(declared)
            guard let frameSize = try wholeFrameSize(contentSize: contentSize) else {
                streamingRequested = true
                return
            }
            try submit(frameSize: frameSize, contentSize: contentSize)
        }
    }

    /// The compressed size of the frame at the head of the input, reading until all of it
    /// is there; nil when it cannot be found within the most such a frame can take.
    private func wholeFrameSize(contentSize: Int) throws -> Int? {
        let most = ZstdContext.compressBound(contentSize) + 64
        while true {
            if let size = ZstdContext.frameCompressedSize(remainingInput) { return size }
            let available = input.count - inputStart
            if sourceEnded {
                throw damaged("it ends inside frame \(framesSubmitted) (truncated)")
            }
            if available >= most { return nil }
            try ensureInput(min(most, max(available * 2, available + ParallelZstdSource.readSize)))
        }
    }

    private func submit(frameSize: Int, contentSize: Int) throws {
        try decoder.submit(UnsafeRawBufferPointer(rebasing: remainingInput[0..<frameSize]), contentSize: contentSize,
                           frameNumber: framesSubmitted)
        framesSeen.append(compressedSize: frameSize, decompressedSize: contentSize)
        inputStart += frameSize
        framesSubmitted += 1
    }

    /// Whether the skippable frame at the head of the input is a seek table: its magic or
    /// its footer says so (either is enough, so one flipped bit cannot hide a table).
    private func isSeekTable(magic: UInt32, size: Int) throws -> Bool {
        if magic == SeekTable.skippableMagic { return true }
        guard size <= ParallelZstdSource.largestSeekTable else { return false }
        try ensureInput(size)
        guard input.count - inputStart >= size else { return false }
        return littleEndian(at: inputStart + size - 4) == SeekTable.seekableMagic
    }

    /// A seek table is not covered by any checksum: it must describe exactly the frames
    /// before it, or the archive is damaged (a partial restore would read the wrong bytes).
    private func checkSeekTable(size: Int) throws {
        if size <= ParallelZstdSource.largestSeekTable { try ensureInput(size) }
        guard size <= ParallelZstdSource.largestSeekTable, input.count - inputStart >= size else {
            seekTableProblem = seekTableProblem
                ?? (size > ParallelZstdSource.largestSeekTable ? "its seek table is implausibly large" : "it ends inside its seek table (truncated)")
            // What follows a broken table cannot be trusted to be frames: stop reading here.
            inputStart = input.count
            sourceEnded = true
            return
        }
        let frame = Array(remainingInput[0..<size])
        inputStart += size
        // Without per-frame checksums the table is fully determined by the frames: every
        // byte must be as Keepsake would write it (unused bits included).
        guard let table = SeekTable.parse(frame: frame), table == framesSeen,
              frame[frame.count - 5] & 0x80 != 0 || frame == framesSeen.encoded() else {
            seekTableProblem = seekTableProblem ?? "its seek table does not match its frames"
            return
        }
    }

    // MARK: Streaming

    private func readStreaming(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard let streaming else { return 0 }
        while true {
            try ensureInput(1)
            let available = input.count - inputStart
            if available == 0 {
                // A frame cut short leaves the decoder waiting for more.
                if streamStatus != 0 { throw damaged("it ends inside a zstd frame (truncated)") }
                return 0
            }
            var inputPosition = 0
            var outputPosition = 0
            let outcome = streaming.decompressStream(remainingInput, inputPosition: &inputPosition,
                                                     into: buffer, outputPosition: &outputPosition)
            inputStart += inputPosition
            switch outcome {
            case .success(let status): streamStatus = status
            case .failure(let failure): throw damaged("zstd: \(failure.message)")
            }
            if outputPosition > 0 { return outputPosition }
        }
    }

    // MARK: Input

    private var remainingInput: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: input.filled[inputStart...])
    }

    /// Reads until at least `wanted` unused bytes are buffered or the source ends.
    private func ensureInput(_ wanted: Int) throws {
        while input.count - inputStart < wanted && !sourceEnded {
            let available = input.count - inputStart
            if input.capacity - input.count < ParallelZstdSource.readSize / 4 || input.capacity < wanted {
                // Move what is left to the front of a buffer big enough.
                let needed = max(wanted, available + ParallelZstdSource.readSize)
                let moved = input.capacity >= needed ? input : FrameBuffer(capacity: needed)
                if let from = input.bytes.baseAddress, let to = moved.bytes.baseAddress, available > 0 {
                    to.copyMemory(from: from + inputStart, byteCount: available) // memmove semantics
                }
                consumedBefore += Int64(inputStart)
                moved.count = available
                input = moved
                inputStart = 0
            }
            let free = UnsafeMutableRawBufferPointer(rebasing: input.bytes[input.count...])
            let count = try source.read(into: free)
            if count == 0 { sourceEnded = true } else { input.count += count }
        }
    }

    /// Drops `count` bytes of input (a skippable frame), reading through them.
    private func skip(_ count: Int) throws {
        var left = count
        while left > 0 {
            try ensureInput(1)
            let available = input.count - inputStart
            if available == 0 { throw damaged("it ends inside a skippable frame") }
            let step = min(left, available)
            inputStart += step
            left -= step
        }
    }

    private func littleEndian(at offset: Int) -> UInt32 {
        SeekTable.littleEndian(input.bytes, at: offset)
    }

    private func damaged(_ reason: String) -> ArchiveError {
        .damaged(archive: name, reason: reason)
    }
}
