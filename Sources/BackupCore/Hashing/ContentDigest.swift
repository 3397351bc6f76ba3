/// A SHA-256 being computed over a file's content as it is restored: on the restoring
/// thread (`SHA256Hasher`) or beside it (`BackgroundHasher`).
protocol ContentDigest: AnyObject {
    /// Adds bytes.
    func update(_ bytes: UnsafeRawBufferPointer)
    /// Adds `count` zero bytes (a hole in a sparse file).
    func updateZeros(_ count: Int64)
    /// The hex digest of everything added; the digest starts over afterwards.
    func finalizeHex() -> String
}

extension SHA256Hasher: ContentDigest {
    func updateZeros(_ count: Int64) {
        ManifestCheck.hashZeros(count, into: self)
    }
}

extension BackgroundHasher: ContentDigest {}
