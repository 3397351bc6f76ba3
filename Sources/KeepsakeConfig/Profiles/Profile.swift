import BackupCore
import Foundation
import KeepsakeAge
import KeepsakeArchive
import KeepsakeModel
import KeepsakeS3
import KeepsakeScan
import KeepsakeStorage

/// One named profile of the configuration file (`[profiles.home]`), validated: what to back
/// up, where to, how, which backups to keep, and the commands to run around it.
///
/// Paths are already absolute (`~` expanded, relative paths resolved against the folder that
/// holds the configuration file). See ``ConfigFile`` for the file format.
public struct Profile: Sendable, Equatable {
    // MARK: Identity

    /// The profile's name (`home` for `[profiles.home]`).
    public var name: String
    /// The configuration file the profile came from.
    public var file: String

    // MARK: What and where

    /// The files and folders to back up; never empty.
    public var sources: [String]
    /// The destination (a folder, `s3://…` or `rclone:…`); nil for `KEEPSAKE_DEST` or the
    /// default destination.
    public var destination: String?
    /// Further destinations each new backup (and the chain it needs) is copied to by
    /// `keepsake run` (`copy-to`).
    public var copyTo: [String] = []
    /// The host name the profile's backups are recorded under (`host`); nil for this
    /// machine's name. The other commands' `--profile` acts on that host's backups.
    public var host: String?
    /// How long `keepsake run` waits for the destination's lock when another run holds it
    /// (`lock-wait`; 0: fail at once with exit 5).
    public var lockWait: TimeInterval = 0
    /// S3 settings for s3:// destinations (`s3-endpoint`, `s3-region`, `aws-profile`,
    /// `aws-access-key-id`, `aws-secret-access-key`, `aws-session-token`).
    public var s3 = S3Configuration.Overrides()
    /// Encryption (`recipients`, `recipients-file`, `passphrase-file`) and the identities
    /// the run's verify opens the new backup with (`identity-file`).
    public var encryption = EncryptionSettings()
    /// Signing: the key this host signs its backups with (`signing-key`), and the public key
    /// restores check them against (`signed-by`).
    public var signing = SigningSettings()

    /// A profile's signing keys: the secret one's file, and the public one as given.
    public struct SigningSettings: Sendable, Equatable {
        /// The signing key file (`keepsake keygen --signing`), for backups.
        public var keyFile: String?
        /// `ed25519:…`, or a file holding a public key, for restores.
        public var signedBy: String?

        /// Creates empty settings (no signing, no check).
        public init() {}
    }

    /// A profile's encryption keys: where they are, not the secrets themselves.
    public struct EncryptionSettings: Sendable, Equatable {
        /// age public keys to encrypt to.
        public var recipients: [AgeRecipient] = []
        /// Files of age public keys (one per line, `age -R` format).
        public var recipientsFiles: [String] = []
        /// A file whose first line is the passphrase (passphrase mode).
        public var passphraseFile: String?
        /// Identity files (`keepsake keygen`, `age-keygen`) for reading the backups back.
        public var identityFiles: [String] = []

        /// Creates empty settings (no encryption).
        public init() {}

        /// True when backups are to be encrypted.
        public var encrypts: Bool { !recipients.isEmpty || !recipientsFiles.isEmpty || passphraseFile != nil }
    }

    // MARK: What to leave out

    /// gitignore-style exclude patterns (already checked to compile).
    public var exclude: [String]
    /// Files holding more exclude patterns, read when the backup request is made.
    public var excludeFrom: [String]
    /// Leave out the contents of folders holding a valid `CACHEDIR.TAG`.
    public var excludeCaches: Bool
    /// Leave out the contents of folders holding a file of one of these names.
    public var excludeIfPresent: [String]
    /// Do not descend into other file systems.
    public var oneFileSystem: Bool

    // MARK: How

    /// The archive's compression.
    public var compression: Compression
    /// The compression level; nil for the codec's default.
    public var level: Int?
    /// Compressor threads; nil for the number of CPUs.
    public var threads: Int?
    /// Files read at once (`readers`); nil for `BackupRequest.defaultReaders`.
    public var readers: Int?
    /// Labels every backup of the profile gets.
    public var tags: [String]
    /// When a new chain starts, and how changes are detected.
    public var chain: ChainPolicy

    // MARK: Retention and hooks

    /// Which backups to keep after each run; nil when the profile has no `retention` table
    /// (then `keepsake run` prunes nothing).
    public var retention: RetentionPolicy?
    /// The retention table's `keep-chains`: prune keeps every backup a kept one takes files
    /// from, instead of copying those files into supplements (`prune --keep-chains`).
    public var keepsChains = false
    /// A shell command (`/bin/sh -c`) run before the backup; a non-zero exit stops the run.
    public var before: String?
    /// A shell command run after everything else, with `KEEPSAKE_STATUS` and friends set.
    public var after: String?

    /// Where `exclude-from` was written (line and column), for errors about reading its files.
    var excludeFromLine: Int?
    /// See `excludeFromLine`.
    var excludeFromColumn: Int?

    // MARK: Creation

