import BackupCore
import Foundation
import KeepsakeJSON
import KeepsakeModel
import KeepsakeSupport

/// Text forms of manifest entries for `list ID`.
enum EntryFormatting {
    /// `drwxr-xr-x`-style type and permissions.
    static func modeString(_ entry: ManifestEntry) -> String {
        let kind: Character
        switch entry.type {
        case .directory: kind = "d"
        case .symlink: kind = "l"
        case .hardlink: kind = "h"
        case .fifo: kind = "p"
        case .characterDevice: kind = "c"
        case .blockDevice: kind = "b"
        case .socket: kind = "s"
        case .file: kind = "-"
        }
        var text = String(kind)
        let mode = entry.mode
        let symbols: [(UInt32, Character)] = [(0o400, "r"), (0o200, "w"), (0o100, "x"), (0o040, "r"), (0o020, "w"),
                                               (0o010, "x"), (0o004, "r"), (0o002, "w"), (0o001, "x")]
        for (index, (bit, symbol)) in symbols.enumerated() {
            var character: Character = mode & bit != 0 ? symbol : "-"
            if index == 2, mode & 0o4000 != 0 { character = mode & bit != 0 ? "s" : "S" }
            if index == 5, mode & 0o2000 != 0 { character = mode & bit != 0 ? "s" : "S" }
            if index == 8, mode & 0o1000 != 0 { character = mode & bit != 0 ? "t" : "T" }
            text.append(character)
        }
        return text
    }

    /// `user/group`, names when known, ids otherwise.
    static func owner(_ entry: ManifestEntry) -> String {
        "\(entry.userName ?? String(entry.uid))/\(entry.groupName ?? String(entry.gid))"
    }

    /// Local modification time to the minute.
    static func modified(_ entry: ManifestEntry) -> String {
        Timestamp.localShort(Date(timeIntervalSince1970: TimeInterval(entry.mtimeNanoseconds / 1_000_000_000)))
    }

    /// The path, with ` -> target` for links.
    static func pathWithLink(_ entry: ManifestEntry) -> String {
        guard let target = entry.linkTarget else { return entry.displayPath }
        return entry.displayPath + (entry.type == .hardlink ? " link to " : " -> ") + PathBytes.display(target)
    }

    /// The entry as JSON for `--json` listings.
    static func json(_ entry: ManifestEntry) -> JSONValue {
        var writer = JSONWriter()
        entry.write(to: &writer)
        return (try? JSONParser.parse(writer.bytes)) ?? .null
    }
}
