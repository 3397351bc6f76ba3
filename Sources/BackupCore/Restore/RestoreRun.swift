import CPosix
import Foundation
import KeepsakeArchive
import KeepsakeModel
import KeepsakeSigning
import KeepsakeStorage
import KeepsakeSupport

/// One restore, from start to end: reads the restored backup's own archive, then each
/// earlier archive its unchanged files live in, front to back, then puts together the files
/// stored by blocks (`BlockAssembly`); sends every entry through
/// the `RestorePlan`, and what is to be written to the `RestorePlacement` (in a dry run,
/// only says what would happen). Then the `PendingCommit` settles what waited for the
/// archive's own manifest, and the `FolderFixes` give folders their modes and times. Made
/// for one run, so every part starts with its own empty state.
final class RestoreRun {
    // MARK: Parts

    private weak var events: EngineEventSink?
    private let cancellation: CancellationFlag
    private let request: RestoreRequest
    private let plan: RestorePlan
    private let existingCheck: ExistingEntryCheck
    /// The target folder; nil in a dry run, which writes nothing.
    private let target: RestoreTarget?
    /// In a dry run, the target folder when it exists: only looked at, to tell what
    /// would be written from what would be kept.
    private let lookup: RestoreTarget?
    /// Nil in a dry run, like `target`.
    private let placement: RestorePlacement?
    private let pending: PendingCommit?

    // MARK: State

    private let started = Date()
    private var result = RestoreResult()
    private var fixes = FolderFixes()
    /// The archive being read began with Keepsake's marker, so its own manifest (with a
    /// SHA-256 per file) is expected at its end: files waiting for it are hashed meanwhile.
    private var expectsOwnManifest = false
    private var lastProgress = Date.distantPast
    /// The bytes of the files the restore brings back, from the manifest (nil without
    /// one): the progress bar's total.
    private let totalBytes: Int64?
    /// The entry being restored while its content is read; what a damaged archive cut short.
    private var entryInFlight: InFlight?

    // MARK: Life cycle

    /// A run of `request` for a backup described by `manifest` (nil when only the
    /// archive's own manifest, at its end, describes it). Throws when a selection pattern
    /// is not valid or the target cannot be written.
    init(manifest: Manifest?, request: RestoreRequest, events: EngineEventSink?, cancellation: CancellationFlag) throws {
        self.events = events
        self.cancellation = cancellation
        self.request = request
        plan = try RestorePlan(manifest: manifest, request: request)
        existingCheck = ExistingEntryCheck(plan: plan, cancellation: cancellation)
        let selection = plan.selection
        // From the compact records: no entry is built, and a path only with a selection.
        totalBytes = manifest.map { manifest in
            let entries = manifest.entries
            return entries.indices.reduce(Int64(0)) { total, index in
                guard entries.type(at: index) == .file,
                      selection.isEverything || selection.matches(entries.path(at: index), isDirectory: false) else { return total }
                return total + max(0, entries.size(at: index))
            }
        }
        result.backupID = manifest?.summary.id
        if request.dryRun {
            target = nil
            placement = nil
            pending = nil
            lookup = RestoreTarget(existing: request.targetPath)
        } else {
            let target = try RestoreTarget(path: request.targetPath)
            self.target = target
            placement = try RestorePlacement(target: target, plan: plan, request: request, cancellation: cancellation)
            pending = PendingCommit(target: target, request: request, cancellation: cancellation)
            lookup = nil
        }
    }

    // MARK: Phases

    /// Restores from `archive` (see `Restorer.restore(archive:archiveName:manifest:request:locateArchive:)`).
    func restore(archive: RandomAccessSource, archiveName: String, manifest: Manifest?,
                 locateArchive: Restorer.ArchiveLocator?, relocate: Restorer.Relocator? = nil) throws -> RestoreResult {
        do {
            // Phase 1: this backup's own archive.
            let own = try restoreOwnArchive(archive, name: archiveName, manifest: manifest)

            // Phase 2: unchanged files, from the earlier archives that hold them (or, for
            // backups prune let go, from the supplements that `relocate` points them at).
            if var final = own {
                try relocate?(&final)
                try restoreFromEarlierArchives(final, locateArchive: locateArchive)
                try restoreFilesStoredByBlocks(final, own: archive, ownName: archiveName, locateArchive: locateArchive)
                try restoreRecordedLinks(final)
            }
        } catch let failure as RestorePlacement.TargetFailure {
            discardPendings()
            applyFolderFixes()
            throw failure.error
        } catch {
            // Interrupted or failed: what was placed stays, and the folders made so far get
            // their recorded modes and times (a rerun with --overwrite never keeps them).
            discardPendings()
            applyFolderFixes()
            throw error
        }
        if let target {
            applyFolderFixes()
            // Like tar and restic, the restore ends when the kernel has everything; `--sync`
            // waits for the disk too (seconds on a real one, for a large tree).
            if request.sync {
                guard ks_syncfs(target.rootFD) == 0 else {
                    throw EngineError.targetUnusable(path: request.target, reason: "it could not be synced to its disk "
                        + "(\(FileDescriptorIO.message(errno))): the restored files may not all be stored; restore again")
                }
                result.synced = true
            }
        }
        result.elapsed = Date().timeIntervalSince(started)
        return result
    }

