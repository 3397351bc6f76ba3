import Foundation
import KeepsakeAge
import KeepsakeEncryption
import KeepsakeModel
import KeepsakeStorage
import KeepsakeSupport

/// What lets prune remove backups that kept ones take files from (what prune does unless `--keep-chains`):
/// before anything is removed, every file a kept backup takes from a backup being removed
/// (or from a supplement going with its owner) is copied into a supplement of the oldest
/// kept backup that takes it (see `SupplementManifest`), written, committed and read back.
/// A file some supplement of a kept backup already holds is not copied again. Supplements
/// whose owner is gone, and those a newer supplement of the same owner replaces, are removed
/// after the backups (`removeReplaced`).
///
/// An encrypted kept backup's supplement is encrypted as it is, and only to keys the person
/// running prune gave (`consolidates`): never to the recipients a summary names alone, or a
/// backup planted with an outsider's key among them would have prune copy files out to it.
/// Encrypted supplements no key given here opens are left as they are.
struct ChainConsolidation {
    // MARK: Dependencies

    let storage: any WritableStorage
    let keyring: AgeKeyring
    /// Public keys prune may encrypt a supplement to (`--recipient`, a profile's recipients),
    /// besides those of the identities in `keyring`.
    var recipients: [AgeRecipient] = []
    let cancellation: CancellationFlag
    weak var events: EngineEventSink?
    /// Called before each step that changes the destination (fault-injection tests pause
    /// there: `PruneRequest.removalPause`).
    var beforeEachStep: () -> Void = {}

    // MARK: Kinds

    /// What a consolidation will write and remove: the files to copy, by the kept backup
    /// whose supplement takes them, and the supplements to delete after the backups.
    struct Plan {
        var wanted: [BackupID: [SupplementWriter.Wanted]] = [:]
        /// The host of each owner in `wanted`, as its objects are named, and how it is
        /// encrypted (its supplement is encrypted so too).
        var hosts: [BackupID: String] = [:]
        var encryption: [BackupID: BackupEncryption] = [:]
        /// Supplements to delete once the backups are removed: those of owners removed now
        /// or before, and those a new supplement of their owner replaces.
        var replaced: [SupplementManifest] = []
        /// The newest supplement id there is (new ones sort after it).
        var newestID: BackupID?
        /// Every file kept backups take from backups that are gone or going, with the
        /// SHA-256 they record: what a supplement may be removed only once others hold.
        var needed: [SupplementManifest.HeldFile: String] = [:]
        /// Blocks of big files to copy (see `HeldBlocks`), by the kept backup whose supplement takes them.
        var wantedBlocks: [BackupID: [SupplementWriter.WantedBlocks]] = [:]
        /// Every block kept backups take from backups that are gone or going, by backup and
        /// path, with its digest (as `needed` for files).
        var neededBlocks: [SupplementManifest.HeldFile: [Int: ArraySlice<UInt8>]] = [:]
        /// The supplements that stay (the newest of each kept backup that gets no new one).
        var staying: [SupplementManifest] = []
        /// Supplements read whole while planning (true when they checked out).
        var checked: [BackupID: Bool] = [:]
        /// The archive of each backup being removed that files are copied from, and its id.
        var archives: [String: BackupID] = [:]
        /// Files copied for the backups being removed (not those moved from a replaced
        /// supplement of the same owner), and their bytes before compression.
        var files = 0
        var bytes: Int64 = 0
    }

    /// A backup being removed whose archive does not hold what a kept backup takes from it
    /// (`SupplementWriter.DamagedSource`): prune keeps it, as it would without supplements,
    /// and plans again.
    struct DamagedBackup: Error {
        var backup: BackupID
        /// The kept backup whose supplement was being written.
        var neededBy: BackupID
        var reason: String
    }

    /// A supplement whose archive does not hold what kept backups take from it as recorded
    /// (`SupplementWriter.DamagedSource`): prune leaves it in place (not replaced, its files
    /// not moved: they cannot be had elsewhere), and plans again.
    struct DamagedSupplement: Error {
        /// Its archive's name.
        var archive: String
        var reason: String
    }

