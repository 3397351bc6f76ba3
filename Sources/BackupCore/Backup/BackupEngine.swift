import Foundation
import KeepsakeAge
import KeepsakeArchive
import KeepsakeEncryption
import KeepsakeHashing
import KeepsakeModel
import KeepsakeScan
import KeepsakeSigning
import KeepsakeStorage
import KeepsakeSupport

/// Makes backups: scans the sources, writes the compressed archive with its manifest
/// into the destination, and commits it (archive first, then the manifest beside it).
public final class BackupEngine {
    // MARK: Dependencies

    private let storage: any WritableStorage
    /// Opens this host's encrypted backups there (the parent's manifest), when given.
    private let keyring: AgeKeyring
    private weak var events: EngineEventSink?
    private let cancellation: CancellationFlag

    /// An engine storing into `storage`, reading its encrypted backups with `keyring`,
    /// reporting to `events`.
    public init(storage: any WritableStorage, keyring: AgeKeyring, events: EngineEventSink?,
                cancellation: CancellationFlag) {
        self.storage = storage
        self.keyring = keyring
        self.events = events
        self.cancellation = cancellation
    }

    // MARK: Running

    /// Runs one backup. Unreadable files become warnings in the result; anything that
    /// stops the run throws, and then nothing new is visible in the destination.
    /// - Parameter listing: for a dry run, told of every path it would save and every path
    ///   it leaves out, in scan order (`backup --dry-run --list`).
    public func run(_ request: BackupRequest, listing: ((DryRunPath) -> Void)? = nil) throws -> BackupResult {
        let started = Date()
        let sources = try resolvedSources(request)
        var summary = BackupSummary(id: BackupID(date: request.now), created: request.now, host: request.host,
                                    user: HostIdentity.userName,
                                    sources: request.stdinName.map { ["stdin:" + $0] } ?? sources.map(PathBytes.display),
                                    tags: request.tags, compression: request.compression,
                                    level: request.level ?? request.compression.defaultLevel,
                                    toolVersion: request.toolVersion)
        var warnings: [PathWarning] = []
        let warn: (PathWarning) -> Void = { [weak events] warning in
            warnings.append(warning)
            events?.handle(.warning(warning))
        }
        var request = request

        if request.dryRun {
            request.scan.leftOutFolders = destinationInside(sources)
            let counter = DryRunCounter()
            let scanner = Scanner(options: request.scan, cancellation: cancellation, warn: warn)
            if let listing { scanner.leftOut = { listing(.leftOut($0)) } }
            for source in sources {
                try scanner.scan(source: source) { item in
                    counter.add(item)
                    listing?(.saved(path: item.absolutePath, type: item.type))
                }
            }
            counter.fill(&summary)
            summary.warningCount = Int64(warnings.count)
            return BackupResult(summary: summary, archiveName: nil, manifestName: nil, warnings: warnings,
                                dryRun: true, elapsed: Date().timeIntervalSince(started))
        }

        try storage.prepare()
        // Once the destination folder exists (prepare makes it).
        request.scan.leftOutFolders = destinationInside(sources)
        let lock = try storage.acquireLock(.current(operation: "backup"), waitingUpTo: request.lockWait,
                                           cancellation: cancellation, events: events)
        defer { lock.release() }
        lock.report(to: events)
        try cleanUpLeftovers()
        let catalog = BackupCatalog(storage: storage, keyring: keyring)
        let newest = try catalog.newestID(notAfter: request.now)
        let id = BackupID(date: request.now, after: newest)
        summary.id = id
        // With encryption, what this host knows of its own encrypted backups: read once.
        var cache = request.encryption == nil ? nil
            : request.changeCacheRoot.map { ChangeDetectionCache(root: $0, destination: storage.location) }
        if let problem = cache?.problem {
            // A full backup rather than one that trusts what someone else could have written.
            events?.handle(.caution(problem))
            cache = nil
        }
        let cached = cache?.summaries() ?? [:]
        let choice = try ParentChoice(request: request, sources: summary.sources, catalog: catalog, destination: storage,
                                      keyring: keyring, cache: cache, cached: cached, events: events)
        let parent = choice.parent
        if let parent {
            summary.parent = parent.summary.id
            summary.chainLength = parent.summary.chainLength + 1
            summary.chainStarted = parent.summary.chainStarted
        }
        let parentCursor = parent?.cursor
        // The size of the last backup of these sources on this host: the progress bar's total.
        let expectedBytes = parent?.summary.originalBytes ?? choice.lastSizeOfSources

        let host = HostIdentity.fileSafe(request.host)
        let encrypted = request.encryption != nil
        summary.encryption = request.encryptionRecord
        let archiveName = BackupNaming.archiveName(host: host, id: id, compression: request.compression, encrypted: encrypted)
        let manifestName = BackupNaming.manifestName(host: host, id: id, encrypted: encrypted)
        if encrypted {
            // The same label as before for the same sources (from the parent, else from
            // what this host cached), a new one for a new set.
            let wanted = Set(summary.sources)
            let known = cached.values.first { Set($0.summary.sources) == wanted }?.summary.sourceSet
            summary.sourceSet = parent?.summary.sourceSet ?? known
                ?? String((0..<4).map { _ in String(format: "%08x", UInt32.random(in: .min ... .max)) }.joined())
        }
        let pending = try storage.create(archiveName)
        do {
            // The SHA-256 is of the bytes stored (ciphertext when encrypted), so copy and
            // verify check them without a key.
            let hashing = HashingSink(target: pending)
            let encrypting = try request.encryption.map { try AgeEncryptingSink(downstream: hashing, encryption: $0) }
            let writer = try ArchiveWriter(sink: encrypting ?? hashing, compression: request.compression,
                                           level: request.level, threads: request.threads)
            let session = try ArchiveSession(writer: writer, cancellation: cancellation, events: events,
                                             parent: parentCursor, basis: parent.map { BlockBasis(storage: $0.manifests) },
                                             chain: request.chain, readers: request.readers,
                                             readPause: request.readPause, warn: warn)
            defer { session.close() }
            session.expectedBytes = expectedBytes
            if case .recipients? = request.encryption { session.tablesAsChanges = false }
            try session.writeMarker(now: request.now)
            if let stdinPath = request.stdinPath {
                try session.addStandardInput(name: stdinPath, now: request.now)
            } else {
                let scanner = Scanner(options: request.scan, cancellation: cancellation, warn: warn)
                for source in sources {
                    try scanner.scan(source: source) { try session.add($0) }
                }
                try session.finishItems()
            }
            if let problem = parentCursor?.problem {
                // The parent is damaged: this backup is whole, the next starts a new chain.
                if let item = parent?.item {
                    // Under this run's lock; without the record, the next backup finds the damage again.
                    try? DamageRecord(id: item.id, found: request.now, foundBy: "backup").store(for: item, in: storage)
                }
                events?.handle(.caution("the manifest of \(parentCursor?.id.rawValue ?? "the parent") could not be read to its end "
                    + "(\(problem)); files from there on were stored again, and no later backup builds on it "
                    + "(`keepsake backup --full` starts a new chain now)"))
            }
            parentCursor?.close()
            session.fill(&summary)
            summary.warningCount = Int64(warnings.count)
            try session.writeMetadataEntries(summary: summary)
            try writer.finish()
            try encrypting?.finish()
            try cancellation.check()
            summary.archive = .init(name: archiveName, size: hashing.count, sha256: hashing.finalizeHex())
            try pending.commit()
            var written: [String] = [archiveName]
            do {
                let stem = "\(host)_\(id.rawValue)"
                let archive = SignedStatement.Object(role: .archive, name: archiveName, size: hashing.count,
                                                     sha256: summary.archive?.sha256 ?? "")
                var clearSummary: [SignedStatement.Object] = []
                if encrypted, let publicName = BackupNaming.publicSummaryName(forManifest: manifestName) {
                    let line = summary.publicSummaryLine
                    try storage.writeObject(publicName, bytes: line)
                    written.append(publicName)
                    clearSummary = [SignedStatement.Object(role: .summary, name: publicName, size: Int64(line.count),
                                                           sha256: SHA256Hasher.hex(of: line))]
                }
                // The manifest beside the archive is the commit marker: written last, just
                // after the signature, so a signed backup is never seen unsigned.
                try writeSidecar(manifestName, summary: summary, session: session, request: request, cache: cache) { manifest in
                    guard let key = request.signingKey else { return }
                    let statement = SignedStatement(stem: stem, objects: [archive, manifest] + clearSummary)
                    let name = BackupNaming.signatureName(forStem: stem)
                    try storage.writeObject(name, bytes: try BackupSignature(signing: statement, with: key).bytes)
                    written.append(name)
                }
            } catch {
                // The archive is useless without its manifest; remove it again.
                for name in written { try? storage.delete(name) }
                throw error
            }
        } catch {
            pending.abort()
            throw error
        }
        if let cache {
            cache.trim(keeping: Set(((try? storage.list()) ?? []).compactMap { BackupNaming.id(fromManifestName: $0.name) }))
        }
        var result = BackupResult(summary: summary, archiveName: archiveName, manifestName: manifestName,
                                  warnings: warnings, dryRun: false, elapsed: Date().timeIntervalSince(started))
        result.signedBy = request.signingKey?.publicKey
        return result
    }