    /// Phase 1: restores this backup's own entries from `archive`, and returns the manifest
    /// phase 2 goes by (the one known before reading, or the archive's own). What only this
    /// phase needs (the index of what to expect, what was seen) is let go when it ends.
    private func restoreOwnArchive(_ archive: RandomAccessSource, name archiveName: String,
                                   manifest: Manifest?) throws -> Manifest? {
        let expected = manifest.map { ManifestIndex(plan.wanted ?? $0.entries) }
        // Which manifest positions the archive was seen to hold (a byte each, not a path);
        // for a lone archive, the paths met until its own manifest is read.
        var seen = expected.map { SeenEntries(positions: $0.entries.count) } ?? .byPath()
        // With a selection, only the frames of the selected entries this archive holds are read.
        let ownEntries = plan.wanted == nil ? nil : expected.map { index in
            ManifestIndex(index.entries, positions: index.entries.indices.filter { index.entries.isWholeInOwnArchive(at: $0) })
        }
        let pass = try readArchive(archive, name: archiveName, holder: nil, expected: expected, seen: &seen,
                                   onlyEntries: ownEntries)
        let inner = pass.innerManifest
        var final = manifest
        // The archive's own manifest, indexed, when no manifest was known before reading.
        var ownIndex: ManifestIndex?
        if let expected {
            result.verifiedAgainstManifest = true
            nameMissing(expected, seen: seen)
        } else if inner == nil, pass.stoppedAtDamage,
                  let own = try TailManifest.manifest(of: archive, name: archiveName, cancellation: cancellation) {
            // A lone archive damaged before its manifest: the manifest, found from the end,
            // checks what was placed and places the rest around the damage.
            let index = own.index()
            final = own
            ownIndex = index
            result.verifiedAgainstManifest = true
            seen.resolve(against: index)
            let scope = ManifestIndex(own.entries, positions: own.entries.indices.filter { own.entries.isWholeInOwnArchive(at: $0) })
            try readAround(pass.unreadableFrame, of: archive, name: archiveName, holder: nil, expected: index, scope: scope,
                           cutShort: pass.cutShort, seen: &seen)
            nameMissing(index, seen: seen)
        } else if let cutShort = pass.cutShort {
            nameCutShort(cutShort)
        } else if let inner {
            do {
                let own = try Manifest.parse(inner)
                let index = own.index()
                final = own
                ownIndex = index
                result.verifiedAgainstManifest = true
                // Named as with a manifest beside: an entry whose name was damaged was met
                // under another name (taken back below), never under its own.
                seen.resolve(against: index)
                nameMissing(index, seen: seen)
            } catch {
                result.archiveProblem = "the archive's manifest cannot be read (\(error))"
            }
        }
        if let final { result.backupID = final.summary.id }
        if let placement, let pending {
            try pending.commit(placement.takePendings(), index: ownIndex, hasManifest: final != nil, result: &result)
            if let ownIndex { pending.removeUnlisted(ownIndex, fixes: &fixes, result: &result) }
        } else if manifest == nil {
            result.plainTarball = inner == nil && result.archiveProblem == nil
        }
        return final
    }

    /// Names the entries of this backup's own archive that `index` lists (and the selection
    /// takes) but the archive was not `seen` to hold.
    private func nameMissing(_ index: ManifestIndex, seen: SeenEntries) {
        let entries = index.entries
        for position in index.distinctPositions where entries.isWholeInOwnArchive(at: position) && !seen[position] {
            let path = entries.path(at: position)
            guard plan.selection.matches(path, isDirectory: entries.type(at: position) == .directory) else { continue }
            result.damaged.append(PathWarning(kind: .damaged, path: PathBytes.display(path),
                                              reason: "missing from the archive"))
        }
    }

