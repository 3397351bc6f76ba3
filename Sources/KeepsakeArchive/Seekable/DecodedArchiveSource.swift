import Foundation
import KeepsakeSupport

/// Chooses how an archive's bytes are decoded before libarchive sees them: a zstd stream
/// goes through `ParallelZstdSource` (several frames at once); anything else is passed
/// on unchanged, for libarchive to recognise.
package enum DecodedArchiveSource {
    // MARK: Choosing

    /// How many frames are decompressed at once.
    package static var workers: Int { max(1, ProcessInfo.processInfo.activeProcessorCount) }

    /// `source` as libarchive should read it, decompressing up to `workers` frames at once.
    package static func wrap(_ source: ByteSource, name: String, workers: Int = DecodedArchiveSource.workers) throws -> ByteSource {
        var prefix = [UInt8](repeating: 0, count: 4)
        var count = 0
        while count < prefix.count {
            let got = try prefix.withUnsafeMutableBytes {
                try source.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[count...]))
            }
            if got == 0 { break }
            count += got
        }
        prefix.removeSubrange(count...)
        if count == 4 {
            let magic = SeekTable.littleEndian(prefix, at: 0)
            if magic == ZstdContext.frameMagic || ZstdContext.isSkippable(magic) {
                return ParallelZstdSource(source: source, prefix: prefix, name: name, workers: workers)
            }
        }
        return PrefixedSource(prefix: prefix, source: source)
    }
}

/// A source whose first bytes were already read: hands those out first.
package final class PrefixedSource: ByteSource {
    private var prefix: [UInt8]
    private let source: ByteSource

    package init(prefix: [UInt8], source: ByteSource) {
        self.prefix = prefix
        self.source = source
    }

    package func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard !prefix.isEmpty else { return try source.read(into: buffer) }
        let count = min(prefix.count, buffer.count)
        prefix.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
        prefix.removeFirst(count)
        return count
    }

    package func close() { source.close() }
}
