/// Lowercase hexadecimal encoding of bytes, and of SHA-256 digests held as four words (the
/// way manifests keep them in memory).
public enum HexEncoding {
    // MARK: Bytes

    /// Encodes bytes as lowercase hex.
    public static func encode(_ bytes: [UInt8]) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            for (index, byte) in bytes.enumerated() {
                out[2 * index] = digit(byte >> 4)
                out[2 * index + 1] = digit(byte & 0x0F)
            }
            return bytes.count * 2
        }
    }

    /// True when `text` is exactly `length` lowercase hex digits.
    public static func isHex(_ text: String, length: Int) -> Bool {
        let utf8 = text.utf8
        return utf8.count == length && isHex(utf8)
    }

    /// True when every byte is a lowercase hex digit.
    public static func isHex(_ bytes: some Sequence<UInt8>) -> Bool {
        bytes.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }
    }

    // MARK: Digests as words

    /// A SHA-256 as four big-endian words.
    package typealias Digest = (UInt64, UInt64, UInt64, UInt64)

    /// 64 lowercase hex digits as four big-endian words; nil for anything else.
    package static func digest(fromHex utf8: UnsafeBufferPointer<UInt8>) -> Digest? {
        guard utf8.count == 64, let base = utf8.baseAddress else { return nil }
        let (first, invalid1) = word(fromHex: base), (second, invalid2) = word(fromHex: base + 16)
        let (third, invalid3) = word(fromHex: base + 32), (fourth, invalid4) = word(fromHex: base + 48)
        return invalid1 | invalid2 | invalid3 | invalid4 < 16 ? (first, second, third, fourth) : nil
    }

    /// The digest as 64 lowercase hex digits.
    package static func hex(ofDigest digest: Digest) -> String {
        String(unsafeUninitializedCapacity: 64) { buffer in
            func put(_ word: UInt64, at start: Int) {
                for nibble in 0..<16 {
                    buffer[start + nibble] = digit(UInt8(truncatingIfNeeded: word >> UInt64(60 - 4 * nibble)) & 0x0F)
                }
            }
            put(digest.0, at: 0)
            put(digest.1, at: 16)
            put(digest.2, at: 32)
            put(digest.3, at: 48)
            return 64
        }
    }

    // MARK: Digits

    /// The lowercase hex digit of a value below 16 (arithmetic, no table: a manifest entry
    /// and a restored file each need 64 of them).
    private static func digit(_ value: UInt8) -> UInt8 {
        value < 10 ? 48 + value : 87 + value
    }

    /// The 16 hex digits at `start` as a number, and the digits' values or-ed together, with
    /// 0xF0 for a byte that is no lowercase hex digit (so 16 or more means one was not).
    private static func word(fromHex start: UnsafePointer<UInt8>) -> (UInt64, UInt8) {
        var value: UInt64 = 0
        var seen: UInt8 = 0
        for index in 0..<16 {
            let byte = start[index]
            let digit = byte &- 48, letter = byte &- 97
            let nibble: UInt8 = digit < 10 ? digit : (letter < 6 ? letter &+ 10 : 0xF0)
            seen |= nibble
            value = value << 4 | UInt64(nibble & 0x0F)
        }
        return (value, seen)
    }
}
