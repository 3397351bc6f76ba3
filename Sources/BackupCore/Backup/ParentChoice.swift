import Foundation
import KeepsakeAge
import KeepsakeEncryption
import KeepsakeModel
import KeepsakeSigning
import KeepsakeStorage
import KeepsakeSupport

/// Which backup a new one builds on: the newest backup of the same sources on this host, when
/// its chain may grow (same keys, same signing key, not too long or too old) and every
/// archive the chain holds is still there and not found damaged. Otherwise the new backup is
/// full, and the reason is reported as a notice (a chain's rules) or a caution (damage).
struct ParentChoice {
    // MARK: Result

    /// The backup to build on, with its manifest open to be read in step with the scan.
    struct Parent {
        let summary: BackupSummary
        let cursor: ParentCursor
        /// Its catalog entry, when its manifest was read from the destination (not from this
        /// host's change-detection cache).
        let item: BackupCatalog.Item?
        /// Where its manifest was read from (the destination, or this host's cache): the
        /// manifests of its chain are read there too (`BlockBasis`).
        let manifests: KeyedStorage
    }

    /// The parent; nil for a full backup.
    private(set) var parent: Parent?
    /// The original size of the newest backup of the same sources on this host, whether or
    /// not it became the parent: the progress bar's total.
    private(set) var lastSizeOfSources: Int64?

    // MARK: Inputs

    private let request: BackupRequest
    /// The destination, written only to note a damaged parent (see `DamageRecord`).
    private let destination: any WritableStorage
    /// The destination read through the backup's keyring.
    private let storage: KeyedStorage
    private weak var events: EngineEventSink?
    /// The destination's objects, listed once for every step that asks (a bucket's listing
    /// is a request per thousand objects), not at all when none does.
    private let listing = ObjectListing()

    /// The sizes of a destination's objects by name, listed on the first question (and
    /// again after a listing that failed).
    private final class ObjectListing {
        private var sizes: [String: Int64]?

        func sizes(of storage: any ReadableStorage) throws -> [String: Int64] {
            if let sizes { return sizes }
            let listed = Dictionary(try storage.list().map { ($0.name, $0.size) }, uniquingKeysWith: { first, _ in first })
            sizes = listed
            return listed
        }
    }

    /// The newest backup of the same sources on this host, and where its manifest is read
    /// from (the destination, or for encrypted backups this host's cache).
    private struct Candidate {
        let item: BackupCatalog.Item
        let summary: BackupSummary
        let manifest: String
        let storage: KeyedStorage
    }

    // MARK: Choosing

    /// Chooses the parent of a backup of `sources` (its scan roots) into `destination`,
    /// whose encrypted manifests `keyring` opens. Throws when this backup would store in the
    /// clear what this host stored encrypted, or when the destination cannot be listed.
    init(request: BackupRequest, sources: [String], catalog: BackupCatalog, destination: any WritableStorage,
         keyring: AgeKeyring, cache: ChangeDetectionCache?, cached: [BackupID: (manifestName: String, summary: BackupSummary)],
         events: EngineEventSink?) throws {
        self.request = request
        self.destination = destination
        storage = KeyedStorage(destination, keyring: keyring)
        self.events = events
        let items = try catalog.items()
        try Self.checkEncryptionContinues(request, items: items, in: storage)
        cautionIfSigningWentMissing(items)
        guard request.stdinName == nil else { return }
        let (candidate, unknown) = Self.newest(of: Set(sources), items: items, request: request, storage: storage,
                                               cache: cache, cached: cached)
        lastSizeOfSources = candidate?.summary.originalBytes
        guard !request.chain.forceFull else { return }
        guard let candidate else {
            if let unknown, request.encryption != nil {
                events?.handle(.notice("making a full backup: this host keeps no change-detection state for its encrypted backup "
                    + "\(unknown)\(cache.map { " in \($0.location)" } ?? "") (it cannot read its own encrypted backups)"))
            }
            return
        }
        if let rule = reasonForANewChain(after: candidate) {
            events?.handle(.notice("starting a new chain: " + rule))
            return
        }
        let chain = try archivesOfTheChain(of: candidate, items: items)
        if let damage = chain.damage {
            events?.handle(.caution("starting a new chain: " + damage))
            return
        }
        if request.chain.fullEvery == nil, chain.archives >= ChainPolicy.archiveLimit {
            events?.handle(.notice("starting a new chain: a restore of the next backup would read \(chain.archives + 1) archives "
                + "(at most \(ChainPolicy.archiveLimit) without --full-every)"))
            return
        }
        // The manifest itself is read in step with the scan, a line at a time.
        do {
            let cursor = try ParentCursor(id: candidate.summary.id,
                                          source: try SidecarManifest.open(candidate.manifest, in: candidate.storage, workers: 1),
                                          name: candidate.manifest)
            let inDestination = candidate.storage.stored === destination
            parent = Parent(summary: candidate.summary, cursor: cursor, item: inDestination ? candidate.item : nil,
                            manifests: candidate.storage)
        } catch let error as Interruption {
            throw error
        } catch {
            events?.handle(.caution("making a full backup: the manifest of \(candidate.item.id) cannot be read (\(error))"))
        }
    }