    /// What a consolidation did before the removals, and what it removes after them.
    struct Outcome {
        /// Supplements written (committed and read back).
        var written: [SupplementManifest] = []
        var replaced: [SupplementManifest] = []
        /// Bytes the new supplements store.
        var writtenBytes: Int64 = 0
        /// The plan's files and bytes, what is needed and what stays (see `Plan`).
        var files = 0
        var bytes: Int64 = 0
        var needed: [SupplementManifest.HeldFile: String] = [:]
        var neededBlocks: [SupplementManifest.HeldFile: [Int: ArraySlice<UInt8>]] = [:]
        var staying: [SupplementManifest] = []
        var checked: [BackupID: Bool] = [:]
    }

    // MARK: Consolidating

    /// Whether prune may leave `item`'s holders to a supplement rather than keep them (the
    /// caller also makes sure its manifest reads whole): a backup in the clear; an encrypted
    /// one when a key given opens it without asking and its supplement can be encrypted to
    /// exactly its keys (`keys(for:)`).
    func consolidates(_ item: BackupCatalog.Item) -> Bool {
        guard let summary = item.summary else { return false }
        guard let encryption = summary.encryption else { return !summary.sourcesHidden }
        guard keyring.opensWithoutAsking(encryption) else { return false }
        if case .passphrase = encryption { return true }
        return keys(for: encryption) != nil
    }

    /// The keys to encrypt a supplement recorded as `record` with, or nil when they are not
    /// given here: for public keys, each of them given (`recipients`, or an identity's);
    /// for a passphrase, the one that opened a manifest of this run.
    func keys(for record: BackupEncryption) -> AgeEncryption? {
        switch record {
        case .passphrase:
            return keyring.knownPassphrase.map { .passphrase($0) }
        case .recipients(let keys):
            let given = Set(recipients.map(\.encoded) + keyring.identities.map(\.recipient.encoded))
            guard !keys.isEmpty, Set(keys).isSubset(of: given) else { return nil }
            let parsed = keys.compactMap { try? AgeRecipient(parsing: $0) }
            return parsed.count == keys.count ? .recipients(parsed) : nil
        }
    }

    /// Writes the supplements that let the backups in `removing` go while every other
    /// backup of `items` stays whole; `consolidated` names (by manifest) the kept backups
    /// whose files are copied (the others keep what they take from); the supplements whose
    /// archives `leaving` names stay as they are (found damaged). Call holding the lock,
    /// before removing anything; throws (and has removed nothing) when one cannot be written.
    func prepare(items: [BackupCatalog.Item], removing: Set<String>, consolidated: Set<String>, leaving: Set<String> = [],
                 now: Date) throws -> Outcome {
        // What an interrupted run left half-written (a supplement's among them) or half-removed,
        // as a backup does.
        var leftovers = try storage.removeLeftovers()
        leftovers += try InterruptedRemovals.finish(in: storage, objects: try storage.list())
        for name in SupplementContent.strandedSummaries(in: try storage.list()) {
            try storage.delete(name)
            leftovers.append(name)
        }
        if !leftovers.isEmpty {
            events?.handle(.notice("removed \(leftovers.count == 1 ? "1 leftover file" : "\(leftovers.count) leftover files") "
                + "of an interrupted run from \(storage.location)"))
        }
        var objects = try storage.list()
        try recommitOrphans(&objects)
        return try write(try plan(items: items, removing: removing, consolidated: consolidated, leaving: leaving, objects: objects),
                         now: now)
    }

