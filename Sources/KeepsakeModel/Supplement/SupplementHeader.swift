import Foundation
import KeepsakeJSON
import KeepsakeSupport

/// What a supplement is: the first line of its manifest (`SupplementManifest`), and of the
/// summary in the clear beside an encrypted one (`SupplementSummary`), which share it.
public struct SupplementHeader: Sendable, Equatable {
    // MARK: State

    /// The supplement's own id (its names are `SupplementNaming`'s).
    public var id: BackupID
    public var host: String
    /// The oldest kept backup that takes files from it.
    public var owner: BackupID
    public var created: Date
    /// Its archive's name, and the size and SHA-256 of its bytes as stored (ciphertext when
    /// encrypted, so that they are checked without a key).
    public var archiveName: String
    public var archiveSize: Int64
    public var archiveSHA256: String
    /// How its archive and manifest are encrypted, as its owner is; nil in the clear.
    public var encryption: BackupEncryption?
    /// The format its first line says (`"supplement"`): `SupplementManifest.formatVersion`,
    /// or `blocksFormat` when it holds blocks (see `HeldBlocks`), which older versions refuse.
    public var format: Int = SupplementManifest.formatVersion

    /// A supplement's first line.
    public init(id: BackupID, host: String, owner: BackupID, created: Date, archiveName: String, archiveSize: Int64,
                archiveSHA256: String, encryption: BackupEncryption?) {
        self.id = id
        self.host = host
        self.owner = owner
        self.created = created
        self.archiveName = archiveName
        self.archiveSize = archiveSize
        self.archiveSHA256 = archiveSHA256
        self.encryption = encryption
    }

    // MARK: Names

    /// The name of its manifest (which commits it).
    public var manifestName: String { SupplementNaming.manifestName(host: host, id: id, encrypted: encryption != nil) }
    /// The name of its summary in the clear (written only for an encrypted supplement).
    public var summaryName: String { SupplementNaming.summaryName(host: host, id: id) }

    // MARK: Encoding

    /// Writes its fields into an open JSON object; `inner` leaves out the archive's size and
    /// SHA-256 (see `SupplementManifest.encoded`).
    func writeFields(to writer: inout JSONWriter, inner: Bool) {
        writer.key("supplement"); writer.int(Int64(format))
        writer.key("id"); writer.string(id.rawValue)
        writer.key("host"); writer.string(host)
        writer.key("owner"); writer.string(owner.rawValue)
        writer.key("created"); writer.string(Timestamp.iso8601(created))
        writer.key("archive")
        writer.beginObject()
        writer.key("name"); writer.string(archiveName)
        if !inner {
            writer.key("size"); writer.int(archiveSize)
            writer.key("sha256"); writer.string(archiveSHA256)
        }
        writer.endObject()
        if let encryption {
            writer.key("encryption")
            writer.value(encryption.json)
        }
    }

    // MARK: Decoding

    /// The JSON object of a first line.
    static func parseLine(_ line: [UInt8]) throws -> JSONValue {
        guard !line.isEmpty else { throw ManifestError.notAManifest(reason: "it is empty") }
        let header: JSONValue
        do {
            header = try JSONParser.parse(String(decoding: line, as: UTF8.self))
        } catch {
            throw ManifestError.notAManifest(reason: "line 1 is not JSON: \(error)")
        }
        guard let version = header["supplement"]?.int64Value else {
            throw ManifestError.notAManifest(reason: "line 1 does not say 'supplement'")
        }
        guard version == Int64(SupplementManifest.formatVersion) || version == Int64(SupplementManifest.blocksFormat) else {
            throw ManifestError.unsupportedFormat(Int(clamping: version))
        }
        return header
    }

    /// The fields of a first line; `measured` gives the archive's size and
    /// SHA-256 for the copy inside an archive, which has none.
    init(fields header: JSONValue, measured: (size: Int64, sha256: String)?) throws {
        func text(_ key: String, _ value: JSONValue?) throws -> String {
            guard let string = value?.stringValue else {
                throw ManifestError.invalidLine(line: 1, reason: "'\(key)' is missing or not a string")
            }
            return string
        }
        guard let id = BackupID(try text("id", header["id"])), let owner = BackupID(try text("owner", header["owner"])) else {
            throw ManifestError.invalidLine(line: 1, reason: "'id' and 'owner' must be backup ids")
        }
        guard let created = Timestamp.parseISO8601(try text("created", header["created"])) else {
            throw ManifestError.invalidLine(line: 1, reason: "'created' is not a date")
        }
        let archive = header["archive"]
        let size: Int64
        let sha256: String
        if let measured {
            (size, sha256) = measured
        } else {
            guard let recorded = archive?["size"]?.int64Value, recorded >= 0 else {
                throw ManifestError.invalidLine(line: 1, reason: "'archive.size' is missing or negative")
            }
            (size, sha256) = (recorded, try text("archive.sha256", archive?["sha256"]))
        }
        var encryption: BackupEncryption?
        if let value = header["encryption"] {
            guard let parsed = BackupEncryption(json: value) else {
                throw ManifestError.invalidLine(line: 1, reason: "'encryption' is not an age record")
            }
            encryption = parsed
        }
        let archiveName = try text("archive.name", archive?["name"])
        guard BackupNaming.isEncrypted(archiveName) == (encryption != nil) else {
            throw ManifestError.invalidLine(line: 1, reason: "'archive.name' must end in .age exactly when 'encryption' is given")
        }
        self.init(id: id, host: try text("host", header["host"]), owner: owner, created: created, archiveName: archiveName,
                  archiveSize: size, archiveSHA256: sha256, encryption: encryption)
        format = Int(header["supplement"]?.int64Value ?? Int64(SupplementManifest.formatVersion))
    }
}