    // MARK: Steps

    /// Refuses to store in the clear what this host stored encrypted last time, unless asked
    /// to: a cron job whose key setting went missing must not quietly send plain backups.
    private static func checkEncryptionContinues(_ request: BackupRequest, items: [BackupCatalog.Item],
                                                 in storage: KeyedStorage) throws {
        guard request.encryption == nil, !request.allowUnencrypted,
              let last = items.last(where: { $0.summary?.host == request.host }),
              let encryption = last.summary?.encryption else { return }
        throw EngineError.invalidRequest("The last backup of this host in \(storage.location), \(last.id), is encrypted "
            + "(\(encryption.label)), and this one would not be. Give the same --recipient, --recipients-file or --passphrase-file "
            + "(or the profile's setting) as before, or --no-encryption to store this one in the clear")
    }

    /// A cron job whose key setting went missing: a restore that checks signatures would
    /// refuse this backup, so it is said (the backup is still made).
    private func cautionIfSigningWentMissing(_ items: [BackupCatalog.Item]) {
        guard request.signingKey == nil, let last = items.last(where: { $0.summary?.host == request.host }),
              let stem = BackupNaming.stem(of: last.manifestName),
              (try? listing.sizes(of: destination))?[BackupNaming.signatureName(forStem: stem)] != nil else { return }
        events?.handle(.caution("this backup is not signed, though the last backup of this host, \(last.id), is: "
            + "give --signing-key (or the profile's signing-key) as before"))
    }

    /// The newest backup of exactly `sources` on this host that is not dated after this run
    /// (planted, or made by a clock gone wrong). An encrypted backup's sources and manifest
    /// are hidden from this host: what it knows of its own encrypted backups is what it
    /// cached when it made them; `unknown` is the newest it could not see into.
    private static func newest(of sources: Set<String>, items: [BackupCatalog.Item], request: BackupRequest,
                               storage: KeyedStorage, cache: ChangeDetectionCache?,
                               cached: [BackupID: (manifestName: String, summary: BackupSummary)])
        -> (candidate: Candidate?, unknown: BackupID?) {
        var unknown: BackupID?
        for item in items.reversed() {
            guard let summary = item.summary, summary.host == request.host,
                  !BackupCatalog.isFutureDated(item, now: request.now) else { continue }
            if !summary.sourcesHidden {
                if Set(summary.sources) == sources {
                    return (Candidate(item: item, summary: summary, manifest: item.manifestName, storage: storage), unknown)
                }
            } else if let cache, let copy = cached[item.id], copy.summary.id == item.id {
                if Set(copy.summary.sources) == sources {
                    // This host's own copy, in the clear: no key is needed.
                    let copyStorage = KeyedStorage(cache.storage, keyring: .empty)
                    return (Candidate(item: item, summary: copy.summary, manifest: copy.manifestName, storage: copyStorage), unknown)
                }
            } else if unknown == nil {
                unknown = item.id
            }
        }
        return (nil, unknown)
    }

