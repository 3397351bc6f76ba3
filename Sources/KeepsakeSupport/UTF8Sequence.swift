/// Well-formed UTF-8, one sequence at a time: the rules the JSON parser, the exclude-pattern
/// matcher and path display share. `package`, not public: the configuration module's parser
/// shares them too, but they are no part of core's API.
package enum UTF8Sequence {
    /// The length (1–4) of the well-formed UTF-8 sequence starting at `index`, or 0 when
    /// the bytes there are not one. Overlong forms, encoded surrogates and values above
    /// U+10FFFF are not well formed. `end` bounds the sequence.
    package static func length<Bytes: RandomAccessCollection>(in bytes: Bytes, at index: Int, end: Int) -> Int
    where Bytes.Element == UInt8, Bytes.Index == Int {
        let lead = bytes[index]
        if lead < 0x80 { return 1 }
        let length: Int
        // Second-byte limits rule out overlong forms, surrogates and values above U+10FFFF.
        var secondLow: UInt8 = 0x80
        var secondHigh: UInt8 = 0xbf
        switch lead {
        case 0xc2...0xdf: length = 2
        case 0xe0: length = 3; secondLow = 0xa0
        case 0xe1...0xec, 0xee...0xef: length = 3
        case 0xed: length = 3; secondHigh = 0x9f
        case 0xf0: length = 4; secondLow = 0x90
        case 0xf1...0xf3: length = 4
        case 0xf4: length = 4; secondHigh = 0x8f
        default: return 0
        }
        guard end - index >= length else { return 0 }
        let second = bytes[index + 1]
        guard second >= secondLow, second <= secondHigh else { return 0 }
        for offset in 2..<length where bytes[index + offset] & 0xc0 != 0x80 { return 0 }
        return length
    }
}
