/// The index of a zstd stream made of independent frames, in the zstd seekable format: a
/// skippable frame at the end of the stream that lists each frame's compressed and
/// decompressed size. Ordinary zstd decoders skip it; Keepsake reads it to decompress
/// only the frames a restore needs.
public struct SeekTable: Sendable, Equatable {
    // MARK: Types

    /// One frame: its sizes, and where it starts in the compressed and decompressed streams.
    public struct Frame: Sendable, Equatable {
        public var compressedOffset: Int64
        public var compressedSize: Int
        public var decompressedOffset: Int64
        public var decompressedSize: Int
    }

    // MARK: Constants

    /// The skippable-frame magic number the seekable format uses.
    static let skippableMagic: UInt32 = 0x184D_2A5E
    /// The last four bytes of a seek table.
    static let seekableMagic: UInt32 = 0x8F92_EAB1
    /// Number of frames (4), descriptor (1), seekable magic (4).
    static let footerSize = 9
    /// A table larger than this is not believed (a million frames: 4 TiB in Keepsake's).
    static let maximumFrames = 1 << 20

    // MARK: State

    /// The frames in stream order.
    public private(set) var frames: [Frame] = []

    /// An empty table.
    public init() {}

    /// Total decompressed bytes.
    public var decompressedSize: Int64 { frames.last.map { $0.decompressedOffset + Int64($0.decompressedSize) } ?? 0 }

    /// The largest frame's size, decompressed or compressed.
    public var largestFrame: Int { frames.map { max($0.decompressedSize, $0.compressedSize) }.max() ?? 0 }

    /// Total compressed bytes of the frames (without the table itself).
    public var compressedSize: Int64 { frames.last.map { $0.compressedOffset + Int64($0.compressedSize) } ?? 0 }

    /// Records the next frame.
    mutating func append(compressedSize: Int, decompressedSize: Int) {
        frames.append(Frame(compressedOffset: self.compressedSize, compressedSize: compressedSize,
                            decompressedOffset: self.decompressedSize, decompressedSize: decompressedSize))
    }

    // MARK: Looking up

    /// The index of the frame holding decompressed byte `offset`, or nil past the end.
    public func frameIndex(containing offset: Int64) -> Int? {
        guard offset >= 0, offset < decompressedSize else { return nil }
        var low = 0
        var high = frames.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if frames[middle].decompressedOffset <= offset { low = middle } else { high = middle - 1 }
        }
        return low
    }

    // MARK: Encoding

    /// The table as a skippable frame, ready to append to the stream.
    public func encoded() -> [UInt8] {
        var bytes: [UInt8] = []
        let payload = frames.count * 8 + SeekTable.footerSize
        bytes.reserveCapacity(8 + payload)
        SeekTable.appendLittleEndian(SeekTable.skippableMagic, to: &bytes)
        SeekTable.appendLittleEndian(UInt32(payload), to: &bytes)
        for frame in frames {
            SeekTable.appendLittleEndian(UInt32(frame.compressedSize), to: &bytes)
            SeekTable.appendLittleEndian(UInt32(frame.decompressedSize), to: &bytes)
        }
        SeekTable.appendLittleEndian(UInt32(frames.count), to: &bytes)
        bytes.append(0) // descriptor: no per-frame checksums (each frame carries its own)
        SeekTable.appendLittleEndian(SeekTable.seekableMagic, to: &bytes)
        return bytes
    }

    // MARK: Decoding

    /// Reads the table at the end of a stream of `streamSize` bytes through `read(offset,
    /// count)`. Nil when the stream has no (believable) seek table: then it is read front
    /// to back like any zstd stream.
    public static func read(streamSize: Int64, read: (Int64, Int) throws -> [UInt8]) rethrows -> SeekTable? {
        guard streamSize >= Int64(8 + footerSize) else { return nil }
        let footer = try read(streamSize - Int64(footerSize), footerSize)
        guard footer.count == footerSize, let tableSize = frameSize(footer: footer), Int64(tableSize) <= streamSize else { return nil }
        guard let result = parse(frame: try read(streamSize - Int64(tableSize), tableSize)) else { return nil }
        // The frames must fill the stream up to the table exactly.
        guard result.compressedSize == streamSize - Int64(tableSize) else { return nil }
        return result
    }

    /// The whole skippable frame's size that a footer (the table's last 9 bytes) implies.
    private static func frameSize(footer: [UInt8]) -> Int? {
        guard footer.count == footerSize, littleEndian(footer, at: 5) == seekableMagic, footer[4] & 0x7C == 0 else { return nil }
        let count = Int(littleEndian(footer, at: 0))
        guard count <= maximumFrames else { return nil }
        return 8 + count * (footer[4] & 0x80 != 0 ? 12 : 8) + footerSize
    }

    /// Parses a whole seek-table frame (skippable-frame header, entries, footer); nil when
    /// it is not one.
    public static func parse(frame: [UInt8]) -> SeekTable? {
        guard frame.count >= 8 + footerSize, let size = frameSize(footer: Array(frame.suffix(footerSize))),
              size == frame.count, littleEndian(frame, at: 0) == skippableMagic,
              Int(littleEndian(frame, at: 4)) == size - 8 else { return nil }
        let entrySize = frame[frame.count - 5] & 0x80 != 0 ? 12 : 8
        var result = SeekTable()
        var position = 8
        while position + entrySize <= frame.count - footerSize {
            result.append(compressedSize: Int(littleEndian(frame, at: position)),
                          decompressedSize: Int(littleEndian(frame, at: position + 4)))
            position += entrySize
        }
        return result
    }

    // MARK: Bytes

    static func appendLittleEndian(_ value: UInt32, to bytes: inout [UInt8]) {
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    /// The little-endian 32-bit number at `offset` (zstd's byte order).
    static func littleEndian<Bytes: RandomAccessCollection>(_ bytes: Bytes, at offset: Int) -> UInt32
        where Bytes.Element == UInt8, Bytes.Index == Int {
        (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[offset + $1]) << UInt32(8 * $1) }
    }
}
