import BackupCore
import KeepsakeJSON
import KeepsakeSupport

/// The JSON object of a backup's result: `backup --json` prints it (with `exit_code`), and
/// `run --json` holds the same object under `backup`.
enum BackupResultJSON {
    /// The result of a backup into `destination`.
    static func encode(_ result: BackupResult, destination: String) -> JSONObject {
        let summary = result.summary
        var object = JSONObject([
            ("id", result.dryRun ? .null : .string(summary.id.rawValue)),
            ("dry_run", .bool(result.dryRun)),
            ("destination", .string(destination)),
            ("archive", result.archiveName.map { .string($0) } ?? .null),
            ("manifest", result.manifestName.map { .string($0) } ?? .null),
            ("created", .string(Timestamp.iso8601(summary.created))),
            ("host", .string(summary.host)),
            ("sources", .array(summary.sources.map { .string($0) })),
            ("tags", .array(summary.tags.map { .string($0) })),
            ("compression", .string(summary.compression.rawValue)),
            ("level", summary.level.map { .int(Int64($0)) } ?? .null),
            ("files", .int(summary.fileCount)),
            ("directories", .int(summary.directoryCount)),
            ("symlinks", .int(summary.symlinkCount)),
            ("hardlinks", .int(summary.hardlinkCount)),
            ("other", .int(summary.otherCount)),
            ("bytes", .int(summary.originalBytes)),
            ("kind", .string(summary.isIncremental ? "incremental" : "full")),
            ("parent", summary.parent.map { .string($0.rawValue) } ?? .null),
            ("chain", .int(Int64(summary.chainLength))),
            ("new_files", .int(summary.newFileCount)),
            ("new_bytes", .int(summary.newBytes)),
        ])
        object["encryption"] = summary.encryption.map(\.json) ?? .null
        object["stored_bytes"] = summary.archive.map { .int($0.size) } ?? .null
        object["archive_sha256"] = summary.archive.map { .string($0.sha256) } ?? .null
        object["signed_by"] = result.signedBy.map { .string($0.encoded) } ?? .null
        object["elapsed_seconds"] = .double((result.elapsed * 1000).rounded() / 1000)
        object["warnings"] = .array(result.warnings.map(WarningJSON.encode))
        return object
    }
}
