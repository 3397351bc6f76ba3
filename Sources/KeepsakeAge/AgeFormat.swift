/// Facts about the age v1 format (https://age-encryption.org/v1).
public enum AgeFormat {
    // MARK: Constants

    /// The plaintext bytes in every payload chunk but the last.
    public static let chunkSize = 65536

    /// The first line of every age v1 file, newline included.
    static let versionLine: [UInt8] = Array("age-encryption.org/v1\n".utf8)

    /// The bytes of a full chunk on disk: plaintext and the Poly1305 tag.
    static let sealedChunkSize = chunkSize + ChaCha20Poly1305.tagLength

    /// The random nonce between the header and the chunks.
    static let payloadNonceLength = 16

    /// The length of a file key.
    static let fileKeyLength = 16

    // MARK: Detection

    /// True when `prefix` (the first bytes of a file, at least 22 if available) starts with the age v1 header line.
    public static func isAgeFile(prefix: [UInt8]) -> Bool {
        prefix.count >= versionLine.count && prefix.prefix(versionLine.count).elementsEqual(versionLine)
    }
}
