/// Where the chunks of a payload of known length lie: every chunk but the last is a full
/// 64 KiB + 16; the last holds 16 to 64 KiB + 16 bytes, and is empty only when it is the
/// only one. Lengths that break these rules still give the chunks before the bad end, so a
/// front-to-back read releases what authenticates before it fails.
struct AgePayloadLayout: Equatable {
    // MARK: Fields

    /// Chunks, counting a too-short tail as one.
    let chunkCount: Int64
    /// The sealed length of the last chunk.
    let lastSealedLength: Int
    /// Why no plaintext size maps to this length, when none does.
    let problem: AgeError?

    // MARK: Computing

    /// The layout of a payload of `length` sealed bytes (after the nonce).
    init(sealedLength length: Int64) {
        let full = Int64(AgeFormat.sealedChunkSize)
        let tag = ChaCha20Poly1305.tagLength
        guard length > 0 else {
            chunkCount = 0
            lastSealedLength = 0
            problem = .truncated
            return
        }
        chunkCount = (length + full - 1) / full
        lastSealedLength = Int(length - (chunkCount - 1) * full)
        if lastSealedLength < tag {
            problem = .truncated
        } else if lastSealedLength == tag && chunkCount > 1 {
            problem = .payloadDamaged(chunk: chunkCount - 1)
        } else {
            problem = nil
        }
    }

    /// The plaintext size.
    func plaintextSize() throws -> Int64 {
        if let problem { throw problem }
        return (chunkCount - 1) * Int64(AgeFormat.chunkSize) + Int64(lastSealedLength - ChaCha20Poly1305.tagLength)
    }

    /// The sealed length of chunk `index`.
    func sealedLength(of index: Int64) -> Int {
        index == chunkCount - 1 ? lastSealedLength : AgeFormat.sealedChunkSize
    }
}
