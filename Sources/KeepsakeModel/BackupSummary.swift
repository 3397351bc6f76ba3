import Foundation
import KeepsakeArchive
import KeepsakeJSON
import KeepsakeSupport

/// The first line of a manifest: what a backup is, as a whole.
public struct BackupSummary: Sendable, Equatable {
    // MARK: Constants

    /// The newest manifest format this build reads: 3 for a manifest with block tables
    /// stored as changes (`BlockTable.everyDigestSHA256`), which a Keepsake that reads 2 must
    /// refuse (it would take the table's own digests for every block's); 2 for a manifest
    /// with files stored by blocks (`BlockTable`), which an older Keepsake must refuse
    /// (reading the line as a whole file, it would point the next backup at an archive that
    /// does not hold it whole); 1 for every other, which older versions read.
    public static let formatVersion = 3
    /// The format of a manifest with files stored by blocks.
    public static let blocksFormat = 2
    /// The format of a manifest with block tables stored as changes.
    public static let tablesAsChangesFormat = 3

    // MARK: Fields

    /// The manifest's format (JSON `format`): 1, `blocksFormat` or `tablesAsChangesFormat`.
    public var format = 1
    public var id: BackupID
    public var created: Date
    public var host: String
    public var user: String
    /// The backed-up paths, absolute, as given (or `stdin:NAME` for a stream).
    public var sources: [String]
    public var tags: [String]
    public var compression: Compression
    public var level: Int?
    public var fileCount: Int64
    public var directoryCount: Int64
    public var symlinkCount: Int64
    public var hardlinkCount: Int64
    public var otherCount: Int64
    /// Sum of the content sizes of all files (hard links counted once).
    public var originalBytes: Int64
    /// Files that could not be read, or changed while they were read.
    public var warningCount: Int64
    public var toolVersion: String
    /// The backup this one is incremental on; nil for a full backup.
    public var parent: BackupID?
    /// Backups in this chain up to and including this one (1 for a full backup).
    public var chainLength: Int
    /// When the chain's full backup was made.
    public var chainStarted: Date
    /// Files whose content this backup's own archive holds (all of them for a full backup).
    public var newFileCount: Int64
    /// Bytes of content this backup's own archive holds.
    public var newBytes: Int64
    /// The backups whose archives hold content this one needs (its entries' `in` values),
    /// so prune can protect chains from summaries alone; nil in manifests that predate it.
    public var reliesOn: [BackupID]?
    /// What only the copy beside the archive can know: its name, stored size and SHA-256.
    public var archive: ArchiveFacts?
    /// How the backup is encrypted; nil when it is not.
    public var encryption: BackupEncryption?
    /// True for the summary kept in the clear beside an encrypted backup: it holds no names,
    /// so `sources` is empty there (the encrypted manifest has them).
    public var sourcesHidden = false
    /// For an encrypted backup: a random label its host gives each set of sources (and
    /// keeps in its cache), so prune keeps each set's backups apart without seeing paths.
    public var sourceSet: String?
    /// How many block digests its entries' `blocks` tables hold in all (`BlockTable`): a
    /// manifest may be that much larger than its entry count alone allows.
    public var blockDigests: Int64 = 0

    /// What prune groups backups by besides the host: the sources, or the label that
    /// stands for them where they are hidden.
    public var sourceGroup: [String] {
        sourcesHidden ? ["encrypted source set \(sourceSet ?? "?")"] : sources.sorted()
    }

    /// Facts about the stored archive file.
    public struct ArchiveFacts: Sendable, Equatable {
        public var name: String
        public var size: Int64
        public var sha256: String

        /// Creates the facts.
        public init(name: String, size: Int64, sha256: String) {
            self.name = name
            self.size = size
            self.sha256 = sha256
        }

        /// The facts as the summary line writes them.
        public var json: JSONValue {
            .object(JSONObject([("name", .string(name)), ("size", .int(size)), ("sha256", .string(sha256))]))
        }
    }

