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
    public func index() -> [[UInt8]: ManifestEntry] {
        var result: [[UInt8]: ManifestEntry] = [:]
        result.reserveCapacity(entries.count)
        for entry in entries { result[entry.path] = entry }
        return result
    }

    // MARK: Parsing

    /// Parses JSON Lines; throws `ManifestError` naming the line and the problem.
    public static func parse(_ bytes: [UInt8]) throws -> Manifest {
        var summary: BackupSummary?
        var entries: [ManifestEntry] = []
        var lineNumber = 0
        var start = 0
        try bytes.withUnsafeBufferPointer { buffer in
            while start < buffer.count {
                let end = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) ?? buffer.count
                lineNumber += 1
                defer { start = end + 1 }
                let line = UnsafeBufferPointer(rebasing: buffer[start..<end])
                if line.isEmpty { continue }
                let value: JSONValue
                do {
                    value = try JSONParser.parse(line)
                } catch {
                    if summary == nil { throw ManifestError.notAManifest(reason: "line 1 is not JSON: \(error)") }
                    throw ManifestError.invalidLine(line: lineNumber, reason: "not JSON: \(error)")
                }
                if summary == nil {
                    summary = try BackupSummary(json: value)
                } else {
                    entries.append(try ManifestEntry(json: value, line: lineNumber))
                }
            }
        }
        guard let summary else { throw ManifestError.notAManifest(reason: "it is empty") }
        return Manifest(summary: summary, entries: entries)
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