    // MARK: Steps

    /// Writes and commits the manifest beside the archive, encrypted like the archive; with
    /// a cache, a plain copy goes there too (as far as it can: a cache that fails costs the
    /// next backup its incrementality only, and says so).
    /// `beforeCommit` gets the stored manifest's size and SHA-256 (what a signature names)
    /// once it is written and before it is committed.
    private func writeSidecar(_ manifestName: String, summary: BackupSummary, session: ArchiveSession,
                              request: BackupRequest, cache: ChangeDetectionCache?,
                              beforeCommit: (SignedStatement.Object) throws -> Void) throws {
        let sidecar = try storage.create(manifestName)
        var tee: MirroringSink?
        do {
            let stored = HashingSink(target: sidecar)
            let encrypting = try request.encryption.map { try AgeEncryptingSink(downstream: stored, encryption: $0) }
            // The cache gets the plain (compressed) bytes, what goes into the encryption.
            let plainName = BackupNaming.manifestName(host: HostIdentity.fileSafe(request.host), id: summary.id)
            let mirror = MirroringSink(primary: encrypting ?? stored, mirror: cache?.begin(plainName))
            tee = mirror
            try SidecarManifest.write(summaryLine: Array((summary.json.serialized() + "\n").utf8), to: mirror,
                                       workers: request.threads) { compressor in
                try session.manifest.forEachEntryChunk { try compressor.write($0) }
            }
            try encrypting?.finish()
            try beforeCommit(SignedStatement.Object(role: .manifest, name: manifestName, size: stored.count,
                                                    sha256: stored.finalizeHex()))
            try sidecar.commit()
        } catch {
            sidecar.abort()
            tee?.abortMirror()
            throw error
        }
        if let cache, tee?.commitMirror() != true {
            events?.handle(.caution("could not keep this backup's change-detection state in \(cache.location); "
                + "the next encrypted backup will be full"))
        }
    }

