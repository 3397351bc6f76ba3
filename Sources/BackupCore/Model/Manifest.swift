import Foundation

/// A whole manifest: the summary line and one entry per line after it.
public struct Manifest: Sendable {
    // MARK: Content

    public var summary: BackupSummary
    public var entries: [ManifestEntry]

    /// Creates a manifest.
    public init(summary: BackupSummary, entries: [ManifestEntry]) {
        self.summary = summary
        self.entries = entries
    }

    /// Entries by archive path (a later duplicate wins, as in tar).
    public func index() -> ManifestIndex {
        ManifestIndex(entries)
    }

    // MARK: Parsing

    /// Which entries to keep, from an entry's path and type.
    public typealias EntryFilter = @Sendable (_ path: UnsafeBufferPointer<UInt8>, _ type: EntryType) -> Bool

    /// Parses JSON Lines; throws `ManifestError` naming the line and the problem. With
    /// `keeping`, only the entries it accepts are decoded and kept: a line Keepsake wrote
    /// is judged from its start alone (a partial restore of a big backup need not decode
    /// every line), so damage in a line left out goes unnoticed.
    public static func parse(_ bytes: [UInt8], keeping: EntryFilter? = nil) throws -> Manifest {
        try bytes.withUnsafeBufferPointer { buffer in
            let summaryEnd = buffer.firstIndex(of: UInt8(ascii: "\n")) ?? buffer.count
            // Blank lines before the summary are allowed; find the first line with content.
            var start = 0
            var lineNumber = 1
            var end = summaryEnd
            while start < buffer.count && start == end {
                start = end + 1
                lineNumber += 1
                end = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) ?? buffer.count
            }
            guard start < buffer.count else { throw ManifestError.notAManifest(reason: "it is empty") }
            let summary = try parseSummary(Array(buffer[start..<end]))
            let entries = try parseEntries(UnsafeBufferPointer(rebasing: buffer[min(buffer.count, end + 1)...]),
                                           firstLineNumber: lineNumber + 1, owner: summary.id, keeping: keeping)
            return Manifest(summary: summary, entries: entries)
        }
    }

    /// Big manifests are split at line ends and parsed on several threads.
    private static let parallelThreshold = 4 << 20

    /// Parses entry lines, the first of which is line `firstLineNumber` of the manifest.
    private static func parseEntries(_ buffer: UnsafeBufferPointer<UInt8>, firstLineNumber: Int, owner: BackupID,
                                     keeping: EntryFilter?) throws -> [ManifestEntry] {
        let parts = buffer.count < parallelThreshold ? 1 : max(1, min(8, ProcessInfo.processInfo.activeProcessorCount))
        guard parts > 1 else {
            return try parseEntryLines(buffer, firstLineNumber: firstLineNumber, owner: owner, keeping: keeping)
        }
        // Cut points just after a newline, so that every part holds whole lines.
        var cuts = [0]
        for part in 1..<parts {
            let guess = buffer.count * part / parts
            let cut = buffer[max(guess, cuts[cuts.count - 1])...].firstIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? buffer.count
            cuts.append(cut)
        }
        cuts.append(buffer.count)
        var firstLines = [firstLineNumber]
        for part in 1..<parts {
            firstLines.append(firstLines[part - 1] + buffer[cuts[part - 1]..<cuts[part]].lazy.filter { $0 == 10 }.count)
        }
        let results = ParseResults(count: parts)
        let (bounds, lines) = (cuts, firstLines)
        // The buffer outlives concurrentPerform, which returns only when every part is done.
        let address = UInt(bitPattern: buffer.baseAddress)
        DispatchQueue.concurrentPerform(iterations: parts) { part in
            let start = UnsafePointer<UInt8>(bitPattern: address).map { $0 + bounds[part] }
            let slice = UnsafeBufferPointer(start: start, count: bounds[part + 1] - bounds[part])
            results.store(Result { try parseEntryLines(slice, firstLineNumber: lines[part], owner: owner, keeping: keeping) }, at: part)
        }
        var entries: [ManifestEntry] = []
        for part in 0..<parts { entries += try results.take(part).get() }
        return entries
    }

    /// What each thread of a parallel parse found.
    private final class ParseResults: @unchecked Sendable {
        private let lock = NSLock()
        private var results: [Result<[ManifestEntry], Error>?]
        init(count: Int) { results = Array(repeating: nil, count: count) }
        func store(_ result: Result<[ManifestEntry], Error>, at index: Int) { lock.withLock { results[index] = result } }
        func take(_ index: Int) -> Result<[ManifestEntry], Error> {
            lock.withLock { results[index] } ?? .failure(ManifestError.notAManifest(reason: "a part was not parsed"))
        }
    }

    /// Parses entry lines of the manifest of backup `owner`.
    private static func parseEntryLines(_ buffer: UnsafeBufferPointer<UInt8>, firstLineNumber: Int, owner: BackupID,
                                        keeping: EntryFilter?) throws -> [ManifestEntry] {
        var entries: [ManifestEntry] = []
        var lineNumber = firstLineNumber - 1
        var start = 0
        while start < buffer.count {
            let end = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) ?? buffer.count
            lineNumber += 1
            defer { start = end + 1 }
            let line = UnsafeBufferPointer(rebasing: buffer[start..<end])
            if line.isEmpty { continue }
            guard let keeping else {
                entries.append(try parseEntryLine(line, lineNumber: lineNumber, owner: owner))
                continue
            }
            if let start = ManifestLineDecoder.peek(line) {
                if keeping(start.path, start.type) { entries.append(try parseEntryLine(line, lineNumber: lineNumber, owner: owner)) }
                continue
            }
            let entry = try parseEntryLine(line, lineNumber: lineNumber, owner: owner)
            if entry.path.withUnsafeBufferPointer({ keeping($0, entry.type) }) { entries.append(entry) }
        }
        return entries
    }

    /// One entry line of the manifest of backup `owner`: its content can only be in an
    /// earlier backup (ids sort by creation, and a new id sorts after every existing one),
    /// so an `in` naming the backup itself or a newer one — a cycle — is refused here,
    /// once for every reader (verify, restore, diff, prune, repair).
    static func parseEntryLine(_ line: UnsafeBufferPointer<UInt8>, lineNumber: Int, owner: BackupID) throws -> ManifestEntry {
        let entry = try parseEntryLine(line, lineNumber: lineNumber)
        if let holder = entry.storedIn, holder >= owner {
            throw ManifestError.invalidLine(line: lineNumber, reason: "'in' names backup \(holder), which is not older than "
                + "this backup (\(owner)); the manifest is damaged or forged: run 'keepsake verify', restore an earlier backup")
        }
        return entry
    }

    /// One entry line: the fast decoder for the lines Keepsake writes, the general JSON
    /// parser for anything else.
    static func parseEntryLine(_ line: UnsafeBufferPointer<UInt8>, lineNumber: Int) throws -> ManifestEntry {
        if let entry = try ManifestLineDecoder.decode(line, lineNumber: lineNumber) { return entry }
        let value: JSONValue
        do {
            value = try JSONParser.parse(line)
        } catch {
            throw ManifestError.invalidLine(line: lineNumber, reason: "not JSON: \(error)")
        }
        return try ManifestEntry(json: value, line: lineNumber)
    }

    /// Parses only the summary line.
    public static func parseSummary(_ line: [UInt8]) throws -> BackupSummary {
        let trimmed = line.last == UInt8(ascii: "\n") ? Array(line.dropLast()) : line
        let value: JSONValue
        do {
            value = try JSONParser.parse(trimmed)
        } catch {
            throw ManifestError.notAManifest(reason: "line 1 is not JSON: \(error)")
        }
        return try BackupSummary(json: value)
    }
}