    /// Why the chain of `candidate` must not grow (worded after "starting a new chain: "),
    /// or nil when it may.
    private func reasonForANewChain(after candidate: Candidate) -> String? {
        let summary = candidate.summary
        let newest = candidate.item.id
        // A chain keeps its keys: whoever can open the new backup can open what it relies on.
        let mine = request.encryptionRecord
        let sameKeys: Bool
        switch (mine, summary.encryption) {
        case (nil, nil): sameKeys = true
        case (let new?, let old?): sameKeys = new.canShareChain(with: old)
        default: sameKeys = false
        }
        if !sameKeys {
            return "\(newest) is \(summary.encryption?.label ?? "not encrypted"), "
                + "this backup \(mine.map { "is " + $0.label } ?? "is not encrypted")"
        }
        // A signed chain is signed throughout: a restore that checks signatures reads
        // every archive of it (see SignatureCheck).
        if let key = request.signingKey, !isSigned(candidate.item, by: key.publicKey) {
            return "\(newest) is not signed by this host's signing key "
                + "(\(key.publicKey)), and a signed backup builds only on backups signed by the same key"
        }
        // The defaults, where prune keeps chains (see `ChainPolicy.defaultFullEvery`).
        let chainsKept = request.chain.fullEvery == nil || request.chain.fullIfOlderThan == nil ? !hasSupplements() : false
        if let fullEvery = request.chain.fullEvery ?? (chainsKept ? ChainPolicy.defaultFullEvery : nil),
           summary.chainLength >= fullEvery {
            return "the last one holds \(summary.chainLength) backups (--full-every \(fullEvery))"
        }
        if let limit = request.chain.fullIfOlderThan ?? (chainsKept ? ChainPolicy.defaultFullIfOlderThan : nil) {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
            if summary.chainStarted < limit.subtract(from: request.now, calendar: calendar) {
                return "the last one began \(Timestamp.iso8601(summary.chainStarted)) (--full-if-older-than \(limit))"
            }
        }
        // Every archive the parent relies on must be known: its summary names them.
        if summary.reliesOn == nil && summary.parent != nil {
            return "\(newest) does not say which backups it relies on"
        }
        return nil
    }

    /// Whether the destination holds a supplement of this host: prune writes them here, so it
    /// keeps a chain's archives few and a chain need not restart by its length or age.
    private func hasSupplements() -> Bool {
        guard let sizes = try? listing.sizes(of: destination) else { return false }
        let host = HostIdentity.fileSafe(request.host)
        return sizes.keys.contains { SupplementNaming.parts(ofManifestName: $0)?.host == host }
    }

    /// Whether `item` has a signature by `key` made for it (`SignatureCheck.vouchesFor`: a
    /// signature copied from another backup does not count; the objects themselves are not
    /// read again here, a restore checks them all).
    private func isSigned(_ item: BackupCatalog.Item, by key: SigningPublicKey) -> Bool {
        guard let sizes = try? listing.sizes(of: destination) else { return false }
        return SignatureCheck(key: key).vouchesFor(item, in: destination, sizes: sizes)
    }

    /// What of the chain `candidate` ends is missing or damaged (worded after "starting a new
    /// chain: "), nil when every archive it relies on, and its own, is there, of the size
    /// it was stored with, and not recorded damaged; and how many archives a restore of it
    /// reads (its own, the backups' it relies on that are there, and the supplements that hold
    /// the files of those that are gone). A cut archive is seen from its size alone, without
    /// reading it, and recorded damaged for the next runs.
    private func archivesOfTheChain(of candidate: Candidate, items: [BackupCatalog.Item]) throws -> (damage: String?, archives: Int) {
        let newest = candidate.item.id
        var archives = Set<String>()
        var needed = Set(candidate.summary.reliesOn ?? [])
        needed.insert(candidate.summary.id)
        let sizes = try listing.sizes(of: destination)
        let names = Set(sizes.keys)
        var shelf: SupplementShelf?
        for id in needed.sorted() {
            let which = id == newest ? "backup \(id)" : "backup \(id), which \(newest) relies on,"
            guard let item = items.first(where: { $0.id == id }), let facts = item.summary?.archive,
                  let size = sizes[facts.name] else {
                // A backup prune let go: the supplements that hold its files are there, whole
                // as far as their sizes tell (verify reads them).
                if id != newest {
                    // Encrypted ones by their summaries in the clear, whatever keys this host
                    // holds: no manifest opened (with a passphrase, each would cost a scrypt).
                    let supplements = shelf ?? SupplementShelf(storage: KeyedStorage(destination, keyring: .empty),
                                                               objects: sizes.map { StoredObject(name: $0.key, size: $0.value) })
                    shelf = supplements
                    let holding = supplements.summaries(holdingFilesOf: [id])
                    if !holding.isEmpty, holding.allSatisfy({ sizes[$0.archiveName] == $0.archiveSize }) {
                        archives.formUnion(holding.map(\.archiveName))
                        continue
                    }
                }
                return ("\(which) is missing or damaged", archives.count)
            }
            if let record = DamageRecord.stored(for: item, names: names, in: destination) {
                return ("\(which) was \(record.description)", archives.count)
            }
            if size != facts.size {
                try? DamageRecord(id: id, found: request.now, foundBy: "backup").store(for: item, in: destination)
                return ("\(which) has an archive of \(size) bytes, stored as "
                    + "\(facts.size): it is damaged (`keepsake verify \(id)` says more)", archives.count)
            }
            archives.insert(facts.name)
        }
        return (nil, archives.count)
    }
}
