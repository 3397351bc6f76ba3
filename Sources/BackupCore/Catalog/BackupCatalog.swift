import Foundation
import KeepsakeAge
import KeepsakeEncryption
import KeepsakeModel
import KeepsakeStorage
import KeepsakeSupport

/// The backups in a destination, read from the manifests beside the archives (never
/// from the archives themselves, so listing is cheap).
public final class BackupCatalog {
    // MARK: Types

    /// One committed backup as listed.
    public struct Item: Sendable {
        public var id: BackupID
        public var manifestName: String
        /// The summary, or nil when the manifest's first line cannot be read.
        public var summary: BackupSummary?
        /// Why the summary could not be read, or why it is not trusted.
        public var problem: String?
        /// True when the backup's objects do not agree on what it is: its name and its summary
        /// name another host, id or archive, or another manifest has the same id. Keepsake
        /// writes neither, so someone else did: such a backup is listed as damaged (its summary
        /// is nil), never picked as `latest` or as a parent, and never removed by prune.
        public var isMisnamed = false
    }

    // MARK: State

    private let storage: KeyedStorage

    /// A catalog of `storage`, opening encrypted manifests with its keyring.
    public init(storage: KeyedStorage) {
        self.storage = storage
    }

    /// A catalog of `storage`, opening encrypted manifests with `keyring`.
    public convenience init(storage: any ReadableStorage, keyring: AgeKeyring) {
        self.init(storage: KeyedStorage(storage, keyring: keyring))
    }

    // MARK: Constants

    /// How far after a command's clock a backup's id may be dated and still count as made:
    /// hosts sharing a destination have clocks a little apart, never a day.
    public static let futureTolerance: TimeInterval = 86_400

    // MARK: Listing

    /// All committed backups, oldest first. A backup whose name and summary disagree, or
    /// whose id another backup has too, is listed with `isMisnamed` set and no summary.
    public func items() throws -> [Item] {
        var items: [Item] = []
        let objects = try storage.list()
        let names = Set(objects.map(\.name))
        for object in objects {
            guard let id = BackupNaming.id(fromManifestName: object.name) else { continue }
            // A plain manifest beside a compressed one of the same backup (left by a
            // repair with an older Keepsake, say) is not a second backup.
            if object.name.hasSuffix(BackupNaming.plainManifestSuffix),
               names.contains(String(object.name.dropLast(BackupNaming.plainManifestSuffix.count)) + BackupNaming.manifestSuffix) {
                continue
            }
            do {
                let read = { try BackupCatalog.summary(ofManifest: object.name, in: self.storage) }
                // Read once a command: each step of a run lists the backups again.
                let summary = try storage.memo?.value(of: object.name, size: object.size, read) ?? read()
                if let disagreement = BackupCatalog.disagreement(summary, manifestName: object.name) {
                    items.append(Item(id: id, manifestName: object.name, summary: nil, problem: disagreement, isMisnamed: true))
                } else {
                    items.append(Item(id: id, manifestName: object.name, summary: summary, problem: nil))
                }
            } catch {
                items.append(Item(id: id, manifestName: object.name, summary: nil, problem: "\(error)"))
            }
        }
        return BackupCatalog.markingSharedIDs(items).sorted { ($0.id, $0.manifestName) < ($1.id, $1.manifestName) }
    }

