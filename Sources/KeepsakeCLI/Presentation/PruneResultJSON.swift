import BackupCore
import KeepsakeJSON
import KeepsakeSupport

/// The JSON object of a prune's result: `prune --json` prints it (with `exit_code`), and
/// `run --json` holds the same object under `prune`.
enum PruneResultJSON {
    /// The result of pruning `destination` by `policy` (its description).
    static func encode(_ result: PruneResult, destination: String, policy: String) -> JSONObject {
        var object = JSONObject([
            ("destination", .string(destination)),
            ("dry_run", .bool(result.dryRun)),
            ("policy", .string(policy)),
            ("kept", .array(result.kept.map { .string($0.rawValue) })),
            ("removed", .array(result.removed.map { .string($0.rawValue) })),
            ("decisions", .array(result.decisions.map { decision in
                .object(JSONObject([
                    ("id", .string(decision.id.rawValue)),
                    ("created", decision.created.map { .string(Timestamp.iso8601($0)) } ?? .null),
                    ("kind", .string(decision.isIncremental ? "incremental" : "full")),
                    ("keep", .bool(decision.keep)),
                    ("reasons", .array(decision.reasons.map { .string($0) })),
                    ("host", .string(decision.host)),
                    ("sources", .array(decision.sources.map { .string($0) })),
                ]))
            })),
            ("freed_bytes", .int(result.freedBytes)),
        ])
        // With consolidation: what was (or would be) copied into supplements first.
        if result.supplementedFiles > 0 || result.supplementsWritten > 0 {
            object["supplements"] = .object(JSONObject([
                ("files", .int(Int64(result.supplementedFiles))),
                ("bytes", .int(result.supplementedBytes)),
                ("written", .int(Int64(result.supplementsWritten))),
                ("stored_bytes", .int(result.supplementStoredBytes)),
            ]))
        }
        return object
    }
}