    /// Reads one archive front to back, restoring what belongs to this phase: with `holder`
    /// nil, this backup's own entries; otherwise the files `expected` says `holder` holds.
    /// Returns the archive's own manifest when it was read (and no manifest was known), and,
    /// with no manifest known, where damage stopped the reading.
    /// A damaged archive sets `archiveProblem`; with a manifest that places every entry and
    /// an archive of frames, reading goes on around each damaged frame (`readAround`), so
    /// only the entries that lie in one are lost. Target failures throw.
    /// With `onlyEntries`, only the frames holding those entries are read when the archive
    /// allows it (see `narrowed`).
    @discardableResult
    private func readArchive(_ source: RandomAccessSource, name: String, holder: BackupID?, expected: ManifestIndex?,
                             seen: inout SeenEntries, onlyEntries: ManifestIndex? = nil) throws -> Pass {
        let ranged = onlyEntries.flatMap { narrowed(source, name: name, entries: $0) }
        let pass = try readPass(source, ranged: ranged, name: name, holder: holder, expected: expected, seen: &seen)
        if let expected, pass.stoppedAtDamage {
            // This archive's entries in this phase: the selection's, or all it holds.
            let scope = onlyEntries ?? (holder != nil ? expected : ManifestIndex(expected.entries, positions:
                expected.indexedPositions.filter { expected.entries.isWholeInOwnArchive(at: $0) }))
            try readAround(pass.unreadableFrame, of: source, name: name, holder: holder, expected: expected, scope: scope,
                           cutShort: pass.cutShort, seen: &seen)
            return Pass(innerManifest: pass.innerManifest)
        }
        // Without a manifest the caller may find one at the archive's end and read around.
        if expected != nil, let cutShort = pass.cutShort { nameCutShort(cutShort) }
        return pass
    }

    /// What one pass over an archive gave: its own manifest (when read), the frame where
    /// damage stopped it (when it stopped at a frame), and the entry it was reading then.
    private struct Pass {
        var innerManifest: [UInt8]?
        /// Whether damage in the archive stopped the pass.
        var stoppedAtDamage = false
        var unreadableFrame: Int?
        var cutShort: InFlight?
    }

    /// An entry whose content is being read: its archive path and the path it is shown by.
    private struct InFlight {
        var archivePath: [UInt8]
        var shown: [UInt8]
    }

    /// Names an entry that damage cut short and that could not be read again.
    private func nameCutShort(_ entry: InFlight) {
        result.damaged.append(PathWarning(kind: .damaged, path: PathBytes.display(entry.shown),
                                          reason: "its content lies in a damaged part of the archive"))
    }

    /// One pass over `source` (or the parts `ranged` reads), restoring each entry met.
    private func readPass(_ source: RandomAccessSource, ranged: RangedZstdSource?, name: String, holder: BackupID?,
                          expected: ManifestIndex?, seen: inout SeenEntries) throws -> Pass {
        var pass = Pass()
        var sawMarker = false
        var sawManifest = false
        expectsOwnManifest = false
        let counting = ranged == nil ? CountingSource(source) : nil
        defer {
            result.archiveBytesRead += ranged?.compressedBytesRead ?? counting?.count ?? 0
            if ranged != nil { result.archivesReadInPart += 1 }
        }
        // Kept outside the reader: damage may stop the reader from opening at all.
        var decoded: ByteSource?
        do {
            let input: ByteSource = try ranged.map { $0 as ByteSource }
                ?? ArchiveReader.decoding(counting.map { $0 as ByteSource } ?? source, name: name)
            decoded = input
            let opened = try ArchiveReader(decoded: input, name: name, keepsakeTar: ranged != nil, cancellation: cancellation)
            while let header = try opened.nextHeader() {
                try cancellation.check()
                if ArchiveLayout.isMetadataEntry(header.path) {
                    if header.path == ArchiveLayout.manifestEntryPath {
                        sawManifest = true
                        if expected == nil {
                            pass.innerManifest = try readInnerManifest(opened, archiveName: name)
                        } else {
                            try opened.skipContent()
                        }
                    } else {
                        if header.path == ArchiveLayout.markerEntryPath {
                            sawMarker = true
                            expectsOwnManifest = true
                        }
                        try opened.skipContent()
                    }
                    continue
                }
                try restoreEntry(header, reader: opened, holder: holder, expected: expected, seen: &seen)
            }
            if sawMarker && !sawManifest && ranged == nil {
                result.noteArchiveProblem("\(name) is a Keepsake archive but ends before its manifest: it is truncated or damaged")
            }
        } catch let failure as ArchiveError {
            result.noteArchiveProblem(failure.description)
            pass.stoppedAtDamage = true
            pass.unreadableFrame = ArchiveReader.unreadableFrame(of: decoded)
        } catch let failure as StorageError {
            result.noteArchiveProblem(failure.description)
            pass.unreadableFrame = ArchiveReader.unreadableFrame(of: decoded)
        }
        // The entry being read when damage stopped the pass lies (at least partly) in the
        // damaged frame: its partial file is never placed, and the caller salvages or names it.
        pass.cutShort = entryInFlight
        entryInFlight = nil
        try finishWrites()
        return pass
    }

