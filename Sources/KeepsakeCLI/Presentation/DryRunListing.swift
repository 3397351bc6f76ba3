import BackupCore
import Foundation
import KeepsakeJSON
import KeepsakeSupport

/// `backup --dry-run --list`: each path as a line (`+ PATH` saved, `- PATH  (rule)` left
/// out, a folder with a trailing `/`), or gathered for the JSON document's `saved` and
/// `left_out` arrays.
struct DryRunListing {
    // MARK: State

    /// Whether the paths are gathered for JSON instead of printed.
    let json: Bool
    private var saved: [JSONValue] = []
    private var leftOut: [JSONValue] = []

    init(json: Bool) {
        self.json = json
    }

    // MARK: Adding

    /// The line to print for `path`, or nil when it is gathered for JSON.
    mutating func add(_ path: DryRunPath) -> String? {
        switch path {
        case .saved(let bytes, let type):
            guard !json else {
                var object = Self.pathObject(bytes)
                object["type"] = .string(type.rawValue)
                saved.append(.object(object))
                return nil
            }
            return "+ " + Self.shown(bytes, isDirectory: type == .directory)
        case .leftOut(let record):
            guard !json else {
                var object = Self.pathObject(record.path)
                object["directory"] = .bool(record.isDirectory)
                object["contents_only"] = .bool(record.contentsOnly)
                object["rule"] = .string(record.rule.description)
                leftOut.append(.object(object))
                return nil
            }
            let what = record.contentsOnly ? "its contents: " : ""
            return "- " + Self.shown(record.path, isDirectory: record.isDirectory) + "  (\(what)\(record.rule))"
        }
    }

    /// Puts the gathered paths into the backup's JSON document.
    func addJSON(to object: inout JSONObject) {
        object["saved"] = .array(saved)
        object["left_out"] = .array(leftOut)
    }

    // MARK: Formatting

    /// A path on one line (escaped where it holds control characters or is not UTF-8), a
    /// folder with a trailing `/`.
    private static func shown(_ path: [UInt8], isDirectory: Bool) -> String {
        let text = PathBytes.display(path)
        return isDirectory && !text.hasSuffix("/") ? text + "/" : text
    }

    /// `{"path": …}`, or `{"path_b64": …}` for a name that is not UTF-8.
    private static func pathObject(_ path: [UInt8]) -> JSONObject {
        var object = JSONObject()
        if let text = PathBytes.validString(path) {
            object["path"] = .string(text)
        } else {
            object["path_b64"] = .string(Data(path).base64EncodedString())
        }
        return object
    }
}
