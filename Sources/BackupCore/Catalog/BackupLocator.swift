import Foundation
import KeepsakeEncryption
import KeepsakeModel
import KeepsakeStorage

/// Turns a `BackupReference` into a `LocatedBackup`: an id, a unique prefix or `latest` is
/// looked up in the destination; an archive file is read through the read-only folder that
/// holds it, with the manifest beside it when there is one. The destination is opened only
/// when a reference needs it, so a lone archive file restores with no destination at all.
public struct BackupLocator {
    // MARK: State

    private let destination: () throws -> any ReadableStorage
    /// Opens the destination an archive on another machine lies in.
    private let remote: (DestinationAddress) throws -> any ReadableStorage

    /// Whose backup `latest` means (ids and prefixes name backups of any host).
    public var hosts: HostSelection
    /// With it, `latest` means the newest backup that holds this path (`--source`).
    public var source: String?
    /// The keys encrypted backups are opened with (every store found is read with them).
    public var keyring: AgeKeyring = .empty
    /// The command's clock: `latest` passes over backups dated more than a day after it.
    public var now = Date()

    /// A locator that opens the destination with `destination` when it first needs it.
    /// `remote` opens the destination of an archive named by an `s3://` or `rclone:` address.
    public init(hosts: HostSelection = .all,
                remote: @escaping (DestinationAddress) throws -> any ReadableStorage = BackupLocator.noRemote,
                destination: @escaping () throws -> any ReadableStorage) {
        self.hosts = hosts
        self.remote = remote
        self.destination = destination
    }

    /// A locator for an already open destination.
    public init(storage: any ReadableStorage, hosts: HostSelection = .all) {
        self.hosts = hosts
        self.remote = BackupLocator.noRemote
        self.destination = { storage }
    }

    /// For callers that reach no other machine.
    public static func noRemote(_ address: DestinationAddress) throws -> any ReadableStorage {
        throw EngineError.invalidRequest("The archive at \(address) is on another machine; give it as --dest")
    }

    // MARK: Locating

    /// The backup `reference` names.
    /// - Throws: `EngineError.backupNotFound` / `.ambiguousReference` for a word that names
    ///   no single backup; `EngineError.invalidRequest` for an archive file that is not there.
    public func locate(_ reference: BackupReference) throws -> LocatedBackup {
        switch reference {
        case .backup(let word):
            let storage = keyed(try destination())
            let catalog = BackupCatalog(storage: storage)
            let all = try catalog.items()
            let item = try catalog.resolve(word, among: all, hosts: hosts, source: source, now: now)
            if item.isMisnamed {
                throw EngineError.misnamed(name: item.manifestName, reason: item.problem ?? "its name and summary disagree")
            }
            let located = LocatedBackup(storage: storage, origin: .destination, item: item, archiveName: item.summary?.archive?.name)
            if word == "latest", source == nil, let picked = item.summary?.sources {
                located.otherSourceSets = BackupCatalog.sourceSets(all.filter { BackupCatalog.item($0, isOf: hosts) })
                    .filter { $0 != picked }
            }
            if word == "latest" {
                // A misnamed backup may claim any host: said whoever's `latest` this is.
                located.passedOver = all.filter { other in
                    other.id > item.id && (other.isMisnamed
                        || (BackupCatalog.item(other, isOf: hosts) && BackupCatalog.isFutureDated(other, now: now)))
                }
            }
            return located
        case .archiveFile(let path):
            guard ArchiveFileInspector.isArchiveFile(path) else {
                throw EngineError.invalidRequest("The archive file '\(path)' does not exist or is not a regular file. Give the path of "
                    + "an archive file, or a backup id, an id prefix or 'latest' (see 'keepsake list')")
            }
            let (lone, name) = LoneArchiveFolder.holding(path)
            let folder = keyed(lone)
            return LocatedBackup(storage: folder, origin: .archiveFile(path: path), item: sidecar(of: name, in: folder),
                                 archiveName: name)
        case .remoteArchive(let address, let name, let text):
            let storage = keyed(try remote(address))
            guard try storage.list().contains(where: { $0.name == name }) else {
                throw EngineError.invalidRequest("There is no archive '\(name)' in \(storage.location). Give the address of an "
                    + "archive there (see 'keepsake list --dest \(storage.location)'), or a backup id with --dest")
            }
            return LocatedBackup(storage: storage, origin: .archiveFile(path: text), item: sidecar(of: name, in: storage),
                                 archiveName: name)
        }
    }

    /// Every committed backup of the destination, oldest first, as located backups.
    public func all() throws -> [LocatedBackup] {
        let storage = keyed(try destination())
        return try BackupCatalog(storage: storage).items().map { item in
            LocatedBackup(storage: storage, origin: .destination, item: item, archiveName: item.summary?.archive?.name)
        }
    }

    /// `storage` read with the keyring.
    private func keyed(_ storage: any ReadableStorage) -> KeyedStorage {
        KeyedStorage(storage, keyring: keyring)
    }

    /// The manifest beside the archive `name` in `folder`, when there is one whose summary
    /// line reads (a damaged one is ignored: the archive's own manifest decides).
    private func sidecar(of name: String, in folder: KeyedStorage) -> BackupCatalog.Item? {
        for candidate in BackupNaming.sidecarNames(forArchive: name) {
            guard let summary = try? BackupCatalog.summary(ofManifest: candidate, in: folder) else { continue }
            return BackupCatalog.Item(id: summary.id, manifestName: candidate, summary: summary, problem: nil)
        }
        return nil
    }
}