    /// Why the summary read from `manifestName` cannot be that backup's, or nil when they
    /// agree: the name's host and id are the summary's, and the archive the summary names
    /// is the one of that name. Every other object name is derived from these, so a summary
    /// that passes cannot make a command read, replace or remove another backup's objects.
    static func disagreement(_ summary: BackupSummary, manifestName: String) -> String? {
        guard let named = BackupNaming.parts(ofManifestName: manifestName) else {
            return "its name \(manifestName) is not of the form HOST_ID that Keepsake writes"
        }
        guard summary.id == named.id else {
            return "its name says backup \(named.id) but its summary says \(summary.id)"
        }
        guard HostIdentity.fileSafe(summary.host) == named.host else {
            return "its name says host '\(named.host)' but its summary says '\(summary.host)'"
        }
        if let facts = summary.archive {
            // Encrypted or not by its name (a host's cache keeps the plain manifest of an
            // encrypted backup): either way an object of this backup's own.
            let expected = [false, true].map {
                BackupNaming.archiveName(host: named.host, id: named.id, compression: summary.compression, encrypted: $0)
            }
            guard expected.contains(facts.name) else {
                return "its summary names the archive \(facts.name) where its own is \(expected[summary.encryption == nil ? 0 : 1])"
            }
        }
        return nil
    }

    /// `items` with every backup whose id another one has too marked misnamed: one of them
    /// was not made here under its name, and nothing says which.
    private static func markingSharedIDs(_ items: [Item]) -> [Item] {
        var names: [BackupID: [String]] = [:]
        for item in items { names[item.id, default: []].append(item.manifestName) }
        guard names.values.contains(where: { $0.count > 1 }) else { return items }
        return items.map { item in
            guard let all = names[item.id], all.count > 1 else { return item }
            var marked = item
            marked.summary = nil
            marked.isMisnamed = true
            marked.problem = "its id \(item.id) is also the id of " + all.filter { $0 != item.manifestName }.joined(separator: ", ")
            return marked
        }
    }

    /// Whether `item`'s id is dated more than `futureTolerance` after `now`: no clock that
    /// made it agreed with this one, so it is not taken for the newest without a word.
    public static func isFutureDated(_ item: Item, now: Date) -> Bool {
        guard let date = item.id.date else { return false }
        return date > now.addingTimeInterval(futureTolerance)
    }

    /// The summary of the backup whose manifest is `manifestName`: its first line, or for an
    /// encrypted backup the summary kept in the clear beside it (no key is needed to list).
    static func summary(ofManifest manifestName: String, in storage: KeyedStorage) throws -> BackupSummary {
        if let publicName = BackupNaming.publicSummaryName(forManifest: manifestName) {
            let bytes: [UInt8]
            do {
                bytes = try storage.readObject(publicName, limit: 1 << 20)
            } catch StorageError.notFound {
                throw ManifestError.notAManifest(reason: "\(publicName), the summary of an encrypted backup, is missing")
            }
            return try Manifest.parseSummary(bytes)
        }
        return try Manifest.parseSummary(try SidecarManifest.firstLine(manifestName, in: storage))
    }

    /// `item` with the whole summary of its encrypted manifest (its sources too), when
    /// `storage` opens it; otherwise `item` as listed.
    public func revealed(_ item: Item) -> Item {
        guard let summary = item.summary, summary.sourcesHidden, let full = try? encryptedSummary(of: item), full.id == item.id
        else { return item }
        var revealed = item
        revealed.summary = full
        return revealed
    }

    /// `items` with their sources, decrypting one manifest per host and source set (the
    /// newest): every backup of a set has the same sources, and each manifest opened with a
    /// passphrase costs a scrypt run. `opens` says which items the keys may open; an item
    /// whose set cannot be revealed stays as listed.
    public func revealed(_ items: [Item], opens: (Item) -> Bool) -> [Item] {
        var sourcesOfSet: [String: [String]?] = [:]
        return items.reversed().map { item -> Item in
            guard let summary = item.summary, summary.sourcesHidden, opens(item) else { return item }
            guard let set = summary.sourceSet else { return revealed(item) }
            let key = summary.host + "\u{0}" + set
            if sourcesOfSet[key] == nil {
                let newest = revealed(item)
                sourcesOfSet[key] = .some(newest.summary?.sourcesHidden == false ? newest.summary?.sources : nil)
            }
            guard let sources = sourcesOfSet[key] ?? nil else { return item }
            var shown = item
            shown.summary?.sources = sources
            shown.summary?.sourcesHidden = false
            return shown
        }.reversed()
    }

