// libFuzzer target: Keepsake's own tar reader (KeepsakeTarReader, through ArchiveReader with
// keepsakeTar) on arbitrary bytes taken as the uncompressed tar of a Keepsake archive, the way
// a partial restore hands it the entries it cut out of one. Walks every entry: the header,
// then the content blocks or a skip, to the end or the first error. Errors are expected;
// crashes, hangs and leaks are not, and neither is content outside the file it belongs to.
import BackupCore
import Glibc
import KeepsakeArchive
import KeepsakeSupport

/// The fuzzer's bytes as a ByteSource, in pieces of varying size, so that headers, records
/// and sparse maps that span two reads are put together too.
final class MemorySource: ByteSource {
    private let bytes: [UInt8]
    private var position = 0
    private let chunk: Int

    init(_ bytes: [UInt8], chunk: Int) {
        self.bytes = bytes
        self.chunk = chunk
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let count = min(buffer.count, chunk, bytes.count - position)
        if count <= 0 { return 0 }
        bytes.withUnsafeBytes { all in
            buffer.baseAddress!.copyMemory(from: all.baseAddress! + position, byteCount: count)
        }
        position += count
        return count
    }

    func close() {}
}

/// Bounds per input, so that a long run of tiny entries is not reported as a hang.
let maxEntries = 20_000

/// Stops the run with a line naming the broken invariant (libFuzzer reports it as a crash).
func broken(_ what: String) -> Never {
    let text = "keepsaketar invariant broken: \(what)\n"
    _ = text.withCString { write(2, $0, strlen($0)) }
    abort()
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzKeepsakeTar(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    // The read size and the read/skip choice come from the input's length, so the same input
    // always takes the same path.
    let chunk = [1 << 20, 512, 100, 7][size % 4]
    let readContent = size % 3 != 0
    do {
        let reader = try ArchiveReader(source: MemorySource(bytes, chunk: chunk), name: "fuzz", keepsakeTar: true)
        var entries = 0
        while let header = try reader.nextHeader() {
            entries += 1
            if entries > maxEntries { break }
            if header.path.isEmpty { broken("an entry without a name was handed out") }
            guard readContent else {
                try reader.skipContent()
                continue
            }
            var end: Int64 = 0
            while let block = try reader.nextBlock() {
                // Content comes in file order, never overlapping, never past the file's size.
                if block.offset < end { broken("content at \(block.offset) after content up to \(end)") }
                end = block.offset + Int64(block.bytes.count)
                if end > header.size { broken("content up to \(end) in a file of \(header.size) bytes") }
            }
        }
        try reader.readToEnd()
    } catch {
        _ = "\(error)"
    }
    return 0
}
