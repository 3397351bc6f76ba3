import Foundation
import KeepsakeEncryption
import KeepsakeHashing
import KeepsakeModel
import KeepsakeSigning
import KeepsakeStorage
import KeepsakeSupport

/// Copies backups from one destination to another (a local folder to a bucket for a 3-2-1
/// setup, one bucket to another): the archive streams across while its size and SHA-256
/// are checked against the manifest, and the manifest is stored last, as a backup commits,
/// so the copy becomes visible only once whole and verified. A backup the destination
/// already holds is skipped; an incremental one brings along every backup it relies on, so
/// chains arrive whole; backups go oldest first, so a parent always lands before its child.
public final class BackupCopier {
    // MARK: Types

    /// What a copy did.
    public struct Result: Sendable {
        /// The backups copied, oldest first.
        public var copied: [BackupID] = []
        /// The backups the destination held already.
        public var skipped: [BackupID] = []
        /// Backups not copied because their bytes are not what their manifest says (and
        /// those that rely on them), each with why; the others were copied.
        public var damaged: [CopyError] = []
        /// Archive and manifest bytes sent.
        public var bytes: Int64 = 0
        public var elapsed: TimeInterval = 0
    }

    // MARK: Dependencies

    private let source: any ReadableStorage
    private let destination: any WritableStorage
    private weak var events: EngineEventSink?
    private let cancellation: CancellationFlag
    private var lastProgress = Date.distantPast

    /// A copier from `source` to `destination`, reporting to `events`. Objects are copied
    /// as stored: an encrypted backup stays encrypted and needs no key.
    public init(from source: any ReadableStorage, to destination: any WritableStorage, events: EngineEventSink?,
                cancellation: CancellationFlag) {
        self.source = source
        self.destination = destination
        self.events = events
        self.cancellation = cancellation
    }

    // MARK: Copying