    /// Reads the entries of `scope` not yet seen around the damaged `frame` (when damage
    /// stopped reading at no frame, such as a frame whose magic number is gone, the frame
    /// of the first entry not yet seen) and any other damaged frame met on the way. Each entry lying in a damaged frame (and the one a
    /// pass was reading when it stopped, `cutShort`) is taken out of what the frame still
    /// decodes when it checks out (`FrameSalvage`), and named lost otherwise; the others are
    /// read from the frames that hold them. When the archive has no seek table or the
    /// manifest does not place every such entry, they are named missing, as before.
    private func readAround(_ frame: Int?, of source: RandomAccessSource, name: String, holder: BackupID?,
                            expected: ManifestIndex, scope: ManifestIndex, cutShort: InFlight?,
                            seen: inout SeenEntries) throws {
        let entries = scope.entries
        guard var damaged = DamagedFrames(source: source) else {
            if let cutShort { nameCutShort(cutShort) }
            return
        }
        let salvage = try FrameSalvage(source: source, table: damaged.table)
        var cutShort = cutShort
        var unreadable = frame ?? damaged.firstFrame(of: scope, unless: { seen[$0] })
        // Every round adds a frame to `damaged`, so this ends within the table's length.
        while let frame = unreadable, damaged.add(frame) {
            guard let split = damaged.split(scope, unless: { seen[$0] }) else { break }
            var lost = split.lost
            if let entry = cutShort {
                // Met (and marked seen) before its content failed: salvaged like the others.
                if let position = scope.position(of: entry.archivePath) { lost.insert(position, at: 0) } else { nameCutShort(entry) }
                cutShort = nil
            }
            for position in lost {
                if try restoreSalvaged(position, of: entries, from: salvage, name: name, holder: holder, expected: expected,
                                       seen: &seen) { continue }
                let path = entries.path(at: position)
                seen.mark(position, path: path)
                guard plan.selection.matches(path, isDirectory: entries.type(at: position) == .directory) else { continue }
                let frames = damaged.description(of: entries.location(at: position) ?? 0..<0)
                result.damaged.append(PathWarning(kind: .damaged, path: PathBytes.display(path),
                                                  reason: "it lies in a damaged part of the archive (\(frames))"))
            }
            try finishWrites()
            guard !split.rest.isEmpty else { return }
            let around = RangedZstdSource(source: source, table: damaged.table, ranges: split.rest.compactMap(entries.location(at:)),
                                          name: name, workers: DecodedArchiveSource.workers)
            let pass = try readPass(source, ranged: around, name: name, holder: holder, expected: expected, seen: &seen)
            unreadable = pass.stoppedAtDamage ? pass.unreadableFrame ?? damaged.firstFrame(of: scope, unless: { seen[$0] }) : nil
            cutShort = pass.cutShort
        }
        if let cutShort { nameCutShort(cutShort) }
    }

    /// Restores the entry at `position` out of a damaged frame's salvaged bytes when they
    /// hold it whole and its header says nothing the manifest cannot vouch for (a file's
    /// content is then checked against its SHA-256 as it is written, like any other).
    /// False when it cannot be taken out: the caller names it lost.
    private func restoreSalvaged(_ position: Int, of entries: ManifestEntries, from salvage: FrameSalvage, name: String,
                                 holder: BackupID?, expected: ManifestIndex, seen: inout SeenEntries) throws -> Bool {
        guard let location = entries.location(at: position),
              let (reader, header) = salvage.entry(location, name: name, cancellation: cancellation),
              ManifestCheck.salvaged(header, agreesWith: entries[position]) else { return false }
        do {
            try restoreEntry(header, reader: reader, holder: holder, expected: expected, seen: &seen)
        } catch is ArchiveError {
            // Its content ended early: nothing of it was placed.
            entryInFlight = nil
            return false
        }
        return true
    }

    /// The archive's own manifest, or nil (with the problem noted) when it is larger than
    /// what it describes can need: the files waiting for it then land unverified.
    private func readInnerManifest(_ reader: ArchiveReader, archiveName: String) throws -> [UInt8]? {
        do {
            return try reader.readManifest(name: "the manifest inside \(archiveName)")
        } catch let error as ManifestError {
            result.noteArchiveProblem("\(error); its files were restored unchecked, named *\(Restorer.unverifiedSuffix): "
                + "restore from another copy of this backup if there is one")
            return nil
        }
    }

