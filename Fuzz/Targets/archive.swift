// libFuzzer target: listing an archive (ArchiveReader over libarchive) from arbitrary bytes,
// compressed or not. Walks every entry: the header, then either the content blocks or a skip,
// until the end or the first error. Errors are expected; crashes, hangs and leaks are not.
import BackupCore
import KeepsakeArchive
import KeepsakeSupport

/// The fuzzer's bytes as a ByteSource, handed out in pieces of varying size so that
/// libarchive's buffering across reads is exercised too.
final class MemorySource: ByteSource {
    private let bytes: [UInt8]
    private var position = 0
    private let chunk: Int
    private var closed = false

    init(_ bytes: [UInt8], chunk: Int) {
        self.bytes = bytes
        self.chunk = chunk
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        if closed { throw SourceClosed() }
        let count = min(buffer.count, chunk, bytes.count - position)
        if count <= 0 { return 0 }
        bytes.withUnsafeBytes { all in
            buffer.baseAddress!.copyMemory(from: all.baseAddress! + position, byteCount: count)
        }
        position += count
        return count
    }

    func close() { closed = true }
}

struct SourceClosed: Error {}

/// Bounds per input, so a tiny compressed bomb is not reported as a hang.
let maxEntries = 20_000
let maxContentBytes: Int64 = 64 << 20

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzArchive(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    // Derive the read size and the read/skip choice from the input itself (its length), so
    // the same input always takes the same path.
    let chunk = [1 << 20, 512, 4096, 7][size % 4]
    let readContent = size % 3 != 0
    // The seek table at the end of a seekable zstd stream is read from untrusted bytes too.
    if let table = SeekTable.read(streamSize: Int64(bytes.count), read: { Array(bytes[Int($0)..<(Int($0) + $1)]) }) {
        _ = table.frameIndex(containing: table.decompressedSize / 2)
    }
    do {
        let reader = try ArchiveReader(source: MemorySource(bytes, chunk: chunk), name: "fuzz")
        var entries = 0
        var contentBytes: Int64 = 0
        while let header = try reader.nextHeader() {
            _ = header
            entries += 1
            if entries > maxEntries { break }
            if readContent {
                while let block = try reader.nextBlock() {
                    contentBytes += Int64(block.bytes.count)
                    if contentBytes > maxContentBytes { return 0 }
                }
            } else {
                try reader.skipContent()
            }
        }
    } catch {
        _ = "\(error)"
    }
    return 0
}
