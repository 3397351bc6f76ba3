import Foundation
import KeepsakeAge
import KeepsakeModel
import KeepsakeSigning
import KeepsakeSupport

/// What `keepsake prune` (or the prune step of `keepsake run`) is asked to do.
public struct PruneRequest: Sendable {
    // MARK: Fields

    /// Which backups to keep; an empty policy is refused by ``PruneEngine/run(_:)``.
    public var policy: RetentionPolicy
    /// Decide and report, but remove nothing (and take no lock).
    public var dryRun: Bool
    /// The current time, for `keepWithin` (injectable for tests).
    public var now: Date
    /// Where hours, days, weeks, months and years begin (its time zone matters).
    public var calendar: Calendar
    /// Whose backups the policy is applied to: this host's unless `--host` or `--all-hosts`
    /// says otherwise (hosts sharing a destination each prune their own).
    public var hosts: HostSelection = .only(HostIdentity.hostName)
    /// How long to wait for the destination's lock when another run holds it (0: fail at once).
    public var lockWait: TimeInterval = 0
    /// A pause before each removal (and each step of a consolidation); only for
    /// fault-injection tests, which signal a prune
    /// between two removals (see docs/development.md, `KEEPSAKE_TEST_REMOVAL_PAUSE_MS`).
    public var removalPause: TimeInterval = 0
    /// When set, only backups this key signed count for the policy (`SignatureCheck.vouchesFor`);
    /// the others are kept and named: planted ones must not push genuine ones out.
    public var signedBy: SigningPublicKey?
    /// Consolidate (the default; `--keep-chains` turns it off): what kept backups in the
    /// clear take from backups the policy lets go is copied into supplements
    /// (`ChainConsolidation`), so those backups are removed rather than kept as `needed by`.
    public var consolidate = true
    /// Public keys a supplement may be encrypted to (`--recipient`, a profile's recipients),
    /// besides those of the identities given: an encrypted backup's supplement is written
    /// only when every key it is encrypted to is among them (see `ChainConsolidation`).
    public var recipients: [AgeRecipient] = []

    // MARK: Creation

    /// Creates a request.
    public init(policy: RetentionPolicy, dryRun: Bool = false, now: Date = Date(), calendar: Calendar = .current) {
        self.policy = policy
        self.dryRun = dryRun
        self.now = now
        self.calendar = calendar
    }
}
