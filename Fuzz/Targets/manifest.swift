// libFuzzer target: the manifest parser (JSON Lines: a summary line, then one entry per line).
// Any input must end in a Manifest or a thrown error; never a crash, hang or leak.
import BackupCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzManifest(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    if let manifest = try? Manifest.parse(bytes) {
        // Touch what callers use right after parsing.
        _ = manifest.index()
        _ = manifest.entries.count
    }
    // A partial restore's parse judges most lines from their start alone.
    if let kept = try? Manifest.parse(bytes, keeping: { path, type in path.count % 2 == 0 || type == .hardlink }) {
        _ = kept.entries.count
    }
    // The summary-only path (used by listings) reads just the first line.
    let firstLine = bytes.firstIndex(of: UInt8(ascii: "\n")).map { Array(bytes[...$0]) } ?? bytes
    _ = try? Manifest.parseSummary(firstLine)
    return 0
}
