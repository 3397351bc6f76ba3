import BackupCore
import KeepsakeArchive
import KeepsakeEncryption
import KeepsakeS3
import KeepsakeScan
import KeepsakeSigning
import KeepsakeStorage
import KeepsakeSupport

/// The documented exit codes; scripts and cron rely on them.
public enum ExitCode: Int32, Sendable, CaseIterable {
    /// Everything worked.
    case success = 0
    /// The command failed.
    case failure = 1
    /// The command line was wrong.
    case usage = 2
    /// The backup finished and is committed, but some files could not be read; or the
    /// restore finished, but some paths could not be written, differing files were kept,
    /// or a lone incremental archive's parent archive was not beside it.
    case partial = 3
    /// Verify or restore found damaged, missing or unsafe content (never a restore target
    /// that refuses writes: that is `failure` or `partial`).
    case integrity = 4
    /// The destination is locked by another run.
    case locked = 5
    /// An encrypted backup needs a key that was not given, or the key given does not open it.
    case key = 6
    /// A signature was asked for (`--signed-by`) and the backup is not signed by that key,
    /// or was changed after it was signed.
    case signature = 7
    /// Stopped by SIGINT or SIGTERM.
    case interrupted = 130

    /// What the code means, for `--help` and the README.
    var meaning: String {
        switch self {
        case .success: return "success"
        case .failure: return "failure (the message says what and what to do)"
        case .usage: return "usage error (unknown option, bad value, missing argument)"
        case .partial: return "backup committed, but some files could not be read; or restore finished, but some paths could not be written, existing files that differ were kept, or an incremental archive's parent was not next to it"
        case .integrity: return "integrity failure: damaged, missing or unsafe content, or a damaged manifest, found by verify, restore or another command (never a target that refuses writes)"
        case .locked: return "the destination is locked by another run"
        case .key: return "an encrypted backup needs an identity or passphrase that was not given, or the one given does not open it"
        case .signature: return "a signature was asked for (--signed-by) and the backup is unsigned, signed by another key, or changed since it was signed"
        case .interrupted: return "interrupted (Ctrl-C or SIGTERM); nothing half-done is left"
        }
    }

    // MARK: Errors

    /// The exit code a command ends with when it fails with `error`: the one place that
    /// decides it.
    init(for error: Error) {
        switch error {
        case is UsageError, is ExcludePatternError, is DestinationAddressError, is MissingHomeError, S3Error.badEndpoint:
            // The command line (or the value of KEEPSAKE_DEST or KEEPSAKE_S3_ENDPOINT, or a
            // profile's destination) is wrong, or this environment needs a --dest it lacks.
            self = .usage
        case is Interruption:
            self = .interrupted
        case is LockError:
            self = .locked
        case is EncryptionError:
            self = .key
        case SigningError.unusablePublicKey:
            self = .usage
        case SigningError.unusableSigningKey, SigningError.crypto:
            self = .failure
        case is SigningError:
            self = .signature
        case EngineError.archiveMissing, EngineError.manifestUnreadable, EngineError.misnamed, ArchiveError.damaged, is CopyError,
             is SupplementDamage:
            // A backup found damaged: its archive gone, its manifest unreadable or hostile.
            self = .integrity
        default:
            self = .failure
        }
    }
}
