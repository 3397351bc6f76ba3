import Foundation
import KeepsakeArchive
import KeepsakeJSON
import KeepsakeSupport

/// One file system entry as a backup recorded it: a line of the manifest.
public struct ManifestEntry: Sendable, Equatable {
    // MARK: Fields

    /// The entry's name in the archive: the source's absolute path without the leading `/`.
    public var path: [UInt8]
    public var type: EntryType
    /// Content size in bytes (for a hard link, the size of the file it names).
    public var size: Int64
    /// Permission bits including setuid, setgid and sticky (no file-type bits).
    public var mode: UInt32
    public var uid: UInt32
    public var gid: UInt32
    public var userName: String?
    public var groupName: String?
    /// Modification time in nanoseconds since the epoch.
    public var mtimeNanoseconds: Int64
    /// Status-change time in nanoseconds since the epoch.
    public var ctimeNanoseconds: Int64
    public var inode: UInt64
    public var device: UInt64
    /// Device number of a character or block device.
    public var rdev: UInt64
    /// A symlink's target, or the archive path a hard link names.
    public var linkTarget: [UInt8]?
    /// SHA-256 of the content (files and hard links), lowercase hex.
    public var sha256: String?
    /// For an incremental backup: the backup whose archive holds this file's content,
    /// when it is not this backup's own archive (the file did not change). JSON `in`.
    public var storedIn: BackupID?
    /// Where the entry (headers, content, padding) starts in the uncompressed tar stream of
    /// the archive that holds it (`storedIn`'s, or this backup's own). JSON `at`.
    public var archiveOffset: Int64?
    /// The entry's length in that tar stream, in bytes. JSON `len`.
    public var archiveLength: Int64?
    /// For a file of `BlockTable.threshold` bytes or more that this backup read: the
    /// SHA-256 of each of its blocks; for a file stored by blocks (this backup's, or an
    /// unchanged one's), which archives hold them. JSON `blocks`.
    public var blocks: BlockTable?

    /// Creates an entry.
    public init(path: [UInt8], type: EntryType, size: Int64 = 0, mode: UInt32 = 0o644, uid: UInt32 = 0, gid: UInt32 = 0,
                userName: String? = nil, groupName: String? = nil, mtimeNanoseconds: Int64 = 0,
                ctimeNanoseconds: Int64 = 0, inode: UInt64 = 0, device: UInt64 = 0, rdev: UInt64 = 0,
                linkTarget: [UInt8]? = nil, sha256: String? = nil, storedIn: BackupID? = nil) {
        self.path = path
        self.type = type
        self.size = size
        self.mode = mode
        self.uid = uid
        self.gid = gid
        self.userName = userName
        self.groupName = groupName
        self.mtimeNanoseconds = mtimeNanoseconds
        self.ctimeNanoseconds = ctimeNanoseconds
        self.inode = inode
        self.device = device
        self.rdev = rdev
        self.linkTarget = linkTarget
        self.sha256 = sha256
        self.storedIn = storedIn
    }

    /// The modification time as whole seconds (rounded down, also before 1970) and the
    /// nanoseconds after them.
    public var mtimeParts: (seconds: Int64, nanoseconds: Int32) {
        // Floor division from the quotient and remainder: no step can overflow, even at
        // Int64.min (a manifest may say anything).
        let (quotient, remainder) = mtimeNanoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
        return remainder < 0 ? (quotient - 1, Int32(remainder + 1_000_000_000)) : (quotient, Int32(remainder))
    }

    /// The path for people (invalid bytes escaped).
    public var displayPath: String { PathBytes.display(path) }

    // MARK: Encoding

