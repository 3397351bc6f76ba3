import KeepsakeSupport

/// Passes bytes on to another sink while hashing and counting them, so an archive's own
/// SHA-256 comes free with writing it.
package final class HashingSink: ByteSink {
    private let target: ByteSink
    private let hasher = SHA256Hasher()
    /// Bytes passed on so far.
    package private(set) var count: Int64 = 0

    package init(target: ByteSink) {
        self.target = target
    }

    package func write(_ buffer: UnsafeRawBufferPointer) throws {
        hasher.update(buffer)
        count += Int64(buffer.count)
        try target.write(buffer)
    }

    /// The hex digest of everything written.
    package func finalizeHex() -> String { hasher.finalizeHex() }
}

/// Passes bytes read from another source through a hash, so verifying an archive's own
/// SHA-256 costs no second read.
package final class HashingSource: ByteSource {
    private let source: ByteSource
    private let hasher = SHA256Hasher()
    /// Bytes read so far.
    package private(set) var count: Int64 = 0

    package init(source: ByteSource) {
        self.source = source
    }

    package func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let read = try source.read(into: buffer)
        if read > 0 {
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<read]))
            count += Int64(read)
        }
        return read
    }

    /// Reads whatever the archive reader left unread, so the hash covers the whole object
    /// (checking `cancellation` between chunks when given).
    package func drain(cancellation: CancellationFlag? = nil) throws {
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while try chunk.withUnsafeMutableBytes({ try read(into: $0) }) > 0 { try cancellation?.check() }
    }

    package func close() { source.close() }

    /// The hex digest of everything read.
    package func finalizeHex() -> String { hasher.finalizeHex() }
}
