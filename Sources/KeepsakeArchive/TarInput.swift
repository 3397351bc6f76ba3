import KeepsakeSupport

/// A decoded tar stream as `KeepsakeTarReader` reads it: a window of bytes at a time, lent
/// by the source where it can (a decompressed zstd frame, where it lies) or read into a
/// buffer of its own. Views it hands out stay valid until the next call.
final class TarInput {
    // MARK: State

    private let source: ByteSource
    private let lending: LendingSource?
    /// Checked before every read from the source.
    private let cancellation: CancellationFlag?
    /// Where bytes are read when the source lends none.
    private let buffer: UnsafeMutableRawBufferPointer
    /// Where a run of bytes that spans two windows is put together.
    private var joined: UnsafeMutableRawBufferPointer
    private var window = UnsafeRawBufferPointer(start: nil, count: 0)
    private var position = 0
    private var sourceEnded = false

    // MARK: Life cycle

    /// Reads `source`, checking `cancellation` before every read.
    init(source: ByteSource, cancellation: CancellationFlag?) {
        self.source = source
        lending = source as? LendingSource
        self.cancellation = cancellation
        buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 64)
        joined = UnsafeMutableRawBufferPointer.allocate(byteCount: TarHeaderBlock.size, alignment: 64)
    }

    deinit {
        buffer.deallocate()
        joined.deallocate()
    }

    // MARK: Recognising

    /// Whether the stream starts with the header of the empty `.keepsake` folder that
    /// begins every archive Keepsake writes. Reads the first block without taking it: the
    /// next call still starts at the beginning.
    func startsWithKeepsakeMarker() throws -> Bool {
        precondition(position == 0 && window.isEmpty, "only before anything is read")
        guard try refill() else { return false }
        if lending == nil {
            // Reads may come short: read on to a whole block, into the same buffer.
            var filled = window.count
            while filled < TarHeaderBlock.size {
                try cancellation?.check()
                let count = try source.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled...]))
                if count == 0 { break }
                filled += count
            }
            window = UnsafeRawBufferPointer(rebasing: buffer[0..<filled])
        }
        guard window.count >= TarHeaderBlock.size else { return false }
        let header = UstarHeaderView(UnsafeRawBufferPointer(rebasing: window[0..<TarHeaderBlock.size]))
        return header.isPOSIX && header.typeFlag == UInt8(ascii: "5") && header.name == Self.markerName && header.checksumMatches
    }

    /// The marker folder's name as Keepsake writes it.
    private static let markerName = ArchiveLayout.markerEntryPath + [UInt8(ascii: "/")]

    // MARK: Reading

    /// Up to `limit` bytes from the current position, where they lie; empty only at the end
    /// of the stream.
    func next(upTo limit: Int) throws -> UnsafeRawBufferPointer {
        if position == window.count, !(try refill()) { return UnsafeRawBufferPointer(start: nil, count: 0) }
        let count = min(limit, window.count - position)
        defer { position += count }
        return UnsafeRawBufferPointer(rebasing: window[position..<(position + count)])
    }

    /// The next `count` bytes in one piece: where they lie when one window holds them all,
    /// put together otherwise. Fewer than `count` (none at all at a clean end) when the stream
    /// ends first.
    func contiguous(_ count: Int) throws -> UnsafeRawBufferPointer {
        if window.count - position >= count { return try next(upTo: count) }
        if joined.count < count {
            joined.deallocate()
            joined = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 64)
        }
        var filled = 0
        while filled < count {
            let piece = try next(upTo: count - filled)
            if piece.isEmpty { break }
            UnsafeMutableRawBufferPointer(rebasing: joined[filled..<(filled + piece.count)]).copyMemory(from: piece)
            filled += piece.count
        }
        return UnsafeRawBufferPointer(rebasing: joined[0..<filled])
    }

    /// Passes over `count` bytes; returns how many there were (fewer when the stream ends).
    func skip(_ count: Int64) throws -> Int64 {
        var skipped: Int64 = 0
        while skipped < count {
            let piece = try next(upTo: Int(min(count - skipped, Int64(Int.max))))
            if piece.isEmpty { break }
            skipped += Int64(piece.count)
        }
        return skipped
    }

    /// Reads whatever is left of the source, to its end.
    func drain() throws {
        position = window.count
        while try refill() { position = window.count }
    }

    private func refill() throws -> Bool {
        guard !sourceEnded else { return false }
        try cancellation?.check()
        if let lending {
            window = try lending.lend(scratch: buffer)
        } else {
            window = UnsafeRawBufferPointer(rebasing: buffer[0..<(try source.read(into: buffer))])
        }
        position = 0
        sourceEnded = window.isEmpty
        return !sourceEnded
    }
}
