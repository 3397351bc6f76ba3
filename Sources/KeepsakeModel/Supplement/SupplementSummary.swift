import Foundation
import KeepsakeJSON
import KeepsakeSupport

/// What a supplement is, without the files it holds: the one line of
/// `HOST_ID.supplement.summary.json` in the clear beside an encrypted supplement, its first
/// line (`SupplementHeader`) and `holds`, the backups whose files it holds. A host that cannot
/// open the manifest (it encrypts to public keys and holds no identity) learns from it that a
/// gone backup's files are held, and in which archive, as it learns what its own encrypted
/// backups rely on from theirs; everything it says is checked against the encrypted
/// manifest by whoever opens that (restore, verify). Its header's fields read as its own
/// (`summary.id`).
@dynamicMemberLookup
public struct SupplementSummary: Sendable, Equatable {
    // MARK: State

    public var header: SupplementHeader
    /// The backups whose files it holds (the `in` of its entries).
    public var holds: Set<BackupID>

    /// A supplement's summary.
    public init(header: SupplementHeader, holds: Set<BackupID>) {
        self.header = header
        self.holds = holds
    }

    /// A field of its header.
    public subscript<Value>(dynamicMember field: KeyPath<SupplementHeader, Value>) -> Value { header[keyPath: field] }

    // MARK: Encoding

    /// The summary object's one line, ended by a newline.
    public func encoded() -> [UInt8] {
        var writer = JSONWriter(capacity: 256 + holds.count * 30)
        writer.beginObject()
        header.writeFields(to: &writer, inner: false)
        writer.key("holds")
        writer.beginArray()
        for origin in holds.sorted() { writer.string(origin.rawValue) }
        writer.endArray()
        writer.endObject()
        writer.endLine()
        return writer.bytes
    }

    // MARK: Decoding

    /// Parses the summary object; throws `ManifestError` naming what is wrong.
    public static func parse(_ bytes: [UInt8]) throws -> SupplementSummary {
        let line = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true).first ?? []
        let fields = try SupplementHeader.parseLine(Array(line))
        var summary = SupplementSummary(header: try SupplementHeader(fields: fields, measured: nil), holds: [])
        guard let holds = fields["holds"]?.arrayValue else {
            throw ManifestError.invalidLine(line: 1, reason: "'holds' is missing or not a list")
        }
        for value in holds {
            guard let text = value.stringValue, let origin = BackupID(text) else {
                throw ManifestError.invalidLine(line: 1, reason: "'holds' must list backup ids")
            }
            try Manifest.checkHolder(origin, of: summary.header.owner, lineNumber: 1)
            summary.holds.insert(origin)
        }
        guard summary.header.encryption != nil else {
            throw ManifestError.invalidLine(line: 1, reason: "a supplement's summary in the clear is of an encrypted one")
        }
        return summary
    }
}
