import CCrypto

/// scrypt (RFC 7914) through OpenSSL's EVP_PBE_scrypt, with age's r = 8 and p = 1.
enum Scrypt {
    // MARK: Derivation

    /// 32 bytes derived from `passphrase` and `salt` with N = 2^`logN`.
    static func derive(passphrase: [UInt8], salt: [UInt8], logN: Int) throws -> SecretBytes {
        guard (1...30).contains(logN) else { throw AgeError.workFactorTooHigh(logN) }
        let n = UInt64(1) << UInt64(logN)
        let r: UInt64 = 8
        let p: UInt64 = 1
        // OpenSSL refuses to use more memory than maxmem: allow what N and r need
        // (128·r·(N+2) for V, 128·r·p for B) and a little over.
        let memory = 128 * r * (n + 2) + 128 * r * p + (1 << 20)
        var out = [UInt8](repeating: 0, count: 32)
        defer { SecretBytes.wipe(&out) }
        let one: [UInt8] = [0]
        let done = (passphrase.isEmpty ? one : passphrase).withUnsafeBufferPointer { pass in
            salt.withUnsafeBufferPointer { saltBuffer in
                out.withUnsafeMutableBufferPointer { output in
                    pass.withMemoryRebound(to: CChar.self) { passChars in
                        EVP_PBE_scrypt(passChars.baseAddress, passphrase.count, saltBuffer.baseAddress, saltBuffer.count,
                                       n, r, p, memory, output.baseAddress, output.count)
                    }
                }
            }
        }
        guard done == 1 else { throw AgeError.io("scrypt failed (out of memory for work factor \(logN)?)") }
        return SecretBytes(copying: out)
    }
}
