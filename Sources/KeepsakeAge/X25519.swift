import CCrypto

/// X25519 (RFC 7748) through OpenSSL's EVP_PKEY_X25519.
package enum X25519 {
    // MARK: Sizes

    /// The length of a private scalar, a public point and a shared secret.
    package static let keyLength = 32

    // MARK: Keys

    /// A fresh random private key.
    package static func generatePrivateKey() throws -> SecretBytes {
        var bytes = try SecureRandom.bytes(keyLength)
        return SecretBytes(consuming: &bytes)
    }

    /// The public key of `privateKey`.
    package static func publicKey(of privateKey: SecretBytes) throws -> [UInt8] {
        let key = try privateKeyObject(privateKey)
        defer { EVP_PKEY_free(key) }
        var out = [UInt8](repeating: 0, count: keyLength)
        var length = keyLength
        guard out.withUnsafeMutableBufferPointer({ EVP_PKEY_get_raw_public_key(key, $0.baseAddress, &length) }) == 1,
              length == keyLength else {
            throw AgeError.io("X25519 public key derivation failed")
        }
        return out
    }

    // MARK: Agreement

    /// The shared secret of `privateKey` and `peer`, or nil when the result is all zeros
    /// (a low-order peer point: RFC 7748 section 6.1 and the age spec both refuse it).
    package static func sharedSecret(privateKey: SecretBytes, peer: [UInt8]) throws -> SecretBytes? {
        guard peer.count == keyLength else { return nil }
        let key = try privateKeyObject(privateKey)
        defer { EVP_PKEY_free(key) }
        guard let peerKey = peer.withUnsafeBufferPointer({
            EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, nil, $0.baseAddress, keyLength)
        }) else { return nil }
        defer { EVP_PKEY_free(peerKey) }
        guard let context = EVP_PKEY_CTX_new(key, nil) else { throw AgeError.io("out of memory (X25519)") }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_derive_init(context) == 1, EVP_PKEY_derive_set_peer(context, peerKey) == 1 else {
            throw AgeError.io("X25519 setup failed")
        }
        var secret = [UInt8](repeating: 0, count: keyLength)
        defer { SecretBytes.wipe(&secret) }
        var length = keyLength
        // OpenSSL itself fails the derivation when the result is all zeros.
        let derived = secret.withUnsafeMutableBufferPointer { EVP_PKEY_derive(context, $0.baseAddress, &length) }
        guard derived == 1, length == keyLength, secret.contains(where: { $0 != 0 }) else { return nil }
        return SecretBytes(copying: secret)
    }

    // MARK: Helpers

    private static func privateKeyObject(_ privateKey: SecretBytes) throws -> OpaquePointer {
        guard privateKey.count == keyLength,
              let key = privateKey.withBytes({
                  EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nil, $0.baseAddress?.assumingMemoryBound(to: UInt8.self), keyLength)
              }) else {
            throw AgeError.io("X25519 private key setup failed")
        }
        return key
    }
}
