import Foundation
import KeepsakeArchive
import KeepsakeAge
import KeepsakeEncryption
import KeepsakeModel
import KeepsakeSigning
import KeepsakeStorage
import KeepsakeSupport

/// Removes the backups a ``RetentionPolicy`` does not keep, with the rules of restic's
/// `forget`, and never one that a kept backup still needs.
///
/// How it decides:
///
/// 1. Backups are grouped by host and sources (restic's default `--group-by host,paths`; the
///    order sources were given in does not matter) and the policy is applied to each group by
///    ``RetentionPlanner``. A policy that would keep nothing of a group is refused, as restic
///    refuses it, before anything is removed.
/// 2. Chain protection: every kept backup's manifest is read, and every backup named by an
///    entry's `in` (the archive that holds the file's content) is kept too, with the reason
///    `needed by <id>`, transitively. When a kept backup's manifest cannot be read whole, every
///    backup id found in its bytes and its whole parent chain are kept instead. Consolidating
///    (`PruneRequest.consolidate`, the default), a kept backup in the clear protects nothing:
///    what it takes from backups let go is copied into its supplement first
///    (`ChainConsolidation`); a backup whose archive is found not to hold it is kept after all
///    (`needed by <id>; damaged`).
/// 3. A backup whose manifest cannot be read is never removed (`manifest unreadable; kept`).
///
/// How it removes: holding the destination's lock for the whole run, each backup is
/// un-committed first — its manifest deleted, so it is no longer listed — and only then its
/// archive. A crash between the two leaves an archive without a manifest, which is what an
/// interrupted backup leaves too, and the next backup cleans it up. A dry run takes no lock
/// and removes nothing.
public final class PruneEngine {
    // MARK: Dependencies

    private let storage: any WritableStorage
    /// Opens encrypted manifests, when it holds their key: then what an encrypted backup
    /// relies on is read from its manifest, not only from the summary in the clear.
    private let keyring: AgeKeyring
    private weak var events: EngineEventSink?
    private let cancellation: CancellationFlag

    /// An engine pruning `storage`, opening encrypted manifests with `keyring`, reporting
    /// each removal (and anything odd) to `events`.
    public init(storage: any WritableStorage, keyring: AgeKeyring, events: EngineEventSink?,
                cancellation: CancellationFlag) {
        self.storage = storage
        self.keyring = keyring
        self.events = events
        self.cancellation = cancellation
    }

    // MARK: Constants

    /// The reason given for a backup whose manifest cannot be read.
    public static let unreadableReason = "manifest unreadable; kept"
    /// The reason given for a backup whose name and summary disagree (or whose id another
    /// backup has): not this prune's to judge, nor to count for the policy.
    public static let misnamedReason = "name and summary disagree; kept"
    /// The reason given for a backup dated more than a day after prune's clock.
    public static let futureReason = "dated in the future; kept"
    /// The reason given, with `--signed-by`, for a backup that key did not sign.
    public static let unsignedReason = "not signed by the key given; kept"

    /// Why an empty policy is refused, naming the rules there are.
    static let emptyPolicyMessage = "No retention rule given; prune refuses to run without one (as restic's forget does). "
        + "Give at least one of keep-last, keep-hourly, keep-daily, keep-weekly, keep-monthly, keep-yearly (a count, "
        + "or -1 for unlimited), keep-within (a duration like 7d) or keep-tag (tags)"

    // MARK: Running