    /// The destination folder, when it lies inside one of `sources` (the default
    /// destination under ~/.local/share in a backup of ~): left out of the scan with its
    /// temporary and lock files, so that no backup holds the backups before it; said once.
    private func destinationInside(_ sources: [[UInt8]]) -> Set<FileIdentity> {
        guard let folder = storage.localFolder, let destination = realpath(folder, nil) else { return [] }
        defer { free(destination) }
        var info = stat()
        guard stat(destination, &info) == 0 else { return [] }
        let inside = PathBytes.fromCString(destination) ?? []
        for source in sources {
            guard let resolved = try? PathBytes.withCString(source, { realpath($0, nil) }) else { continue }
            defer { free(resolved) }
            let root = PathBytes.fromCString(resolved) ?? []
            guard inside.count > root.count, inside.starts(with: root),
                  root == [UInt8(ascii: "/")] || inside[root.count] == UInt8(ascii: "/") else { continue }
            events?.handle(.notice("leaving out \(PathBytes.display(inside)), the destination, which lies inside the source "
                + "\(PathBytes.display(source))"))
            return [FileIdentity(info)]
        }
        return []
    }

    private func resolvedSources(_ request: BackupRequest) throws -> [[UInt8]] {
        if let name = request.stdinName, let path = request.stdinPath {
            guard StandardInputFile.archivePath(path) != nil else {
                throw EngineError.invalidRequest("The stdin name '\(name)' must be a relative path without '..' (and not Keepsake's own .keepsake/manifest.jsonl or .keepsake/SHA256SUMS).")
            }
            return []
        }
        guard !request.sourcePaths.isEmpty else { throw EngineError.invalidRequest("Give at least one path to back up.") }
        return Scanner.withoutNestedSources(try request.sourcePaths.map { try Scanner.absoluteSourcePath($0) })
    }