    /// The whole summary of `item`'s encrypted manifest (its first line, decrypted).
    /// - Throws: what reading or decrypting it throws (`EncryptionError` without a key).
    func encryptedSummary(of item: Item) throws -> BackupSummary {
        try Manifest.parseSummary(try SidecarManifest.firstLine(item.manifestName, in: storage))
    }

    /// The newest committed backup's id (from object names only; no manifest is read).
    /// With `notAfter`, ids dated more than `futureTolerance` after it are left out: a
    /// backup planted with a date in 2099 must not drag every later id there.
    public func newestID(notAfter now: Date? = nil) throws -> BackupID? {
        try storage.list().compactMap { object -> BackupID? in
            guard let id = BackupNaming.id(fromManifestName: object.name) else { return nil }
            if let now, let date = id.date, date > now.addingTimeInterval(BackupCatalog.futureTolerance) { return nil }
            return id
        }.max()
    }

    /// Finds one backup by full id, unique prefix, or `latest`: the newest of the hosts
    /// `hosts` selects (an id or a prefix names a backup of any host). `latest` passes over
    /// misnamed backups and those dated more than a day after `now`.
    public func resolve(_ reference: String, hosts: HostSelection = .all, source: String? = nil, now: Date = Date()) throws -> Item {
        try resolve(reference, among: try items(), hosts: hosts, source: source, now: now)
    }

    /// `resolve` among `listed`, the destination's items as `items()` lists them.
    func resolve(_ reference: String, among listed: [Item], hosts: HostSelection, source: String?, now: Date = Date()) throws -> Item {
        guard reference == "latest" else { return try resolveID(reference, among: listed) }
        let selectable = { (item: Item) in !item.isMisnamed && !BackupCatalog.isFutureDated(item, now: now) }
        let all = listed.filter(selectable)
        let ofHosts = listed.filter { BackupCatalog.item($0, isOf: hosts) }
        if !ofHosts.contains(where: selectable), let passed = ofHosts.last {
            // Nothing else to mean: say why the backups there are not taken.
            if BackupCatalog.isFutureDated(passed, now: now) {
                throw EngineError.invalidRequest("The newest backup in \(storage.location), \(passed.id), is dated after this "
                    + "machine's clock (\(Timestamp.iso8601(now))), as is every other 'latest' could mean: check the clock, or "
                    + "name a backup by its id (see 'keepsake list')")
            }
            throw EngineError.invalidRequest("Backup \(passed.id) in \(storage.location) is not taken for 'latest': "
                + "\(passed.problem ?? "it is misnamed"); nor is any other there. Run 'keepsake verify'")
        }
        if let source {
            guard let newest = all.last(where: { BackupCatalog.item($0, isOf: hosts) && BackupCatalog.item($0, holds: source) }) else {
                let sets = BackupCatalog.sourceSets(all.filter { BackupCatalog.item($0, isOf: hosts) })
                throw EngineError.invalidRequest("No backup in \(storage.location) holds \(source)"
                    + (sets.isEmpty ? "" : "; its backups are of " + sets.map { $0.joined(separator: " ") }.joined(separator: "; "))
                    + ". Give --source one of those paths, or leave it out")
            }
            return newest
        }
        guard let newest = all.last(where: { BackupCatalog.item($0, isOf: hosts) }) else {
            if case .only(let host) = hosts, !all.isEmpty, !all.allSatisfy({ $0.summary == nil }) {
                let others = Set(all.compactMap { $0.summary?.host }).sorted()
                throw EngineError.invalidRequest("No backup of host '\(host)' in \(storage.location); it holds backups of "
                    + "\(others.map { "'\($0)'" }.joined(separator: ", ")): give --host NAME or --all-hosts")
            }
            throw EngineError.backupNotFound(reference: reference, destination: storage.location)
        }
        return newest
    }