    /// What consolidating lets go of `removing` takes (see `Plan`), from the destination as
    /// listed in `objects`, leaving the supplements whose archives `leaving` names as they
    /// are; reads manifests only (a dry run asks this too).
    func plan(items: [BackupCatalog.Item], removing: Set<String>, consolidated: Set<String>, leaving: Set<String> = [],
              objects: [StoredObject]) throws -> Plan {
        let keyed = KeyedStorage(storage, keyring: keyring)
        let catalog = BackupCatalog(storage: keyed)
        let shelf = SupplementShelf(storage: keyed, objects: objects)
        if let bad = shelf.unreadable.first {
            throw SupplementDamage(reason: "the supplement \(bad.name) cannot be read (\(bad.reason))")
        }
        if !shelf.closed.isEmpty {
            let count = shelf.closed.count == 1 ? "1 encrypted supplement is left as it is: no key given here opens it"
                : "\(shelf.closed.count) encrypted supplements are left as they are: no key given here opens them"
            events?.handle(.notice(count + " (--identity FILE or --passphrase-file FILE)"))
        }
        let kept = items.filter { !removing.contains($0.manifestName) }
        let keptIDs = Set(kept.map(\.id))
        var byID: [BackupID: BackupCatalog.Item] = [:]
        for item in items where removing.contains(item.manifestName) { byID[item.id] = item }

        // The newest supplement of each kept owner holds all its owner still needs of the older ones.
        var newestOfOwner: [BackupID: SupplementManifest] = [:]
        for supplement in shelf.supplements where keptIDs.contains(supplement.owner) {
            newestOfOwner[supplement.owner] = supplement
        }
        var plan = Plan()
        plan.newestID = (shelf.supplements.map(\.id) + shelf.closed.map(\.id)).max()
        let left = shelf.supplements.filter { leaving.contains($0.archiveName) }
        plan.replaced = shelf.supplements.filter { newestOfOwner[$0.owner]?.id != $0.id && !leaving.contains($0.archiveName) }
        // What those hold (with the SHA-256 they say) need not be copied again; nor what a
        // supplement left in place holds (it stays, and where it is damaged, nothing else has it).
        var held: [SupplementManifest.HeldFile: String] = [:]
        for supplement in Array(newestOfOwner.values) + left {
            for entry in supplement.entries {
                if let origin = entry.storedIn { held[.init(origin: origin, path: PathKey(entry.path))] = entry.sha256 }
            }
        }

        // Oldest kept first: each file goes to the oldest kept backup that takes it.
        var lost = 0
        var blockNeeds = BlockNeeds()
        for item in kept.sorted(by: { $0.id < $1.id }) where consolidated.contains(item.manifestName) {
            _ = try catalog.forEachEntry(of: item) { entry in
                if let table = entry.blocks, table.isStoredByBlocks {
                    blockNeeds.add(entry, table: table, of: item, keeping: keptIDs)
                    return
                }
                guard entry.type == .file, let origin = entry.storedIn, !keptIDs.contains(origin) else { return }
                let key = SupplementManifest.HeldFile(origin: origin, path: PathKey(entry.path))
                guard plan.needed[key] == nil else { return }
                plan.needed[key] = entry.sha256 ?? ""
                if held[key] != nil, held[key] == entry.sha256 { return }
                if let gone = byID[origin], let archive = gone.summary?.archive?.name {
                    plan.wanted[item.id, default: []].append(.init(entry: entry, source: archive, location: entry.archiveRange))
                    plan.archives[archive] = origin
                } else if let found = wholeHolder(origin, entry: entry, shelf: shelf, keyed: keyed, checked: &plan.checked) {
                    plan.wanted[item.id, default: []].append(.init(entry: entry, source: found.supplement.archiveName,
                                                                   location: found.entry.archiveRange))
                } else {
                    // Already lost (verify says so): nothing here to keep it by.
                    lost += 1
                    return
                }
                plan.files += 1
                plan.bytes += max(0, entry.size)
                plan.hosts[item.id] = item.summary.map { HostIdentity.fileSafe($0.host) }
                plan.encryption[item.id] = item.summary?.encryption
            }
        }
        if lost > 0 {
            events?.handle(.caution("\(lost == 1 ? "1 file" : "\(lost) files") that kept backups take from earlier ones "
                + "could not be found in \(storage.location); run 'keepsake verify'"))
        }
        try blockNeeds.fillDigests(going: byID, shelf: shelf) { item, paths in try catalog.entries(of: item, at: paths) }
        let unmoved = planBlocks(blockNeeds, into: &plan, holding: Array(newestOfOwner.values) + left, going: byID, shelf: shelf)
        if unmoved > 0 {
            events?.handle(.caution("blocks of \(unmoved == 1 ? "1 big file" : "\(unmoved) big files") that kept backups take "
                + "could not be found whole in one archive of \(storage.location); the supplements holding them stay where they are "
                + "(run 'keepsake verify')"))
        }
        // A kept backup that gets a new supplement takes its present one's files into it,
        // and what kept backups still take of its blocks.
        for owner in Set(plan.wanted.keys).union(plan.wantedBlocks.keys) {
            guard let present = newestOfOwner[owner], !leaving.contains(present.archiveName) else { continue }
            plan.wanted[owner, default: []] += present.entries.map {
                .init(entry: $0, source: present.archiveName, location: $0.archiveRange)
            }
            let taken = Set((plan.wantedBlocks[owner] ?? []).map { SupplementManifest.HeldFile(origin: $0.held.origin, path: PathKey($0.held.path)) })
            for line in present.blocks {
                let key = SupplementManifest.HeldFile(origin: line.origin, path: PathKey(line.path))
                guard !taken.contains(key), let still = BlockNeeds.part(of: line, needed: plan.neededBlocks[key] ?? [:]) else { continue }
                plan.wantedBlocks[owner, default: []].append(.init(held: still, source: present.archiveName,
                                                                   entryPath: SupplementNaming.blocksEntryPath(origin: line.origin, path: line.path),
                                                                   location: line.archiveRange))
            }
            plan.replaced.append(present)
        }
        plan.staying = newestOfOwner.values.filter { plan.wanted[$0.owner] == nil && plan.wantedBlocks[$0.owner] == nil }
        return plan
    }

