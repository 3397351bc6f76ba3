import KeepsakeSupport

/// Encrypts everything written to it into `downstream` as one age file (header first, then the
/// STREAM payload: 16-byte nonce, 64 KiB chunks each sealed with ChaCha20-Poly1305, last chunk flagged).
///
/// Full chunks are sealed straight from the caller's buffer when it holds more than a chunk,
/// and sealed chunks are passed on about 1 MiB at a time.
public final class AgeEncryptingSink: ByteSink {
    // MARK: State

    private let downstream: ByteSink
    private let cipher: AgePayloadCipher
    /// Plaintext of the chunk being filled: a full one is sealed only once more bytes come,
    /// since the last chunk (flagged final) may be full.
    private let staged: UnsafeMutableRawBufferPointer
    private var stagedCount = 0
    /// Sealed bytes waiting for `downstream`.
    private let output: UnsafeMutableRawBufferPointer
    private var outputCount = 0
    private var nextChunk: Int64 = 0
    private var finished = false
    private var failed = false
    private var written: Int64 = 0

    /// Sealed chunks gathered before one write downstream.
    private static let chunksPerWrite = 16

    /// Plaintext bytes written so far.
    public var plaintextBytes: Int64 { written }

    // MARK: Setup

    /// Writes the header for `encryption` and the payload nonce; throws `invalidKey` for an
    /// empty recipient list or passphrase, `workFactorTooHigh` above 22.
    public init(downstream: ByteSink, encryption: AgeEncryption) throws {
        self.downstream = downstream
        let fileKey = try AgeFileKey.generate()
        let header = try AgeHeader.serialize(stanzas: try AgeFileKey.stanzas(for: encryption, fileKey: fileKey), fileKey: fileKey)
        let nonce = try SecureRandom.bytes(AgeFormat.payloadNonceLength)
        cipher = try AgePayloadCipher(payloadKey: try AgeFileKey.payloadKey(fileKey: fileKey, nonce: nonce), encrypting: true)
        staged = .allocate(byteCount: AgeFormat.chunkSize, alignment: 16)
        output = .allocate(byteCount: AgeEncryptingSink.chunksPerWrite * AgeFormat.sealedChunkSize, alignment: 16)
        // The header and nonce go out with the first chunks (a huge header straight away).
        let prefix = header + nonce
        if prefix.count <= output.count / 2 {
            prefix.withUnsafeBytes { output.baseAddress?.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            outputCount = prefix.count
        } else {
            try prefix.withUnsafeBytes { try downstream.write($0) }
        }
    }

    deinit {
        // Plaintext must not linger in freed memory.
        staged.initializeMemory(as: UInt8.self, repeating: 0)
        staged.deallocate()
        output.deallocate()
    }

    // MARK: Writing

    /// Encrypts all of `buffer`.
    public func write(_ buffer: UnsafeRawBufferPointer) throws {
        try checkOpen()
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return }
        do {
            var offset = 0
            while offset < buffer.count {
                let remaining = buffer.count - offset
                if stagedCount == AgeFormat.chunkSize {
                    // More bytes follow, so the staged chunk is not the last.
                    try seal(UnsafeRawBufferPointer(staged), final: false)
                    stagedCount = 0
                }
                if stagedCount == 0 && remaining > AgeFormat.chunkSize {
                    try seal(UnsafeRawBufferPointer(start: base + offset, count: AgeFormat.chunkSize), final: false)
                    offset += AgeFormat.chunkSize
                    continue
                }
                let take = min(AgeFormat.chunkSize - stagedCount, remaining)
                (staged.baseAddress! + stagedCount).copyMemory(from: base + offset, byteCount: take)
                stagedCount += take
                offset += take
            }
            written += Int64(buffer.count)
        } catch {
            failed = true
            throw error
        }
    }

    /// Seals the final chunk (possibly empty only when the whole payload is empty, as the spec says). Must be called once.
    public func finish() throws {
        try checkOpen()
        finished = true
        do {
            try seal(UnsafeRawBufferPointer(start: staged.baseAddress, count: stagedCount), final: true)
            stagedCount = 0
            try flush()
        } catch {
            failed = true
            throw error
        }
    }

    // MARK: Helpers

    private func checkOpen() throws {
        guard !finished else { throw AgeError.io("the age stream was already finished") }
        guard !failed else { throw AgeError.io("the age stream failed earlier") }
    }

    /// Seals one chunk into `output`, passing `output` on first when it is full.
    private func seal(_ plaintext: UnsafeRawBufferPointer, final: Bool) throws {
        if output.count - outputCount < plaintext.count + ChaCha20Poly1305.tagLength { try flush() }
        try cipher.seal(chunk: nextChunk, final: final, plaintext: plaintext, into: output.baseAddress! + outputCount)
        outputCount += plaintext.count + ChaCha20Poly1305.tagLength
        nextChunk += 1
    }

    private func flush() throws {
        guard outputCount > 0 else { return }
        try downstream.write(UnsafeRawBufferPointer(start: output.baseAddress, count: outputCount))
        outputCount = 0
    }
}
