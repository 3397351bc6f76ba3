import KeepsakeSupport

/// Decompresses whole zstd frames on worker threads and hands the results back in the
/// order the frames were submitted. Buffers and contexts are reused.
final class ParallelFrameDecoder {
    // MARK: Types

    /// One frame on its way through a worker.
    private final class Job: @unchecked Sendable {
        let input: FrameBuffer
        let output: FrameBuffer
        let context: ZstdContext
        let expectedSize: Int
        let frameNumber: Int
        var outcome: Result<Int, ZstdFailure> = .success(0)
        init(input: FrameBuffer, output: FrameBuffer, context: ZstdContext, expectedSize: Int, frameNumber: Int) {
            self.input = input
            self.output = output
            self.context = context
            self.expectedSize = expectedSize
            self.frameNumber = frameNumber
        }
    }

    // MARK: State

    private let pool: OrderedWorkPool<Job>
    private let name: String
    private var spareInputs: [FrameBuffer] = []
    private var spareOutputs: [FrameBuffer] = []
    private var spareContexts: [ZstdContext] = []
    /// Compressed bytes submitted so far.
    private(set) var compressedBytes: Int64 = 0

    /// A decoder keeping up to `workers` frames in work (plus one ready), naming `name` in
    /// its errors.
    init(workers: Int, name: String) {
        pool = OrderedWorkPool(capacity: max(1, workers))
        self.name = name
    }

    // MARK: Submitting

    /// Whether `next()` should be called before another `submit`.
    var isFull: Bool { pool.isFull }

    /// Starts decompressing one whole frame that declares `contentSize` bytes.
    func submit(_ frame: UnsafeRawBufferPointer, contentSize: Int, frameNumber: Int) throws {
        try submit(compressedSize: frame.count, contentSize: contentSize, frameNumber: frameNumber) { room in
            if let base = frame.baseAddress, let destination = room.baseAddress {
                destination.copyMemory(from: base, byteCount: frame.count)
            }
            return frame.count
        }
    }

    /// Starts decompressing one whole frame of `compressedSize` bytes that declares
    /// `contentSize`, which `fill` writes into the room it is given (straight from where the
    /// frame lies: no copy of its own) and returns how many bytes it wrote; fewer than
    /// `compressedSize` means the input ended inside the frame, thrown as `FillEnded`.
    func submit(compressedSize: Int, contentSize: Int, frameNumber: Int,
                fill: (UnsafeMutableRawBufferPointer) throws -> Int) throws {
        let input = spareBuffer(from: &spareInputs, holding: compressedSize)
        let filled = try fill(UnsafeMutableRawBufferPointer(rebasing: input.bytes[0..<compressedSize]))
        guard filled == compressedSize else {
            spareInputs.append(input)
            throw FillEnded()
        }
        input.count = compressedSize
        let output = spareBuffer(from: &spareOutputs, holding: contentSize)
        output.count = 0
        let context = try spareContexts.popLast() ?? ZstdContext(.decompression)
        compressedBytes += Int64(compressedSize)
        let job = Job(input: input, output: output, context: context, expectedSize: contentSize, frameNumber: frameNumber)
        pool.submit {
            let room = UnsafeMutableRawBufferPointer(rebasing: job.output.bytes[0..<job.expectedSize])
            job.outcome = job.context.decompress(job.input.filled, into: room)
            return job
        }
    }

    /// `fill` gave fewer bytes than the frame has.
    struct FillEnded: Error {}

    /// A spare buffer of at least `count` bytes, else a new one in place of the smallest spare
    /// (so there are never more buffers than were once in use at the same time). Any spare
    /// big enough will do: frames differ in size, and taking only the last spare dropped
    /// buffers a bigger frame then had to allocate, and fault in, again.
    private func spareBuffer(from spares: inout [FrameBuffer], holding count: Int) -> FrameBuffer {
        if let index = spares.lastIndex(where: { $0.capacity >= count }) {
            return spares.remove(at: index)
        }
        if let smallest = spares.indices.min(by: { spares[$0].capacity < spares[$1].capacity }) {
            spares.remove(at: smallest)
        }
        return FrameBuffer(capacity: count)
    }

    // MARK: Taking

    /// The oldest frame's content, waiting for it; nil when nothing is outstanding. Throws
    /// when the frame is damaged. Give the buffer back with `recycle` once used.
    func next() throws -> FrameBuffer? {
        guard let job = pool.take() else { return nil }
        spareInputs.append(job.input)
        spareContexts.append(job.context)
        switch job.outcome {
        case .success(let size) where size == job.expectedSize:
            job.output.count = size
            return job.output
        case .success(let size):
            throw ArchiveError.damaged(archive: name, reason: "zstd frame \(job.frameNumber) holds \(size) bytes but declares \(job.expectedSize)")
        case .failure(let failure):
            throw ArchiveError.damaged(archive: name, reason: "zstd frame \(job.frameNumber): \(failure.message)")
        }
    }

    /// Takes back a buffer `next()` returned.
    func recycle(_ buffer: FrameBuffer) {
        spareOutputs.append(buffer)
    }

    /// A decompression context for streaming, from the spares when there is one.
    func streamingContext() throws -> ZstdContext {
        try spareContexts.popLast() ?? ZstdContext(.decompression)
    }
}