    /// The one backup whose id is `reference` or begins with it. Two backups of one id are
    /// never one of them picked: the id is refused, naming both objects.
    private func resolveID(_ reference: String, among all: [Item]) throws -> Item {
        let matches = all.filter { $0.id.rawValue.hasPrefix(reference) }
        if matches.count == 1, let match = matches.first { return match }
        let exact = matches.filter { $0.id.rawValue == reference }
        if exact.count > 1 {
            throw EngineError.invalidRequest("Backup id \(reference) is the id of \(exact.count) backups in \(storage.location) ("
                + exact.map(\.manifestName).joined(separator: ", ") + "); Keepsake never makes two, so one of them was put there "
                + "by someone else: remove the one you do not recognise")
        }
        if let exact = exact.first { return exact }
        if matches.isEmpty || reference.isEmpty {
            throw EngineError.backupNotFound(reference: reference, destination: storage.location)
        }
        throw EngineError.ambiguousReference(reference: reference, candidates: matches.map(\.id.rawValue))
    }

    /// Whether `item` backed up `path` (one of its sources, or a folder or file inside one).
    /// Encrypted backups hide their sources: they hold no path as far as this tells.
    public static func item(_ item: Item, holds path: String) -> Bool {
        guard let sources = item.summary?.sources else { return false }
        let wanted = PathBytes.from(path)
        return sources.contains { PathBytes.isSameOrBelow(wanted, PathBytes.from($0)) }
    }

    /// The distinct source sets of `items`, in the order their newest backups come (newest
    /// first); encrypted backups, whose sources are hidden, are left out.
    public static func sourceSets(_ items: [Item]) -> [[String]] {
        var sets: [[String]] = []
        for item in items.reversed() {
            guard let summary = item.summary, !summary.sourcesHidden, !sets.contains(summary.sources) else { continue }
            sets.append(summary.sources)
        }
        return sets
    }

    /// Whether `item` is a backup of `hosts`: by its summary, or, when that cannot be read,
    /// by the host its name begins with (so a damaged manifest is still found, and reported).
    static func item(_ item: Item, isOf hosts: HostSelection) -> Bool {
        if let summary = item.summary { return hosts.includes(summary.host) }
        switch hosts {
        case .all: return true
        case .only(let host): return item.manifestName.hasPrefix(HostIdentity.fileSafe(host) + "_")
        }
    }

    /// The whole manifest of a backup.
    public func manifest(of item: Item) throws -> Manifest {
        do {
            return try checked(try SidecarManifest.load(item.manifestName, from: storage), of: item)
        } catch let error as ManifestError {
            throw EngineError.manifestUnreadable(name: item.manifestName, reason: error.description)
        }
    }

    /// `manifest` when it is the backup `item` was listed as; otherwise
    /// `EngineError.misnamed`: its summary names another host, id or archive than
    /// its object's name, or, for an encrypted backup, differs from the summary in the clear
    /// that listing, `latest` and prune went by (objects swapped, or the clear one edited).
    private func checked(_ manifest: Manifest, of item: Item) throws -> Manifest {
        try check(manifest.summary, of: item)
        return manifest
    }

    private func check(_ summary: BackupSummary, of item: Item) throws {
        // A destination lists only names of the form HOST_ID (any other is misnamed); a lone
        // archive's manifest may have been renamed by whoever keeps it, and is its own.
        if BackupNaming.parts(ofManifestName: item.manifestName) != nil,
           let disagreement = BackupCatalog.disagreement(summary, manifestName: item.manifestName) {
            throw EngineError.misnamed(name: item.manifestName, reason: disagreement)
        }
        if let clear = item.summary, clear.sourcesHidden, summary.publicSummary != clear {
            throw EngineError.misnamed(name: item.manifestName, reason: "the summary in the clear beside it differs from "
                + "the encrypted manifest's: one of them was changed after the backup was made")
        }
    }

