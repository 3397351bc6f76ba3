import KeepsakeSupport

/// Compresses a byte stream as independent zstd frames on worker threads and writes them,
/// in order, to the sink below, followed by a seek table (the zstd seekable format).
/// Concatenated frames are an ordinary zstd stream, so `zstd -d` and `tar --zstd` read
/// the result unchanged; Keepsake can also decompress the frames in parallel, or only the
/// ones a partial restore needs.
public final class SeekableZstdSink: ByteSink {
    // MARK: Types

    /// What a worker hands back: the buffers and context it borrowed, and the outcome.
    private final class Job: @unchecked Sendable {
        let input: FrameBuffer
        let output: FrameBuffer
        let context: ZstdContext
        var outcome: Result<Int, ZstdFailure> = .success(0)
        init(input: FrameBuffer, output: FrameBuffer, context: ZstdContext) {
            self.input = input
            self.output = output
            self.context = context
        }
    }

    // MARK: Settings

    /// Uncompressed bytes per frame. Each frame starts without history, which costs ratio:
    /// on text-heavy trees 2 MiB frames came out 1.5–8% larger than one long frame, 4 MiB
    /// 0.6–4%, 8 MiB 0.2–1%; a file's restore decompresses at least one frame, and each
    /// worker holds one in memory. 4 MiB is the middle.
    public static let defaultFrameSize = 4 << 20

    private let downstream: ByteSink
    private let level: Int32
    /// The level for frames whose samples do not shrink; nil compresses every frame at `level`.
    private let incompressibleLevel: Int32?
    /// Fast enough to pass incompressible data through at memory speed (zstd's `--fast=4`).
    public static let incompressibleLevel: Int32 = -4
    private let frameSize: Int
    private let writesSeekTable: Bool

    // MARK: State

    private let pool: OrderedWorkPool<Job>
    private var filling: FrameBuffer
    private var spareInputs: [FrameBuffer] = []
    private var spareOutputs: [FrameBuffer] = []
    private var spareContexts: [ZstdContext] = []
    private var table = SeekTable()
    private var finished = false

    // MARK: Life cycle

    /// A sink compressing at `level` with up to `workers` frames being compressed at once;
    /// without `seekTable`, the frames are not followed by a seek table (for a stream that
    /// is only ever read front to back, where a table would be bytes no checksum covers).
    /// With `adaptive`, frames of data that does not shrink (judged from samples) are stored
    /// at `incompressibleLevel`, without trying harder.
    public init(downstream: ByteSink, level: Int, workers: Int, frameSize: Int = SeekableZstdSink.defaultFrameSize,
                seekTable: Bool = true, adaptive: Bool = false) throws {
        self.downstream = downstream
        self.level = Int32(level)
        incompressibleLevel = adaptive && Int32(level) > SeekableZstdSink.incompressibleLevel
            ? SeekableZstdSink.incompressibleLevel : nil
        self.frameSize = max(4096, frameSize)
        writesSeekTable = seekTable
        // The caller fills the next frame while up to `workers` frames are compressed (one more
        // in flight measured no faster and cost 8 MB).
        pool = OrderedWorkPool(capacity: max(1, workers))
        filling = FrameBuffer(capacity: self.frameSize)
        spareContexts.append(try ZstdContext(.compression, level: self.level))
    }

    // MARK: Writing

    public func write(_ buffer: UnsafeRawBufferPointer) throws {
        guard !finished else { throw ArchiveError.write(path: "end of archive", reason: "bytes came after the archive was finished") }
        var rest = buffer
        while !rest.isEmpty {
            let taken = filling.append(rest)
            rest = UnsafeRawBufferPointer(rebasing: rest[taken...])
            if filling.count == filling.capacity {
                try submitFrame()
                try writeReadyFrames(wait: false)
            }
        }
    }

    /// Ends the frame being filled here, so that what was written so far can be
    /// decompressed without what follows (a manifest's summary line, say).
    public func endFrame() throws {
        guard !finished else { throw ArchiveError.write(path: "end of archive", reason: "bytes came after the archive was finished") }
        guard filling.count > 0 else { return }
        try submitFrame()
        try writeReadyFrames(wait: false)
    }

    /// Compresses what is left, waits for every frame, and appends the seek table.
    public func finish() throws {
        guard !finished else { return }
        finished = true
        if filling.count > 0 { try submitFrame() }
        try writeReadyFrames(wait: true)
        releaseBuffers()
        guard writesSeekTable else { return }
        let encoded = table.encoded()
        try encoded.withUnsafeBytes { try downstream.write($0) }
    }

    /// Frees the frame buffers and contexts once nothing more can be written: what comes
    /// next (the manifest beside the archive is compressed too) must not add to the peak.
    private func releaseBuffers() {
        filling = FrameBuffer(capacity: 0)
        spareInputs.removeAll()
        spareOutputs.removeAll()
        spareContexts.removeAll()
    }

    /// The frames written so far (complete after `finish`).
    public var seekTable: SeekTable { table }

    // MARK: Frames

    private func submitFrame() throws {
        while pool.isFull { try writeNextFrame(wait: true) }
        let input = filling
        filling = spareInputs.popLast() ?? FrameBuffer(capacity: frameSize)
        filling.count = 0
        let bound = ZstdContext.compressBound(input.count)
        let output = spareOutputs.popLast().flatMap { $0.capacity >= bound ? $0 : nil } ?? FrameBuffer(capacity: bound)
        let job = Job(input: input, output: output, context: try makeContext())
        let (level, fast) = (level, incompressibleLevel)
        pool.submit {
            job.outcome = fast.map { job.context.compress(job.input.filled, into: job.output.bytes, level: level, fastLevel: $0) }
                ?? job.context.compress(job.input.filled, into: job.output.bytes)
            return job
        }
    }

    private func makeContext() throws -> ZstdContext {
        try spareContexts.popLast() ?? ZstdContext(.compression, level: level)
    }

    private func writeReadyFrames(wait: Bool) throws {
        while pool.outstanding > 0 {
            guard try writeNextFrame(wait: wait) else { return }
        }
    }

    /// Writes the oldest frame if it is done (or, with `wait`, once it is). Returns whether
    /// a frame was written.
    @discardableResult
    private func writeNextFrame(wait: Bool) throws -> Bool {
        guard let job = wait ? pool.take() : pool.takeIfReady() else { return false }
        let size: Int
        switch job.outcome {
        case .success(let compressed): size = compressed
        case .failure(let failure): throw ArchiveError.setup("zstd compression failed: \(failure.message)")
        }
        job.output.count = size
        try downstream.write(job.output.filled)
        table.append(compressedSize: size, decompressedSize: job.input.count)
        spareInputs.append(job.input)
        spareOutputs.append(job.output)
        spareContexts.append(job.context)
        return true
    }
}