    /// Only the parts of `source` that hold `entries`, when that is possible: the archive
    /// has a seek table, and the manifest knows where every entry lies. Nil otherwise (the
    /// whole archive is read, which is always correct).
    private func narrowed(_ source: RandomAccessSource, name: String, entries: ManifestIndex) -> RangedZstdSource? {
        var ranges: [Range<Int64>] = []
        let positions = entries.indexedPositions
        ranges.reserveCapacity(positions.count)
        for entry in positions.lazy.map({ entries.entries[$0] }) {
            guard let offset = entry.archiveOffset, let length = entry.archiveLength,
                  offset <= Int64.max - length else { return nil }
            ranges.append(offset..<(offset + length))
        }
        guard let table = RangedZstdSource.table(of: source) else { return nil }
        return RangedZstdSource(source: source, table: table, ranges: ranges, name: name, workers: DecodedArchiveSource.workers)
    }

    /// Restores the selected files whose content lives in earlier archives, reading each
    /// of those archives once.
    private func restoreFromEarlierArchives(_ manifest: Manifest, locateArchive: Restorer.ArchiveLocator?) throws {
        // Positions in the manifest, not copies of its entries.
        var groups: [BackupID: [Int]] = [:]
        let entries = manifest.entries
        for position in entries.indices where entries.type(at: position) == .file {
            // Selected, or the content of a selected hard link (restored under its name).
            guard let holder = entries.storedIn(at: position),
                  plan.selection.isEverything || plan.selection.matches(entries.path(at: position), isDirectory: false)
                    || plan.isRedirected(entries.path(at: position))
            else { continue }
            groups[holder, default: []].append(position)
        }
        for holder in groups.keys.sorted() {
            guard let group = groups.removeValue(forKey: holder) else { continue }
            let files = ManifestIndex(entries, positions: group)
            guard let located = try locate(holder, with: locateArchive) else {
                // Not found at all (not found damaged): the caller says what to bring.
                noteMissing(holder, of: manifest.summary, paths: files.map { PathBytes.display($0.key.bytes) })
                continue
            }
            defer { located.source.close() }
            var seen = SeenEntries(positions: files.entries.count)
            _ = try readArchive(located.source, name: located.name, holder: holder, expected: files, seen: &seen,
                                onlyEntries: plan.selection.isEverything ? nil : files)
            for position in files.distinctPositions where !seen[position] {
                result.damaged.append(PathWarning(kind: .damaged, path: PathBytes.display(files.entries.path(at: position)),
                                                  reason: "missing from the archive of backup \(holder)"))
            }
        }
    }

    /// Phase 3: the selected files stored by blocks, each put together from the archives that
    /// hold its blocks (`BlockAssembly`) and written like any file: checked against its
    /// SHA-256 before it is placed. A file that cannot be put together is named damaged.
    private func restoreFilesStoredByBlocks(_ manifest: Manifest, own: RandomAccessSource, ownName: String,
                                            locateArchive: Restorer.ArchiveLocator?) throws {
        let entries = manifest.entries
        let positions = entries.positionsStoredByBlocks.filter { position in
            entries.type(at: position) == .file
                && (plan.selection.isEverything || plan.selection.matches(entries.path(at: position), isDirectory: false))
        }
        guard !positions.isEmpty else { return }
        let index = manifest.index()
        var seen = SeenEntries(positions: entries.count)
        for position in positions {
            let entry = entries[position]
            // A later line of the same path is the one a restore takes.
            guard index.position(of: entry.path[...]) == position, let table = entry.blocks else { continue }
            let assembly = BlockAssembly(entry: entry, table: table) { source, workers in
                try self.openBlocks(of: entry, in: source, workers: workers, own: own, ownName: ownName,
                                    locateArchive: locateArchive)
            }
            defer { assembly.close() }
            do {
                var header = try assembly.newestHeader()
                header.path = entry.path
                header.type = .file
                header.size = entry.size
                header.sparseRegions = []
                header.linkTarget = nil
                try restoreEntry(header, reader: assembly, holder: nil, expected: index, seen: &seen)
            } catch let missing as BlockAssembly.MissingArchive {
                // Named with the archives to bring, as a file whose archive is missing is.
                entryInFlight = nil
                noteMissing(missing.holder, of: manifest.summary, paths: [entry.displayPath])
            } catch let problem as BlockAssembly.Problem {
                entryInFlight = nil
                result.damaged.append(PathWarning(kind: .damaged, path: entry.displayPath, reason: problem.description))
            } catch let failure as ArchiveError {
                entryInFlight = nil
                result.damaged.append(PathWarning(kind: .damaged, path: entry.displayPath,
                                                  reason: "an archive holding its blocks is damaged (\(failure))"))
            } catch let failure as StorageError {
                entryInFlight = nil
                result.damaged.append(PathWarning(kind: .damaged, path: entry.displayPath,
                                                  reason: "an archive holding its blocks cannot be read (\(failure))"))
            }
        }
        try finishWrites()
    }