    /// Plans the copies of the blocks kept backups take from backups gone or going
    /// (`needs`): for each backup and path, all its blocks kept backups take go to the
    /// oldest of them, copied from one archive (the backup's own when it is going, else a
    /// supplement holding them all), unless a supplement in `holding` (which stay) holds
    /// them all already. Returns how many files' blocks are in no one archive (left where they are).
    private func planBlocks(_ needs: BlockNeeds, into plan: inout Plan, holding: [SupplementManifest],
                            going: [BackupID: BackupCatalog.Item], shelf: SupplementShelf) -> Int {
        var unmoved = 0
        for key in needs.order {
            guard let need = needs.byFile[key] else { continue }
            guard need.undigested.isEmpty else {
                // Its digests are recorded nowhere left: where it is stays.
                unmoved += 1
                continue
            }
            plan.neededBlocks[key] = need.digests
            let covers = { (line: HeldBlocks) in
                line.blockSize == need.blockSize && need.digests.allSatisfy { line.holds($0.key, digest: $0.value) }
            }
            if holding.contains(where: { $0.blocks.contains { $0.origin == key.origin && PathKey($0.path) == key.path && covers($0) } }) {
                continue
            }
            let held = need.held(origin: key.origin, path: key.path.bytes)
            var wanted: SupplementWriter.WantedBlocks?
            if let gone = going[key.origin], let archive = gone.summary?.archive?.name {
                wanted = .init(held: held, source: archive, entryPath: need.source.entryPath(for: key.path.bytes),
                               location: need.source.archiveRange)
                plan.archives[archive] = key.origin
            } else if let found = shelf.blockHolders(key.origin, path: key.path.bytes).first(where: { covers($0.blocks) }) {
                wanted = .init(held: held, source: found.supplement.archiveName,
                               entryPath: SupplementNaming.blocksEntryPath(origin: key.origin, path: key.path.bytes),
                               location: found.blocks.archiveRange)
            }
            guard let wanted else {
                unmoved += 1
                continue
            }
            plan.wantedBlocks[need.owner.id, default: []].append(wanted)
            plan.files += 1
            plan.bytes += Int64(need.digests.count) * Int64(need.blockSize)
            plan.hosts[need.owner.id] = need.owner.summary.map { HostIdentity.fileSafe($0.host) }
            plan.encryption[need.owner.id] = need.owner.summary?.encryption
        }
        return unmoved
    }

