import Foundation
import KeepsakeAge
import KeepsakeArchive
import KeepsakeEncryption
import KeepsakeHashing
import KeepsakeModel
import KeepsakeStorage
import KeepsakeSupport

/// Rebuilds the manifest beside an archive from the archive's own copy (its last entry),
/// with the stored archive's size and SHA-256 measured while reading it. Used by
/// `keepsake repair` (`repair`, which takes the destination's lock) and, for archives whose
/// manifest is missing, by the next backup (which holds the lock already and calls
/// `damagedManifests` and `rebuild` itself).
public final class ManifestRepairer {
    // MARK: Dependencies

    private let storage: any WritableStorage
    /// `storage` read through the keyring: encrypted manifests are judged when it opens them.
    private let reading: KeyedStorage
    private let cancellation: CancellationFlag

    /// A repairer for `storage`, reading encrypted manifests with `keyring`.
    public init(storage: any WritableStorage, keyring: AgeKeyring, cancellation: CancellationFlag) {
        self.storage = storage
        reading = KeyedStorage(storage, keyring: keyring)
        self.cancellation = cancellation
    }

    // MARK: Repairing

    /// Under the destination's lock, rebuilds the manifest of every archive whose manifest
    /// is missing or unreadable, or only of the backups `references` name (ids or unique
    /// prefixes). A reference whose manifest is intact is nothing to do; one that names no
    /// backup at all is an error. Returns what became of each, oldest first.
    /// - Throws: `LockError` when another run holds the lock (said to `events` when it was
    ///   taken over from a dead run); `EngineError.backupNotFound` / `.ambiguousReference`;
    ///   storage errors.
    public func repair(_ references: [String] = [], events: EngineEventSink?) throws -> [RepairOutcome] {
        let lock = try storage.acquireLock(.current(operation: "repair"))
        defer { lock.release() }
        lock.report(to: events)
        var damaged = try damagedManifests()
        if !references.isEmpty {
            var chosen: [(id: BackupID, archive: String, reason: String)] = []
            for reference in references {
                let matches = damaged.filter { $0.id.rawValue.hasPrefix(reference) }
                if matches.isEmpty {
                    // Throws for a reference that names no single backup.
                    _ = try BackupCatalog(storage: reading).resolve(reference)
                }
                chosen.append(contentsOf: matches.filter { match in !chosen.contains { $0.id == match.id } })
            }
            damaged = chosen
        }
        var outcomes = try damaged.map { try rebuild(archiveName: $0.archive, id: $0.id, reason: $0.reason) }
        if references.isEmpty { outcomes += try recommitSupplements() }
        return outcomes
    }

    /// Commits again every supplement archive whose manifest is missing, from the copy of
    /// its manifest inside it (see `SupplementContent.commitAgain`); one that cannot be is
    /// left as it is and said unrecoverable.
    private func recommitSupplements() throws -> [RepairOutcome] {
        try SupplementContent.orphans(in: storage.list()).map { orphan in
            do {
                // An encrypted one is written again only by a prune given its keys.
                _ = try SupplementContent.commitAgain(orphan.name, id: orphan.id, in: storage, keyring: reading.keyring,
                                                     keys: { _ in nil }, cancellation: cancellation)
                return RepairOutcome(id: orphan.id, archiveName: orphan.name, kind: .rebuilt, reason: "the supplement's manifest is missing")
            } catch let error as Interruption {
                throw error
            } catch {
                return RepairOutcome(id: orphan.id, archiveName: orphan.name, kind: .unrecoverable,
                                     reason: "the supplement's manifest is missing and the copy inside it cannot be used (\(error))")
            }
        }
    }

    // MARK: Finding what needs repair

    /// The archives whose manifest is missing or unreadable, with the reason; `only`
    /// limits the check to those ids. Without `readingContents`, only missing manifests
    /// are found (no manifest is read).
    public func damagedManifests(only ids: Set<BackupID>? = nil,
                                 readingContents: Bool = true) throws -> [(id: BackupID, archive: String, reason: String)] {
        let objects = try storage.list()
        let names = Set(objects.map(\.name))
        var found: [(id: BackupID, archive: String, reason: String)] = []
        for object in objects where !BackupNaming.isManifestName(object.name) && !BackupNaming.isSideObject(object.name) {
            guard let stem = BackupNaming.stem(of: object.name),
                  let id = BackupNaming.id(fromManifestName: stem + BackupNaming.manifestSuffix),
                  ids?.contains(id) ?? true,
                  !names.contains(stem + BackupNaming.pruneMarkerSuffix) else { continue }
            guard let manifestName = BackupNaming.manifestSuffixes.map({ stem + $0 }).first(where: names.contains) else {
                found.append((id, object.name, "its manifest is missing"))
                continue
            }
            guard readingContents else { continue }
            do {
                let manifest = try SidecarManifest.load(manifestName, from: reading)
                if manifest.summary.id != id || manifest.summary.archive?.name != object.name {
                    found.append((id, object.name, "its manifest names another backup or archive"))
                }
            } catch is EncryptionError {
                // Encrypted, and no key given to read it: nothing to judge it by here.
                continue
            } catch {
                found.append((id, object.name, "its manifest cannot be read (\(error))"))
            }
        }
        return found.sorted { $0.id < $1.id }
    }

