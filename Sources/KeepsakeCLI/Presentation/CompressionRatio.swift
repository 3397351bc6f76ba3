import BackupCore
import KeepsakeModel

/// The compression ratio `backup` and `list` show: the content a backup's own archive
/// holds (every file for a full backup; only the new or changed files for an incremental)
/// over the archive's stored size. An incremental that holds no new content shows "-", and
/// one whose archive is mostly its manifest shows "<0.1×" rather than a misleading "0.0×".
enum CompressionRatio {
    // MARK: Text

    /// The ratio of `backup`'s own content to its archive's size, as shown.
    static func text(_ summary: BackupSummary) -> String {
        text(content: summary.newBytes, stored: summary.archive?.size ?? 0)
    }

    /// `content` bytes stored in `stored` bytes: "3.2×", "<0.1×", or "-" when either is zero.
    static func text(content: Int64, stored: Int64) -> String {
        guard content > 0, stored > 0 else { return "-" }
        let ratio = Double(content) / Double(stored)
        guard ratio >= 0.05 else { return "<0.1×" }
        return String(format: "%.1f×", ratio)
    }
}
