// libFuzzer target: the manifest parser (JSON Lines: a summary line, then one entry per line),
// and a supplement's (its first line, then files and held blocks). Any input must end in a
// Manifest or a SupplementManifest, or a thrown error; never a crash, hang or leak.
import KeepsakeModel
import KeepsakeSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzManifest(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    let whole = try? Manifest.parse(bytes)
    if let manifest = whole {
        // Touch what callers use right after parsing.
        _ = manifest.index()
        _ = manifest.entries.count
    }
    // Read a piece at a time (as from a destination), it must say the same: pieces of a size
    // the input picks, so line ends fall anywhere.
    let piece = 1 + Int(bytes.first ?? 0) % 97
    let read = try? Manifest.read(PiecewiseSource(bytes, piece: piece), name: "the fuzzed manifest")
    if let whole, ManifestSizeLimit.limit(forEntries: 0) > bytes.count {
        guard let read, whole.entries == read.entries, whole.summary == read.summary else {
            fatalError("a manifest read in pieces of \(piece) differs from the whole")
        }
    }
    // A partial restore's parse judges most lines from their start alone.
    if let kept = try? Manifest.parse(bytes, keeping: { path, type in path.count % 2 == 0 || type == .hardlink }) {
        _ = kept.entries.count
    }
    // The summary-only path (used by listings) reads just the first line.
    let firstLine = bytes.firstIndex(of: UInt8(ascii: "\n")).map { Array(bytes[...$0]) } ?? bytes
    _ = try? Manifest.parseSummary(firstLine)
    // A supplement's manifest, and what a reader asks of its held blocks.
    if let supplement = try? SupplementManifest.parse(bytes) {
        _ = supplement.summary
        for held in supplement.blocks {
            _ = held.regions
            _ = held.digest(of: held.indices.last ?? 0)
        }
    }
    return 0
}

/// The input handed out `piece` bytes at a time.
private final class PiecewiseSource: ByteSource {
    private let bytes: [UInt8]
    private let piece: Int
    private var offset = 0

    init(_ bytes: [UInt8], piece: Int) {
        self.bytes = bytes
        self.piece = piece
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let count = min(piece, buffer.count, bytes.count - offset)
        bytes[offset..<(offset + count)].withUnsafeBytes { buffer.copyMemory(from: $0) }
        offset += count
        return count
    }

    func close() {}
}
