import Foundation
import KeepsakeArchive
import KeepsakeEncryption
import KeepsakeModel
import KeepsakeSigning
import KeepsakeStorage
import KeepsakeSupport

/// One backup found by `BackupLocator`: the storage it is in (a destination, or the
/// read-only folder of a lone archive file), its manifest when there is one to read before
/// the archive, and the way to the earlier archives an incremental backup relies on.
/// Every command that reads one backup (list, diff, verify, restore) goes through it.
public final class LocatedBackup {
    // MARK: Kinds

    /// Where the backup was found.
    public enum Origin: Sendable, Equatable {
        /// A committed backup in a destination.
        case destination
        /// An archive file outside any destination (its folder read as a `LoneArchiveFolder`),
        /// or one object of a remote destination named by its address.
        case archiveFile(path: String)
    }

    // MARK: State

    /// Where the archive and its manifest are stored, with the keys to open them: only
    /// read (restore, diff, verify), never written.
    public let storage: KeyedStorage
    public let origin: Origin
    /// The manifest beside the archive, as the catalog lists it; nil for a lone archive
    /// without one (its own manifest is then read at its end).
    public let item: BackupCatalog.Item?
    /// The archive's name in `storage`; nil when the manifest does not name one.
    public let archiveName: String?
    /// For `latest` without `--source`: the other source sets whose backups the destination
    /// holds (for the same hosts), newest first, so the caller can say which one it picked.
    public internal(set) var otherSourceSets: [[String]] = []
    /// For `latest`: the newer backups it did not take, oldest first: misnamed ones (see
    /// `BackupCatalog.Item.isMisnamed`, of any host) and those dated after the command's clock. The
    /// caller says so: a planted backup must not go unnoticed, nor a clock that is wrong.
    public internal(set) var passedOver: [BackupCatalog.Item] = []
    /// Set by `requireSignatures`: every earlier archive is checked before it is opened.
    public private(set) var signatureCheck: SignatureCheck?
    private var signatureCancellation = CancellationFlag()
    /// The storage's objects as listed for the first check, for all the others.
    private var signatureSizes: [String: Int64] = [:]
    private let catalog: BackupCatalog
    /// The destination's backups, listed once for all the earlier archives one restore needs.
    private var catalogItems: [BackupCatalog.Item]?
    /// The supplements beside it, read once when a file lies in a backup that is gone.
    private var shelf: SupplementShelf?
    /// Supplements read whole to choose among several holding a file (true when they checked out).
    private var wholeSupplements: [BackupID: Bool] = [:]

    init(storage: KeyedStorage, origin: Origin, item: BackupCatalog.Item?, archiveName: String?) {
        self.storage = storage
        self.origin = origin
        self.item = item
        self.archiveName = archiveName
        catalog = BackupCatalog(storage: storage)
    }

    // MARK: Naming

    /// The backup's id when a manifest beside the archive says it.
    public var id: BackupID? { item?.summary?.id ?? item?.id }

    /// How messages name it: the id in a destination, the path of an archive file.
    public var label: String {
        switch origin {
        case .destination: return id?.rawValue ?? archiveName ?? "?"
        case .archiveFile(let path): return path
        }
    }

    /// How messages name the archive: its name in a destination, the path of an archive file.
    public var archiveLabel: String {
        switch origin {
        case .destination: return archiveName ?? label
        case .archiveFile(let path): return path
        }
    }

    /// True for an archive file outside a destination.
    public var isArchiveFile: Bool {
        if case .archiveFile = origin { return true }
        return false
    }

    // MARK: Manifest

    /// The whole manifest beside the archive; nil for a lone archive without one (or with one
    /// that cannot be read: the archive's own copy then decides). In a destination an
    /// unreadable manifest is an error (`EngineError.manifestUnreadable`).
    public func manifest() throws -> Manifest? {
        guard let item else { return nil }
        if isArchiveFile { return try? catalog.manifest(of: item) }
        return try catalog.manifest(of: item)
    }

    /// What a restore of `selections` needs of the manifest (see
    /// `BackupCatalog.manifest(of:forRestoringPaths:)`); nil as for `manifest()`.
    public func manifest(forRestoringPaths selections: [[UInt8]]) throws -> Manifest? {
        guard let item else { return nil }
        if isArchiveFile { return try? catalog.manifest(of: item, forRestoringPaths: selections) }
        return try catalog.manifest(of: item, forRestoringPaths: selections)
    }