    /// Creates a summary.
    public init(id: BackupID, created: Date, host: String, user: String, sources: [String], tags: [String],
                compression: Compression, level: Int?, fileCount: Int64 = 0, directoryCount: Int64 = 0,
                symlinkCount: Int64 = 0, hardlinkCount: Int64 = 0, otherCount: Int64 = 0, originalBytes: Int64 = 0,
                warningCount: Int64 = 0, toolVersion: String, parent: BackupID? = nil, chainLength: Int = 1,
                chainStarted: Date? = nil, newFileCount: Int64 = 0, newBytes: Int64 = 0, archive: ArchiveFacts? = nil) {
        self.id = id
        self.created = created
        self.host = host
        self.user = user
        self.sources = sources
        self.tags = tags
        self.compression = compression
        self.level = level
        self.fileCount = fileCount
        self.directoryCount = directoryCount
        self.symlinkCount = symlinkCount
        self.hardlinkCount = hardlinkCount
        self.otherCount = otherCount
        self.originalBytes = originalBytes
        self.warningCount = warningCount
        self.toolVersion = toolVersion
        self.parent = parent
        self.chainLength = chainLength
        self.chainStarted = chainStarted ?? created
        self.newFileCount = newFileCount
        self.newBytes = newBytes
        self.reliesOn = nil
        self.archive = archive
    }

    /// True for an incremental backup.
    public var isIncremental: Bool { parent != nil }

    /// All entries of the backup.
    public var entryCount: Int64 { fileCount + directoryCount + symlinkCount + hardlinkCount + otherCount }

    // MARK: Encoding

    /// The summary as a JSON object.
    public var json: JSONValue {
        var object = JSONObject([
            ("keepsake", .string("manifest")),
            ("format", .int(Int64(format))),
            ("id", .string(id.rawValue)),
            ("created", .string(Timestamp.iso8601(created))),
            ("host", .string(host)),
            ("user", .string(user)),
            ("sources", .array(sources.map { .string($0) })),
            ("tags", .array(tags.map { .string($0) })),
            ("compression", .string(compression.rawValue)),
        ])
        if let level { object["level"] = .int(Int64(level)) }
        object["files"] = .int(fileCount)
        object["directories"] = .int(directoryCount)
        object["symlinks"] = .int(symlinkCount)
        object["hardlinks"] = .int(hardlinkCount)
        object["other"] = .int(otherCount)
        object["bytes"] = .int(originalBytes)
        object["warnings"] = .int(warningCount)
        object["kind"] = .string(isIncremental ? "incremental" : "full")
        if let parent { object["parent"] = .string(parent.rawValue) }
        object["chain"] = .int(Int64(chainLength))
        object["chain_started"] = .string(Timestamp.iso8601(chainStarted))
        object["new_files"] = .int(newFileCount)
        object["new_bytes"] = .int(newBytes)
        if blockDigests > 0 { object["block_digests"] = .int(blockDigests) }
        if let reliesOn { object["relies_on"] = .array(reliesOn.map { .string($0.rawValue) }) }
        object["tool"] = .string(toolVersion)
        if let encryption { object["encryption"] = encryption.json }
        if sourcesHidden { object["sources_hidden"] = .bool(true) }
        if let sourceSet { object["source_set"] = .string(sourceSet) }
        // Last, so the copy beside the archive is the inside copy's line plus this key.
        if let archive { object["archive"] = archive.json }
        return .object(object)
    }

    /// The summary as it is kept in the clear beside an encrypted backup: the same line
    /// without the sources (paths are names the encryption hides).
    public var publicSummary: BackupSummary {
        var copy = self
        copy.sources = []
        copy.sourcesHidden = true
        return copy
    }

    /// `publicSummary` as it is stored (`HOST_ID.summary.json`): one JSON line.
    public var publicSummaryLine: [UInt8] { Array((publicSummary.json.serialized() + "\n").utf8) }

    // MARK: Decoding