    /// Decides for every backup, then (unless `request.dryRun`) removes the ones not kept.
    ///
    /// - Throws: `EngineError.invalidRequest` for an empty policy or one that would remove
    ///   every backup of a group; `LockError.held` when another run holds the destination;
    ///   `Interruption` when cancelled between two removals (each backup is then
    ///   either wholly listed or not listed at all); storage errors.
    public func run(_ request: PruneRequest) throws -> PruneResult {
        guard !request.policy.isEmpty else { throw EngineError.invalidRequest(PruneEngine.emptyPolicyMessage) }
        if request.dryRun {
            let plan = try makePlan(request)
            var result = PruneResult(decisions: plan.decisions, removed: plan.removals.map(\.id), dryRun: true,
                                     freedBytes: plan.removals.reduce(0) { $0 + $1.bytes })
            if request.consolidate {
                let planned = try consolidation(request).plan(items: plan.items, removing: Set(plan.removals.map(\.manifest.name)),
                                                              consolidated: plan.consolidated, objects: plan.objects)
                result.freedBytes += planned.replaced.reduce(0) { $0 + $1.archiveSize }
                result.supplementedFiles = planned.files
                result.supplementedBytes = planned.bytes
            }
            return result
        }
        // Nothing listed: no lock to take (and a mistyped destination is not created).
        guard try BackupCatalog(storage: storage, keyring: keyring).newestID() != nil else {
            return PruneResult(decisions: [], removed: [], dryRun: false, freedBytes: 0)
        }
        let lock = try storage.acquireLock(.current(operation: "prune"), waitingUpTo: request.lockWait,
                                           cancellation: cancellation, events: events)
        defer { lock.release() }
        lock.report(to: events)
        var plan = try makePlan(request)
        var removed: [BackupID] = []
        var freed: Int64 = 0
        var consolidation = consolidation(request)
        let pause = request.removalPause
        if pause > 0 { consolidation.beforeEachStep = { usleep(useconds_t(min(pause, 10) * 1_000_000)) } }
        // Written, committed and read back before anything they replace is removed.
        var consolidated: ChainConsolidation.Outcome?
        // Backups whose archive was found not to hold what a kept backup takes from them:
        // kept (as without supplements), and the consolidation planned again without them.
        var damaged = Set<BackupID>()
        // Supplements found not to hold what kept backups take from them: left in place.
        var leaving = Set<String>()
        while request.consolidate {
            do {
                consolidated = try consolidation.prepare(items: plan.items, removing: Set(plan.removals.map(\.manifest.name)),
                                                         consolidated: plan.consolidated, leaving: leaving, now: request.now)
                break
            } catch let damage as ChainConsolidation.DamagedSupplement where !leaving.contains(damage.archive) {
                events?.handle(.caution("the supplement \(damage.archive) is left as it is: it does not hold as recorded files kept "
                    + "backups take from it (\(damage.reason)); run 'keepsake verify'"))
                leaving.insert(damage.archive)
            } catch let damage as ChainConsolidation.DamagedBackup where !damaged.contains(damage.backup)
                        && plan.items.allSatisfy({ $0.id != damage.backup || consolidation.consolidates($0) }) {
                events?.handle(.caution("backup \(damage.backup) is kept: backup \(damage.neededBy) takes files from it that its "
                    + "archive does not hold as recorded (\(damage.reason)); run 'keepsake verify'"))
                damaged.insert(damage.backup)
                plan.keep(damage.backup, because: "needed by \(damage.neededBy); damaged")
                // Kept now, what it takes from backups let go is copied for it too.
                plan.consolidated.formUnion(plan.items.filter { $0.id == damage.backup }.map(\.manifestName))
            } catch let damage as ChainConsolidation.DamagedBackup {
                throw SupplementDamage(reason: "Prune removed nothing: backup \(damage.backup) is damaged: \(damage.reason) "
                    + "(run 'keepsake verify')")
            } catch let damage as ChainConsolidation.DamagedSupplement {
                throw SupplementDamage(reason: "Prune removed nothing: the supplement \(damage.archive) is damaged: \(damage.reason) "
                    + "(run 'keepsake verify')")
            } catch let damage as SupplementDamage {
                throw SupplementDamage(reason: "Prune removed nothing: \(damage.reason) (run 'keepsake verify')")
            } catch let damage as ArchiveError {
                // An archive or supplement a file was to be copied from, found damaged.
                throw SupplementDamage(reason: "Prune removed nothing: \(damage) (run 'keepsake verify')")
            }
        }
        for removal in plan.removals {
            if request.removalPause > 0 { usleep(useconds_t(min(request.removalPause, 10) * 1_000_000)) }
            try cancellation.check()
            freed += try remove(removal)
            removed.append(removal.id)
        }
        var result = PruneResult(decisions: plan.decisions, removed: removed, dryRun: false, freedBytes: freed)
        if let consolidated {
            result.freedBytes += consolidation.removeReplaced(consolidated) - consolidated.writtenBytes
            result.supplementedFiles = consolidated.files
            result.supplementedBytes = consolidated.bytes
            result.supplementsWritten = consolidated.written.count
            result.supplementStoredBytes = consolidated.writtenBytes
        }
        return result
    }

