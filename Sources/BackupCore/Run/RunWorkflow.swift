import Foundation
import KeepsakeAge
import KeepsakeEncryption
import KeepsakeModel
import KeepsakeSigning
import KeepsakeStorage
import KeepsakeSupport

/// The steps of `keepsake run` between its hooks: back up, prune with the retention policy
/// (when there is one), verify the new backup, and copy it (with the chain it needs, and any
/// earlier backup of the same sources the copy lacks) to the profile's further destinations.
/// A failed step is recorded and the steps that still make sense go on: a failed prune does
/// not stop the verification of the new backup, nor one failed copy the others. The caller (the command line) runs the hooks and turns the
/// outcome into an exit code.
public final class RunWorkflow {
    // MARK: Types

    /// One step of a run.
    public enum Step: String, Sendable {
        case backup, prune, verify, copy
    }

    /// A step that did not work out.
    public struct Failure: Error {
        /// The step.
        public var step: Step
        /// What stopped it (an `EngineError`, a `LockError`, a `StorageError`, …).
        public var error: Error
        /// For a copy: the destination it was to.
        public var destination: String?
    }

    /// What a run did.
    public struct Outcome {
        /// The new backup (nil when the backup step failed).
        public var backup: BackupResult?
        /// What the retention policy removed and kept (nil without a policy, or when it failed).
        public var prune: PruneResult?
        /// The new backup's verification (nil when it was not verified).
        public var verify: VerifyReport?
        /// The retention policy removed the new backup itself: there was nothing to verify.
        public var newBackupPruned = false
        /// The new backup was gone from the destination by the time it was to be verified.
        public var newBackupVanished = false
        /// What each copy to a further destination did, in order (failed ones are in `failures`).
        public var copies: [(destination: String, result: BackupCopier.Result)] = []
        /// The steps that failed, in order.
        public var failures: [Failure] = []
    }

    // MARK: Dependencies

    private let storage: any WritableStorage
    /// Opens this host's encrypted backups in `storage` (for backup, prune and verify).
    private let keyring: AgeKeyring
    private weak var events: EngineEventSink?
    private let cancellation: CancellationFlag
    /// When set, the verify step also checks that the new backup is signed by this key
    /// (`VerifyReport.signatureProblem`): a run that signs proves its signature works; and
    /// the prune step counts only backups this key signed.
    public var signatureCheck: SignatureCheck?
    /// When set, the prune step keeps every backup a kept one takes files from instead of
    /// copying those files into supplements (a profile's `keep-chains`).
    public var keepsChains = false

    /// A run against `storage`, opening its encrypted backups with `keyring`, reporting to
    /// `events` (a `.stepFinished` after each step).
    public init(storage: any WritableStorage, keyring: AgeKeyring, events: EngineEventSink?,
                cancellation: CancellationFlag) {
        self.storage = storage
        self.keyring = keyring
        self.events = events
        self.cancellation = cancellation
    }

    // MARK: Running

    /// Backs up with `request`, prunes with `retention` (evaluated at `now`, the backup's own
    /// time unless given, in `calendar`), then verifies the new backup. Stops after a failed
    /// backup or once interrupted.
    public func run(_ request: BackupRequest, retention: RetentionPolicy?, copyTo: [any WritableStorage] = [], now: Date? = nil,
                    calendar: Calendar = .current) -> Outcome {
        let now = now ?? request.now
        var outcome = Outcome()
        do {
            outcome.backup = try BackupEngine(storage: storage, keyring: keyring, events: events, cancellation: cancellation).run(request)
        } catch {
            outcome.failures.append(Failure(step: .backup, error: error))
        }
        events?.handle(.stepFinished(Step.backup.rawValue))
        guard let result = outcome.backup, !result.dryRun else { return outcome }

        if let retention, !cancellation.isCancelled {
            do {
                let engine = PruneEngine(storage: storage, keyring: keyring, events: events, cancellation: cancellation)
                var prune = PruneRequest(policy: retention, dryRun: false, now: now, calendar: calendar)
                prune.lockWait = request.lockWait
                prune.hosts = .only(request.host)
                prune.signedBy = signatureCheck?.key
                prune.consolidate = !keepsChains
                // The keys this run encrypts to are the ones its supplements may be encrypted to.
                if case .recipients(let keys)? = request.encryption { prune.recipients = keys }
                outcome.prune = try engine.run(prune)
            } catch {
                outcome.failures.append(Failure(step: .prune, error: error))
            }
            events?.handle(.stepFinished(Step.prune.rawValue))
        }

        guard !cancellation.isCancelled else { return outcome }
        let id = result.summary.id
        if outcome.prune?.removed.contains(id) == true {
            outcome.newBackupPruned = true
            return outcome
        }
        var items: [BackupCatalog.Item] = []
        do {
            let reading = KeyedStorage(storage, keyring: keyring)
            items = try BackupCatalog(storage: reading).items()
            guard let item = items.first(where: { $0.id == id }) else {
                outcome.newBackupVanished = true
                return outcome
            }
            let verifier = Verifier(events: events, cancellation: cancellation)
            verifier.signatureCheck = signatureCheck
            verifier.damageRecords = storage
            outcome.verify = try verifier.verify(item, in: reading)
        } catch {
            outcome.failures.append(Failure(step: .verify, error: error))
        }
        events?.handle(.stepFinished(Step.verify.rawValue))
        // A damaged backup is not copied on: the copies would be damaged too.
        guard outcome.verify?.isIntact == true else { return outcome }
        let ids = [id] + RunWorkflow.earlierToCopy(items, like: result.summary, in: storage)
        for target in copyTo {
            guard !cancellation.isCancelled else { break }
            do {
                let copier = BackupCopier(from: storage, to: target, events: events, cancellation: cancellation)
                let copied = try copier.copy(ids, lockWait: request.lockWait)
                outcome.copies.append((target.location, copied))
                for problem in copied.damaged {
                    outcome.failures.append(Failure(step: .copy, error: problem, destination: target.location))
                }
            } catch {
                outcome.failures.append(Failure(step: .copy, error: error, destination: target.location))
            }
            events?.handle(.stepFinished(Step.copy.rawValue))
        }
        return outcome
    }

    /// The earlier backups of the same host and sources as `summary` (the new backup's) that
    /// the copy step brings too, when a copy destination lacks them: a run killed after its
    /// backup committed, or a copy destination that was away, would otherwise leave a kept
    /// backup off the copy for good. Backups already found damaged are left out (verify
    /// said so; the copy would only say it again every night).
    static func earlierToCopy(_ items: [BackupCatalog.Item], like summary: BackupSummary,
                              in storage: any ReadableStorage) -> [BackupID] {
        let names = Set(((try? storage.list()) ?? []).map(\.name))
        return items.compactMap { item in
            guard item.id != summary.id, let other = item.summary, other.host == summary.host,
                  other.sourceGroup == summary.sourceGroup,
                  DamageRecord.stored(for: item, names: names, in: storage) == nil else { return nil }
            return item.id
        }
    }
}
