// libFuzzer target: exclude patterns (compiling and matching).
//
// Input layout (anything goes; missing parts are empty):
//   byte 0            flags: bit 0 = isDirectory, bit 1 = read the patterns as an exclude file
//   bytes 1..<NUL     the patterns, one per line (or an --exclude-from file's contents)
//   after the 1st NUL the relative path bytes
//   after the 2nd NUL the absolute path bytes
// Invalid patterns must throw ExcludePatternError; matching must never crash or hang.
import KeepsakeScan

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzExclude(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard size > 0, let data else { return 0 }
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let flags = bytes[0]
    let rest = bytes[1...]
    let parts = rest.split(separator: 0, maxSplits: 2, omittingEmptySubsequences: false)
    let patternBytes = parts.count > 0 ? Array(parts[0]) : []
    let relative = parts.count > 1 ? Array(parts[1]) : []
    let absolute = parts.count > 2 ? Array(parts[2]) : []
    let text = String(decoding: patternBytes, as: UTF8.self)

    let patterns: [String]
    if flags & 2 != 0 {
        patterns = ExcludeRules.patterns(fromFileContents: text)
    } else {
        patterns = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }
    guard let rules = try? ExcludeRules(patterns: patterns) else { return 0 }
    _ = rules.isExcluded(relativePath: relative, absolutePath: absolute, isDirectory: flags & 1 != 0)
    // The source root itself: an empty relative path.
    _ = rules.isExcluded(relativePath: [], absolutePath: absolute.isEmpty ? relative : absolute, isDirectory: true)
    return 0
}