    // MARK: Planning

    /// The consolidation of this run (see `ChainConsolidation`), encrypting supplements only
    /// to the keys `request` gives.
    private func consolidation(_ request: PruneRequest) -> ChainConsolidation {
        var consolidation = ChainConsolidation(storage: storage, keyring: keyring, cancellation: cancellation, events: events)
        consolidation.recipients = request.recipients
        return consolidation
    }

    /// The decisions and what removing each unkept backup deletes.
    private struct Plan {
        /// Every backup, newest first.
        var decisions: [PruneDecision]
        /// The backups to remove, newest first.
        var removals: [Removal]
        /// The catalog and the listing the decisions were made from (a consolidation plans
        /// from them too).
        var items: [BackupCatalog.Item]
        var objects: [StoredObject]
        /// The kept backups (by manifest name) whose files are copied into supplements
        /// rather than their chains kept: decided once, where chains are protected.
        var consolidated: Set<String> = []

        /// Keeps the backup `id` after all, for `reason`.
        mutating func keep(_ id: BackupID, because reason: String) {
            removals.removeAll { $0.id == id }
            for index in decisions.indices where decisions[index].id == id {
                decisions[index].keep = true
                decisions[index].reasons.append(reason)
            }
        }
    }

    /// The objects of one backup to delete, manifest first.
    private struct Removal {
        var id: BackupID
        var manifest: StoredObject
        var archives: [StoredObject]
        var bytes: Int64 { archives.reduce(manifest.size) { $0 + $1.size } }
    }

    /// A snapshot group: backups of the same host and the same sources.
    private struct GroupKey: Hashable {
        var host: String
        var sources: [String]

        var description: String {
            "host '\(host)', sources \(sources.isEmpty ? "(none)" : sources.joined(separator: ", "))"
        }
    }

    /// Decides for every backup in the destination and lists what removing the others deletes.
    private func makePlan(_ request: PruneRequest) throws -> Plan {
        let catalog = BackupCatalog(storage: storage, keyring: keyring)
        let items = try catalog.items()
        let objects = try storage.list()
        var sizes: [String: Int64] = [:]
        for object in objects { sizes[object.name] = object.size }
        // Keyed by manifest name, not id: a name is one backup, an id planted twice is not.
        var decisions = try applyPolicy(request, to: items, sizes: sizes)
        var unchecked = Set<BackupID>()
        var consolidated = Set<String>()
        protectChains(&decisions, items: items, catalog: catalog, consolidation: request.consolidate ? consolidation(request) : nil,
                      consolidated: &consolidated, unchecked: &unchecked)
        if request.consolidate {
            // Kept encrypted incrementals whose keys are not all given: what they take files from stays.
            let encrypted = items.filter { item in
                guard decisions[item.manifestName]?.keep ?? false, !consolidated.contains(item.manifestName),
                      let summary = item.summary else { return false }
                return (summary.encryption != nil || summary.sourcesHidden) && summary.isIncremental
            }.count
            if encrypted > 0 {
                events?.handle(.notice((encrypted == 1 ? "1 encrypted backup keeps the backups it takes"
                    : "\(encrypted) encrypted backups keep the backups they take") + " files from: prune copies them into "
                    + "encrypted supplements only when given a key that opens them (--identity FILE or --passphrase-file FILE) "
                    + "and, for public keys, every key they are encrypted to (--recipient, or an identity's)"))
            }
        }
        if !unchecked.isEmpty {
            let count = unchecked.count == 1 ? "1 encrypted backup" : "\(unchecked.count) encrypted backups"
            let verb = unchecked.count == 1 ? "relies" : "rely"
            events?.handle(.notice("what \(count) \(verb) on is taken from the summaries in the clear beside them: no key given "
                + "here opens their manifests to check (--identity FILE or --passphrase-file FILE does)"))
        }

        // The result, newest first.
        var ordered: [PruneDecision] = []
        var removals: [Removal] = []
        for item in items.reversed() {
            guard BackupCatalog.item(item, isOf: request.hosts) else { continue }
            let decision = decisions[item.manifestName] ?? RetentionDecision(id: item.manifestName, keep: true,
                                                                             reasons: [PruneEngine.unreadableReason])
            ordered.append(PruneDecision(id: item.id, created: item.summary?.created ?? item.id.date,
                                         isIncremental: item.summary?.isIncremental ?? false, keep: decision.keep,
                                         reasons: decision.reasons, sources: item.summary.map { $0.sourcesHidden ? $0.sourceGroup : $0.sources } ?? [],
                                         host: item.summary?.host ?? ""))
            if !decision.keep {
                removals.append(removal(of: item, objects: objects, sizes: sizes))
            }
        }
        return Plan(decisions: ordered, removals: removals, items: items, objects: objects, consolidated: consolidated)
    }

