import Foundation
import KeepsakeArchive
import KeepsakeScan

/// One line of a dry run's listing (`backup --dry-run --list`): a path the backup would
/// save, or one it leaves out and why.
public enum DryRunPath: Sendable, Equatable {
    /// A path the backup would save, with its type.
    case saved(path: [UInt8], type: EntryType)
    /// A path the scan leaves out (see `LeftOutPath`).
    case leftOut(LeftOutPath)
}