    /// The decompressed bytes of the manifest beside the archive, if it has one that
    /// decompresses (verify compares it with the copy inside).
    public func manifestBytes() -> [UInt8]? {
        guard let item else { return nil }
        return try? SidecarManifest.read(item.manifestName, from: storage)
    }

    /// What the backup holds: from a manifest when there is one (beside the archive, else
    /// inside it, read to its end), otherwise from the tar headers of a plain archive.
    public func contents(cancellation: CancellationFlag) throws -> (manifest: Manifest?, entries: ManifestEntries) {
        if let manifest = try manifest() { return (manifest, manifest.entries) }
        let source = try openArchive()
        defer { source.close() }
        let reader = try ArchiveReader(source: source, name: label, cancellation: cancellation)
        var entries = ManifestEntries()
        while let header = try reader.nextHeader() {
            try cancellation.check()
            if header.path == ArchiveLayout.manifestEntryPath {
                let manifest = try Manifest.parse(try reader.readManifest(name: "the manifest inside \(label)"))
                return (manifest, manifest.entries)
            }
            try reader.skipContent()
            if ArchiveLayout.isMetadataEntry(header.path) { continue }
            entries.append(ManifestEntry(path: header.path, type: header.type, size: header.size, mode: header.permissions,
                                         uid: header.uid, gid: header.gid, userName: header.userName,
                                         groupName: header.groupName, mtimeNanoseconds: header.mtimeTotalNanoseconds,
                                         rdev: header.rdev, linkTarget: header.linkTarget))
        }
        return (nil, entries)
    }

    /// Hands each entry the backup holds to `visit`, in manifest order, without holding
    /// them: read front to back from the manifest beside the archive in a destination,
    /// otherwise as `contents` finds them. Returns the manifest's summary (nil for a plain
    /// archive). An error can come after some entries were visited.
    public func forEachEntry(cancellation: CancellationFlag, _ visit: (ManifestEntry) throws -> Void) throws -> BackupSummary? {
        if let item, !isArchiveFile {
            return try catalog.forEachEntry(of: item) { entry in
                try cancellation.check()
                try visit(entry)
            }
        }
        let contents = try contents(cancellation: cancellation)
        for entry in contents.entries { try visit(entry) }
        return contents.manifest?.summary
    }

    // MARK: Signatures

    /// Checks that this backup is signed by `check`'s key and that its archive and manifest
    /// are the ones signed (see `SignatureCheck`); from then on, `earlierArchive` checks each
    /// earlier backup the same way before opening its archive.
    /// - Throws: `SigningError` when the backup is not signed by the key, or was changed.
    public func requireSignatures(_ check: SignatureCheck, cancellation: CancellationFlag) throws {
        guard let archiveName, let stem = BackupNaming.stem(of: archiveName) else {
            throw SigningError.unsigned(backup: label, destination: storage.location, signature: "signature")
        }
        let reading = [archiveName] + (item.map { [$0.manifestName] } ?? [])
        let sizes = try SignatureCheck.sizes(in: storage.stored)
        try check.check(stem: stem, label: label, in: storage.stored, sizes: sizes, reading: reading, lone: isArchiveFile,
                        cancellation: cancellation)
        signatureSizes = sizes
        signatureCheck = check
        signatureCancellation = cancellation
    }

    // MARK: Archives

    /// Opens the backup's own archive.
    public func openArchive() throws -> RandomAccessSource {
        guard let archiveName else {
            throw EngineError.manifestUnreadable(name: item?.manifestName ?? label, reason: "it does not name its archive")
        }
        do {
            return try storage.open(archiveName)
        } catch StorageError.notFound {
            throw EngineError.archiveMissing(name: archiveName, backup: id?.rawValue ?? label, destination: storage.location)
        }
    }

    // MARK: Supplements