    /// The policy's decision for every backup (by manifest name), group by group; a backup
    /// whose summary cannot be read, is misnamed, or is dated in the future is in no group
    /// and kept.
    private func applyPolicy(_ request: PruneRequest, to items: [BackupCatalog.Item],
                             sizes: [String: Int64]) throws -> [String: RetentionDecision] {
        let signatures = request.signedBy.map(SignatureCheck.init(key:))
        var decisions: [String: RetentionDecision] = [:]
        var groups: [GroupKey: [BackupCatalog.Item]] = [:]
        var groupOrder: [GroupKey] = []
        for item in items {
            guard let summary = item.summary else {
                // Whichever host it names or claims: planted objects are said, every time.
                if item.isMisnamed {
                    events?.handle(.caution("backup \(item.id) (\(item.manifestName)) is kept and counts for no rule: "
                        + (item.problem ?? "it is misnamed")))
                }
                decisions[item.manifestName] = RetentionDecision(id: item.manifestName, keep: true,
                    reasons: [item.isMisnamed ? PruneEngine.misnamedReason : PruneEngine.unreadableReason])
                continue
            }
            // Other hosts' backups are theirs to prune: left out (and kept).
            guard request.hosts.includes(summary.host) else { continue }
            // Counted, it would stand for the newest backup of every period to come.
            guard !BackupCatalog.isFutureDated(item, now: request.now) else {
                events?.handle(.caution("backup \(item.id) is dated after prune's clock (\(Timestamp.iso8601(request.now))); "
                    + "it is kept and counts for no rule"))
                decisions[item.manifestName] = RetentionDecision(id: item.manifestName, keep: true, reasons: [PruneEngine.futureReason])
                continue
            }
            if let signatures, !signatures.vouchesFor(item, in: storage, sizes: sizes) {
                events?.handle(.caution("backup \(item.id) is not signed by \(signatures.key) (--signed-by); it is kept and "
                    + "counts for no rule"))
                decisions[item.manifestName] = RetentionDecision(id: item.manifestName, keep: true,
                                                                 reasons: [PruneEngine.unsignedReason])
                continue
            }
            let key = GroupKey(host: summary.host, sources: summary.sourceGroup)
            if groups[key] == nil { groupOrder.append(key) }
            groups[key, default: []].append(item)
        }
        for key in groupOrder {
            // Newest first: the planner counts the first of equal dates as the newer, and ids
            // made in the same second sort in the order they were made.
            let members = groups[key] ?? []
            let candidates = Array(PruneEngine.candidates(members).reversed())
            let planned = RetentionPlanner.plan(candidates, policy: request.policy, calendar: request.calendar,
                                                now: request.now)
            if RetentionPlanner.keepsNothing(planned) {
                throw EngineError.invalidRequest("Refusing to remove every backup of \(key.description): the policy "
                    + "(\(request.policy)) keeps none of its \(members.count) backup(s); add a rule that keeps at "
                    + "least one (e.g. keep-last 1), as restic's forget requires")
            }
            for decision in planned { decisions[decision.id] = decision }
        }
        return decisions
    }