    /// The backups whose archives hold content `item` needs to be restored: its summary's
    /// `relies_on`, or, for summaries written before that field, every `in` of its
    /// manifest. Its parent is not among them unless it holds such content: prune may have
    /// removed a parent that a backup no longer needs.
    /// - Throws: `EngineError.manifestUnreadable` when the answer needs the manifest and it
    ///   cannot be read whole.
    public func reliedOn(_ item: Item) throws -> Set<BackupID> {
        if let reliesOn = item.summary?.reliesOn { return Set(reliesOn) }
        var ids = Set<BackupID>()
        _ = try forEachEntry(of: item) { entry in
            if let holder = entry.storedIn { ids.insert(holder) }
            if let blocks = entry.blocks { ids.formUnion(blocks.holders) }
        }
        ids.remove(item.id)
        return ids
    }

    /// The lines of a backup's manifest for the entries at `paths` (the last one of each),
    /// read front to back without keeping the others.
    func entries(of item: Item, at paths: Set<PathKey>) throws -> [PathKey: ManifestEntry] {
        var found: [PathKey: ManifestEntry] = [:]
        _ = try forEachEntry(of: item, keeping: { path, _ in paths.contains(PathKey(Array(path))) }) { entry in
            found[PathKey(entry.path)] = entry
        }
        return found
    }

    /// Reads a backup's manifest front to back, handing each entry `keeping` accepts to
    /// `visit` without keeping any (see `SidecarManifest.forEachEntry`); returns the summary.
    public func forEachEntry(of item: Item, keeping: Manifest.EntryFilter? = nil,
                             _ visit: (ManifestEntry) throws -> Void) throws -> BackupSummary {
        do {
            // Checked once read (the entries stream past first): a reader that acts on
            // entries loads the manifest whole instead, checked before it returns.
            let summary = try SidecarManifest.forEachEntry(item.manifestName, in: storage, keeping: keeping, visit)
            try check(summary, of: item)
            return summary
        } catch let error as ManifestError {
            throw EngineError.manifestUnreadable(name: item.manifestName, reason: error.description)
        }
    }

    /// What a restore of `selections` (paths and patterns, as `restore` takes them) needs
    /// of a backup's manifest: the selected entries, every hard link, and the files that
    /// selected hard links name; the whole manifest when nothing is selected. Restoring one
    /// file of a big backup then decodes a few lines, not all of them.
    public func manifest(of item: Item, forRestoring selections: [String]) throws -> Manifest {
        try manifest(of: item, forRestoringPaths: selections.map(PathBytes.from))
    }

    /// `manifest(of:forRestoring:)` for selections given as bytes (they need not be UTF-8).
    public func manifest(of item: Item, forRestoringPaths selections: [[UInt8]]) throws -> Manifest {
        let selection = try RestoreSelection(selections)
        guard !selection.isEverything else { return try manifest(of: item) }
        do {
            let selected: Manifest.EntryFilter = { path, type in
                type == .hardlink || selection.matches(Array(path), isDirectory: type == .directory)
            }
            let manifest = try checked(try SidecarManifest.load(item.manifestName, from: storage, keeping: selected), of: item)
            let present = manifest.index()
            let missing = Set(manifest.entries.compactMap { entry -> PathKey? in
                guard entry.type == .hardlink, let target = entry.linkTarget, !present.contains(target),
                      selection.matches(entry.path, isDirectory: false) else { return nil }
                return PathKey(target)
            })
            guard !missing.isEmpty else { return manifest }
            // Selected hard links name files outside the selection: read those too (a second
            // pass over the manifest, rather than holding its text).
            return try checked(try SidecarManifest.load(item.manifestName, from: storage) { path, type in
                selected(path, type) || missing.contains(PathKey(Array(path)))
            }, of: item)
        } catch let error as ManifestError {
            throw EngineError.manifestUnreadable(name: item.manifestName, reason: error.description)
        }
    }
}
