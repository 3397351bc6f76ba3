import BackupCore
import KeepsakeJSON

/// The JSON form of one verified backup, shared by `verify` and `run`.
enum VerifyReportJSON {
    /// Encodes one report.
    static func encode(_ report: VerifyReport) -> JSONValue {
        .object(JSONObject([
            ("id", report.id.map { .string($0.rawValue) } ?? .null),
            ("archive", .string(report.name)),
            ("intact", .bool(report.isIntact)),
            ("files_checked", .int(report.filesChecked)),
            ("bytes_checked", .int(report.bytesChecked)),
            ("archive_problems", .array(report.archiveProblems.map { .string($0) })),
            ("damaged_files", .array(report.problems.map(WarningJSON.encode))),
            ("files_in_earlier_archives", .int(report.filesInEarlierArchives)),
            ("relies_on", .array(report.reliesOn.map { .string($0.rawValue) })),
            ("contents_unchecked", .bool(report.contentsUnchecked)),
            ("unreadable_from", report.unreadableFrom.map { .string($0) } ?? .null),
            ("entries_unchecked", .int(report.entriesUnchecked)),
            ("signature_problem", report.signatureProblem.map { .string($0) } ?? .null),
        ]))
    }
}