    /// Appends the entry as one JSON object (no newline). Names that are not valid UTF-8
    /// go to `path_b64` / `link_b64` as base64 of the raw bytes.
    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        ManifestEntry.writeBytes(path, key: "path", to: &writer)
        writer.key("type"); writer.string(type.rawValue)
        writer.key("size"); writer.int(size)
        writer.key("mode"); writer.string(ManifestEntry.octal(mode))
        writer.key("uid"); writer.int(Int64(uid))
        writer.key("gid"); writer.int(Int64(gid))
        if let userName { writer.key("user"); writer.string(userName) }
        if let groupName { writer.key("group"); writer.string(groupName) }
        writer.key("mtime_ns"); writer.int(mtimeNanoseconds)
        writer.key("ctime_ns"); writer.int(ctimeNanoseconds)
        writer.key("inode"); writer.uint(inode)
        writer.key("dev"); writer.uint(device)
        if rdev != 0 { writer.key("rdev"); writer.uint(rdev) }
        if let linkTarget { ManifestEntry.writeBytes(linkTarget, key: "link", to: &writer) }
        if let sha256 { writer.key("sha256"); writer.string(sha256) }
        if let blocks { writer.key("blocks"); blocks.write(to: &writer) }
        if let storedIn { writer.key("in"); writer.string(storedIn.rawValue) }
        if let archiveOffset, let archiveLength {
            writer.key("at"); writer.int(archiveOffset)
            writer.key("len"); writer.int(archiveLength)
        }
        writer.endObject()
    }

    static func writeBytes(_ bytes: [UInt8], key: String, to writer: inout JSONWriter) {
        if let text = PathBytes.validString(bytes) {
            writer.key(key)
            writer.string(text)
        } else {
            writer.key(key + "_b64")
            writer.string(Data(bytes).base64EncodedString())
        }
    }

    static func octal(_ mode: UInt32) -> String {
        let digits = String(mode & 0o7777, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    // MARK: Decoding

    /// Reads an entry from a parsed manifest line; throws a `ManifestError` naming the field.
    public init(json: JSONValue, line: Int) throws {
        guard case .object(let object) = json else {
            throw ManifestError.invalidLine(line: line, reason: "an entry must be a JSON object")
        }
        func field(_ key: String) -> JSONValue? { object[key] }
        func bytes(_ key: String) throws -> [UInt8]? {
            var decoded: [UInt8]?
            if let text = field(key)?.stringValue {
                decoded = PathBytes.from(text)
            } else if let encoded = field(key + "_b64")?.stringValue {
                guard let data = Data(base64Encoded: encoded) else {
                    throw ManifestError.invalidLine(line: line, reason: "'\(key)_b64' is not valid base64")
                }
                decoded = Array(data)
            }
            // Judged after decoding (`\u0000` and base64 both make a NUL): no tar header can
            // hold one, and a C string would end there, so the system would see another path.
            if let decoded, !ArchivePath.isStorable(decoded) {
                throw ManifestError.invalidLine(line: line, reason: "'\(key)' holds a NUL byte, which no archive can store")
            }
            return decoded
        }
        func integer(_ key: String) throws -> Int64? {
            guard let raw = field(key) else { return nil }
            guard let number = raw.int64Value else {
                throw ManifestError.invalidLine(line: line, reason: "'\(key)' must be a whole number")
            }
            return number
        }
        func unsigned(_ key: String) throws -> UInt64 {
            guard let raw = field(key) else { return 0 }
            guard let number = raw.uint64Value else {
                throw ManifestError.invalidLine(line: line, reason: "'\(key)' must be a whole number")
            }
            return number
        }
        // The fields, each as JSON gives it (a wrong kind of value is this parser's own fault
        // to name); what they must say is judged by the rules both manifest parsers share.
        var rules = ManifestEntryRules()
        let path = try bytes("path")
        rules.pathLength = path?.count
        rules.type = field("type")?.stringValue.flatMap(EntryType.init(rawValue:))
        rules.size = try integer("size") ?? 0
        var mode: UInt32 = 0o644
        if let modeField = field("mode") {
            if let parsed = modeField.stringValue.flatMap(ManifestEntryRules.mode) { mode = parsed } else { rules.modeInvalid = true }
        }
        var sha: String?
        if let digest = field("sha256") {
            if let text = digest.stringValue, ManifestEntryRules.isSHA256(text) { sha = text } else { rules.sha256Invalid = true }
        }
        var storedIn: BackupID?
        if let holder = field("in") {
            if let id = holder.stringValue.flatMap(BackupID.init) { storedIn = id } else { rules.storedInInvalid = true }
        }
        rules.offset = try integer("at")
        rules.length = try integer("len")
        rules.uid = try integer("uid") ?? 0
        rules.gid = try integer("gid") ?? 0
        let mtime = try integer("mtime_ns") ?? 0, ctime = try integer("ctime_ns") ?? 0
        let inode = try unsigned("inode"), device = try unsigned("dev"), rdev = try unsigned("rdev")
        let link = try bytes("link")
        rules.hasLink = link != nil
        let owners = try rules.judged(line: line)
        // `judged` refused a line without them.
        guard let path, let type = rules.type else { throw ManifestError.invalidLine(line: line, reason: "missing 'path'") }
        self.init(path: path, type: type, size: rules.size, mode: mode, uid: owners.uid, gid: owners.gid,
                  userName: field("user")?.stringValue, groupName: field("group")?.stringValue,
                  mtimeNanoseconds: mtime, ctimeNanoseconds: ctime, inode: inode, device: device, rdev: rdev,
                  linkTarget: link, sha256: sha, storedIn: storedIn)
        archiveOffset = rules.offset
        archiveLength = rules.length
        if let table = field("blocks") {
            guard type == .file else { throw ManifestError.invalidLine(line: line, reason: "'blocks' is only for files") }
            switch BlockTable.parse(table, fileSize: size) {
            case .success(let parsed): blocks = parsed
            case .failure(let refusal): throw ManifestError.invalidLine(line: line, reason: refusal.reason)
            }
            if blocks?.isStoredByBlocks == true, storedIn != nil || archiveOffset != nil {
                throw ManifestError.invalidLine(line: line, reason: "a file stored by blocks says where they are in 'from', "
                    + "not in 'in', 'at' or 'len'")
            }
        }
    }
}
