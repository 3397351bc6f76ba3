/// Lowercase hexadecimal encoding of bytes.
public enum HexEncoding {
    private static let digits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Encodes bytes as lowercase hex.
    public static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
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
}