    /// The supplement to copy `entry` (a file of backup `origin`) from: the only one that
    /// holds it, or, when several say they do, the newest that reads whole (each read once,
    /// `checked`), so that a planted one cannot stand in for the real one.
    private func wholeHolder(_ origin: BackupID, entry: ManifestEntry, shelf: SupplementShelf, keyed: KeyedStorage,
                             checked: inout [BackupID: Bool]) -> (supplement: SupplementManifest, entry: ManifestEntry)? {
        let holders = shelf.holders(origin, path: entry.path, sha256: entry.sha256)
        guard holders.count > 1 else { return holders.first }
        return holders.first { holder in
            if checked[holder.supplement.id] == nil {
                checked[holder.supplement.id] = (try? SupplementContent.checkArchive(of: holder.supplement, in: keyed,
                                                                                       cancellation: cancellation)) != nil
            }
            return checked[holder.supplement.id] == true
        }
    }

    /// Writes the supplements of `plan`, each committed and read back.
    func write(_ plan: Plan, now: Date) throws -> Outcome {
        var writer = SupplementWriter(storage: storage, reading: KeyedStorage(storage, keyring: keyring), cancellation: cancellation)
        writer.betweenCommits = beforeEachStep
        var outcome = Outcome(replaced: plan.replaced, files: plan.files, bytes: plan.bytes, needed: plan.needed,
                              neededBlocks: plan.neededBlocks, staying: plan.staying, checked: plan.checked)
        var previous = plan.newestID
        for owner in Set(plan.wanted.keys).union(plan.wantedBlocks.keys).sorted() {
            let files = plan.wanted[owner] ?? [], blocks = plan.wantedBlocks[owner] ?? []
            guard let host = plan.hosts[owner] else { continue }
            beforeEachStep()
            try cancellation.check()
            let id = BackupID(date: now, after: previous)
            previous = id
            var encryption: SupplementWriter.Encryption?
            if let record = plan.encryption[owner] {
                guard let keys = keys(for: record) else {
                    throw EngineError.invalidRequest("the keys backup \(owner) is encrypted with (\(record.label)) are not given here")
                }
                encryption = .init(record: record, keys: keys)
            }
            let written: SupplementManifest
            do {
                written = try writer.write(host: host, id: id, owner: owner, now: now, wanted: files, blocks: blocks, encryption: encryption)
            } catch let damaged as SupplementWriter.DamagedSource {
                guard let backup = plan.archives[damaged.archive] else {
                    // A supplement's archive: what only it holds cannot be had elsewhere.
                    throw DamagedSupplement(archive: damaged.archive, reason: damaged.reason)
                }
                throw DamagedBackup(backup: backup, neededBy: owner, reason: damaged.reason)
            }
            outcome.written.append(written)
            outcome.writtenBytes += written.archiveSize
            let blocksSaid = blocks.isEmpty ? "" : " and blocks of \(blocks.count == 1 ? "1 big file" : "\(blocks.count) big files")"
            events?.handle(.notice("wrote supplement \(id) for backup \(owner): \(files.count == 1 ? "1 file" : "\(files.count) files")"
                + "\(blocksSaid) it takes from backups prune removes (\(written.archiveSize) bytes)"))
        }
        return outcome
    }