    /// Reads a summary line; throws `ManifestError` naming what is wrong.
    public init(json: JSONValue) throws {
        guard case .object(let object) = json, object["keepsake"]?.stringValue == "manifest" else {
            throw ManifestError.notAManifest(reason: "the first line is not a manifest summary")
        }
        func fail(_ reason: String) -> ManifestError { .invalidLine(line: 1, reason: reason) }
        guard let format = object["format"]?.int64Value else { throw fail("missing 'format'") }
        guard format >= 1 else { throw fail("'format' must be 1 or more") }
        guard format <= Int64(BackupSummary.formatVersion) else {
            throw ManifestError.unsupportedFormat(Int(clamping: format))
        }
        guard let idText = object["id"]?.stringValue, let id = BackupID(idText) else { throw fail("missing or invalid 'id'") }
        guard let createdText = object["created"]?.stringValue, let created = Timestamp.parseISO8601(createdText) else {
            throw fail("missing or invalid 'created'")
        }
        guard let codecName = object["compression"]?.stringValue, let compression = Compression(rawValue: codecName) else {
            throw fail("missing or unknown 'compression'")
        }
        func count(_ key: String) throws -> Int64 {
            guard let value = object[key] else { return 0 }
            guard let number = value.int64Value, number >= 0 else { throw fail("'\(key)' must be a whole number ≥ 0") }
            return number
        }
        func strings(_ key: String) throws -> [String] {
            guard let value = object[key] else { return [] }
            guard let array = value.arrayValue else { throw fail("'\(key)' must be a list of strings") }
            return try array.map { element in
                guard let text = element.stringValue else { throw fail("'\(key)' must be a list of strings") }
                return text
            }
        }
        var facts: ArchiveFacts?
        if let archive = object["archive"] {
            guard let name = archive["name"]?.stringValue, let size = archive["size"]?.int64Value, size >= 0,
                  let sha = archive["sha256"]?.stringValue, HexEncoding.isHex(sha, length: 64) else {
                throw fail("'archive' must hold name, size and sha256")
            }
            // A name in the destination, never a path: the archive is opened by it.
            guard !name.isEmpty, name != ".", name != "..", !name.contains("/"), !name.utf8.contains(0) else {
                throw fail("'archive' must name a file in the destination, not a path like '\(PathBytes.display(Array(name.utf8)))'")
            }
            facts = ArchiveFacts(name: name, size: size, sha256: sha)
        }
        var parent: BackupID?
        if let value = object["parent"] {
            guard let text = value.stringValue, let parsed = BackupID(text) else { throw fail("'parent' must be a backup id") }
            parent = parsed
        }
        let chain = try count("chain")
        var chainStarted = created
        if let value = object["chain_started"] {
            guard let text = value.stringValue, let date = Timestamp.parseISO8601(text) else {
                throw fail("'chain_started' must be a time like 2026-11-29T02:30:00Z")
            }
            chainStarted = date
        }
        var reliesOn: [BackupID]?
        if object["relies_on"] != nil {
            reliesOn = try strings("relies_on").map { text in
                guard let id = BackupID(text) else { throw fail("'relies_on' must be a list of backup ids") }
                return id
            }
        }
        let files = try count("files")
        let bytes = try count("bytes")
        self.init(id: id, created: created, host: object["host"]?.stringValue ?? "", user: object["user"]?.stringValue ?? "",
                  sources: try strings("sources"), tags: try strings("tags"), compression: compression,
                  level: object["level"]?.int64Value.flatMap { Int(exactly: $0) },
                  fileCount: files, directoryCount: try count("directories"),
                  symlinkCount: try count("symlinks"), hardlinkCount: try count("hardlinks"),
                  otherCount: try count("other"), originalBytes: bytes,
                  warningCount: try count("warnings"), toolVersion: object["tool"]?.stringValue ?? "", parent: parent,
                  chainLength: Int(clamping: max(1, chain)), chainStarted: chainStarted,
                  newFileCount: object["new_files"] == nil ? files : try count("new_files"),
                  newBytes: object["new_bytes"] == nil ? bytes : try count("new_bytes"), archive: facts)
        self.reliesOn = reliesOn
        if let value = object["encryption"] {
            guard let encryption = BackupEncryption(json: value) else {
                throw fail("'encryption' must say {\"format\":\"age\", …} with its recipients or passphrase")
            }
            self.encryption = encryption
        }
        sourcesHidden = object["sources_hidden"] == .bool(true)
        if let value = object["source_set"] {
            guard let text = value.stringValue, HexEncoding.isHex(text, length: 32) else { throw fail("'source_set' must be 32 hex digits") }
            sourceSet = text
        }
        blockDigests = try count("block_digests")
        self.format = Int(format)
    }
}