    /// The retention candidates of a group's backups (oldest first, in the order they were
    /// made: ids sort that way even when a clock went back), each dated no earlier than the
    /// one made before it: a backup made after a clock was set back an hour counts as made
    /// when the one before it was, not as older, so that prune never takes the backup just
    /// made for the older one of its day. A candidate's id is the backup's manifest name.
    static func candidates(_ items: [BackupCatalog.Item]) -> [RetentionCandidate] {
        var latest = Date.distantPast
        return items.compactMap { item in
            guard let summary = item.summary else { return nil }
            latest = max(latest, summary.created)
            return RetentionCandidate(id: item.manifestName, date: latest, tags: summary.tags)
        }
    }

    /// Keeps every backup a kept backup needs (`needed by <id>`), newest kept backup first,
    /// transitively; with a `consolidation`, only those that kept backups a supplement cannot
    /// serve need (see `ChainConsolidation.consolidates`): those it can go into `consolidated`.
    private func protectChains(_ decisions: inout [String: RetentionDecision], items: [BackupCatalog.Item],
                               catalog: BackupCatalog, consolidation: ChainConsolidation?, consolidated: inout Set<String>,
                               unchecked: inout Set<BackupID>) {
        // An id names every backup that has it: when two do, both are kept.
        var itemsByID: [BackupID: [BackupCatalog.Item]] = [:]
        for item in items { itemsByID[item.id, default: []].append(item) }
        var pending = items.filter { decisions[$0.manifestName]?.keep ?? true }
            .sorted { ($0.id, $0.manifestName) > ($1.id, $1.manifestName) }
        var examined = Set<String>()
        var reportedMissing = Set<BackupID>()
        while !pending.isEmpty {
            let item = pending.removeFirst()
            guard examined.insert(item.manifestName).inserted else { continue }
            // Consolidated only when its manifest reads whole (the plan reads every entry);
            // else its chain is kept, as below.
            if let consolidation, consolidation.consolidates(item), (try? catalog.forEachEntry(of: item) { _ in }) != nil {
                consolidated.insert(item.manifestName)
                continue
            }
            var needs = neededBackups(of: item, catalog: catalog, itemsByID: itemsByID)
            if let clear = item.summary, clear.sourcesHidden {
                if let encrypted = encryptedNeeds(of: item, clear: clear, catalog: catalog) {
                    needs.ids.formUnion(encrypted)
                } else {
                    unchecked.insert(item.id)
                }
            }
            for needed in needs.ids.sorted(by: >) where needed != item.id {
                let holders = itemsByID[needed] ?? []
                if holders.isEmpty, needs.exact, reportedMissing.insert(needed).inserted {
                    events?.handle(.caution("backup \(item.id) needs backup \(needed), which is not in "
                        + "\(storage.location); run 'keepsake verify'"))
                }
                for holder in holders {
                    // Not decided here: another host's backup (kept: not this prune's to remove).
                    guard let decision = decisions[holder.manifestName] else { continue }
                    decisions[holder.manifestName] = decision.keeping(because: "needed by \(item.id)")
                    if !examined.contains(holder.manifestName) { pending.append(holder) }
                }
            }
        }
    }

    /// What the encrypted manifest of `item` says it relies on, when a key given here opens
    /// it without asking; nil when none does. Anyone who can write the destination can edit
    /// the summary in the clear (`relies_on: []` would let prune remove a parent still
    /// needed): prune keeps what either names, and says when they differ.
    private func encryptedNeeds(of item: BackupCatalog.Item, clear: BackupSummary, catalog: BackupCatalog) -> Set<BackupID>? {
        guard keyring.opensWithoutAsking(clear.encryption) else { return nil }
        do {
            let full = try catalog.encryptedSummary(of: item)
            if full.publicSummary != clear {
                events?.handle(.caution("the summary in the clear beside backup \(item.id) differs from its encrypted manifest's; "
                    + "prune keeps what either says it relies on (run 'keepsake verify \(item.id)')"))
            }
            var revealed = item
            revealed.summary = full
            return try catalog.reliedOn(revealed)
        } catch {
            events?.handle(.caution("cannot open the encrypted manifest of backup \(item.id) (\(error)); what it relies on is "
                + "taken from the summary in the clear"))
            return nil
        }
    }