    /// Deletes the supplements `outcome` replaced (manifest first, which un-commits each);
    /// returns the bytes freed. One is deleted only when every file it holds that a kept
    /// backup needs is held, with the SHA-256 recorded, by a supplement this prune wrote and
    /// read back, or by one that stays and reads whole (checked then, once): a supplement
    /// planted or copied in with a newer id never makes prune delete what only an older one
    /// holds. A failure is said, and the next prune finishes the job.
    func removeReplaced(_ outcome: Outcome) -> Int64 {
        var written: [SupplementManifest.HeldFile: String] = [:]
        for supplement in outcome.written {
            for entry in supplement.entries {
                if let origin = entry.storedIn { written[.init(origin: origin, path: PathKey(entry.path))] = entry.sha256 }
            }
        }
        var staying: [SupplementManifest.HeldFile: SupplementManifest] = [:]
        for supplement in outcome.staying {
            for entry in supplement.entries {
                if let origin = entry.storedIn { staying[.init(origin: origin, path: PathKey(entry.path))] = supplement }
            }
        }
        var whole = outcome.checked
        let keyed = KeyedStorage(storage, keyring: keyring)
        var freed: Int64 = 0
        let writtenBlocks = outcome.written.flatMap(\.blocks)
        /// Whether a supplement that stays reads whole (read once).
        func readsWhole(_ other: SupplementManifest) -> Bool {
            if whole[other.id] == nil {
                whole[other.id] = (try? SupplementContent.checkArchive(of: other, in: keyed, cancellation: cancellation)) != nil
            }
            return whole[other.id] == true
        }
        for supplement in outcome.replaced {
            var safe = true
            // Each block it holds that kept backups take must be in a supplement written now,
            // or in one that stays and reads whole.
            for line in supplement.blocks {
                let key = SupplementManifest.HeldFile(origin: line.origin, path: PathKey(line.path))
                for (block, digest) in outcome.neededBlocks[key] ?? [:] where line.holds(block, digest: digest) {
                    let same = { (other: HeldBlocks) in
                        other.origin == line.origin && other.path == line.path && other.holds(block, digest: digest)
                    }
                    if writtenBlocks.contains(where: same) { continue }
                    guard let other = outcome.staying.first(where: { $0.blocks.contains(where: same) }), readsWhole(other) else {
                        safe = false
                        break
                    }
                }
                if !safe { break }
            }
            for entry in supplement.entries where safe {
                guard let origin = entry.storedIn else { continue }
                let key = SupplementManifest.HeldFile(origin: origin, path: PathKey(entry.path))
                guard let sha = outcome.needed[key], written[key] != sha else { continue }
                guard let other = staying[key], other.entries.contains(where: { $0.storedIn == origin && $0.path == entry.path
                    && $0.sha256 == sha }), readsWhole(other) else {
                    safe = false
                    break
                }
            }
            guard safe else {
                events?.handle(.caution("the supplement \(supplement.id) is kept: it holds files kept backups need that no other "
                    + "supplement holds whole (run 'keepsake verify')"))
                continue
            }
            do {
                beforeEachStep()
                try storage.delete(supplement.manifestName)
                beforeEachStep()
                try storage.delete(supplement.archiveName)
                freed += supplement.archiveSize
                if supplement.encryption != nil { try storage.delete(supplement.summary.summaryName) }
            } catch {
                events?.handle(.caution("the supplement \(supplement.id) is no longer needed but could not be removed (\(error)); "
                    + "the next prune removes it"))
            }
        }
        return freed
    }

    /// Commits again each supplement archive whose manifest is missing, from the copy of
    /// its manifest inside it, checked whole: one an interrupted prune wrote (an archive is
    /// visible only once whole; its files are what it was planned to hold) or one whose
    /// manifest was lost. One that cannot be is set aside (`NAME.unrecoverable`), never
    /// deleted: kept backups may take files from it.
    private func recommitOrphans(_ objects: inout [StoredObject]) throws {
        let orphans = SupplementContent.orphans(in: objects)
        for orphan in orphans {
            do {
                _ = try SupplementContent.commitAgain(orphan.name, id: orphan.id, in: storage, keyring: keyring,
                                                     keys: { keys(for: $0) }, cancellation: cancellation)
                events?.handle(.notice("committed supplement \(orphan.id) again from the copy of its manifest in \(orphan.name)"))
            } catch let error as Interruption {
                throw error
            } catch let error as EncryptionError {
                // Encrypted, and its keys not given here: left for a prune that has them.
                events?.handle(.notice("\(orphan.name) has no manifest and is left as it is: \(error)"))
            } catch {
                let aside = orphan.name + ".unrecoverable"
                try storage.move(orphan.name, to: aside)
                events?.handle(.caution("\(orphan.name) has no manifest and cannot be read (\(error)); it was set aside as \(aside) "
                    + "— run 'keepsake verify' to see what needs it"))
            }
        }
        if !orphans.isEmpty { objects = try storage.list() }
    }
}

extension ManifestEntry {
    /// Where the entry lies in its archive's tar stream, when its manifest line says.
    var archiveRange: Range<Int64>? {
        guard let archiveOffset, let archiveLength, archiveOffset >= 0, archiveLength >= 0,
              archiveOffset <= Int64.max - archiveLength else { return nil }
        return archiveOffset..<(archiveOffset + archiveLength)
    }
}
