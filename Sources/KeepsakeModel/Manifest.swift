import KeepsakeArchive
import KeepsakeJSON
import KeepsakeSupport

/// A whole manifest: the summary line and one entry per line after it.
public struct Manifest: Sendable {
    // MARK: Content

    public var summary: BackupSummary
    public var entries: ManifestEntries

    /// Creates a manifest.
    public init(summary: BackupSummary, entries: ManifestEntries) {
        self.summary = summary
        self.entries = entries
    }

    /// Creates a manifest from entries in manifest order.
    public init(summary: BackupSummary, entries: [ManifestEntry]) {
        self.init(summary: summary, entries: ManifestEntries(entries))
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
        try bytes.withUnsafeBytes { try ManifestParser.parse($0, keeping: keeping) }
    }

    /// Reads and parses `source` to its end a piece at a time (the text is never held
    /// whole), refusing a manifest larger than `ManifestSizeLimit` allows as soon as it is;
    /// `name` says in messages what is read.
    public static func read(_ source: ByteSource, name: String, keeping: EntryFilter? = nil) throws -> Manifest {
        try ManifestParser.read(source, name: name, keeping: keeping)
    }

    /// One entry line of the manifest of backup `owner`: its content can only be in an
    /// earlier backup (ids sort by creation, and a new id sorts after every existing one),
    /// so an `in` naming the backup itself or a newer one — a cycle — is refused here,
    /// once for every reader (verify, restore, diff, prune, repair).
    static func parseEntryLine(_ line: UnsafeBufferPointer<UInt8>, lineNumber: Int, owner: BackupID) throws -> ManifestEntry {
        let entry = try parseEntryLine(line, lineNumber: lineNumber)
        try checkHolder(entry.storedIn, of: owner, lineNumber: lineNumber)
        for holder in entry.blocks?.holders.sorted() ?? [] { try checkHolder(holder, of: owner, lineNumber: lineNumber) }
        return entry
    }

    /// Refuses an `in` on line `lineNumber` that names `owner` or a newer backup.
    static func checkHolder(_ holder: BackupID?, of owner: BackupID, lineNumber: Int) throws {
        if let holder, holder >= owner {
            throw ManifestError.invalidLine(line: lineNumber, reason: "'in' names backup \(holder), which is not older than "
                + "this backup (\(owner)); the manifest is damaged or forged: run 'keepsake verify', restore an earlier backup")
        }
    }

    /// One entry line: the fast decoder for the lines Keepsake writes, the general JSON
    /// parser for anything else.
    package static func parseEntryLine(_ line: UnsafeBufferPointer<UInt8>, lineNumber: Int) throws -> ManifestEntry {
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