    /// Copies `ids` (every backup of the source when nil) and the backups they rely on.
    /// A backup whose archive does not match its manifest (or is missing) is not copied,
    /// nor are the backups that rely on it: they are listed in `Result.damaged`, and the
    /// others are copied all the same.
    /// - Throws: `LockError` when the destination is locked, storage errors.
    public func copy(_ ids: [BackupID]? = nil, lockWait: TimeInterval = 0) throws -> Result {
        let started = Date()
        let catalog = BackupCatalog(storage: source, keyring: .empty)
        let items = try catalog.items()
        let byID = Dictionary(items.map { ($0.id, $0) }, uniquingKeysWith: { $1 })
        if let missing = ids?.first(where: { byID[$0] == nil }) {
            throw EngineError.backupNotFound(reference: missing.rawValue, destination: source.location)
        }
        // Whole chains: what a restore of each wanted backup needs comes too (not its
        // parent as such: prune removes a parent that nothing needs any more).
        var needs: [BackupID: Set<BackupID>] = [:]
        var queue = ids ?? items.map(\.id)
        while let id = queue.popLast() {
            guard needs[id] == nil, let item = byID[id] else { continue }
            let needed = neededForRestore(item, catalog: catalog, byID: byID)
            needs[id] = needed
            queue += needed.filter { needs[$0] == nil }
        }

        try destination.prepare()
        let lock = try destination.acquireLock(.current(operation: "copy"), waitingUpTo: lockWait, cancellation: cancellation,
                                               events: events)
        defer { lock.release() }
        lock.report(to: events)
        // What an interrupted copy left (temporaries of a process that is gone), as a
        // backup cleans its own destination: a copy destination is never backed up to.
        let removed = (try? destination.removeLeftovers()) ?? []
        if !removed.isEmpty {
            let files = removed.count == 1 ? "1 leftover file" : "\(removed.count) leftover files"
            events?.handle(.notice("removed \(files) of an interrupted run from \(destination.location)"))
        }
        let present = Dictionary(try destination.list().map { ($0.name, $0.size) }, uniquingKeysWith: { first, _ in first })
        var result = Result()
        var failed = Set<BackupID>()
        /// The source's supplements, read when a backup relies on one prune let go.
        var shelf: SupplementShelf?
        var copiedSupplements = Set<BackupID>()
        for id in BackupCopier.order(needs) {
            try cancellation.check()
            guard let item = byID[id] else { continue }
            let stem = BackupNaming.stem(of: item.manifestName) ?? item.manifestName
            if BackupNaming.manifestSuffixes.contains(where: { present[stem + $0] != nil }) {
                result.skipped.append(id)
                continue
            }
            // Its objects' names come from its own; a backup whose summary says otherwise
            // would write over another's (not copied, and neither what relies on it).
            guard item.summary != nil else {
                failed.insert(id)
                let error = CopyError.unreadable(backup: id, manifest: item.manifestName, source: source.location,
                                                 reason: item.problem ?? "its manifest cannot be read")
                result.damaged.append(error)
                events?.handle(.caution(error.description))
                continue
            }
            let needed = needs[id] ?? []
            let gone = needed.filter { byID[$0] == nil }
            if !gone.isEmpty {
                // Backups prune let go: the supplements that hold their files come along.
                let supplements = try shelf ?? SupplementShelf(storage: KeyedStorage(source, keyring: .empty), objects: source.list())
                shelf = supplements
                if let missing = gone.sorted().first(where: { !supplements.holdsFiles(of: $0) }) {
                    failed.insert(id)
                    result.damaged.append(.reliesOnMissing(backup: id, on: missing, source: source.location))
                    continue
                }
                do {
                    for supplement in supplements.summaries(holdingFilesOf: gone) where !copiedSupplements.contains(supplement.id) {
                        result.bytes += try copySupplement(supplement, of: id, present: present)
                        copiedSupplements.insert(supplement.id)
                    }
                } catch let error as CopyError {
                    failed.insert(id)
                    result.damaged.append(error)
                    events?.handle(.caution(error.description))
                    continue
                }
            }
            if let broken = needed.sorted().first(where: failed.contains) {
                failed.insert(id)
                result.damaged.append(.reliesOnDamaged(backup: id, on: broken))
                continue
            }
            do {
                result.bytes += try copyBackup(item, present: present)
            } catch let error as CopyError {
                failed.insert(id)
                result.damaged.append(error)
                events?.handle(.caution(error.description))
                continue
            } catch let error as EngineError {
                guard case .archiveMissing = error else { throw error }
                failed.insert(id)
                result.damaged.append(.damaged(backup: id, archive: item.summary?.archive?.name ?? "?", source: source.location,
                                               reason: "is missing"))
                continue
            }
            result.copied.append(id)
            events?.handle(.notice("copied \(id) to \(destination.location)"))
        }
        result.elapsed = Date().timeIntervalSince(started)
        return result
    }

    /// The backups a restore of `item` needs (`BackupCatalog.reliedOn`). When its manifest
    /// cannot be read, its parent chain as far as the source holds it: a guess on the safe
    /// side (the backup itself will not copy then, but what it may need does).
    private func neededForRestore(_ item: BackupCatalog.Item, catalog: BackupCatalog,
                                  byID: [BackupID: BackupCatalog.Item]) -> Set<BackupID> {
        if let ids = try? catalog.reliedOn(item) { return ids }
        var chain = Set<BackupID>()
        var parent = item.summary?.parent
        while let next = parent, next != item.id, byID[next] != nil, chain.insert(next).inserted {
            parent = byID[next]?.summary?.parent
        }
        return chain
    }

    /// The ids of `needs` in the order they can be copied: oldest first, and a backup always
    /// after those it needs. Ids made in one destination already sort that way
    /// (`BackupID(date:after:)`), but a copy that lands backups one by one must not rest on
    /// what a summary from elsewhere says about its dates.
    static func order(_ needs: [BackupID: Set<BackupID>]) -> [BackupID] {
        var ordered: [BackupID] = []
        var placed = Set<BackupID>()
        var visiting = Set<BackupID>()
        func place(_ id: BackupID) {
            guard !placed.contains(id), visiting.insert(id).inserted else { return }
            for earlier in (needs[id] ?? []).sorted() { place(earlier) }
            visiting.remove(id)
            placed.insert(id)
            ordered.append(id)
        }
        for id in needs.keys.sorted() { place(id) }
        return ordered
    }

