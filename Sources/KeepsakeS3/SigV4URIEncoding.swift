/// The percent-encoding SigV4 applies to paths and query parameters (AWS's `UriEncode`).
///
/// Only the unreserved characters of RFC 3986 (`A-Z a-z 0-9 - _ . ~`) stay as they are;
/// every other byte becomes `%XX` with uppercase hex. In a path, `/` is kept; in a query
/// name or value it is encoded as `%2F`. S3 encodes the path once (no double encoding)
/// and does not normalise it, so `//`, `.` and `..` segments are signed as they stand.
public enum SigV4URIEncoding {
    // MARK: Constants

    private static let hexDigits: [UInt8] = Array("0123456789ABCDEF".utf8)
    private static let slash = UInt8(ascii: "/")

    // MARK: Encoding

    /// The canonical URI of a raw path: each segment encoded, `/` kept; `/` when empty.
    public static func path(_ bytes: [UInt8]) -> String {
        if bytes.isEmpty { return "/" }
        return encode(bytes, keepingSlash: true)
    }

    /// A query parameter's name or value, encoded (`/` included).
    public static func queryComponent(_ text: String) -> String {
        encode(Array(text.utf8), keepingSlash: false)
    }

    /// Percent-encodes every byte but the unreserved ones (and `/` when `keepingSlash`).
    public static func encode(_ bytes: [UInt8], keepingSlash: Bool) -> String {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count)
        for byte in bytes {
            if isUnreserved(byte) || (keepingSlash && byte == slash) {
                out.append(byte)
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0x0f)])
            }
        }
        // Only ASCII is left, so the decoding cannot fail or substitute.
        return String(decoding: out, as: UTF8.self)
    }

    // MARK: Helpers

    /// True for RFC 3986's unreserved characters.
    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }
}
