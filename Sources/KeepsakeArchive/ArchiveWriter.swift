import KeepsakeSupport

/// Writes a POSIX pax tar, compressed, to a byte sink.
///
/// Headers are encoded here (`PaxHeaderEncoder`); zstd goes through Keepsake's own
/// compressor (independent frames and a seek table), gzip, xz and lz4 through libarchive's
/// filters (`LibarchiveCompressor`).
public final class ArchiveWriter {
    // MARK: State

    /// Where the uncompressed tar stream goes.
    private let downstream: ByteSink
    private let seekable: SeekableZstdSink?
    private let compressor: LibarchiveCompressor?
    private var encoder = PaxHeaderEncoder()
    /// Headers and small writes gathered into larger ones.
    private var staged: [UInt8] = []
    private var written: Int64 = 0
    private var entry: OpenEntry?
    private var closed = false

    /// Gathers writes up to this size; larger content goes straight through.
    private static let stageCapacity = 64 * 1024

    /// The entry whose content is being written.
    private struct OpenEntry {
        let layout: PaxHeaderEncoder.ContentLayout
        /// Bytes of content the caller has written (holes included).
        var logicalOffset: Int64 = 0
        /// The stored run that `logicalOffset` is in or before.
        var regionIndex = 0
    }

    // MARK: Life cycle

    /// Opens a writer. `threads` only matters for zstd and xz.
    public init(sink: ByteSink, compression: Compression, level: Int?, threads: Int) throws {
        switch compression {
        case .zstd:
            let seekable = try SeekableZstdSink(downstream: sink, level: level ?? Compression.zstd.defaultLevel ?? 3,
                                                workers: threads, adaptive: true)
            self.seekable = seekable
            compressor = nil
            downstream = seekable
        case .none:
            seekable = nil
            compressor = nil
            downstream = sink
        case .gzip, .xz, .lz4:
            let compressor = try LibarchiveCompressor(downstream: sink, compression: compression, level: level, threads: threads)
            seekable = nil
            self.compressor = compressor
            downstream = compressor
        }
        staged.reserveCapacity(Self.stageCapacity)
    }

    // MARK: Writing

    /// Writes an entry's header; for a regular file, `writeData` must follow with exactly
    /// the header's size in bytes (a sparse file's holes included, as zeros).
    public func writeHeader(_ header: ArchiveEntryHeader) throws {
        guard !closed else {
            throw ArchiveError.write(path: PathBytes.display(header.path), reason: "the archive was already finished")
        }
        try finishEntry()
        let before = staged.count
        let layout = try encoder.encode(header, into: &staged)
        written += Int64(staged.count - before)
        entry = OpenEntry(layout: layout)
        if staged.count >= Self.stageCapacity { try flush() }
    }

    /// Writes content bytes of the current entry; bytes in a sparse file's holes are dropped.
    public func writeData(_ buffer: UnsafeRawBufferPointer, path: [UInt8]) throws {
        guard buffer.count > 0 else { return }
        guard var current = entry else {
            throw ArchiveError.write(path: PathBytes.display(path), reason: "content came without a header")
        }
        let size = current.layout.logicalSize
        guard Int64(buffer.count) <= size - current.logicalOffset else {
            throw ArchiveError.write(path: PathBytes.display(path),
                                     reason: "more than the \(size) bytes its header gave (\(current.logicalOffset + Int64(buffer.count)))")
        }
        let regions = current.layout.storedRegions
        var rest = buffer
        while !rest.isEmpty {
            guard current.regionIndex < regions.count else { break } // the rest is a trailing hole
            let region = regions[current.regionIndex]
            if current.logicalOffset >= region.offset + region.length {
                current.regionIndex += 1
                continue
            }
            let count: Int
            if current.logicalOffset < region.offset {
                count = Int(min(region.offset - current.logicalOffset, Int64(rest.count)))
            } else {
                count = Int(min(region.offset + region.length - current.logicalOffset, Int64(rest.count)))
                try emit(UnsafeRawBufferPointer(rebasing: rest[..<count]))
            }
            current.logicalOffset += Int64(count)
            rest = UnsafeRawBufferPointer(rebasing: rest[count...])
        }
        current.logicalOffset += Int64(rest.count)
        entry = current
    }

    /// Moves the current entry's content on to `offset` over a hole of a sparse entry,
    /// writing nothing; throws when that would pass over content the entry stores.
    public func skip(to offset: Int64, path: [UInt8]) throws {
        guard var current = entry else {
            throw ArchiveError.write(path: PathBytes.display(path), reason: "content came without a header")
        }
        guard offset >= current.logicalOffset, offset <= current.layout.logicalSize else {
            throw ArchiveError.write(path: PathBytes.display(path), reason: "a skip to \(offset) is outside its content")
        }
        let regions = current.layout.storedRegions
        while current.regionIndex < regions.count,
              regions[current.regionIndex].offset + regions[current.regionIndex].length <= current.logicalOffset {
            current.regionIndex += 1
        }
        if current.regionIndex < regions.count, regions[current.regionIndex].length > 0,
           regions[current.regionIndex].offset < offset {
            throw ArchiveError.write(path: PathBytes.display(path), reason: "a skip to \(offset) passes over stored content")
        }
        current.logicalOffset = offset
        entry = current
    }

    /// Ends the current entry: content the caller did not write is stored as zeros, then
    /// the padding to a whole block, so that `position` is where the next entry will start.
    public func finishEntry() throws {
        guard let current = entry else { return }
        entry = nil
        var missing: Int64 = 0
        for region in current.layout.storedRegions {
            missing += max(0, region.offset + region.length - max(region.offset, current.logicalOffset))
        }
        try emitZeros(missing + TarHeaderBlock.padding(after: current.layout.storedBytes))
    }

    /// Bytes of uncompressed tar written so far: after `finishEntry`, the offset at which
    /// the next entry's headers begin.
    public var position: Int64 { written }

    /// Finishes the archive (end-of-archive blocks, compressor flush, seek table).
    public func finish() throws {
        guard !closed else { return }
        try finishEntry()
        closed = true
        try emitZeros(2 * Int64(TarHeaderBlock.size))
        try flush()
        try compressor?.finish()
        try seekable?.finish()
    }

    // MARK: Output

    /// Passes bytes on: gathered when small, straight through when large.
    private func emit(_ bytes: UnsafeRawBufferPointer) throws {
        written += Int64(bytes.count)
        if staged.count + bytes.count <= Self.stageCapacity {
            staged.append(contentsOf: bytes)
            return
        }
        try flush()
        if bytes.count >= Self.stageCapacity / 2 {
            try downstream.write(bytes)
        } else {
            staged.append(contentsOf: bytes)
        }
    }

    private func emitZeros(_ count: Int64) throws {
        var remaining = count
        while remaining > 0 {
            let room = Self.stageCapacity - staged.count
            if room <= 0 {
                try flush()
                continue
            }
            let chunk = Int(min(Int64(room), remaining))
            staged.appendZeros(chunk)
            written += Int64(chunk)
            remaining -= Int64(chunk)
        }
    }

    /// Passes the gathered bytes on now.
    func flush() throws {
        guard !staged.isEmpty else { return }
        try staged.withUnsafeBytes { try downstream.write($0) }
        staged.removeAll(keepingCapacity: true)
    }
}
