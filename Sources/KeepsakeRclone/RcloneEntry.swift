import Foundation
import KeepsakeJSON
import KeepsakeSupport

/// One entry of `rclone lsjson` output: `{"Path":…,"Name":…,"Size":…,"ModTime":…,"IsDir":…}`.
/// rclone's output comes from outside: anything that does not have this shape is refused
/// (nil), never trusted.
struct RcloneEntry: Equatable {
    // MARK: Fields

    /// The name in its folder.
    var name: String
    /// Its size in bytes (-1 where the remote cannot tell, as for folders).
    var size: Int64
    /// True for a folder.
    var isDirectory: Bool
    /// When it was last modified, when the listing has it (not with `--no-modtime`).
    var modified: Date?

    // MARK: Decoding

    /// An entry from one JSON object of the listing.
    init?(json: JSONValue) {
        guard let name = json["Name"]?.stringValue, let size = json["Size"]?.int64Value else { return nil }
        self.name = name
        self.size = size
        isDirectory = json["IsDir"]?.boolValue ?? false
        modified = json["ModTime"]?.stringValue.flatMap(RcloneEntry.parseModTime)
    }

    /// The entries of `rclone lsjson` (a JSON array of objects); nil for anything else.
    static func listing(_ output: [UInt8]) -> [RcloneEntry]? {
        guard let items = (try? JSONParser.parse(output))?.arrayValue else { return nil }
        var entries: [RcloneEntry] = []
        entries.reserveCapacity(items.count)
        for item in items {
            guard let entry = RcloneEntry(json: item) else { return nil }
            entries.append(entry)
        }
        return entries
    }

    /// The entry of `rclone lsjson --stat` (one JSON object); nil for anything else.
    static func stat(_ output: [UInt8]) -> RcloneEntry? {
        (try? JSONParser.parse(output)).flatMap(RcloneEntry.init(json:))
    }

    /// rclone's RFC 3339 times: `2026-12-01T19:47:53.915321863Z`, or with an offset
    /// (`+01:00`) where the remote reports local time. Fractions of a second are dropped.
    static func parseModTime(_ text: String) -> Date? {
        let scalars = Array(text.unicodeScalars)
        guard scalars.count >= 20, let whole = Timestamp.parseISO8601(String(String.UnicodeScalarView(scalars[0..<19])) + "Z")
        else { return nil }
        var index = 19
        if scalars[index] == "." {
            index += 1
            while index < scalars.count, ("0"..."9").contains(scalars[index]) { index += 1 }
        }
        let zone = String(String.UnicodeScalarView(scalars[index...]))
        if zone == "Z" { return whole }
        // ±HH:MM: the local time is that much ahead of (+) or behind (-) UTC.
        let parts = zone.dropFirst().split(separator: ":")
        guard zone.count == 6, let sign = zone.first, sign == "+" || sign == "-", parts.count == 2,
              let hours = UInt(parts[0]), let minutes = UInt(parts[1]), hours < 24, minutes < 60 else { return nil }
        let offset = TimeInterval(hours * 3600 + minutes * 60)
        return whole.addingTimeInterval(sign == "+" ? -offset : offset)
    }
}