    /// The entry holding blocks of `entry` that `source` names: in this backup's own archive,
    /// or in the earlier one `locateArchive` finds (named missing when it finds none), with
    /// `workers` of its frames decoded at once.
    private func openBlocks(of entry: ManifestEntry, in source: BlockTable.Source, workers: Int, own: RandomAccessSource,
                            ownName: String, locateArchive: Restorer.ArchiveLocator?) throws -> BlockAssembly.OpenedEntry {
        guard let holder = source.holder else {
            return try BlockAssembly.openEntry(of: entry.path, in: source, archive: own, name: ownName, closing: false,
                                               workers: workers, cancellation: cancellation)
        }
        // Thrown, not noted here: this runs while the file is written, `result` in use.
        guard let located = try locate(holder, with: locateArchive) else { throw BlockAssembly.MissingArchive(holder: holder) }
        return try BlockAssembly.openEntry(of: entry.path, in: source, archive: located.source, name: located.name, closing: true,
                                           workers: workers, cancellation: cancellation)
    }

    /// The archive of the earlier backup `holder`, or nil when it is not found (or found
    /// damaged); one found but not signed as asked stops the restore.
    private func locate(_ holder: BackupID, with locateArchive: Restorer.ArchiveLocator?) throws
        -> (source: RandomAccessSource, name: String)? {
        do {
            return try locateArchive?(holder)
        } catch let refused as SigningError {
            // Found, but not signed as asked: nothing of it is used, and the restore stops.
            throw refused
        } catch {
            return nil
        }
    }

    /// Names the archive of backup `holder` (relied on by the backup `summary` describes) as
    /// one to bring, holding `paths` (added to those it was named for already).
    private func noteMissing(_ holder: BackupID, of summary: BackupSummary, paths: [String]) {
        let host = summary.host.isEmpty ? "HOST" : HostIdentity.fileSafe(summary.host)
        let fileName = "\(host)_\(holder.rawValue)\(summary.compression.fileExtension)"
        let earlier = result.missingArchives.firstIndex { $0.backupID == holder }
        let all = (earlier.map { result.missingArchives[$0].paths } ?? []) + paths
        let missing = MissingArchive(backupID: holder, fileName: fileName, paths: all.sorted())
        if let earlier { result.missingArchives[earlier] = missing } else { result.missingArchives.append(missing) }
    }

    /// Hard links recorded only in the manifest (their first name's content is in an earlier
    /// archive): made last, once every file is in place.
    private func restoreRecordedLinks(_ manifest: Manifest) throws {
        guard let target, let placement else { return }
        for entry in manifest.entries where entry.type == .hardlink && entry.storedIn != nil {
            guard plan.selection.matches(entry.path, isDirectory: false) else { continue }
            // This name already holds the content: its first name was left out.
            if let linkTarget = entry.linkTarget, plan.linkedPath(linkTarget) == entry.path { continue }
            let components: [[UInt8]]
            switch plan.placement(of: entry.path) {
            case .success(let parts)?: components = parts
            case .failure(let refusal)?:
                result.refuse(entry.path, refusal.reason)
                continue
            case nil: continue
            }
            let header = ArchiveEntryHeader(path: entry.path, type: .hardlink, linkTarget: entry.linkTarget)
            do {
                let parentFD = try target.directory(components.dropLast(), create: true)
                var replaces = false
                if let existing = RestoreTarget.existing(components[components.count - 1], in: parentFD) {
                    if plan.keepsExistingForRecordedLinks {
                        result.skippedExisting += 1
                        if !existingCheck.isLink(existing, to: entry.linkTarget, rootFD: target.rootFD) {
                            result.keptDifferent.append(entry.displayPath)
                        }
                        continue
                    }
                    replaces = true
                }
                try placement.queueHardLink(header, components: components, path: entry.path, parentFD: parentFD,
                                            deferred: false, replaces: replaces, result: &result)
            } catch let failure as RestorePlacement.TargetFailure {
                throw failure
            } catch {
                result.warnings.append(PathWarning(kind: .unwritable, path: entry.displayPath, reason: "\(error)"))
            }
        }
        try finishWrites()
    }

