/// The base64 age headers use: the standard alphabet, no padding, and only canonical
/// encodings (the unused low bits of the last character must be zero), as the spec demands.
enum AgeBase64 {
    // MARK: Alphabet

    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// Each byte's 6-bit value, or 0xFF when it is not in the alphabet.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, character) in alphabet.enumerated() { table[Int(character)] = UInt8(index) }
        return table
    }()

    /// Whether `byte` is one of the 64 characters.
    static func isAlphabet(_ byte: UInt8) -> Bool { values[Int(byte)] != 0xFF }

    // MARK: Encoding

    /// `bytes` encoded without padding.
    static func encode<Bytes: Collection>(_ bytes: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var iterator = bytes.makeIterator()
        while let first = iterator.next() {
            let second = iterator.next()
            let third = second == nil ? nil : iterator.next()
            out.append(alphabet[Int(first >> 2)])
            out.append(alphabet[Int((first & 0x03) << 4 | (second ?? 0) >> 4)])
            if let second {
                out.append(alphabet[Int((second & 0x0F) << 2 | (third ?? 0) >> 6)])
                if let third { out.append(alphabet[Int(third & 0x3F)]) }
            }
        }
        return out
    }

    /// `bytes` encoded without padding, as a string.
    static func encodeString<Bytes: Collection>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        String(decoding: encode(bytes), as: UTF8.self)
    }

    // MARK: Decoding

    /// The bytes `text` encodes, or nil when it is not canonical unpadded base64.
    static func decode<Text: Collection>(_ text: Text) -> [UInt8]? where Text.Element == UInt8 {
        // A lone character in the last group holds only 6 bits: never a whole byte.
        guard text.count % 4 != 1 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(text.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in text {
            let value = values[Int(character)]
            guard value != 0xFF else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        // Canonical: the leftover bits (2 or 4) must be zero.
        guard accumulator == 0 else { return nil }
        return out
    }

    /// The bytes `text` encodes when they are exactly `count` long.
    static func decode(_ text: String, count: Int) -> [UInt8]? {
        guard let bytes = decode(Array(text.utf8)), bytes.count == count else { return nil }
        return bytes
    }
}
