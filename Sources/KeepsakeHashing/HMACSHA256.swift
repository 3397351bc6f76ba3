import CCrypto

/// HMAC-SHA256 (RFC 2104 over SHA-256) from OpenSSL's libcrypto.
public enum HMACSHA256 {
    // MARK: Constants

    /// The length of a tag, in bytes.
    public static let tagLength = 32

    /// SHA-256's block length, in bytes.
    private static let blockLength = 64

    // MARK: MAC

    /// The 32-byte HMAC-SHA256 of `message` under `key` (a key of any length, empty included).
    public static func mac(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var tag = [UInt8](repeating: 0, count: tagLength)
        var written: UInt32 = 0
        // HMAC replaces a key longer than SHA-256's 64-byte block by its digest (RFC 2104,
        // section 2); doing that here gives the same tag and keeps the length within
        // the int that OpenSSL takes.
        let usableKey = key.count > blockLength ? digest(key) : key
        // An empty array may have no base address; OpenSSL wants a pointer either way.
        let one: [UInt8] = [0]
        let keyBytes = usableKey.isEmpty ? one : usableKey
        let messageBytes = message.isEmpty ? one : message
        let produced = keyBytes.withUnsafeBufferPointer { keyBuffer in
            messageBytes.withUnsafeBufferPointer { messageBuffer in
                tag.withUnsafeMutableBufferPointer { tagBuffer in
                    HMAC(EVP_sha256(),
                         keyBuffer.baseAddress, Int32(usableKey.count),
                         messageBuffer.baseAddress, message.count,
                         tagBuffer.baseAddress, &written)
                }
            }
        }
        // Only an allocation failure inside OpenSSL gets here; there is no tag to give.
        precondition(produced != nil && Int(written) == tagLength, "OpenSSL HMAC-SHA256 failed")
        return tag
    }

    /// The HMAC-SHA256 of a UTF-8 string under `key`.
    public static func mac(key: [UInt8], message: String) -> [UInt8] {
        mac(key: key, message: Array(message.utf8))
    }

    // MARK: Helpers

    /// The raw SHA-256 of `bytes` (for keys longer than a block).
    private static func digest(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: tagLength)
        var length: UInt32 = 0
        let done = bytes.withUnsafeBufferPointer { input in
            out.withUnsafeMutableBufferPointer { output in
                EVP_Digest(input.baseAddress, input.count, output.baseAddress, &length, EVP_sha256(), nil)
            }
        }
        precondition(done == 1, "OpenSSL SHA-256 failed")
        return out
    }
}
