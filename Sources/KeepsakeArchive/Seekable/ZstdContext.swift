import CZstd

/// A libzstd compression or decompression context, used by one thread at a time.
final class ZstdContext: @unchecked Sendable {
    // MARK: Kinds

    enum Kind { case compression, decompression }

    // MARK: State

    let kind: Kind
    private let pointer: OpaquePointer
    /// The compression level set now.
    private var level: Int32

    /// A context; compression ones get `level` and a content checksum in every frame.
    init(_ kind: Kind, level: Int32 = 3) throws {
        self.kind = kind
        self.level = level
        switch kind {
        case .compression:
            guard let context = ZSTD_createCCtx() else { throw ArchiveError.setup("out of memory (zstd)") }
            pointer = context
            try ZstdContext.check(ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, level))
            try ZstdContext.check(ZSTD_CCtx_setParameter(context, ZSTD_c_checksumFlag, 1))
        case .decompression:
            guard let context = ZSTD_createDCtx() else { throw ArchiveError.setup("out of memory (zstd)") }
            pointer = context
        }
    }

    deinit {
        switch kind {
        case .compression: ZSTD_freeCCtx(pointer)
        case .decompression: ZSTD_freeDCtx(pointer)
        }
    }

    // MARK: Whole frames

    /// Compresses `input` into one frame in `output`; returns its size.
    func compress(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Result<Int, ZstdFailure> {
        ZstdContext.result(ZSTD_compress2(pointer, output.baseAddress, output.count, input.baseAddress, input.count))
    }

    /// Compresses `input` into one frame in `output` at `level`, unless samples of it do not
    /// shrink (data already compressed: images, video, archives): then at `fastLevel`,
    /// which stores such data as raw blocks without trying harder. The choice depends on
    /// the input alone, so the same input always gives the same frame.
    func compress(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer, level: Int32,
                  fastLevel: Int32) -> Result<Int, ZstdFailure> {
        let chosen = looksIncompressible(input, scratch: output, fastLevel: fastLevel) ? fastLevel : level
        if let failure = setLevel(chosen) { return .failure(failure) }
        return compress(input, into: output)
    }

    /// Bytes of each sample (three: the start, the middle and the end of the input).
    static let sampleSize = 32 * 1024

    /// Whether each sample of `input` stays within 3% of its size at `fastLevel`.
    private func looksIncompressible(_ input: UnsafeRawBufferPointer, scratch: UnsafeMutableRawBufferPointer,
                                     fastLevel: Int32) -> Bool {
        let size = ZstdContext.sampleSize
        guard input.count >= 4 * size, scratch.count >= ZstdContext.compressBound(size), setLevel(fastLevel) == nil else {
            return false
        }
        for start in [0, (input.count - size) / 2, input.count - size] {
            let sample = UnsafeRawBufferPointer(rebasing: input[start..<(start + size)])
            guard case .success(let compressed) = compress(sample, into: scratch), compressed * 100 >= size * 97 else {
                return false
            }
        }
        return true
    }

    private func setLevel(_ wanted: Int32) -> ZstdFailure? {
        guard wanted != level else { return nil }
        if case .failure(let failure) = ZstdContext.result(ZSTD_CCtx_setParameter(pointer, ZSTD_c_compressionLevel, wanted)) {
            return failure
        }
        level = wanted
        return nil
    }

    /// Decompresses one whole frame; returns the decompressed size.
    func decompress(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Result<Int, ZstdFailure> {
        ZstdContext.result(ZSTD_decompressDCtx(pointer, output.baseAddress, output.count, input.baseAddress, input.count))
    }

    /// Decompresses one frame as far as its bytes allow, into `output`; returns how many
    /// bytes it gave before it stopped (a damaged frame's output up to its damage, or whole
    /// when only its checksum disagrees). What it gives is not checked: the caller checks it.
    func decompressAsFarAsPossible(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int {
        _ = ZSTD_DCtx_reset(pointer, ZSTD_reset_session_only)
        // ZSTD_d_forceIgnoreChecksum (libzstd 1.4.7 and later): a frame whose only fault is
        // its checksum then gives all of its bytes, its last block too (which a streaming
        // decoder otherwise holds back when the checksum fails).
        _ = ZSTD_DCtx_setParameter(pointer, ZSTD_d_experimentalParam3, 1)
        defer { _ = ZSTD_DCtx_setParameter(pointer, ZSTD_d_experimentalParam3, 0) }
        var inputPosition = 0
        var outputPosition = 0
        // The input is handed over a slice at a time: given the whole frame and room for all
        // of it, libzstd decodes it in one go and, at damage, gives nothing.
        let slice = 64 * 1024
        while outputPosition < output.count {
            let before = (inputPosition, outputPosition)
            let visible = UnsafeRawBufferPointer(rebasing: input[0..<min(input.count, inputPosition + slice)])
            let status = decompressStream(visible, inputPosition: &inputPosition, into: output, outputPosition: &outputPosition)
            guard case .success(let hint) = status, hint != 0, (inputPosition, outputPosition) != before else { break }
        }
        _ = ZSTD_DCtx_reset(pointer, ZSTD_reset_session_only)
        return outputPosition
    }

    // MARK: Streaming

    /// Decompresses from `input` starting at `inputPosition` into `output`, advancing both
    /// positions; returns 0 when a frame has just ended (see ZSTD_decompressStream).
    func decompressStream(_ input: UnsafeRawBufferPointer, inputPosition: inout Int,
                          into output: UnsafeMutableRawBufferPointer, outputPosition: inout Int) -> Result<Int, ZstdFailure> {
        var inBuffer = ZSTD_inBuffer(src: input.baseAddress, size: input.count, pos: inputPosition)
        var outBuffer = ZSTD_outBuffer(dst: output.baseAddress, size: output.count, pos: outputPosition)
        let status = ZSTD_decompressStream(pointer, &outBuffer, &inBuffer)
        inputPosition = inBuffer.pos
        outputPosition = outBuffer.pos
        return ZstdContext.result(status)
    }

    // MARK: Frame facts

    /// The first four bytes of a zstd frame, read little-endian.
    static let frameMagic: UInt32 = 0xFD2F_B528

    /// Whether `magic` opens a skippable frame (16 values, 0x184D2A50 to 0x184D2A5F).
    static func isSkippable(_ magic: UInt32) -> Bool { magic & 0xFFFF_FFF0 == 0x184D_2A50 }

    /// The most a frame of `size` input bytes can take compressed.
    static func compressBound(_ size: Int) -> Int { ZSTD_compressBound(size) }

    /// A whole frame's compressed size at the start of `bytes`, or nil when `bytes` does
    /// not hold all of it yet (or it is not a valid frame).
    static func frameCompressedSize(_ bytes: UnsafeRawBufferPointer) -> Int? {
        let size = ZSTD_findFrameCompressedSize(bytes.baseAddress, bytes.count)
        return ZSTD_isError(size) != 0 ? nil : size
    }

    /// The decompressed size a frame header declares, or nil when it does not say.
    static func frameContentSize(_ bytes: UnsafeRawBufferPointer) -> UInt64? {
        let size = ZSTD_getFrameContentSize(bytes.baseAddress, bytes.count)
        return size == KS_ZSTD_CONTENTSIZE_UNKNOWN || size == KS_ZSTD_CONTENTSIZE_ERROR ? nil : size
    }

    // MARK: Errors

    private static func result(_ status: Int) -> Result<Int, ZstdFailure> {
        if ZSTD_isError(status) != 0 { return .failure(ZstdFailure(message: String(cString: ZSTD_getErrorName(status)))) }
        return .success(status)
    }

    private static func check(_ status: Int) throws {
        if ZSTD_isError(status) != 0 { throw ArchiveError.setup("zstd: \(String(cString: ZSTD_getErrorName(status)))") }
    }
}

/// What libzstd said went wrong.
struct ZstdFailure: Error, Sendable {
    let message: String
}
