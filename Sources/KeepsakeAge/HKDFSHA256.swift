import CCrypto

/// HKDF (RFC 5869) with SHA-256, through OpenSSL's EVP_PKEY_HKDF.
enum HKDFSHA256 {
    // MARK: Derivation

    /// `length` bytes derived from `key` with `salt` (empty: HashLen zeros) and `info`.
    static func derive(key: UnsafeRawBufferPointer, salt: [UInt8], info: String, length: Int) throws -> SecretBytes {
        guard let context = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nil) else { throw AgeError.io("out of memory (HKDF)") }
        defer { EVP_PKEY_CTX_free(context) }
        let infoBytes = Array(info.utf8)
        // OpenSSL wants a key pointer; every key age derives from is 16 or 32 bytes.
        guard let keyBase = key.baseAddress, !key.isEmpty else { throw AgeError.io("HKDF-SHA256 needs a key") }
        var ok = EVP_PKEY_derive_init(context) == 1 && EVP_PKEY_CTX_set_hkdf_md(context, EVP_sha256()) == 1
        // An unset salt is RFC 5869's default (HashLen zeros), the same as an empty one.
        if ok && !salt.isEmpty {
            ok = salt.withUnsafeBufferPointer { EVP_PKEY_CTX_set1_hkdf_salt(context, $0.baseAddress, Int32($0.count)) } == 1
        }
        if ok {
            ok = EVP_PKEY_CTX_set1_hkdf_key(context, keyBase.assumingMemoryBound(to: UInt8.self), Int32(key.count)) == 1
        }
        if ok && !infoBytes.isEmpty {
            ok = infoBytes.withUnsafeBufferPointer { EVP_PKEY_CTX_add1_hkdf_info(context, $0.baseAddress, Int32($0.count)) } == 1
        }
        var out = [UInt8](repeating: 0, count: length)
        defer { SecretBytes.wipe(&out) }
        var outLength = length
        if ok { ok = out.withUnsafeMutableBufferPointer { EVP_PKEY_derive(context, $0.baseAddress, &outLength) } == 1 }
        guard ok, outLength == length else { throw AgeError.io("HKDF-SHA256 failed") }
        return SecretBytes(copying: out)
    }

    /// HKDF of a secret key.
    static func derive(key: SecretBytes, salt: [UInt8], info: String, length: Int) throws -> SecretBytes {
        try key.withBytes { try derive(key: $0, salt: salt, info: info, length: length) }
    }
}