    // MARK: Entries

    /// Restores (or skips) one entry met in an archive; `entryInFlight` names it until its
    /// content has been read.
    private func restoreEntry(_ archived: ArchiveEntryHeader, reader: any EntryContentReader, holder: BackupID?,
                              expected: ManifestIndex?, seen: inout SeenEntries) throws {
        try restoreDecidedEntry(archived, reader: reader, holder: holder, expected: expected, seen: &seen)
        // Reached only when reading it did not fail.
        entryInFlight = nil
    }

    private func restoreDecidedEntry(_ archived: ArchiveEntryHeader, reader: any EntryContentReader, holder: BackupID?,
                                     expected: ManifestIndex?, seen: inout SeenEntries) throws {
        let step: RestorePlan.Step
        switch plan.decide(archived, holder: holder, expected: expected, seen: &seen) {
        case .restore(let decided):
            step = decided
            entryInFlight = InFlight(archivePath: archived.path, shown: decided.path)
        case .skip:
            return try reader.skipContent()
        case .refuse(let path, let reason):
            result.refuse(path, reason)
            return try reader.skipContent()
        case .damaged(let path, let reason):
            result.damaged.append(PathWarning(kind: .damaged, path: PathBytes.display(path), reason: reason))
            return try reader.skipContent()
        }
        let header = step.header
        let components = step.components
        let path = step.path
        reportProgress(path)
        guard let target, let placement, let pending else { return try dryRunEntry(step, reader: reader) }

        let parentFD: Int32
        do {
            parentFD = try target.directory(components.dropLast(), create: true)
            // Before the archive's own manifest is read, a damaged name makes folders too.
            if expected == nil { pending.noteMadeOnTheWay(target.madeByLastCall, components: components, path: path) }
        } catch let refusal as RestoreTarget.Refusal {
            result.refuse(path, refusal.reason)
            try reader.skipContent()
            return
        } catch let failure as RestoreTarget.Unwritable {
            try placement.targetProblem(path, failure.code, result: &result)
            try reader.skipContent()
            return
        }
        let name = components[components.count - 1]
        // Whether an existing entry is replaced (counted once the new one is in place).
        var replaces = false
        if plan.mayMeetExisting(header.type, targetStartedEmpty: target.startedEmpty),
           let existing = RestoreTarget.existing(name, in: parentFD) {
            switch plan.meeting(existing, for: header) {
            case .notAFolderInTheWay:
                result.warnings.append(PathWarning(kind: .skipped, path: PathBytes.display(path),
                                                   reason: "something that is not a folder is in the way"))
                return
            case .folderThere(let takesMetadata):
                if takesMetadata { fixes.add(components, header: header) }
                // Counted only when this restore made it (on the way to an earlier entry):
                // a folder that was there before is not restored by being met.
                if target.startedEmpty { result.directories += 1 } else { result.existingDirectories += 1 }
                return
            case .keep:
                return try keepExisting(step, reader: reader, existing: existing, parentFD: parentFD, rootFD: target.rootFD)
            case .folderInTheWay:
                result.warnings.append(PathWarning(kind: .skipped, path: PathBytes.display(path),
                                                   reason: "a folder is in the way; it was left alone"))
                return try reader.skipContent()
            case .replace:
                replaces = true
                noteReplacement(try existingCheck.matchesBeforeReplacing(header, existing: existing, name: name, parentFD: parentFD,
                                                                         entry: step.entry, rootFD: target.rootFD))
            }
        }

        // Before the archive's own manifest is read, what is placed is checked against it at the end.
        let waitsForManifest = expected == nil
        switch header.type {
        case .directory:
            guard try placement.makeDirectory(name, in: parentFD, path: path, result: &result) else { return }
            fixes.add(components, header: header)
            result.directories += 1
            if waitsForManifest { pending.notePlaced(components, path: path, header: header) }
        case .file:
            let check: RestoreFileWriter.Check = waitsForManifest ? .wait(hashed: expectsOwnManifest)
                : .verify(sha256: step.entry?.sha256)
            try placement.queueFile(header, reader: reader, components: components, path: path, parentFD: parentFD,
                                    check: check, replaces: replaces, result: &result)
        case .hardlink:
            try placement.queueHardLink(header, components: components, path: path, parentFD: parentFD,
                                        deferred: waitsForManifest, replaces: replaces, result: &result)
        case .symlink, .fifo, .characterDevice, .blockDevice:
            guard header.type == .symlink || header.type == .fifo || request.restoreSpecialFiles else {
                result.warnings.append(PathWarning(kind: .skipped, path: PathBytes.display(path),
                                                   reason: "device files are restored only with --same-owner, as root"))
                return
            }
            guard try placement.makeNode(header, name: name, in: parentFD, path: path, result: &result) else { return }
            if header.type == .symlink { result.symlinks += 1 } else { result.other += 1 }
            if replaces { result.replaced += 1 }
            if waitsForManifest { pending.notePlaced(components, path: path, header: header) }
        case .socket:
            try reader.skipContent()
        }
    }

