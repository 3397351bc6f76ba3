import CCrypto

/// ChaCha20-Poly1305 (RFC 8439) through OpenSSL, with one EVP_CIPHER_CTX kept for a key's
/// whole life: each message only sets a new nonce, so sealing 64 KiB chunks allocates nothing.
final class ChaCha20Poly1305 {
    // MARK: Sizes

    static let keyLength = 32
    static let nonceLength = 12
    static let tagLength = 16

    // MARK: State

    private let context: OpaquePointer
    private let encrypting: Bool

    /// A cipher for `key`, sealing when `encrypting`, opening otherwise.
    init(key: SecretBytes, encrypting: Bool) throws {
        guard key.count == ChaCha20Poly1305.keyLength else { throw AgeError.io("ChaCha20-Poly1305 needs a 32-byte key") }
        guard let context = EVP_CIPHER_CTX_new() else { throw AgeError.io("out of memory (ChaCha20-Poly1305)") }
        self.context = context
        self.encrypting = encrypting
        let ready = key.withBytes {
            EVP_CipherInit_ex(context, EVP_chacha20_poly1305(), nil,
                              $0.baseAddress?.assumingMemoryBound(to: UInt8.self), nil, encrypting ? 1 : 0)
        }
        guard ready == 1 else {
            EVP_CIPHER_CTX_free(context)
            throw AgeError.io("ChaCha20-Poly1305 setup failed")
        }
    }

    deinit {
        // Freeing the context cleanses the key schedule it holds.
        EVP_CIPHER_CTX_free(context)
    }

    // MARK: Messages

    /// Encrypts `plaintext` into `output` (plaintext.count + 16 bytes: ciphertext then tag).
    func seal(nonce: UnsafeRawBufferPointer, plaintext: UnsafeRawBufferPointer, into output: UnsafeMutableRawPointer) throws {
        precondition(encrypting && nonce.count == ChaCha20Poly1305.nonceLength)
        let out = output.assumingMemoryBound(to: UInt8.self)
        var written: Int32 = 0
        var ok = EVP_CipherInit_ex(context, nil, nil, nil, nonce.baseAddress?.assumingMemoryBound(to: UInt8.self), -1) == 1
        if ok && !plaintext.isEmpty {
            ok = EVP_CipherUpdate(context, out, &written, plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                  Int32(plaintext.count)) == 1 && Int(written) == plaintext.count
        }
        var finalWritten: Int32 = 0
        ok = ok && EVP_CipherFinal_ex(context, out + plaintext.count, &finalWritten) == 1 && finalWritten == 0
        ok = ok && EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_GET_TAG, Int32(ChaCha20Poly1305.tagLength),
                                       out + plaintext.count) == 1
        guard ok else { throw AgeError.io("ChaCha20-Poly1305 encryption failed") }
    }

    /// Decrypts `ciphertext` (at least 16 bytes: data then tag) into `output`
    /// (ciphertext.count - 16 bytes). False when the tag does not match: then `output`
    /// holds unauthenticated bytes that must not be used.
    func open(nonce: UnsafeRawBufferPointer, ciphertext: UnsafeRawBufferPointer, into output: UnsafeMutableRawPointer) -> Bool {
        precondition(!encrypting && nonce.count == ChaCha20Poly1305.nonceLength)
        guard ciphertext.count >= ChaCha20Poly1305.tagLength, let input = ciphertext.baseAddress else { return false }
        let dataLength = ciphertext.count - ChaCha20Poly1305.tagLength
        let bytes = input.assumingMemoryBound(to: UInt8.self)
        let out = output.assumingMemoryBound(to: UInt8.self)
        var written: Int32 = 0
        guard EVP_CipherInit_ex(context, nil, nil, nil, nonce.baseAddress?.assumingMemoryBound(to: UInt8.self), -1) == 1 else {
            return false
        }
        if dataLength > 0 {
            guard EVP_CipherUpdate(context, out, &written, bytes, Int32(dataLength)) == 1, Int(written) == dataLength else {
                return false
            }
        }
        // The tag is only read by OpenSSL; its ctrl takes a non-const pointer.
        guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_SET_TAG, Int32(ChaCha20Poly1305.tagLength),
                                  UnsafeMutableRawPointer(mutating: bytes + dataLength)) == 1 else { return false }
        var finalWritten: Int32 = 0
        return EVP_CipherFinal_ex(context, out + dataLength, &finalWritten) == 1
    }

    // MARK: One-shot (stanza bodies)

    private static let zeroNonce = [UInt8](repeating: 0, count: nonceLength)

    /// Seals `plaintext` under `key` with the all-zero nonce (each stanza key is used once).
    static func seal(key: SecretBytes, plaintext: SecretBytes) throws -> [UInt8] {
        let cipher = try ChaCha20Poly1305(key: key, encrypting: true)
        var out = [UInt8](repeating: 0, count: plaintext.count + tagLength)
        try out.withUnsafeMutableBytes { output in
            try zeroNonce.withUnsafeBytes { nonce in
                try plaintext.withBytes { try cipher.seal(nonce: nonce, plaintext: $0, into: output.baseAddress!) }
            }
        }
        return out
    }

    /// Opens `ciphertext` under `key` with the all-zero nonce; nil when it does not authenticate.
    static func open(key: SecretBytes, ciphertext: [UInt8]) throws -> SecretBytes? {
        guard ciphertext.count >= tagLength else { return nil }
        let cipher = try ChaCha20Poly1305(key: key, encrypting: false)
        var out = [UInt8](repeating: 0, count: max(ciphertext.count - tagLength, 1))
        defer { SecretBytes.wipe(&out) }
        let opened = out.withUnsafeMutableBytes { output in
            zeroNonce.withUnsafeBytes { nonce in
                ciphertext.withUnsafeBytes { cipher.open(nonce: nonce, ciphertext: $0, into: output.baseAddress!) }
            }
        }
        guard opened else { return nil }
        return out.withUnsafeBytes { SecretBytes(UnsafeRawBufferPointer(rebasing: $0.prefix(ciphertext.count - tagLength))) }
    }
}