    /// Copies one backup (listed by the catalog, so its names and summary agree): the archive
    /// (checked on the way), then its manifest. No object of the destination (`present`,
    /// names and sizes) is replaced: an archive an interrupted copy committed is kept when its
    /// bytes are the backup's, and anything else of a name the backup needs stops its copy.
    private func copyBackup(_ item: BackupCatalog.Item, present: [String: Int64]) throws -> Int64 {
        guard let summary = item.summary, let facts = summary.archive else {
            throw EngineError.manifestUnreadable(name: item.manifestName, reason: item.problem ?? "it does not name its archive")
        }
        if let size = present[facts.name] {
            guard size == facts.size, try destination.sha256(of: facts.name, cancellation: cancellation) == facts.sha256 else {
                throw CopyError.occupied(backup: item.id, name: facts.name, destination: destination.location)
            }
        } else {
            try copyArchive(item, facts: facts)
        }
        // An encrypted backup's summary in the clear, then the manifest last: the copy is a
        // backup only once its archive is whole.
        let entries = summary.fileCount + summary.directoryCount + summary.symlinkCount + summary.hardlinkCount + summary.otherCount
        let manifestBytes: [UInt8]
        do {
            manifestBytes = try source.readObject(item.manifestName, limit: ManifestSizeLimit.limit(forEntries: entries, blockDigests: summary.blockDigests))
        } catch StorageError.notFound {
            throw EngineError.manifestUnreadable(name: item.manifestName, reason: "it is gone from \(source.location)")
        }
        var extra: Int64 = 0
        var stored: [String] = present[facts.name] == nil ? [facts.name] : []
        do {
            if let publicName = BackupNaming.publicSummaryName(forManifest: item.manifestName) {
                extra += try copySideObject(publicName, of: item, limit: 1 << 20, present: present, stored: &stored)
            }
            // A signature goes byte for byte: it signs the stored bytes, which a copy keeps.
            if let stem = BackupNaming.stem(of: item.manifestName) {
                extra += try copySideObject(BackupNaming.signatureName(forStem: stem), of: item, limit: BackupSignature.sizeLimit,
                                            present: present, stored: &stored, ifAny: true)
            }
            try destination.writeObject(item.manifestName, bytes: manifestBytes)
        } catch {
            for name in stored { try? destination.delete(name) }
            throw error
        }
        return (present[facts.name] == nil ? facts.size : 0) + Int64(manifestBytes.count) + extra
    }

    /// Copies an object beside a backup's archive (its clear summary, its signature) unless
    /// the destination holds the same bytes under that name already (anything else there
    /// stops the backup's copy); returns the bytes written. With `ifAny`, a source without
    /// that object is no error (an unsigned backup).
    private func copySideObject(_ name: String, of item: BackupCatalog.Item, limit: Int, present: [String: Int64],
                                stored: inout [String], ifAny: Bool = false) throws -> Int64 {
        let bytes: [UInt8]
        do {
            bytes = try source.readObject(name, limit: limit)
        } catch StorageError.notFound where ifAny {
            return 0
        }
        if present[name] != nil {
            guard try destination.readObject(name, limit: limit) == bytes else {
                throw CopyError.occupied(backup: item.id, name: name, destination: destination.location)
            }
            return 0
        }
        try destination.writeObject(name, bytes: bytes)
        stored.append(name)
        return Int64(bytes.count)
    }


    /// Streams the archive across, checking its size and SHA-256 against the manifest.
    private func copyArchive(_ item: BackupCatalog.Item, facts: BackupSummary.ArchiveFacts) throws {
        try copyArchive(facts.name, size: facts.size, sha256: facts.sha256, of: item.id)
    }

    /// Copies the supplement `supplement`, which backup `id` takes files from, unless the
    /// destination has it: its archive (checked against its manifest, or an encrypted one's
    /// summary), an encrypted one's summary, then its manifest, which commits it there, all
    /// as stored. Returns the bytes written.
    private func copySupplement(_ supplement: SupplementSummary, of id: BackupID, present: [String: Int64]) throws -> Int64 {
        let manifestName = supplement.manifestName
        guard present[manifestName] == nil else { return 0 }
        var written: Int64 = 0
        if let size = present[supplement.archiveName] {
            guard size == supplement.archiveSize,
                  try destination.sha256(of: supplement.archiveName, cancellation: cancellation) == supplement.archiveSHA256 else {
                throw CopyError.occupied(backup: id, name: supplement.archiveName, destination: destination.location)
            }
        } else {
            do {
                try copyArchive(supplement.archiveName, size: supplement.archiveSize, sha256: supplement.archiveSHA256, of: id)
            } catch EngineError.archiveMissing {
                throw CopyError.damaged(backup: id, archive: supplement.archiveName, source: source.location, reason: "is missing")
            }
            written += supplement.archiveSize
        }
        if supplement.encryption != nil {
            let summary = try source.readObject(supplement.summaryName, limit: ManifestSizeLimit.hardLimit)
            try destination.writeObject(supplement.summaryName, bytes: summary)
            written += Int64(summary.count)
        }
        let bytes = try source.readObject(manifestName, limit: ManifestSizeLimit.hardLimit)
        try destination.writeObject(manifestName, bytes: bytes)
        events?.handle(.notice("copied supplement \(supplement.id), which backup \(id) takes files from, to \(destination.location)"))
        return written + Int64(bytes.count)
    }

