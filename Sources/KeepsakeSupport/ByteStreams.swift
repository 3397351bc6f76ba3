/// Something bytes can be read from, front to back.
public protocol ByteSource: AnyObject {
    /// Reads up to `buffer.count` bytes and returns how many; 0 at the end.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int
    /// Releases the source; reading afterwards is an error.
    func close()
}

/// A source that can lend its own memory instead of copying into the caller's: the bytes
/// of a decompressed frame are handed to libarchive where they lie.
package protocol LendingSource: ByteSource {
    /// The next bytes: a view valid until the next call (or, where nothing can be lent,
    /// bytes read into `scratch`). Empty at the end.
    func lend(scratch: UnsafeMutableRawBufferPointer) throws -> UnsafeRawBufferPointer
}

/// Something bytes can be written to, front to back.
public protocol ByteSink: AnyObject {
    /// Writes all of `buffer` or throws.
    func write(_ buffer: UnsafeRawBufferPointer) throws
}

extension ByteSource {
    /// Reads everything that is left, refusing more than `limit` bytes. Reads straight
    /// into one buffer (sized from the object when it is a local file).
    public func readAll(limit: Int) throws -> [UInt8] {
        var capacity = 64 * 1024
        if let random = self as? RandomAccessSource, let size = try? random.size(), size >= 0, size < Int64(limit) {
            capacity = Int(size) + 1 // one more, so the end is seen without growing
        }
        var result = [UInt8](repeating: 0, count: capacity)
        var filled = 0
        while true {
            if filled == result.count {
                guard result.count <= limit else { throw ByteStreamError.tooLarge(limit: limit) }
                result.appendZeros(result.count)
            }
            let count = try result.withUnsafeMutableBytes { try read(into: UnsafeMutableRawBufferPointer(rebasing: $0[filled...])) }
            if count == 0 { break }
            filled += count
            if filled > limit { throw ByteStreamError.tooLarge(limit: limit) }
        }
        result.removeSubrange(filled...)
        return result
    }
}

/// A source that can also be read at any offset (a local file, an object in a bucket),
/// which lets a partial restore fetch and decompress only the frames it needs.
public protocol RandomAccessSource: ByteSource {
    /// The whole object's size in bytes.
    func size() throws -> Int64
    /// Reads up to `buffer.count` bytes at `offset`; fewer only at the end.
    func read(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws -> Int
}

extension RandomAccessSource {
    /// Reads exactly `count` bytes at `offset` (fewer only at the end).
    package func bytes(at offset: Int64, count: Int) throws -> [UInt8] {
        var result = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let got = try result.withUnsafeMutableBytes {
                try read(at: offset + Int64(filled), into: UnsafeMutableRawBufferPointer(rebasing: $0[filled...]))
            }
            if got == 0 { break }
            filled += got
        }
        result.removeSubrange(filled...)
        return result
    }
}

/// Passes a source through, counting the bytes read.
package final class CountingSource: ByteSource {
    private let source: ByteSource
    /// Bytes read so far.
    package private(set) var count: Int64 = 0

    package init(_ source: ByteSource) { self.source = source }

    package func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let got = try source.read(into: buffer)
        count += Int64(got)
        return got
    }

    package func close() { source.close() }
}

/// Hands out bytes held in memory.
package final class MemorySource: ByteSource {
    private let bytes: [UInt8]
    private var position = 0

    package init(_ bytes: [UInt8]) { self.bytes = bytes }

    package func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let count = min(buffer.count, bytes.count - position)
        guard count > 0 else { return 0 }
        bytes.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[position..<(position + count)])) }
        position += count
        return count
    }

    package func close() {}
}
