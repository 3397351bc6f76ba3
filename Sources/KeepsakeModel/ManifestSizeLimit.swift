import KeepsakeSupport

/// How many bytes a manifest may hold, so that one read from an archive or a file cannot
/// take memory out of proportion to what it describes: a 25 KB archive whose manifest is
/// 256 MiB of one repeated byte took 786 MB to restore.
///
/// The rule: the summary line (at most `summaryLineLimit`) declares how many entries
/// follow, and how many block digests their `blocks` tables hold; the whole manifest may
/// hold `allowance` plus `bytesPerEntry` for each entry and `bytesPerBlockDigest` for each
/// digest.
/// A line Keepsake writes holds at most two paths of 4 KiB, each byte escaped in at most
/// six, a few names and numbers: well under `bytesPerEntry`, so no honest manifest is
/// refused, while bytes that describe nothing are.
public struct ManifestSizeLimit {
    // MARK: Settings

    /// The longest summary line believed.
    public static let summaryLineLimit = 1 << 20
    /// Bytes allowed for each entry the summary declares.
    public static let bytesPerEntry = 64 << 10
    /// Bytes allowed for each block digest the summary declares (22 in base64).
    public static let bytesPerBlockDigest = 32
    /// Bytes allowed besides (the summary line, blank lines).
    public static let allowance = 1 << 20
    /// The most any manifest may hold, whatever its summary declares.
    public static let hardLimit = 1 << 31

    /// The bytes allowed for a manifest declaring `entries` entries and `blockDigests`
    /// block digests.
    public static func limit(forEntries entries: Int64, blockDigests: Int64 = 0) -> Int {
        let perEntry = Int64(bytesPerEntry), perDigest = Int64(bytesPerBlockDigest)
        guard entries >= 0, entries < Int64(hardLimit) / perEntry,
              blockDigests >= 0, blockDigests < Int64(hardLimit) / perDigest else { return hardLimit }
        return min(hardLimit, allowance + Int(entries * perEntry) + Int(blockDigests * perDigest))
    }

    /// The bytes allowed for a SHA256SUMS list of `files` files (one line of at most a path
    /// and a digest each).
    public static func checksumsLimit(files: Int) -> Int {
        limit(forEntries: Int64(max(0, files)))
    }

    // MARK: State

    /// The manifest's bytes so far.
    public private(set) var bytes: [UInt8] = []
    /// Nil until the summary line is complete.
    private var limit: Int?
    private var entries: Int64 = 0
    /// What is read, for messages ("the manifest inside X").
    private let name: String

    /// An empty manifest buffer; `name` says in messages what is being read.
    public init(name: String) {
        self.name = name
    }

    // MARK: Reading

    /// Adds content at `offset` (archive entries may have holes, which read as zeros);
    /// throws `ManifestError.tooLarge` as soon as the manifest exceeds its limit, before
    /// the memory for it is taken.
    public mutating func add(_ chunk: UnsafeRawBufferPointer, at offset: Int64) throws {
        let end = offset.addingReportingOverflow(Int64(chunk.count))
        guard offset >= 0, !end.overflow else { throw tooLarge(Int64.max) }
        try check(end.partialValue)
        let start = Int(offset)
        if start > bytes.count { bytes.appendZeros(start - bytes.count) }
        let overlap = min(bytes.count, start + chunk.count)
        bytes.replaceSubrange(start..<overlap, with: chunk)
        if limit == nil { try findSummary() }
        if let limit, bytes.count > limit { throw tooLarge(Int64(bytes.count)) }
    }

    /// Adds content that follows what was added before.
    public mutating func append(_ chunk: UnsafeRawBufferPointer) throws {
        try add(chunk, at: Int64(bytes.count))
    }

    /// Reads `source` to its end through the limit.
    public static func read(_ source: ByteSource, name: String) throws -> [UInt8] {
        var manifest = ManifestSizeLimit(name: name)
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = try chunk.withUnsafeMutableBytes { try source.read(into: $0) }
            if count == 0 { return manifest.bytes }
            try chunk.withUnsafeBytes { try manifest.append(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
        }
    }

    private func check(_ end: Int64) throws {
        let bound = limit ?? ManifestSizeLimit.summaryLineLimit + ManifestSizeLimit.allowance
        if end > Int64(bound) { throw tooLarge(end) }
    }

    /// Once the first line with content is complete, sets the limit from the counts it declares.
    private mutating func findSummary() throws {
        var start = 0
        while start < bytes.count && bytes[start] == UInt8(ascii: "\n") { start += 1 }
        guard let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) else {
            if bytes.count - start > ManifestSizeLimit.summaryLineLimit {
                throw ManifestError.notAManifest(reason: "\(name) begins with a line longer than \(ManifestSizeLimit.summaryLineLimit) bytes")
            }
            return
        }
        // A first line that is no summary: the manifest is refused now, as parsing would.
        let summary = try Manifest.parseSummary(Array(bytes[start..<end]))
        let counts = [summary.fileCount, summary.directoryCount, summary.symlinkCount, summary.hardlinkCount, summary.otherCount]
        entries = counts.reduce(Int64(0)) { total, count in
            let sum = total.addingReportingOverflow(max(0, count))
            return sum.overflow ? Int64.max : sum.partialValue
        }
        limit = ManifestSizeLimit.limit(forEntries: entries, blockDigests: summary.blockDigests)
    }

    private func tooLarge(_ size: Int64) -> ManifestError {
        .tooLarge(name: name, size: size, limit: limit ?? ManifestSizeLimit.summaryLineLimit + ManifestSizeLimit.allowance,
                  entries: entries)
    }
}
