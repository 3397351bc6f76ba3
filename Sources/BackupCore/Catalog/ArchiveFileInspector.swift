import Foundation

/// Looks at a path that may name a lone archive file (one copied out of a destination, or
/// a plain tarball). Reading it goes through `BackupLocator`, which opens its folder as a
/// read-only `LoneArchiveFolder`.
public enum ArchiveFileInspector {
    /// True when `path` names an existing regular file (not a backup id).
    public static func isArchiveFile(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
    }
}
