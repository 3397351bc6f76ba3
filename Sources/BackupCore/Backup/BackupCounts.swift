import Foundation
import KeepsakeModel

/// What a backup holds, counted by kind of entry (further names of a hard-linked file
/// apart), with the bytes of its files: what the summary and the progress report show.
struct BackupCounts {
    var files: Int64 = 0
    var directories: Int64 = 0
    var symlinks: Int64 = 0
    var hardlinks: Int64 = 0
    var other: Int64 = 0
    /// The files' original size.
    var bytes: Int64 = 0

    /// Every entry counted.
    var entries: Int64 { files + directories + symlinks + hardlinks + other }

    /// Copies the counts into `summary`.
    func fill(_ summary: inout BackupSummary) {
        summary.fileCount = files
        summary.directoryCount = directories
        summary.symlinkCount = symlinks
        summary.hardlinkCount = hardlinks
        summary.otherCount = other
        summary.originalBytes = bytes
    }
}