    /// Points the files of `manifest` that lie in backups no longer there at the supplements
    /// that hold them (see `SupplementShelf.relocating`), so that `earlierArchive` opens
    /// those instead; returns how many supplements it points at. Reading supplements whole
    /// (when several claim a file) stops when `cancellation` is set.
    @discardableResult
    public func relocatingToSupplements(_ manifest: inout Manifest, cancellation: CancellationFlag = CancellationFlag()) throws -> Int {
        let entries = manifest.entries
        var holders = Set<BackupID>()
        for position in entries.indices {
            if let holder = entries.storedIn(at: position) { holders.insert(holder) }
        }
        for position in entries.positionsStoredByBlocks { holders.formUnion(entries.blocks(at: position)?.holders ?? []) }
        guard !holders.isEmpty else { return 0 }
        let present: Set<BackupID>
        switch origin {
        case .destination:
            if catalogItems == nil { catalogItems = try? catalog.items() }
            present = Set((catalogItems ?? []).map(\.id))
        case .archiveFile:
            let names = try storage.list().map(\.name)
            present = holders.filter { LocatedBackup.lonelyArchiveName($0, among: names) != nil }
        }
        let gone = holders.subtracting(present)
        guard !gone.isEmpty else { return 0 }
        let shelf = try supplements()
        // Several that say they hold a file (planted beside the real one, or after an
        // interrupted prune): the newest that reads whole, each read once.
        var interrupted: Interruption?
        let used = shelf.relocating(&manifest, gone: gone) { candidates in
            candidates.firstIndex { candidate in
                let id = candidate.id
                if wholeSupplements[id] == nil, interrupted == nil {
                    do {
                        try SupplementContent.checkArchive(of: candidate, in: storage, cancellation: cancellation)
                        wholeSupplements[id] = true
                    } catch let stop as Interruption {
                        interrupted = stop
                    } catch {
                        wholeSupplements[id] = false
                    }
                }
                return wholeSupplements[id] == true
            } ?? 0
        }
        if let interrupted { throw interrupted }
        return used.count
    }

    /// The supplements beside the backup, read once.
    public func supplements() throws -> SupplementShelf {
        if let shelf { return shelf }
        let read = SupplementShelf(storage: storage, objects: try storage.list())
        shelf = read
        return read
    }

    /// Opens the archive of the earlier backup `holder` (an incremental backup's unchanged
    /// files are there): in a destination, the one its manifest names; beside a lone
    /// archive, a file of the same folder named like `HOST_ID.tar.zst`; or the archive of
    /// the supplement `holder` that `relocatingToSupplements` pointed files at (it is not
    /// signed: what is read from it is checked against the backup's manifest). Nil when
    /// there is none.
    public func earlierArchive(_ holder: BackupID) throws -> (source: RandomAccessSource, name: String)? {
        if let supplement = shelf?.supplement(holder) {
            let name = supplement.archiveName
            return (try storage.open(name), isArchiveFile ? storage.location + "/" + name : name)
        }
        switch origin {
        case .destination:
            // Listed once: a chain of 30 would otherwise read every manifest's summary 30
            // times (on S3, a GET each). The summary line names the archive.
            if catalogItems == nil { catalogItems = try? catalog.items() }
            guard let items = catalogItems,
                  let earlier = try? catalog.resolve(holder.rawValue, among: items, hosts: .all, source: nil), earlier.id == holder,
                  let name = earlier.summary?.archive?.name else { return nil }
            if let signatureCheck, let stem = BackupNaming.stem(of: name) {
                try signatureCheck.check(stem: stem, label: holder.rawValue, in: storage.stored, sizes: signatureSizes,
                                         reading: [name, earlier.manifestName], cancellation: signatureCancellation)
            }
            return (try storage.open(name), name)
        case .archiveFile:
            guard let match = LocatedBackup.lonelyArchiveName(holder, among: try storage.list().map(\.name)) else { return nil }
            if let signatureCheck, let stem = BackupNaming.stem(of: match) {
                try signatureCheck.check(stem: stem, label: storage.location + "/" + match, in: storage.stored, sizes: signatureSizes,
                                         reading: [match], lone: true, cancellation: signatureCancellation)
            }
            return (try storage.open(match), storage.location + "/" + match)
        }
    }

    /// Beside a lone archive: the file of its folder (`names`) named like backup `holder`'s archive.
    private static func lonelyArchiveName(_ holder: BackupID, among names: [String]) -> String? {
        let marker = "_" + holder.rawValue
        return names.first { name in
            guard let stem = BackupNaming.stem(of: name), !BackupNaming.isManifestName(name), !BackupNaming.isSideObject(name) else { return false }
            return stem.hasSuffix(marker) || stem == holder.rawValue
        }
    }
}
