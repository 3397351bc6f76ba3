import BackupCore
import KeepsakeJSON
import KeepsakeModel

/// The JSON form of a path warning: `{"kind": …, "path": …, "reason": …}`.
enum WarningJSON {
    /// Encodes one warning.
    static func encode(_ warning: PathWarning) -> JSONValue {
        .object(JSONObject([
            ("kind", .string(warning.kind.rawValue)),
            ("path", .string(warning.path)),
            ("reason", .string(warning.reason)),
        ]))
    }
}
