import Foundation
import KeepsakeAge
import KeepsakeArchive
import KeepsakeModel
import KeepsakeScan
import KeepsakeSigning
import KeepsakeSupport

/// When a backup starts a new chain instead of being incremental, and how "unchanged"
/// is decided.
public struct ChainPolicy: Sendable, Equatable {
    /// Always make a full backup.
    public var forceFull: Bool
    /// Start a new chain once the newest chain holds this many backups (`--full-every`); nil:
    /// the default (see `archiveLimit`).
    public var fullEvery: Int?
    /// Start a new chain when the newest chain's full backup is older than this
    /// (`--full-if-older-than`); nil: the default (see `archiveLimit`).
    public var fullIfOlderThan: DurationSpec?
    /// Ignore ctime when deciding a file is unchanged (file systems that change it freely).
    public var ignoreCtime: Bool
    /// Ignore inode and device numbers (network or FUSE file systems that renumber).
    public var ignoreInode: Bool
    /// Hash every file and compare contents instead of trusting size and times.
    public var reread: Bool
    /// Store a changed big file by its changed blocks (the default; `--no-blocks` stores
    /// it whole): see `BlockTable`.
    public var storesBlocks: Bool

    /// Without `--full-every`, the most archives a restore of a new incremental backup may
    /// read: its own, and those of the backups and supplements its files lie in. Where prune
    /// writes supplements (the destination holds some of the host's), it keeps a chain's
    /// archives few (its policy's backups and their supplements), and this is the only
    /// default rule: each restart would store the whole tree again.
    public static let archiveLimit = 30
    /// Where prune keeps chains instead (`--keep-chains`, or before it first removed a backup
    /// others take files from), the defaults are as before supplements: a new chain every 30
    /// backups or 30 days, whichever comes first, since prune frees a chain only once no kept
    /// backup needs it.
    public static let defaultFullEvery = 30
    /// See `defaultFullEvery`.
    public static let defaultFullIfOlderThan = DurationSpec(days: 30)

    /// Creates a policy.
    public init(forceFull: Bool = false, fullEvery: Int? = nil, fullIfOlderThan: DurationSpec? = nil,
                ignoreCtime: Bool = false, ignoreInode: Bool = false, reread: Bool = false, storesBlocks: Bool = true) {
        self.forceFull = forceFull
        self.fullEvery = fullEvery.map { max(1, $0) }
        self.fullIfOlderThan = fullIfOlderThan
        self.ignoreCtime = ignoreCtime
        self.ignoreInode = ignoreInode
        self.reread = reread
        self.storesBlocks = storesBlocks
    }
}

/// What to back up and how.
public struct BackupRequest: Sendable {
    /// Paths to back up, as bytes: a Linux path need not be UTF-8 (ignored when
    /// `stdinPath` is set).
    public var sourcePaths: [[UInt8]]
    /// `sourcePaths` as text (shown with `PathBytes.display`).
    public var sources: [String] {
        get { sourcePaths.map(PathBytes.display) }
        set { sourcePaths = newValue.map(PathBytes.from) }
    }
    /// Back up standard input as one file of this name (bytes) instead of paths.
    public var stdinPath: [UInt8]?
    /// `stdinPath` as text (shown with `PathBytes.display`).
    public var stdinName: String? {
        get { stdinPath.map(PathBytes.display) }
        set { stdinPath = newValue.map(PathBytes.from) }
    }
    public var compression: Compression
    /// Compression level; nil for the codec's default.
    public var level: Int?
    /// Compressor threads (zstd, xz).
    public var threads: Int
    public var tags: [String]
    public var scan: ScanOptions
    /// Full or incremental, and how changes are detected.
    public var chain: ChainPolicy
    /// Scan and count only; store nothing.
    public var dryRun: Bool
    /// Written into the manifest (`keepsake 0.1.0`).
    public var toolVersion: String
    /// The backup's creation time (injectable for tests).
    public var now: Date
    /// How long to wait for the destination's lock when another run holds it (0: fail at
    /// once with exit 5, the default; `--lock-wait`, a profile's `lock-wait`).
    public var lockWait: TimeInterval = 0
    /// How many files are read at once (`--readers`): with more than one, reader threads
    /// read ahead of the archive writer (see `ReadAhead`); one reads on the writing thread.
    public var readers = BackupRequest.defaultReaders
    /// Files read at once unless asked otherwise: one per core, at least 2 (on 2 cores, 2
    /// readers kept a cold backup of /usr/share as fast as 4 or 8, and a warm one as fast as
    /// reading on the writing thread), at most 8.
    public static let defaultReaders = min(8, max(2, ProcessInfo.processInfo.activeProcessorCount))
    /// A pause before each file is opened and after each MiB read, for fault-injection tests
    /// that change sources while a backup reads them (0 in normal use).
    public var readPause: TimeInterval = 0
    /// Encrypts the archive and its manifest (age v1) to these recipients or this
    /// passphrase; nil stores them in the clear.
    public var encryption: AgeEncryption?
    /// Where the change-detection cache lives (`…/keepsake`): with encryption, the next
    /// backup is incremental only from what this host kept there. Nil keeps nothing.
    public var changeCacheRoot: String?
    /// Stores in the clear even though the last backup of this host in the destination was
    /// encrypted (without it, that is refused: a profile that lost its key setting).
    public var allowUnencrypted = false
    /// Signs the backup (`HOST_ID.signature`), and builds only on backups this key signed.
    public var signingKey: SigningKey?
    /// The host the backup is recorded as made by (`backup --host`, a profile's `host`): its
    /// chain, `latest` and prune's groups follow this name. This machine's name by default.
    public var host = HostIdentity.hostName

    /// How the summary records `encryption`.
    var encryptionRecord: BackupEncryption? {
        switch encryption {
        case .none: return nil
        case .recipients(let keys): return .recipients(keys.map(\.encoded))
        case .passphrase: return .passphrase
        }
    }

    /// Creates a request.
    public init(sources: [String], stdinName: String? = nil, compression: Compression = .zstd, level: Int? = nil,
                threads: Int = 1, tags: [String] = [], scan: ScanOptions, chain: ChainPolicy = ChainPolicy(),
                dryRun: Bool = false,
                toolVersion: String, now: Date = Date()) {
        sourcePaths = sources.map(PathBytes.from)
        stdinPath = stdinName.map(PathBytes.from)
        self.compression = compression
        self.level = level
        self.threads = threads
        self.tags = tags
        self.scan = scan
        self.chain = chain
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
    /// The public key of the key that signed the backup (`BackupRequest.signingKey`); nil
    /// when it is not signed.
    public var signedBy: SigningPublicKey?
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
