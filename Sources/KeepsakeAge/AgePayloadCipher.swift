/// Seals or opens the payload's chunks: ChaCha20-Poly1305 under the payload key, with the
/// STREAM nonce (an 11-byte big-endian chunk counter, then 1 for the last chunk, 0 otherwise).
final class AgePayloadCipher {
    // MARK: State

    private let cipher: ChaCha20Poly1305
    // One nonce buffer for the stream's life: no allocation per chunk.
    private let nonce = UnsafeMutableRawBufferPointer.allocate(byteCount: ChaCha20Poly1305.nonceLength, alignment: 8)

    init(payloadKey: SecretBytes, encrypting: Bool) throws {
        cipher = try ChaCha20Poly1305(key: payloadKey, encrypting: encrypting)
        nonce.initializeMemory(as: UInt8.self, repeating: 0)
    }

    deinit { nonce.deallocate() }

    // MARK: Chunks

    /// Seals chunk `index` (at most 64 KiB of plaintext) into `output` (plaintext.count + 16 bytes).
    func seal(chunk index: Int64, final: Bool, plaintext: UnsafeRawBufferPointer, into output: UnsafeMutableRawPointer) throws {
        setNonce(index, final: final)
        try cipher.seal(nonce: UnsafeRawBufferPointer(nonce), plaintext: plaintext, into: output)
    }

    /// Opens chunk `index` into `output` (ciphertext.count - 16 bytes); false when it does not
    /// authenticate as that chunk with that final flag.
    func open(chunk index: Int64, final: Bool, ciphertext: UnsafeRawBufferPointer, into output: UnsafeMutableRawPointer) -> Bool {
        setNonce(index, final: final)
        return cipher.open(nonce: UnsafeRawBufferPointer(nonce), ciphertext: ciphertext, into: output)
    }

    private func setNonce(_ index: Int64, final: Bool) {
        // Bytes 0...2 of the 11-byte counter stay zero: an Int64 fills the low 8.
        var value = UInt64(bitPattern: index)
        for position in stride(from: 10, through: 3, by: -1) {
            nonce[position] = UInt8(truncatingIfNeeded: value)
            value >>= 8
        }
        nonce[11] = final ? 1 : 0
    }
}