    /// Cleans up after interrupted runs: removes temporary objects, finishes removals an
    /// interrupted prune began (its marker is there), and rebuilds the manifest of any other
    /// archive whose manifest is missing from the archive's own copy (such an archive is
    /// complete: archives get their final name only once fully written).
    private func cleanUpLeftovers() throws {
        var removed = try storage.removeLeftovers()
        let objects = try storage.list()
        let names = Set(objects.map(\.name))
        removed += try InterruptedRemovals.finish(in: storage, objects: objects)
        // A damage record whose backup is gone (pruned while a verify wrote it), or a
        // signature whose backup never committed (its manifest comes just after it).
        for record in objects {
            guard let suffix = [BackupNaming.damageMarkerSuffix, BackupNaming.signatureSuffix].first(where: record.name.hasSuffix)
            else { continue }
            let stem = String(record.name.dropLast(suffix.count))
            if !BackupNaming.manifestSuffixes.contains(where: { names.contains(stem + $0) }) {
                try storage.delete(record.name)
                removed.append(record.name)
            }
        }
        if !removed.isEmpty {
            let files = removed.count == 1 ? "1 leftover file" : "\(removed.count) leftover files"
            events?.handle(.notice("removed \(files) of an interrupted run from \(storage.location)"))
        }
        let repairer = ManifestRepairer(storage: storage, keyring: keyring, cancellation: cancellation)
        // Only missing manifests: reading every manifest whole on each run would make a
        // destination of many backups slower to back up to every time.
        for damaged in try repairer.damagedManifests(readingContents: false) where damaged.reason == "its manifest is missing" {
            let outcome = try repairer.rebuild(archiveName: damaged.archive, id: damaged.id, reason: damaged.reason)
            switch outcome.kind {
            case .rebuilt:
                events?.handle(.caution("backup \(damaged.id) had lost its manifest; it was rebuilt from the archive's own copy"))
            case .unrecoverable:
                // Set aside (never deleted): the name no longer looks like an archive.
                let aside = damaged.archive + ".unrecoverable"
                try storage.move(damaged.archive, to: aside)
                events?.handle(.caution("\(damaged.archive) has no manifest and cannot be read (\(outcome.reason)); "
                    + "it was set aside as \(aside) — delete it when you no longer need it"))
            case .intact:
                break
            }
        }
    }
}

// MARK: - Dry run

/// Counts what a backup would store, without reading any content.
private final class DryRunCounter {
    private var counts = BackupCounts()
    private var seenInodes = Set<FileIdentity>()

    func add(_ item: ScannedItem) {
        switch item.type {
        case .file:
            if item.info.st_nlink > 1, !seenInodes.insert(FileIdentity(item.info)).inserted {
                counts.hardlinks += 1
                return
            }
            counts.files += 1
            counts.bytes += Int64(item.info.st_size)
        case .directory: counts.directories += 1
        case .symlink: counts.symlinks += 1
        case .socket: break
        default: counts.other += 1
        }
    }

    func fill(_ summary: inout BackupSummary) {
        counts.fill(&summary)
    }
}
