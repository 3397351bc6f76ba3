import KeepsakeEncryption
import KeepsakeModel
import KeepsakeSupport

/// Every digest of the last version of a changed big file whose table is stored as changes
/// (`BlockTable.everyDigestSHA256`): the parent's line holds only its own archive's, so the
/// others are gathered from the lines of the backups that hold those blocks, or, for one
/// pruned, from the supplement that holds them (`BlockDigestGathering`), and checked against
/// the SHA-256 of them all. The backup compares the new version's blocks with these; when
/// they cannot be had, the file is stored whole (never compared with digests that may be wrong).
///
/// Each holder's manifest is read once a backup, keeping the lines of its big files.
final class BlockBasis {
    // MARK: State

    /// Where the parent's manifest was read from (the destination, or this host's cache of
    /// its own encrypted backups): its chain's manifests are read from there too.
    private let storage: KeyedStorage
    private var items: [BackupID: BackupCatalog.Item]?
    /// The lines with a block table, by holder (nil: its manifest could not be read).
    private var lines: [BackupID: [PathKey: ManifestEntry]?] = [:]
    /// The supplements there, listed when a holder is gone (nil inside: they cannot be).
    private var shelf: SupplementShelf??

    // MARK: Life cycle

    /// Gathers from the manifests in `storage`.
    init(storage: KeyedStorage) {
        self.storage = storage
    }

    // MARK: Gathering

    /// `table` (the parent's line for the file at `path`, as written) holding every digest;
    /// nil when they cannot all be gathered and checked. Throws only an interruption.
    func everyDigest(of table: BlockTable, path: [UInt8]) throws -> BlockTable? {
        if table.holdsEveryDigest { return table }
        var holders: [BackupID: BlockDigestGathering.Holder] = [:]
        for holder in table.holders {
            if let item = try catalogItems()[holder] {
                guard let held = try lines(of: item) else { return nil }
                holders[holder] = .line(held[PathKey(path)])
            } else if let shelf = try supplements(), shelf.holdsFiles(of: holder) {
                holders[holder] = .gone(shelf.blockHolders(holder, path: path).map(\.blocks))
            } else {
                return nil
            }
        }
        return try? BlockDigestGathering.gather(table, holders: holders).get()
    }

    // MARK: Reading

    private func catalogItems() throws -> [BackupID: BackupCatalog.Item] {
        if let items { return items }
        let listed = try readOrNil { try BackupCatalog(storage: storage).items() } ?? []
        let found = Dictionary(listed.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        items = found
        return found
    }

    private func lines(of item: BackupCatalog.Item) throws -> [PathKey: ManifestEntry]? {
        if let known = lines[item.id] { return known }
        let read: [PathKey: ManifestEntry]? = try readOrNil {
            var kept: [PathKey: ManifestEntry] = [:]
            _ = try BackupCatalog(storage: storage).forEachEntry(of: item, keeping: { _, type in type == .file }) { entry in
                if entry.blocks != nil { kept[PathKey(entry.path)] = entry }
            }
            return kept
        }
        lines[item.id] = read
        return read
    }

    private func supplements() throws -> SupplementShelf? {
        if let shelf { return shelf }
        let listed = try readOrNil { SupplementShelf(storage: storage, objects: try storage.list()) }
        shelf = .some(listed)
        return listed
    }

    /// What `read` returns, or nil when it fails: such a file is stored whole. An
    /// interruption still stops the backup.
    private func readOrNil<T>(_ read: () throws -> T) throws -> T? {
        do {
            return try read()
        } catch let interruption as Interruption {
            throw interruption
        } catch {
            return nil
        }
    }
}