    /// Streams the archive `name` across, checking its size and SHA-256 against those
    /// recorded (`id`: the backup whose copy needs it, for messages).
    private func copyArchive(_ name: String, size: Int64, sha256: String, of id: BackupID) throws {
        let archive: RandomAccessSource
        do {
            archive = try source.open(name)
        } catch StorageError.notFound {
            throw EngineError.archiveMissing(name: name, backup: id.rawValue, destination: source.location)
        }
        defer { archive.close() }
        let pending = try destination.create(name)
        do {
            let hashing = HashingSink(target: pending)
            var buffer = [UInt8](repeating: 0, count: 1 << 20)
            while true {
                try cancellation.check()
                let count = try buffer.withUnsafeMutableBytes { try archive.read(into: $0) }
                if count == 0 { break }
                try buffer.withUnsafeBytes { try hashing.write(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
                reportProgress(hashing.count, total: size, name: name)
            }
            guard hashing.count == size, hashing.finalizeHex() == sha256 else {
                throw CopyError.damaged(backup: id, archive: name, source: source.location,
                                        reason: hashing.count == size ? "has another SHA-256 than its manifest records"
                                            : "is \(hashing.count) bytes where its manifest records \(size)")
            }
            try pending.commit()
        } catch {
            pending.abort()
            throw error
        }
    }

    private func reportProgress(_ done: Int64, total: Int64, name: String) {
        let now = Date()
        guard now.timeIntervalSince(lastProgress) >= 0.1 else { return }
        lastProgress = now
        events?.handle(.progress(ProgressSnapshot(entriesDone: 0, filesDone: 0, bytesDone: done, totalBytes: total, currentPath: name)))
    }
}

/// A backup that cannot be copied because its bytes are not what its manifest says.
public enum CopyError: Error, Sendable, Equatable, CustomStringConvertible {
    case damaged(backup: BackupID, archive: String, source: String, reason: String)
    /// An incremental backup that takes files from a backup that was not copied.
    case reliesOnDamaged(backup: BackupID, on: BackupID)
    /// An incremental backup that takes files from a backup the source no longer holds.
    case reliesOnMissing(backup: BackupID, on: BackupID, source: String)
    /// A backup whose manifest cannot be read, or whose name and summary disagree.
    case unreadable(backup: BackupID, manifest: String, source: String, reason: String)
    /// The destination holds another object of a name the backup's copy needs.
    case occupied(backup: BackupID, name: String, destination: String)

    public var description: String {
        switch self {
        case .damaged(let backup, let archive, let source, let reason):
            return "Backup \(backup) in \(source) is damaged: its archive \(archive) \(reason); nothing of it was copied "
                + "(run 'keepsake verify \(backup)')"
        case .reliesOnDamaged(let backup, let earlier):
            return "Backup \(backup) was not copied: it relies on backup \(earlier), which could not be copied"
        case .unreadable(let backup, let manifest, let source, let reason):
            return "Backup \(backup) in \(source) was not copied: \(reason) (its manifest \(manifest))"
        case .occupied(let backup, let name, let destination):
            return "Backup \(backup) was not copied: \(destination) already holds another object named \(name), and copy "
                + "never replaces one. Look at it, and remove it if no backup of yours needs it"
        case .reliesOnMissing(let backup, let earlier, let source):
            return "Backup \(backup) was not copied: it relies on backup \(earlier), which is not in \(source) "
                + "(run 'keepsake verify \(backup)')"
        }
    }
}
