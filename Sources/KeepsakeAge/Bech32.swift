/// Bech32 (BIP-173) encoding, as age uses it for keys: a human-readable part, "1", 5-bit
/// data characters and a 6-character checksum; all lowercase or all uppercase. age's keys
/// are longer than BIP-173's 90-character limit, so the limit is the caller's choice.
enum Bech32 {
    // MARK: Alphabet

    private static let charset: [UInt8] = Array("qpzry9x8gf2tvdw0s3jn54khce6mua7l".utf8)

    private static let values: [Int8] = {
        var table = [Int8](repeating: -1, count: 128)
        for (index, character) in charset.enumerated() {
            table[Int(character)] = Int8(index)
            // Uppercase letters decode like their lowercase form (digits map to themselves).
            if character >= 97 { table[Int(character - 32)] = Int8(index) }
        }
        return table
    }()

    /// Why a string is not bech32 (never quoting it: it may be a secret key).
    enum Failure: Error, Equatable {
        case mixedCase, invalidCharacter, noSeparator, emptyHumanPart, tooShort, tooLong, badChecksum, badPadding
    }

    // MARK: Checksum

    private static func polymod(_ values: [UInt8]) -> UInt32 {
        let generators: [UInt32] = [0x3b6a_57b2, 0x2650_8e6d, 0x1ea1_19fa, 0x3d42_33dd, 0x2a14_62b3]
        var checksum: UInt32 = 1
        for value in values {
            let top = checksum >> 25
            checksum = (checksum & 0x1ff_ffff) << 5 ^ UInt32(value)
            for bit in 0..<5 where (top >> UInt32(bit)) & 1 == 1 { checksum ^= generators[bit] }
        }
        return checksum
    }

    private static func expand(_ human: [UInt8]) -> [UInt8] {
        human.map { $0 >> 5 } + [0] + human.map { $0 & 31 }
    }

    // MARK: Encoding

    /// `human` (lowercased) and 5-bit `data` as a lowercase bech32 string.
    static func encode(human: String, data: [UInt8]) -> String {
        let hrp = Array(human.lowercased().utf8)
        let checksum = polymod(expand(hrp) + data + [0, 0, 0, 0, 0, 0]) ^ 1
        var out = hrp + [UInt8(ascii: "1")]
        out += data.map { charset[Int($0)] }
        for index in 0..<6 { out.append(charset[Int((checksum >> UInt32(5 * (5 - index))) & 31)]) }
        return String(decoding: out, as: UTF8.self)
    }

    // MARK: Decoding

    /// The human-readable part (lowercased) and the 5-bit data of `text`.
    static func decode(_ text: String, maxLength: Int? = nil) throws(Failure) -> (human: String, data: [UInt8]) {
        let bytes = Array(text.utf8)
        if let maxLength, bytes.count > maxLength { throw .tooLong }
        var hasLower = false
        var hasUpper = false
        for byte in bytes {
            guard byte >= 33 && byte <= 126 else { throw .invalidCharacter }
            if byte >= 97 && byte <= 122 { hasLower = true }
            if byte >= 65 && byte <= 90 { hasUpper = true }
        }
        if hasLower && hasUpper { throw .mixedCase }
        guard let separator = bytes.lastIndex(of: UInt8(ascii: "1")) else { throw .noSeparator }
        guard separator > 0 else { throw .emptyHumanPart }
        guard bytes.count - separator - 1 >= 6 else { throw .tooShort }
        let human = bytes[..<separator].map { $0 >= 65 && $0 <= 90 ? $0 + 32 : $0 }
        var data = [UInt8]()
        data.reserveCapacity(bytes.count - separator - 1)
        for byte in bytes[(separator + 1)...] {
            let value = values[Int(byte)]
            guard value >= 0 else { throw .invalidCharacter }
            data.append(UInt8(value))
        }
        guard polymod(expand(human) + data) == 1 else { throw .badChecksum }
        return (String(decoding: human, as: UTF8.self), Array(data.dropLast(6)))
    }

    // MARK: Bit groups

    /// Regroups bits from `from`-bit to `to`-bit values. Widening (8→5) pads the end with
    /// zeros; narrowing (5→8) refuses more than `from - 1` leftover bits or non-zero padding.
    static func convertBits(_ input: [UInt8], from: Int, to: Int, pad: Bool) throws(Failure) -> [UInt8] {
        var accumulator: UInt32 = 0
        var bits = 0
        var out = [UInt8]()
        let mask = UInt32(1 << to) - 1
        for value in input {
            guard Int(value) >> from == 0 else { throw .badPadding }
            accumulator = accumulator << UInt32(from) | UInt32(value)
            bits += from
            while bits >= to {
                bits -= to
                out.append(UInt8((accumulator >> UInt32(bits)) & mask))
            }
            accumulator &= (1 << UInt32(bits)) - 1
        }
        if pad {
            if bits > 0 { out.append(UInt8((accumulator << UInt32(to - bits)) & mask)) }
        } else if bits >= from || accumulator != 0 {
            throw .badPadding
        }
        return out
    }
}