    /// A dry run's entry: what would be written (listed in `planned`), replaced, or kept,
    /// looking at the target when it exists.
    private func dryRunEntry(_ step: RestorePlan.Step, reader: any EntryContentReader) throws {
        let header = step.header
        let name = step.components[step.components.count - 1]
        if let lookup, let parentFD = try? lookup.directory(step.components.dropLast(), create: false),
           let existing = RestoreTarget.existing(name, in: parentFD) {
            switch plan.meeting(existing, for: header) {
            case .notAFolderInTheWay:
                // A folder already there is not written; something else in the way stops it.
                result.warnings.append(PathWarning(kind: .skipped, path: PathBytes.display(step.path),
                                                   reason: "something that is not a folder is in the way"))
                return
            case .folderThere:
                result.existingDirectories += 1
                return
            case .keep:
                return try keepExisting(step, reader: reader, existing: existing, parentFD: parentFD, rootFD: lookup.rootFD)
            case .folderInTheWay:
                result.warnings.append(PathWarning(kind: .skipped, path: PathBytes.display(step.path),
                                                   reason: "a folder is in the way; it would be left alone"))
                return try reader.skipContent()
            case .replace:
                result.replaced += 1
                noteReplacement(try existingCheck.matchesBeforeReplacing(header, existing: existing, name: name, parentFD: parentFD,
                                                                         entry: step.entry, rootFD: lookup.rootFD))
            }
        }
        result.planned.append(PathBytes.display(step.path))
        count(header)
        try reader.skipContent()
    }

    /// Counts what an entry about to be replaced held: the backup's copy already (`true`),
    /// something else, or what could not be compared (nil).
    private func noteReplacement(_ same: Bool?) {
        switch same {
        case true?: result.replacedSame += 1
        case nil: result.replacedUncompared += 1
        case false?: break
        }
    }

    /// Counts an existing entry the policy keeps (reading past its content), and names it
    /// in `keptDifferent` when it is not what the backup holds there (see
    /// `ExistingEntryCheck`).
    private func keepExisting(_ step: RestorePlan.Step, reader: any EntryContentReader, existing: stat, parentFD: Int32,
                              rootFD: Int32) throws {
        result.skippedExisting += 1
        let same = try existingCheck.matches(step.header, reader: reader, existing: existing,
                                             name: step.components[step.components.count - 1], parentFD: parentFD,
                                             entry: step.entry, rootFD: rootFD)
        try reader.skipContent()
        if !same { result.keptDifferent.append(PathBytes.display(step.path)) }
    }

    // MARK: Ending

    /// Waits for the writer, and takes in what it did; throws when the target failed.
    private func finishWrites() throws {
        try placement?.finishWrites(result: &result)
        // A stop makes the writer drop what was queued: nothing after this may count as done.
        try cancellation.check()
    }

    /// Removes every temporary file still waiting (after a fatal error).
    private func discardPendings() {
        guard let placement, let pending else { return }
        _ = placement.takeWriterOutcome(result: &result)
        pending.discard(placement.takePendings())
    }

    private func applyFolderFixes() {
        guard let target else { return }
        fixes.apply(in: target, request: request, warnings: &result.warnings)
    }

    // MARK: Counting

    private func count(_ header: ArchiveEntryHeader) {
        switch header.type {
        case .file: result.files += 1; result.bytes += header.size
        case .directory: result.directories += 1
        case .symlink: result.symlinks += 1
        case .hardlink: result.hardlinks += 1
        case .socket: break
        default: result.other += 1
        }
    }

    private func reportProgress(_ path: [UInt8]) {
        guard let events else { return }
        let now = Date()
        guard now.timeIntervalSince(lastProgress) >= 0.1 else { return }
        lastProgress = now
        let written = placement?.progress ?? (files: 0, bytes: 0)
        events.handle(.progress(ProgressSnapshot(entriesDone: result.entryCount + written.files,
                                                 filesDone: result.files + written.files,
                                                 bytesDone: result.bytes + written.bytes, totalBytes: totalBytes,
                                                 currentPath: PathBytes.display(path))))
    }
}