    /// A profile with the defaults of `keepsake backup` for everything but its name and sources.
    public init(name: String, file: String, sources: [String], destination: String? = nil, exclude: [String] = [],
                excludeFrom: [String] = [], excludeCaches: Bool = false, excludeIfPresent: [String] = [],
                oneFileSystem: Bool = false, compression: Compression = .zstd, level: Int? = nil, threads: Int? = nil,
                tags: [String] = [], chain: ChainPolicy = ChainPolicy(), retention: RetentionPolicy? = nil,
                before: String? = nil, after: String? = nil) {
        self.name = name
        self.file = file
        self.sources = sources
        self.destination = destination
        self.exclude = exclude
        self.excludeFrom = excludeFrom
        self.excludeCaches = excludeCaches
        self.excludeIfPresent = excludeIfPresent
        self.oneFileSystem = oneFileSystem
        self.compression = compression
        self.level = level
        self.threads = threads
        self.tags = tags
        self.chain = chain
        self.retention = retention
        self.before = before
        self.after = after
    }

    // MARK: Conversion

    /// The exclude patterns: `exclude` followed by the patterns of every `exclude-from` file,
    /// in order.
    ///
    /// - Throws: ``ConfigError`` at the `exclude-from` key when a file cannot be read or holds
    ///   an invalid pattern.
    public func excludePatterns() throws(ConfigError) -> [String] {
        var patterns = exclude
        for path in excludeFrom {
            let contents: String
            do {
                contents = try Self.read(path)
            } catch {
                throw problem("cannot read the exclude file '\(path)' named in 'exclude-from' of profile '\(name)': \(error.reason)")
            }
            let filePatterns = ExcludeRules.patterns(fromFileContents: contents)
            do {
                _ = try ExcludeRules(patterns: filePatterns)
            } catch {
                throw problem("the exclude file '\(path)' named in 'exclude-from' of profile '\(name)' holds an "
                    + "invalid pattern '\(error.pattern)': \(error.reason)")
            }
            patterns.append(contentsOf: filePatterns)
        }
        return patterns
    }

    /// The request `keepsake run` hands to the backup engine: the profile's sources, exclude
    /// rules, compression, tags and chain policy.
    ///
    /// - Parameters:
    ///   - toolVersion: Written into the manifest (`keepsake 0.1.0`).
    ///   - defaultThreads: Compressor threads when the profile sets none (the number of CPUs).
    ///   - now: The backup's creation time.
    /// - Throws: ``ConfigError`` when an `exclude-from` file cannot be read or holds an invalid
    ///   pattern.
    public func backupRequest(toolVersion: String, defaultThreads: Int, now: Date = Date()) throws(ConfigError) -> BackupRequest {
        let patterns = try excludePatterns()
        let rules: ExcludeRules
        do {
            rules = try ExcludeRules(patterns: patterns)
        } catch {
            throw problem("invalid exclude pattern '\(error.pattern)' in profile '\(name)': \(error.reason)")
        }
        var request = BackupRequest(sources: sources, compression: compression, level: level,
                                    threads: threads ?? max(1, defaultThreads), tags: tags,
                                    scan: ScanOptions(excludes: rules, excludeCaches: excludeCaches,
                                                      excludeIfPresent: excludeIfPresent, oneFileSystem: oneFileSystem),
                                    chain: chain, toolVersion: toolVersion, now: now)
        request.lockWait = lockWait
        if let readers { request.readers = readers }
        if let host { request.host = host }
        return request
    }

    // MARK: Equality

    /// True when every setting is equal (where `exclude-from` was written is ignored).
    public static func == (lhs: Profile, rhs: Profile) -> Bool {
        lhs.name == rhs.name && lhs.file == rhs.file && lhs.sources == rhs.sources && lhs.destination == rhs.destination
            && lhs.exclude == rhs.exclude && lhs.excludeFrom == rhs.excludeFrom && lhs.excludeCaches == rhs.excludeCaches
            && lhs.excludeIfPresent == rhs.excludeIfPresent && lhs.oneFileSystem == rhs.oneFileSystem
            && lhs.compression == rhs.compression && lhs.level == rhs.level && lhs.threads == rhs.threads
            && lhs.readers == rhs.readers && lhs.tags == rhs.tags && lhs.chain == rhs.chain && lhs.retention == rhs.retention
            && lhs.keepsChains == rhs.keepsChains
            && lhs.before == rhs.before && lhs.after == rhs.after && lhs.copyTo == rhs.copyTo && lhs.s3 == rhs.s3
            && lhs.lockWait == rhs.lockWait && lhs.encryption == rhs.encryption && lhs.host == rhs.host
    }

    // MARK: Errors

    private func problem(_ message: String) -> ConfigError {
        ConfigError(file: file, kind: .invalidValue, line: excludeFromLine, column: excludeFromColumn, message: message)
    }

    /// Why a file could not be read, in the system's words ("No such file or directory").
    private struct ReadFailure: Error {
        let reason: String
    }

    /// The text of the file at `path` (invalid UTF-8 replaced).
    private static func read(_ path: String) throws(ReadFailure) -> String {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw ReadFailure(reason: String(cString: strerror(errno))) }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        do {
            return String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
        } catch {
            throw ReadFailure(reason: (error as NSError).localizedDescription)
        }
    }
}