    /// The backups `item` needs: those named by its entries' `in`. `exact` is false when its
    /// manifest could not be read whole and the answer is a conservative guess: every backup
    /// id found in its bytes, and its parent chain.
    private func neededBackups(of item: BackupCatalog.Item, catalog: BackupCatalog,
                               itemsByID: [BackupID: [BackupCatalog.Item]]) -> (ids: Set<BackupID>, exact: Bool) {
        do {
            return (try catalog.reliedOn(item), true)
        } catch {
            var ids = Set<BackupID>()
            if let bytes = try? SidecarManifest.readUndamagedPart(item.manifestName, from: KeyedStorage(storage, keyring: keyring)) {
                ids.formUnion(PruneEngine.backupIDs(in: bytes))
            }
            var parent = item.summary?.parent
            var chain: Set<BackupID> = [item.id]
            while let next = parent, chain.insert(next).inserted {
                ids.insert(next)
                parent = itemsByID[next]?.compactMap(\.summary).first?.parent
            }
            ids.remove(item.id)
            let kept = ids.filter { itemsByID[$0] != nil }
            events?.handle(.caution("cannot read the manifest of backup \(item.id) (\(error)); keeping it and "
                + (kept.isEmpty ? "found no backup it names" : "the \(kept.count) backup(s) it may need")))
            return (ids, false)
        }
    }

    /// The objects removing `item` deletes: its manifest, then every object of the same name
    /// stem (its archive; the one the summary names first).
    private func removal(of item: BackupCatalog.Item, objects: [StoredObject], sizes: [String: Int64]) -> Removal {
        let manifest = StoredObject(name: item.manifestName, size: sizes[item.manifestName] ?? 0)
        guard let stem = BackupNaming.stem(of: item.manifestName) else {
            return Removal(id: item.id, manifest: manifest, archives: [])
        }
        let named = item.summary?.archive?.name
        // Its archive, public summary and damage record.
        let record = DamageRecord.name(forManifest: item.manifestName)
        var archives = objects.filter { $0.name != item.manifestName && (BackupNaming.stem(of: $0.name) == stem || $0.name == record) }
        archives.sort { ($0.name == named ? 0 : 1, $0.name) < ($1.name == named ? 0 : 1, $1.name) }
        return Removal(id: item.id, manifest: manifest, archives: archives)
    }

    // MARK: Removing

    /// Un-commits one backup (manifest first), then deletes its archive; returns the bytes freed.
    private func remove(_ removal: Removal) throws -> Int64 {
        // The marker tells the next run that an archive without its manifest was being
        // pruned (finish removing it), not a backup whose manifest was lost (rebuild it).
        let marker = BackupNaming.stem(of: removal.manifest.name).map { $0 + BackupNaming.pruneMarkerSuffix }
        if let marker {
            let pending = try storage.create(marker)
            try pending.commit()
        }
        try storage.delete(removal.manifest.name)
        var freed = removal.manifest.size
        var problems: [String] = []
        for archive in removal.archives {
            do {
                try storage.delete(archive.name)
                freed += archive.size
            } catch {
                problems.append("\(error)")
            }
        }
        events?.handle(.notice("removed backup \(removal.id) (\(freed) bytes)"))
        if problems.isEmpty, let marker {
            try? storage.delete(marker)
        }
        if !problems.isEmpty {
            events?.handle(.caution("backup \(removal.id) is no longer listed, but its archive could not be deleted ("
                + problems.joined(separator: "; ") + "); the next backup removes it"))
        }
        return freed
    }

    // MARK: Raw scanning

    /// Every well-formed backup id in `bytes` (for a manifest that cannot be parsed).
    static func backupIDs(in bytes: [UInt8]) -> Set<BackupID> {
        var ids = Set<BackupID>()
        let idLength = 25
        let dashOffset = 16
        guard bytes.count >= idLength else { return ids }
        for index in dashOffset..<(bytes.count - (idLength - dashOffset - 1)) where bytes[index] == UInt8(ascii: "-")
            && bytes[index - 1] == UInt8(ascii: "Z") && bytes[index - 8] == UInt8(ascii: "T") {
            let start = index - dashOffset
            if let id = BackupID(String(decoding: bytes[start..<(start + idLength)], as: UTF8.self)) {
                ids.insert(id)
            }
        }
        return ids
    }
}
