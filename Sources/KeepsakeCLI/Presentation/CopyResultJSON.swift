import BackupCore
import KeepsakeJSON

/// The JSON fields of a copy's result: `copy --json` prints them after `from` and `to`, and
/// `run --json` holds them under `copies`, after the `destination` copied to.
enum CopyResultJSON {
    /// `leading` (where from and to), then what was copied, skipped and found damaged.
    static func encode(_ result: BackupCopier.Result, after leading: [(String, JSONValue)]) -> JSONObject {
        JSONObject(leading + [
            ("copied", .array(result.copied.map { .string($0.rawValue) })),
            ("skipped", .array(result.skipped.map { .string($0.rawValue) })),
            ("damaged", .array(result.damaged.map { .string($0.description) })),
            ("bytes", .int(result.bytes)),
            ("elapsed_seconds", .double((result.elapsed * 1000).rounded() / 1000)),
        ])
    }
}
