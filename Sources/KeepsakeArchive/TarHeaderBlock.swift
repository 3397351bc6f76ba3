/// One 512-byte ustar header block, written into a byte buffer in place.
///
/// The layout follows libarchive 3.6's ustar formatter, which wrote Keepsake's archives before
/// `PaxHeaderEncoder`: octal fields padded with zeros and ended by a space (and a NUL where
/// the field has room), the `ustar\0` magic and `00` version, the checksum as six digits, a
/// NUL and a space. Keeping it means the archives stay what they were, byte for byte.
package struct TarHeaderBlock {
    // MARK: Layout

    /// The size of a tar block.
    package static let size = 512

    /// The zeros after `count` bytes of content or records that fill their last block.
    static func padding(after count: Int64) -> Int64 {
        let block = Int64(size)
        return (block - count % block) % block
    }

    /// A numeric field: where it is, how many octal digits it holds with its terminator,
    /// how many when the number may take the terminator's place, and the field's width.
    struct NumberField {
        let offset: Int
        let digits: Int
        let widest: Int
        let width: Int

        static let mode = NumberField(offset: 100, digits: 6, widest: 8, width: 8)
        static let uid = NumberField(offset: 108, digits: 6, widest: 8, width: 8)
        static let gid = NumberField(offset: 116, digits: 6, widest: 8, width: 8)
        static let size = NumberField(offset: 124, digits: 11, widest: 12, width: 12)
        static let mtime = NumberField(offset: 136, digits: 11, widest: 11, width: 12)
        static let checksum = NumberField(offset: 148, digits: 6, widest: 6, width: 8)
        static let deviceMajor = NumberField(offset: 329, digits: 6, widest: 8, width: 8)
        static let deviceMinor = NumberField(offset: 337, digits: 6, widest: 8, width: 8)
    }

    private static let nameOffset = 0
    private static let nameSize = 100
    private static let checksumOffset = 148
    private static let typeOffset = 156
    private static let linkOffset = 157
    private static let linkSize = 100
    private static let userNameOffset = 265
    private static let groupNameOffset = 297
    private static let ownerNameSize = 32
    private static let prefixOffset = 345
    private static let prefixSize = 155

    /// The block every header starts from: zero-filled numbers with their terminators, the
    /// checksum field as spaces (how it is summed), the magic and version.
    private static let template: [UInt8] = {
        var block = [UInt8](repeating: 0, count: size)
        func put(_ text: String, at offset: Int) {
            for (index, byte) in text.utf8.enumerated() { block[offset + index] = byte }
        }
        for field in [NumberField.mode, .uid, .gid, .deviceMajor, .deviceMinor] {
            put(String(repeating: "0", count: field.digits) + " ", at: field.offset)
        }
        put(String(repeating: "0", count: 11) + " ", at: NumberField.size.offset)
        put(String(repeating: "0", count: 11) + " ", at: NumberField.mtime.offset)
        put(String(repeating: " ", count: 8), at: checksumOffset)
        put("0", at: typeOffset)
        put("ustar", at: 257)
        put("00", at: 263)
        return block
    }()

    /// Where the block starts in the buffer.
    private let base: Int

    // MARK: Building

    /// Appends a fresh block to `buffer`; the block's fields are then set through the methods
    /// below, and `seal` writes its checksum last.
    init(appendingTo buffer: inout [UInt8]) {
        base = buffer.count
        buffer.append(contentsOf: Self.template)
    }

    /// The entry's type flag (`0` file, `1` hard link, `2` symlink, `x` pax extended header…).
    func setType(_ flag: UInt8, in buffer: inout [UInt8]) {
        buffer[base + Self.typeOffset] = flag
    }

    /// The name, split at a `/` into prefix and name fields when it is over 100 bytes. A name
    /// that cannot be split leaves both empty, as libarchive did; `PaxHeaderEncoder` only
    /// hands over names that fit, and carries the real one in a `path` record.
    func setName(_ name: ArraySlice<UInt8>, in buffer: inout [UInt8]) {
        if name.count <= Self.nameSize {
            copy(name, to: Self.nameOffset, limit: Self.nameSize, in: &buffer)
            return
        }
        guard let split = Self.splitPoint(of: name) else { return }
        copy(name[name.startIndex..<split], to: Self.prefixOffset, limit: Self.prefixSize, in: &buffer)
        copy(name[(split + 1)...], to: Self.nameOffset, limit: Self.nameSize, in: &buffer)
    }

    /// The link target, cut at 100 bytes (longer ones travel in a `linkpath` record).
    func setLink(_ link: ArraySlice<UInt8>, in buffer: inout [UInt8]) {
        copy(link, to: Self.linkOffset, limit: Self.linkSize, in: &buffer)
    }

    /// The owner's user and group names, each cut at 32 bytes.
    func setOwnerNames(user: ArraySlice<UInt8>, group: ArraySlice<UInt8>, in buffer: inout [UInt8]) {
        copy(user, to: Self.userNameOffset, limit: Self.ownerNameSize, in: &buffer)
        copy(group, to: Self.groupNameOffset, limit: Self.ownerNameSize, in: &buffer)
    }

    /// A number in octal. `strict` keeps to the field's digits (a number too large becomes
    /// all sevens); otherwise a large number takes the terminator's place too, and one that
    /// still does not fit, or a negative one, is written in base 256 (the GNU extension every
    /// reader knows).
    func setNumber(_ value: Int64, _ field: NumberField, strict: Bool, in buffer: inout [UInt8]) {
        if strict {
            writeOctal(value, at: field.offset, digits: field.digits, in: &buffer)
            return
        }
        if value >= 0 {
            var digits = field.digits
            while digits <= field.widest {
                if value >> (3 * Int64(digits)) == 0 {
                    writeOctal(value, at: field.offset, digits: digits, in: &buffer)
                    return
                }
                digits += 1
            }
        }
        var rest = value
        var index = base + field.offset + field.widest
        while index > base + field.offset {
            index -= 1
            buffer[index] = UInt8(truncatingIfNeeded: rest)
            rest >>= 8
        }
        buffer[base + field.offset] |= 0x80
    }

    /// Sums the block (with the checksum field still spaces) and writes the checksum.
    func seal(in buffer: inout [UInt8]) {
        // Through a raw pointer, a loop the compiler vectorises: summed byte by byte through
        // the array it cost 2,700 instructions a block, more than the rest of the header.
        let sum = buffer.withUnsafeBufferPointer { all -> UInt32 in
            var sum: UInt32 = 0
            for byte in UnsafeBufferPointer(rebasing: all[base..<(base + Self.size)]) { sum &+= UInt32(byte) }
            return sum
        }
        buffer[base + Self.checksumOffset + 6] = 0
        writeOctal(Int64(sum), at: Self.checksumOffset, digits: 6, in: &buffer)
    }

    // MARK: Names

    /// Where a name over 100 bytes splits into a prefix (at most 155 bytes) and a name (at
    /// most 100): the first `/` that leaves at most 100 bytes after it, but not the first
    /// byte (the prefix may not be empty) and not the last (nor may the name). Nil when
    /// there is none.
    static func splitPoint(of name: ArraySlice<UInt8>) -> Int? {
        let slash = UInt8(ascii: "/")
        var index = name.endIndex - nameSize - 1
        guard index >= name.startIndex else { return nil }
        guard var split = name[index...].firstIndex(of: slash) else { return nil }
        if split == name.startIndex {
            index = split + 1
            guard let next = name[index...].firstIndex(of: slash) else { return nil }
            split = next
        }
        guard split != name.endIndex - 1, split - name.startIndex <= prefixSize else { return nil }
        return split
    }

    // MARK: Writing fields

    private func copy(_ bytes: ArraySlice<UInt8>, to offset: Int, limit: Int, in buffer: inout [UInt8]) {
        let count = min(bytes.count, limit)
        guard count > 0 else { return }
        let start = base + offset
        buffer.replaceSubrange(start..<(start + count), with: bytes.prefix(count))
    }

    /// Exactly `digits` octal digits; a negative number as zeros, one too large as sevens.
    private func writeOctal(_ value: Int64, at offset: Int, digits: Int, in buffer: inout [UInt8]) {
        let start = base + offset
        guard value >= 0 else {
            for index in start..<(start + digits) { buffer[index] = UInt8(ascii: "0") }
            return
        }
        var rest = value
        var index = start + digits
        while index > start {
            index -= 1
            buffer[index] = UInt8(ascii: "0") + UInt8(rest & 7)
            rest >>= 3
        }
        if rest != 0 {
            for index in start..<(start + digits) { buffer[index] = UInt8(ascii: "7") }
        }
    }
}
