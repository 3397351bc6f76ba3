import Foundation
import KeepsakeJSON
import KeepsakeSupport

/// What a supplement holds: the files a kept backup (its *owner*) and the kept backups after
/// it take from backups that prune let go. JSON lines: a first line that says what the
/// supplement is, then one line per file, a manifest entry as in a backup's manifest
/// (`ManifestEntry`) whose `in` names the backup the file came from and whose `at` and `len`
/// place it in the supplement's own archive. A reader looks a file up by that backup's id
/// and its path, and checks it against the SHA-256 the kept backup's manifest records: a
/// supplement proves nothing by itself.
/// Its header's fields read and write as its own (`manifest.id`).
@dynamicMemberLookup
public struct SupplementManifest: Sendable, Equatable {
    // MARK: State

    /// The format of the first line (`"supplement": 1`).
    public static let formatVersion = 1
    /// The format of a supplement that holds blocks (`"supplement": 2`).
    public static let blocksFormat = 2

    /// What it is: its first line.
    public var header: SupplementHeader
    /// One entry per file: `storedIn` is the backup it came from, `archiveOffset` and
    /// `archiveLength` place it in this supplement's archive.
    public var entries: [ManifestEntry]
    /// Blocks of big files it holds, one line each (after the files): see `HeldBlocks`.
    public var blocks: [HeldBlocks]

    /// A supplement's manifest.
    public init(id: BackupID, host: String, owner: BackupID, created: Date, archiveName: String, archiveSize: Int64,
                archiveSHA256: String, encryption: BackupEncryption? = nil, entries: [ManifestEntry], blocks: [HeldBlocks] = []) {
        header = SupplementHeader(id: id, host: host, owner: owner, created: created, archiveName: archiveName,
                                  archiveSize: archiveSize, archiveSHA256: archiveSHA256, encryption: encryption)
        header.format = blocks.isEmpty ? SupplementManifest.formatVersion : SupplementManifest.blocksFormat
        self.entries = entries
        self.blocks = blocks
    }

    /// A field of its header.
    public subscript<Value>(dynamicMember field: KeyPath<SupplementHeader, Value>) -> Value { header[keyPath: field] }

    /// A field of its header, to change.
    public subscript<Value>(dynamicMember field: WritableKeyPath<SupplementHeader, Value>) -> Value {
        get { header[keyPath: field] }
        set { header[keyPath: field] = newValue }
    }

    /// What it is without its entries, and the backups whose files it holds.
    public var summary: SupplementSummary {
        SupplementSummary(header: header, holds: Set(entries.compactMap(\.storedIn) + blocks.map(\.origin)))
    }

    /// A manifest of `header` holding `entries`.
    public init(header: SupplementHeader, entries: [ManifestEntry], blocks: [HeldBlocks] = []) {
        self.header = header
        self.entries = entries
        self.blocks = blocks
    }

    // MARK: Encoding

    /// The JSON lines, each ended by a newline; `inner` leaves the archive's size and
    /// SHA-256 out (the copy inside the archive, written before they are known).
    public func encoded(inner: Bool = false) -> [UInt8] {
        var writer = JSONWriter(capacity: 256 + entries.count * 200 + blocks.reduce(0) { $0 + 200 + $1.digests.count * 2 })
        writer.beginObject()
        header.writeFields(to: &writer, inner: inner)
        writer.endObject()
        writer.endLine()
        for entry in entries {
            entry.write(to: &writer)
            writer.endLine()
        }
        for held in blocks {
            held.write(to: &writer)
            writer.endLine()
        }
        return writer.bytes
    }

    // MARK: Decoding

    /// Parses a supplement's manifest; throws `ManifestError` naming the line and the
    /// problem. Every entry must be a file that came from a backup older than `owner` and
    /// that lies in the archive (`in`, `at`, `len`, `sha256`), each (backup, path) once.
    /// `archive` gives the archive's size and SHA-256 for the copy inside it, which has none.
    public static func parse(_ bytes: [UInt8], archive measured: (size: Int64, sha256: String)? = nil) throws -> SupplementManifest {
        var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true)[...]
        let fields = try SupplementHeader.parseLine(Array(lines.popFirst() ?? []))
        var manifest = SupplementManifest(header: try SupplementHeader(fields: fields, measured: measured), entries: [])
        var seen = Set<HeldFile>()
        var seenBlocks = Set<HeldFile>()
        for (offset, line) in lines.enumerated() {
            let number = offset + 2
            if line.firstRange(of: heldBlocksKey) != nil {
                let held = try parseHeldBlocks(Array(line), lineNumber: number, format: manifest.format)
                try Manifest.checkHolder(held.origin, of: manifest.owner, lineNumber: number)
                guard seenBlocks.insert(HeldFile(origin: held.origin, path: PathKey(held.path))).inserted else {
                    throw ManifestError.invalidLine(line: number, reason: "blocks of '\(PathBytes.display(held.path))' of backup "
                        + "\(held.origin) are listed twice")
                }
                manifest.blocks.append(held)
                continue
            }
            guard manifest.blocks.isEmpty else {
                throw ManifestError.invalidLine(line: number, reason: "a supplement lists its files before its blocks")
            }
            let entry = try line.withUnsafeBufferPointer { try Manifest.parseEntryLine($0, lineNumber: number) }
            guard entry.type == .file, let origin = entry.storedIn, entry.sha256 != nil,
                  let at = entry.archiveOffset, let length = entry.archiveLength, at >= 0, length > 0 else {
                throw ManifestError.invalidLine(line: number, reason: "a supplement holds files, each with 'in', 'sha256', "
                    + "'at' and 'len'")
            }
            // The files of backups older than its owner: anything else is damage or forgery.
            try Manifest.checkHolder(origin, of: manifest.owner, lineNumber: number)
            guard seen.insert(HeldFile(origin: origin, path: PathKey(entry.path))).inserted else {
                throw ManifestError.invalidLine(line: number, reason: "'\(entry.displayPath)' of backup \(origin) is listed twice")
            }
            manifest.entries.append(entry)
        }
        return manifest
    }

    /// The key that marks a line of held blocks.
    private static let heldBlocksKey = Array("\"held_blocks\":".utf8)

    /// A line of held blocks, in a manifest of format `format`.
    private static func parseHeldBlocks(_ line: [UInt8], lineNumber: Int, format: Int) throws -> HeldBlocks {
        guard format >= blocksFormat else {
            throw ManifestError.invalidLine(line: lineNumber, reason: "held blocks in a supplement of format \(format)")
        }
        let value: JSONValue
        do {
            value = try JSONParser.parse(line)
        } catch {
            throw ManifestError.invalidLine(line: lineNumber, reason: "not JSON: \(error)")
        }
        return try HeldBlocks.parse(value, line: lineNumber)
    }

    // MARK: Looking up

    /// A file of a backup: the key by which supplements hold files.
    public struct HeldFile: Hashable, Sendable {
        public var origin: BackupID
        public var path: PathKey

        /// The file at `path` of backup `origin`.
        public init(origin: BackupID, path: PathKey) {
            self.origin = origin
            self.path = path
        }
    }
}
