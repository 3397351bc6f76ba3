/// The fields of one 512-byte ustar header block, read where the block lies. Nothing in it
/// is trusted: numbers are parsed within their fields, text stops at the field's end.
package struct UstarHeaderView {
    // MARK: Layout

    /// A text field: where it starts and how long it is.
    private struct TextField {
        let offset: Int
        let size: Int

        static let name = TextField(offset: 0, size: 100)
        static let link = TextField(offset: 157, size: 100)
        static let magic = TextField(offset: 257, size: 8)
        static let userName = TextField(offset: 265, size: 32)
        static let groupName = TextField(offset: 297, size: 32)
        static let prefix = TextField(offset: 345, size: 155)
    }

    private static let typeOffset = 156
    /// `ustar\0` and version `00`: what POSIX ustar and pax headers carry (GNU tar's own
    /// format has `ustar  \0`).
    private static let posixMagic: [UInt8] = Array("ustar".utf8) + [0] + Array("00".utf8)

    private let block: UnsafeRawBufferPointer

    /// Views `block`, which must be 512 bytes.
    package init(_ block: UnsafeRawBufferPointer) {
        precondition(block.count == TarHeaderBlock.size, "a tar header is one block")
        self.block = block
    }

    // MARK: Checks

    /// Whether every byte is zero: the end of the archive.
    var isZero: Bool {
        // A header's name starts at its first byte: only the end has a zero there.
        block[0] == 0 && block.allSatisfy { $0 == 0 }
    }

    /// Whether the checksum field matches the block's sum (taken with the field as spaces;
    /// unsigned as POSIX says, or signed as some old writers did).
    package var checksumMatches: Bool {
        let field = TarHeaderBlock.NumberField.checksum
        guard let stored = number(field) else { return false }
        // Summed through typed memory, a loop the compiler vectorises (a byte at a time
        // through the raw view it cost 4,800 instructions a header).
        var unsigned: UInt32 = 0
        var high: UInt32 = 0
        for byte in block.assumingMemoryBound(to: UInt8.self) {
            unsigned &+= UInt32(byte)
            high &+= UInt32(byte >> 7)
        }
        // The field itself counts as spaces.
        for byte in block[field.offset..<(field.offset + field.width)] {
            unsigned = unsigned &+ UInt32(UInt8(ascii: " ")) &- UInt32(byte)
            high &-= UInt32(byte >> 7)
        }
        // Signed bytes: each with the high bit counts 256 less.
        let signed = Int64(unsigned) - 256 * Int64(high)
        return stored == Int64(unsigned) || stored == signed
    }

    /// Whether it carries the POSIX magic and version.
    var isPOSIX: Bool {
        block[TextField.magic.offset..<(TextField.magic.offset + Self.posixMagic.count)].elementsEqual(Self.posixMagic)
    }

    // MARK: Fields

    /// The type flag (`0` file, `5` folder, `x` pax extended header…).
    var typeFlag: UInt8 { block[Self.typeOffset] }

    /// The name, with the prefix field before it when there is one.
    var name: [UInt8] {
        let name = text(.name)
        let prefix = text(.prefix)
        return prefix.isEmpty ? name : prefix + [UInt8(ascii: "/")] + name
    }

    /// The link target.
    var link: [UInt8] { text(.link) }
    var userName: [UInt8] { text(.userName) }
    var groupName: [UInt8] { text(.groupName) }

    /// A numeric field (see `TarHeaderBlock.NumberField`): octal digits, or base 256 when its
    /// first byte has the high bit set. Nil when it holds neither.
    func number(_ field: TarHeaderBlock.NumberField) -> Int64? {
        let bytes = block[field.offset..<(field.offset + field.width)]
        guard let first = bytes.first else { return nil }
        return first & 0x80 != 0 ? Self.base256(bytes) : Self.octal(bytes)
    }

    // MARK: Parsing

    private func text(_ field: TextField) -> [UInt8] {
        let bytes = block[field.offset..<(field.offset + field.size)]
        return Array(bytes.prefix { $0 != 0 })
    }

    /// Two's complement, big-endian: a first byte of 0x80 starts a positive number (its high
    /// bit is the marker), 0xff a negative one. Nil when it does not fit 64 bits.
    private static func base256(_ bytes: Slice<UnsafeRawBufferPointer>) -> Int64? {
        guard let first = bytes.first else { return nil }
        let negative = first & 0x40 != 0
        var value: Int64 = negative ? -1 : 0
        for (index, byte) in bytes.enumerated() {
            guard value >= Int64.min >> 8, value <= Int64.max >> 8 else { return nil }
            value = value << 8 | Int64(index == 0 && !negative ? byte & 0x7f : byte)
        }
        return value
    }

    /// Octal digits after optional spaces, ended by a space, a NUL or the field's end; no
    /// digits at all is zero. Nil when anything else is there.
    private static func octal(_ bytes: Slice<UnsafeRawBufferPointer>) -> Int64? {
        var value: Int64 = 0
        var index = bytes.startIndex
        while index < bytes.endIndex, bytes[index] == UInt8(ascii: " ") { index += 1 }
        while index < bytes.endIndex, (UInt8(ascii: "0")...UInt8(ascii: "7")).contains(bytes[index]) {
            value = value << 3 | Int64(bytes[index] - UInt8(ascii: "0"))
            index += 1
        }
        guard index == bytes.endIndex || bytes[index] == 0 || bytes[index] == UInt8(ascii: " ") else { return nil }
        return value
    }
}
