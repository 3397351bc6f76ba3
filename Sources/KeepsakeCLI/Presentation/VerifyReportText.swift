import BackupCore
import TerminalUI

/// How `verify` and `run` say what verifying a backup checked: the files of its own
/// archive and, for an incremental, those in the earlier backups it relies on.
enum VerifyReportText {
    // MARK: Text

    /// "17 files, 449 KiB"; "1 file, 3 B; 17 more in 1 earlier backup, checked";
    /// "no new files; 17 files in 1 earlier backup, checked"; for a lone archive file, whose
    /// earlier backups are not at hand, "…; 17 more in earlier backups, not checked".
    static func checked(_ report: VerifyReport) -> String {
        let earlier = Int(report.filesInEarlierArchives)
        var details: String
        if report.contentsUnchecked {
            // Encrypted, and no key given: the stored bytes are as written; what they hold was not read.
            details = "stored bytes intact (\(Units.bytes(report.bytesChecked))); encrypted, contents not checked: give --identity to check them"
        } else if report.filesChecked == 0 && earlier > 0 {
            details = "no new files"
        } else {
            details = "\(Units.count(Int(report.filesChecked), "file")), \(Units.bytes(report.bytesChecked))"
        }
        guard earlier > 0 else { return details }
        let holders = report.reliesOn.isEmpty ? "earlier backups" : Units.count(report.reliesOn.count, "earlier backup")
        // In a destination the earlier archives were verified with this one; beside a lone archive file they are not.
        let outcome = report.reliesOn.isEmpty ? "not checked" : "checked"
        let files = report.filesChecked == 0 && !report.contentsUnchecked ? Units.count(earlier, "file") : "\(Units.count(earlier)) more"
        return details + "; \(files) in \(holders), \(outcome)"
    }
}
