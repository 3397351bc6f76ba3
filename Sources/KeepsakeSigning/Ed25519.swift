import CCrypto
import KeepsakeAge

/// Ed25519 signatures (RFC 8032, pure EdDSA: the message itself is signed, no prehash)
/// through OpenSSL's EVP_PKEY_ED25519.
enum Ed25519 {
    // MARK: Sizes

    /// The length of a private seed and of a public key.
    static let keyLength = 32
    /// The length of a signature.
    static let signatureLength = 64

    // MARK: Keys

    /// A fresh random private seed.
    static func generateSeed() throws -> SecretBytes {
        var bytes = try SecureRandom.bytes(keyLength)
        return SecretBytes(consuming: &bytes)
    }

    /// The public key of the private `seed`.
    static func publicKey(of seed: SecretBytes) throws -> [UInt8] {
        let key = try privateKeyObject(seed)
        defer { EVP_PKEY_free(key) }
        var out = [UInt8](repeating: 0, count: keyLength)
        var length = keyLength
        guard out.withUnsafeMutableBufferPointer({ EVP_PKEY_get_raw_public_key(key, $0.baseAddress, &length) }) == 1,
              length == keyLength else {
            throw SigningError.crypto("Ed25519 public key derivation failed")
        }
        return out
    }

    // MARK: Signing

    /// The signature of `message` by the private `seed`.
    static func sign(_ message: [UInt8], seed: SecretBytes) throws -> [UInt8] {
        let key = try privateKeyObject(seed)
        defer { EVP_PKEY_free(key) }
        guard let context = EVP_MD_CTX_new() else { throw SigningError.crypto("out of memory (Ed25519)") }
        defer { EVP_MD_CTX_free(context) }
        // Ed25519 takes no digest: OpenSSL wants none named and the message in one call.
        guard EVP_DigestSignInit(context, nil, nil, nil, key) == 1 else { throw SigningError.crypto("Ed25519 setup failed") }
        var signature = [UInt8](repeating: 0, count: signatureLength)
        var length = signatureLength
        let signed = signature.withUnsafeMutableBufferPointer { out in
            message.withUnsafeBufferPointer { EVP_DigestSign(context, out.baseAddress, &length, $0.baseAddress, $0.count) }
        }
        guard signed == 1, length == signatureLength else { throw SigningError.crypto("Ed25519 signing failed") }
        return signature
    }

    /// Whether `signature` is `publicKey`'s signature of `message`. Malformed keys and
    /// signatures are simply not valid.
    static func isValid(_ signature: [UInt8], of message: [UInt8], publicKey: [UInt8]) -> Bool {
        guard signature.count == signatureLength, publicKey.count == keyLength,
              let key = publicKey.withUnsafeBufferPointer({ EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, $0.baseAddress, keyLength) })
        else { return false }
        defer { EVP_PKEY_free(key) }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, nil, nil, key) == 1 else { return false }
        let verified = signature.withUnsafeBufferPointer { sig in
            message.withUnsafeBufferPointer { EVP_DigestVerify(context, sig.baseAddress, sig.count, $0.baseAddress, $0.count) }
        }
        return verified == 1
    }

    // MARK: Helpers

    private static func privateKeyObject(_ seed: SecretBytes) throws -> OpaquePointer {
        guard seed.count == keyLength,
              let key = seed.withBytes({
                  EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nil, $0.baseAddress?.assumingMemoryBound(to: UInt8.self), keyLength)
              }) else {
            throw SigningError.crypto("Ed25519 private key setup failed")
        }
        return key
    }
}
