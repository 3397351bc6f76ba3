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
        /// Why the summary could not be read.
        public var problem: String?
    }

    // MARK: State

    private let storage: StorageBackend

    /// A catalog of `storage`.
    public init(storage: StorageBackend) {
        self.storage = storage
    }

    // MARK: Listing

    /// All committed backups, oldest first.
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
                items.append(Item(id: id, manifestName: object.name, summary: summary, problem: nil))
            } catch {
                items.append(Item(id: id, manifestName: object.name, summary: nil, problem: "\(error)"))
            }
        }
        return items.sorted { $0.id < $1.id }
    }

    /// The summary of the backup whose manifest is `manifestName`: its first line, or for an
    /// encrypted backup the summary kept in the clear beside it (no key is needed to list).
    static func summary(ofManifest manifestName: String, in storage: StorageBackend) throws -> BackupSummary {
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
        guard let summary = item.summary, summary.sourcesHidden,
              let line = try? SidecarManifest.firstLine(item.manifestName, in: storage),
              let full = try? Manifest.parseSummary(line), full.id == item.id else { return item }
        var revealed = item
        revealed.summary = full
        return revealed
    }

    /// The newest committed backup's id (from object names only; no manifest is read).
    public func newestID() throws -> BackupID? {
        try storage.list().compactMap { BackupNaming.id(fromManifestName: $0.name) }.max()
    }

    /// Finds one backup by full id, unique prefix, or `latest`: the newest of the hosts
    /// `hosts` selects (an id or a prefix names a backup of any host).
    public func resolve(_ reference: String, hosts: HostSelection = .all, source: String? = nil) throws -> Item {
        try resolve(reference, among: try items(), hosts: hosts, source: source)
    }

    /// `resolve` among `all`, the destination's items as `items()` lists them.
    func resolve(_ reference: String, among all: [Item], hosts: HostSelection, source: String?) throws -> Item {
        if reference == "latest", let source {
            guard let newest = all.last(where: { BackupCatalog.item($0, isOf: hosts) && BackupCatalog.item($0, holds: source) }) else {
                let sets = BackupCatalog.sourceSets(all.filter { BackupCatalog.item($0, isOf: hosts) })
                throw EngineError.invalidRequest("No backup in \(storage.location) holds \(source)"
                    + (sets.isEmpty ? "" : "; its backups are of " + sets.map { $0.joined(separator: " ") }.joined(separator: "; "))
                    + ". Give --source one of those paths, or leave it out")
            }
            return newest
        }
        if reference == "latest" {
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
        let matches = all.filter { $0.id.rawValue.hasPrefix(reference) }
        if matches.count == 1, let match = matches.first { return match }
        if let exact = matches.first(where: { $0.id.rawValue == reference }) { return exact }
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
            return try SidecarManifest.load(item.manifestName, from: storage)
        } catch let error as ManifestError {
            throw EngineError.manifestUnreadable(name: item.manifestName, reason: error.description)
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
        }
        ids.remove(item.id)
        return ids
    }

    /// Reads a backup's manifest front to back, handing each entry `keeping` accepts to
    /// `visit` without keeping any (see `SidecarManifest.forEachEntry`); returns the summary.
    public func forEachEntry(of item: Item, keeping: Manifest.EntryFilter? = nil,
                             _ visit: (ManifestEntry) throws -> Void) throws -> BackupSummary {
        do {
            return try SidecarManifest.forEachEntry(item.manifestName, in: storage, keeping: keeping, visit)
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
            let manifest = try SidecarManifest.load(item.manifestName, from: storage, keeping: selected)
            let present = manifest.index()
            let missing = Set(manifest.entries.compactMap { entry -> PathKey? in
                guard entry.type == .hardlink, let target = entry.linkTarget, !present.contains(target),
                      selection.matches(entry.path, isDirectory: false) else { return nil }
                return PathKey(target)
            })
            guard !missing.isEmpty else { return manifest }
            // Selected hard links name files outside the selection: read those too (a second
            // pass over the manifest, rather than holding its text).
            return try SidecarManifest.load(item.manifestName, from: storage) { path, type in
                selected(path, type) || missing.contains(PathKey(Array(path)))
            }
        } catch let error as ManifestError {
            throw EngineError.manifestUnreadable(name: item.manifestName, reason: error.description)
        }
    }
}
