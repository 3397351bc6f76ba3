import CCrypto

/// Random bytes from OpenSSL's CSPRNG (seeded from the kernel's getrandom).
package enum SecureRandom {
    // MARK: Filling

    /// Fills `buffer` with random bytes.
    package static func fill(_ buffer: UnsafeMutableRawBufferPointer) throws {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return }
        guard RAND_bytes(base.assumingMemoryBound(to: UInt8.self), Int32(buffer.count)) == 1 else {
            throw AgeError.io("the system's random generator failed")
        }
    }

    /// `count` random bytes.
    package static func bytes(_ count: Int) throws -> [UInt8] {
        var result = [UInt8](repeating: 0, count: count)
        try result.withUnsafeMutableBytes { try fill($0) }
        return result
    }
}