    // MARK: Rebuilding

    /// Reads `archiveName` whole and writes the manifest beside it from the archive's own
    /// copy. Never overwrites anything when the archive's copy cannot be read.
    public func rebuild(archiveName: String, id: BackupID, reason: String) throws -> RepairOutcome {
        // Rebuilding means reading the archive and writing an encrypted manifest: only the
        // holder of the key can do the first, so it is not done here at all.
        guard !BackupNaming.isEncrypted(archiveName) else {
            return RepairOutcome(id: id, archiveName: archiveName, kind: .unrecoverable,
                                 reason: "it is encrypted, so its manifest cannot be rebuilt here; whoever holds its key can "
                                    + "restore the archive file itself (keepsake restore FILE --identity KEY)")
        }
        let source: ByteSource
        do {
            source = try storage.open(archiveName)
        } catch {
            return RepairOutcome(id: id, archiveName: archiveName, kind: .unrecoverable, reason: "cannot open it: \(error)")
        }
        defer { source.close() }
        let hashing = HashingSource(source: source)
        var inner: [UInt8]?
        do {
            let reader = try ArchiveReader(source: hashing, name: archiveName, cancellation: cancellation)
            while let header = try reader.nextHeader() {
                try cancellation.check()
                if header.path == ArchiveLayout.manifestEntryPath {
                    inner = try reader.readManifest(name: "the manifest inside \(archiveName)")
                } else {
                    try reader.skipContent()
                }
            }
            try hashing.drain()
        } catch let error as EngineError {
            throw error
        } catch let stop as Interruption {
            throw stop
        } catch {
            return RepairOutcome(id: id, archiveName: archiveName, kind: .unrecoverable,
                                 reason: "the archive cannot be read to its end (\(error))")
        }
        guard let inner else {
            return RepairOutcome(id: id, archiveName: archiveName, kind: .unrecoverable,
                                 reason: "the archive holds no manifest (it is not a Keepsake archive, or it is truncated)")
        }
        let manifest: Manifest
        do {
            manifest = try Manifest.parse(inner)
        } catch {
            return RepairOutcome(id: id, archiveName: archiveName, kind: .unrecoverable,
                                 reason: "the archive's own manifest cannot be read (\(error))")
        }
        guard manifest.summary.id == id else {
            return RepairOutcome(id: id, archiveName: archiveName, kind: .unrecoverable,
                                 reason: "the archive's manifest belongs to backup \(manifest.summary.id), not \(id)")
        }
        var summary = manifest.summary
        summary.archive = .init(name: archiveName, size: hashing.count, sha256: hashing.finalizeHex())
        // The entry lines are copied as they are; only the summary line gains the archive facts.
        let entries = inner.firstIndex(of: UInt8(ascii: "\n")).map { Array(inner[($0 + 1)...]) } ?? []
        guard let stem = BackupNaming.stem(of: archiveName) else {
            return RepairOutcome(id: id, archiveName: archiveName, kind: .unrecoverable, reason: "not an archive name")
        }
        let pending = try storage.create(stem + BackupNaming.manifestSuffix)
        do {
            try SidecarManifest.write(summaryLine: Array((summary.json.serialized() + "\n").utf8), to: pending,
                                      workers: DecodedArchiveSource.workers) { compressor in
                try entries.withUnsafeBytes { try compressor.write($0) }
            }
            try pending.commit()
        } catch {
            pending.abort()
            throw error
        }
        // A plain manifest of the same backup (from before manifests were compressed) is
        // replaced by the one just written.
        if (try? storage.list())?.contains(where: { $0.name == stem + BackupNaming.plainManifestSuffix }) == true {
            try storage.delete(stem + BackupNaming.plainManifestSuffix)
        }
        // A signature names the manifest that was lost, not this one: the rebuilt backup is
        // unsigned (a signed backup never builds on it, a restore that checks refuses it).
        if (try? storage.list())?.contains(where: { $0.name == BackupNaming.signatureName(forStem: stem) }) == true {
            try storage.delete(BackupNaming.signatureName(forStem: stem))
        }
        return RepairOutcome(id: id, archiveName: archiveName, kind: .rebuilt, reason: reason)
    }
}
