import Foundation

/// What to back up and how.
public struct BackupRequest: Sendable {
    /// Paths to back up (ignored when `stdinName` is set).
    public var sources: [String]
    /// Back up standard input as one file of this name instead of paths.
    public var stdinName: String?
    public var compression: Compression
    /// Compression level; nil for the codec's default.
    public var level: Int?
    /// Compressor threads (zstd, xz).
    public var threads: Int
    public var tags: [String]
    public var scan: ScanOptions
    /// Scan and count only; store nothing.
    public var dryRun: Bool
    /// Written into the manifest (`keepsake 0.1.0`).
    public var toolVersion: String
    /// The backup's creation time (injectable for tests).
    public var now: Date

    /// Creates a request.
    public init(sources: [String], stdinName: String? = nil, compression: Compression = .zstd, level: Int? = nil,
                threads: Int = 1, tags: [String] = [], scan: ScanOptions, dryRun: Bool = false,
                toolVersion: String, now: Date = Date()) {
        self.sources = sources
        self.stdinName = stdinName
        self.compression = compression
        self.level = level
        self.threads = threads
        self.tags = tags
        self.scan = scan
        self.dryRun = dryRun
        self.toolVersion = toolVersion
        self.now = now
    }
}

/// What a backup run did.
public struct BackupResult: Sendable {
    /// The backup's summary (with the stored archive's facts unless it was a dry run).
    public var summary: BackupSummary
    public var archiveName: String?
    public var manifestName: String?
    /// Paths that could not be read or changed while being read.
    public var warnings: [PathWarning]
    public var dryRun: Bool
    /// Wall-clock seconds.
    public var elapsed: TimeInterval

    /// Creates a result.
    public init(summary: BackupSummary, archiveName: String?, manifestName: String?, warnings: [PathWarning],
                dryRun: Bool, elapsed: TimeInterval) {
        self.summary = summary
        self.archiveName = archiveName
        self.manifestName = manifestName
        self.warnings = warnings
        self.dryRun = dryRun
        self.elapsed = elapsed
    }
}
