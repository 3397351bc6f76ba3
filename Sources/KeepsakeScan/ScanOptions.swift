/// What a scan leaves out.
public struct ScanOptions: Sendable {
    /// gitignore-style exclude patterns.
    public var excludes: ExcludeRules
    /// Skip the contents of directories holding a valid CACHEDIR.TAG (the directory and
    /// its tag are kept, as GNU tar's `--exclude-caches` does).
    public var excludeCaches: Bool
    /// Skip the contents of directories holding a file of one of these names (the
    /// directory and the marker file are kept).
    public var excludeIfPresent: [String]
    /// Do not descend into directories on other file systems (mount points are kept, empty).
    public var oneFileSystem: Bool
    /// Folders left out whole, by device and inode: the backup's own destination when it
    /// lies inside a source (set by the engine, never by the user).
    package var leftOutFolders: Set<FileIdentity> = []

    /// Creates options.
    public init(excludes: ExcludeRules, excludeCaches: Bool = false, excludeIfPresent: [String] = [],
                oneFileSystem: Bool = false) {
        self.excludes = excludes
        self.excludeCaches = excludeCaches
        self.excludeIfPresent = excludeIfPresent
        self.oneFileSystem = oneFileSystem
    }
}
