import CCrypto

/// A secret (a file key, an X25519 private key) in memory of its own that is wiped when the
/// last reference goes, instead of an array whose copies Swift may leave anywhere.
package final class SecretBytes: @unchecked Sendable {
    // MARK: Storage

    // Written only in init, so sharing across threads is safe.
    private let storage: UnsafeMutableRawBufferPointer
    /// The number of bytes.
    package let count: Int

    /// Copies `bytes` in (the caller wipes its own copy).
    package init(_ bytes: UnsafeRawBufferPointer) {
        storage = .allocate(byteCount: max(bytes.count, 1), alignment: 16)
        count = bytes.count
        if let source = bytes.baseAddress, !bytes.isEmpty {
            storage.baseAddress?.copyMemory(from: source, byteCount: bytes.count)
        }
    }

    /// Copies `bytes` in, then wipes `bytes`.
    package convenience init(consuming bytes: inout [UInt8]) {
        self.init(copying: bytes)
        SecretBytes.wipe(&bytes)
    }

    /// Copies `bytes` in.
    package convenience init(copying bytes: [UInt8]) {
        let copy: () -> SecretBytes = { bytes.withUnsafeBytes { SecretBytes($0) } }
        self.init(copy())
    }

    private convenience init(_ other: SecretBytes) {
        self.init(other.bytes)
    }

    deinit {
        OPENSSL_cleanse(storage.baseAddress, storage.count)
        storage.deallocate()
    }

    // MARK: Use

    /// The secret's bytes; valid while this object lives.
    package var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: storage.baseAddress, count: count) }

    /// Runs `body` with the secret's bytes.
    package func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withExtendedLifetime(self) { try body(bytes) }
    }

    /// A copy as an array (for APIs that need one; wipe it after use).
    package func array() -> [UInt8] { withBytes { Array($0) } }

    /// Whether both hold the same bytes (not constant time; for tests and equal keys only).
    package func equals(_ other: SecretBytes) -> Bool { withBytes { a in other.withBytes { b in a.elementsEqual(b) } } }

    /// Overwrites an array's bytes with zeros (best effort: Swift may have copied it).
    package static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { if let base = $0.baseAddress { OPENSSL_cleanse(base, $0.count) } }
    }
}
