import KeepsakeSupport

/// How an extended attribute's name travels in a pax record key (`SCHILY.xattr.NAME`):
/// percent-encoded, as libarchive's writer (which wrote Keepsake's first archives) did, so
/// that the key holds no `=` and no byte outside printable ASCII.
enum PaxXattrName {
    // MARK: Coding

    /// Every byte outside `!`…`~`, and `%` and `=`, as `%XX`.
    static func encoded(_ name: String) -> [UInt8] {
        let hex = Array("0123456789ABCDEF".utf8)
        var encoded: [UInt8] = []
        for byte in name.utf8 {
            if byte < 33 || byte > 126 || byte == UInt8(ascii: "%") || byte == UInt8(ascii: "=") {
                encoded += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0f)]]
            } else {
                encoded.append(byte)
            }
        }
        return encoded
    }

    /// The name `encoded` turned into `bytes`; a `%` not followed by two hex digits stays as
    /// it is. Only for archives Keepsake wrote: another writer's raw names are not encoded.
    static func decoded(_ bytes: [UInt8]) -> [UInt8] {
        guard bytes.contains(UInt8(ascii: "%")) else { return bytes }
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
               let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) {
                decoded.append(high << 4 | low)
                index += 3
            } else {
                decoded.append(bytes[index])
                index += 1
            }
        }
        return decoded
    }

    /// A name read through libarchive from an archive Keepsake wrote, decoded.
    static func decoded(_ name: String) -> String? {
        self.name(decoded(Array(name.utf8)))
    }

    /// Decoded bytes as a name the system can take: UTF-8, not empty, no NUL (which no name
    /// Keepsake read from a file system holds).
    static func name(_ bytes: [UInt8]) -> String? {
        guard !bytes.isEmpty, !bytes.contains(0) else { return nil }
        return PathBytes.validString(bytes)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        default: return nil
        }
    }
}
