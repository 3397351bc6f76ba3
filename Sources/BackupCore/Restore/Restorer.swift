import CPosix
import Foundation

/// Restores all or part of an archive into a target folder. Every file is written under
/// a temporary name and renamed into place only once its SHA-256 matches the manifest.
/// With the manifest known in advance (the copy beside the archive), each file lands as
/// soon as it checks out; without it (a lone archive), files wait under their temporary
/// names until the manifest — the archive's last entry — has been read.
public final class Restorer {
    // MARK: Types

    /// Metadata for a directory, applied at the end (deepest first) so that read-only
    /// directories can still be filled and their times are not disturbed.
    private struct DirectoryFix {
        let components: [[UInt8]]
        let header: ArchiveEntryHeader
    }

    /// A failure of the target itself (disk full): stops the restore.
    private struct TargetFailure: Error {
        let error: EngineError
    }

    // MARK: Dependencies and state

    private weak var events: EngineEventSink?
    private let cancellation: CancellationFlag
    private var result = RestoreResult()
    /// Writes files and hard links beside the restoring thread (nil in a dry run).
    private var writer: RestoreFileWriter?
    /// The writer's handle on the folder the last file went into, and that folder's path.
    private var lastDirectory: (components: ArraySlice<[UInt8]>, handle: DirectoryHandle)?
    private var directoryFixes: [DirectoryFix] = []
    /// Folders, symlinks and special files placed before the archive's own manifest was read
    /// (a lone archive): checked against it at the end, since a damaged name lands as made.
    private var placedBeforeManifest: [(components: [[UInt8]], path: [UInt8], recorded: RecordedAttributes)] = []
    private var lastProgress = Date.distantPast
    private var targetPath = ""
    /// The run's `--strip-components`.
    private var currentRequestStrip = 0
    /// Added to the names of files restored from a damaged archive that has no manifest.
    public static let unverifiedSuffix = ".unverified"
    /// Hard-link targets left out by the selection → the first selected name of each: the
    /// content is restored under that name instead, and further names link to it.
    private var redirects: [PathKey: [UInt8]] = [:]
    /// The archive being read began with Keepsake's marker, so its own manifest (with a
    /// SHA-256 per file) is expected at its end: files waiting for it are hashed meanwhile.
    private var expectsOwnManifest = false

    /// A restorer reporting to `events`.
    public init(events: EngineEventSink?, cancellation: CancellationFlag) {
        self.events = events
        self.cancellation = cancellation
    }

    // MARK: Restoring

    /// Finds the archive of an earlier backup that an incremental one relies on; nil when
    /// it cannot be found.
    public typealias ArchiveLocator = (BackupID) throws -> (source: RandomAccessSource, name: String)?

    /// Restores a backup found by `BackupLocator`: the manifest beside its archive (when
    /// there is one) checks every file as it comes, and the earlier archives of its chain are
    /// reached through it.
    public func restore(_ backup: LocatedBackup, request: RestoreRequest) throws -> RestoreResult {
        var request = request
        var manifest = try backup.manifest(forRestoringPaths: request.selectionPaths)
        if let partial = manifest, let resolved = try resolveSelections(request.selectionPaths, in: partial, of: backup) {
            request.selectionPaths = resolved
            manifest = try backup.manifest(forRestoringPaths: resolved)
        }
        let archive = try backup.openArchive()
        defer { archive.close() }
        return try restore(archive: archive, archiveName: backup.archiveLabel, manifest: manifest, request: request) { holder in
            try backup.earlierArchive(holder)
        }
    }

    /// The selections with every path that names nothing in the backup as given replaced
    /// by the paths it means (see `SelectionResolver`); nil when each named something
    /// already (`partial`: the manifest read for them). A path that means nothing is an
    /// error naming it, with the closest paths of the backup.
    private func resolveSelections(_ selections: [[UInt8]], in partial: Manifest, of backup: LocatedBackup) throws -> [[UInt8]]? {
        let isPattern: ([UInt8]) -> Bool = { $0.contains(where: { "*?[".utf8.contains($0) }) }
        let literal = RestoreSelection.normalized
        let unmatched = selections.filter { given in
            guard !isPattern(given), let path = literal(given) else { return false }
            return !partial.entries.contains { PathBytes.isSameOrBelow($0.path, path) }
        }
        guard !unmatched.isEmpty, let whole = try backup.manifest() else { return nil }
        let resolver = SelectionResolver(manifest: whole, workingDirectory: PathBytes.from(FileManager.default.currentDirectoryPath))
        var resolved = selections.filter { !unmatched.contains($0) }
        var nothing: [String] = []
        for given in unmatched {
            let resolution = resolver.resolve(given)
            if resolution.paths.isEmpty {
                let closest = resolution.suggestions.isEmpty ? ""
                    : " (closest: \(resolution.suggestions.map { "'\($0)'" }.joined(separator: ", ")))"
                nothing.append("'\(PathBytes.display(given))'\(closest)")
                continue
            }
            let shown = resolution.paths.prefix(3).map(PathBytes.display).joined(separator: ", ")
            let more = resolution.paths.count > 3 ? " and \(resolution.paths.count - 3) more" : ""
            events?.handle(.notice("'\(PathBytes.display(given))' is \(shown)\(more) in backup \(whole.summary.id)"))
            resolved += resolution.paths
        }
        if !nothing.isEmpty {
            throw EngineError.invalidRequest("Nothing in backup \(whole.summary.id) matches \(nothing.joined(separator: ", ")). "
                + "Give a path as 'keepsake list \(whole.summary.id)' or 'keepsake find' prints it, the original path, "
                + "or one relative to a source folder")
        }
        return resolved
    }

    /// Restores from `archive`. `manifest` is the copy beside the archive when there is
    /// one; otherwise the archive's own manifest is used once it has been read. Files of an
    /// incremental backup that did not change live in earlier archives: `locateArchive`
    /// opens those, and each is read once, front to back.
    public func restore(archive: RandomAccessSource, archiveName: String, manifest: Manifest?, request: RestoreRequest,
                        locateArchive: ArchiveLocator? = nil) throws -> RestoreResult {
        let started = Date()
        result = RestoreResult()
        directoryFixes = []
        placedBeforeManifest = []
        lastDirectory = nil
        targetPath = request.target
        currentRequestStrip = request.stripComponents
        let selection = try RestoreSelection(request.selectionPaths)
        redirects = [:]
        if let manifest, !selection.isEverything {
            for entry in manifest.entries where entry.type == .hardlink {
                // Both names must be safe to write: an unsafe one is refused where it is met.
                guard let linkTarget = entry.linkTarget, redirects[PathKey(linkTarget)] == nil,
                      case .success = ArchivePath.components(of: entry.path),
                      case .success = ArchivePath.components(of: linkTarget),
                      selection.matches(entry.path, isDirectory: false),
                      !selection.matches(linkTarget, isDirectory: false) else { continue }
                redirects[PathKey(linkTarget)] = entry.path
            }
        }
        // With a selection, only the selected entries (and the files their hard links need)
        // are looked up: entries left out are skipped before any look-up.
        var wanted: ManifestEntries?
        if let manifest, !selection.isEverything {
            wanted = ManifestEntries(manifest.entries.lazy.filter { entry in
                self.redirects[PathKey(entry.path)] != nil || selection.matches(entry.path, isDirectory: entry.type == .directory)
            })
        }
        let expected = manifest.map { ManifestIndex(wanted ?? $0.entries) }
        result.backupID = manifest?.summary.id
        let target = request.dryRun ? nil : try RestoreTarget(path: request.targetPath)
        writer = nil
        if let target {
            writer = RestoreFileWriter(rootFD: target.rootFD, request: request, cancellation: cancellation)
            if writer == nil { throw EngineError.targetUnusable(path: request.target, reason: FileDescriptorIO.message(errno)) }
        }
        defer {
            writer = nil
            lastDirectory = nil
        }
        let lookup = request.dryRun ? RestoreTarget(existing: request.targetPath) : nil
        let context = PhaseContext(target: target, lookup: lookup, selection: selection, request: request)

        do {
            // Phase 1: this backup's own archive.
            var seen = Set<PathKey>()
            let ownEntries = wanted.map { ManifestEntries($0.lazy.filter { $0.storedIn == nil }) }
            let inner = try readArchive(archive, name: archiveName, holder: nil, expected: expected, seen: &seen,
                                        context: context, onlyEntries: ownEntries)
            var final = manifest
            if let expected {
                result.verifiedAgainstManifest = true
                for (key, entry) in expected where entry.storedIn == nil && !seen.contains(key)
                    && selection.matches(key.bytes, isDirectory: entry.type == .directory) {
                    result.damaged.append(PathWarning(kind: .damaged, path: PathBytes.display(key.bytes),
                                                      reason: "missing from the archive"))
                }
            } else if let inner {
                do {
                    final = try Manifest.parse(inner)
                    result.verifiedAgainstManifest = true
                } catch {
                    result.archiveProblem = "the archive's manifest cannot be read (\(error))"
                }
            }
            if let final { result.backupID = final.summary.id }
            if let target {
                let index = manifest == nil ? final?.index() : nil
                try commitPendings(target: target, index: index, hasManifest: final != nil, request: request)
                if let index { removeUnlisted(index, target: target) }
            } else if manifest == nil {
                result.plainTarball = inner == nil && result.archiveProblem == nil
            }

            // Phase 2: unchanged files, from the earlier archives that hold them.
            if let final {
                try restoreFromEarlierArchives(final, locateArchive: locateArchive, context: context)
                if let target { try restoreRecordedLinks(final, target: target, context: context) }
            }
        } catch let failure as TargetFailure {
            discardPendings(target)
            if let target { applyDirectoryFixes(target: target, request: request) }
            throw failure.error
        } catch {
            // Interrupted or failed: what was placed stays, and the folders made so far get
            // their recorded modes and times (a rerun with --overwrite never keeps them).
            discardPendings(target)
            if let target { applyDirectoryFixes(target: target, request: request) }
            throw error
        }
        if let target {
            applyDirectoryFixes(target: target, request: request)
            ks_syncfs(target.rootFD)
        }
        result.elapsed = Date().timeIntervalSince(started)
        return result
    }

    // MARK: Phases

    /// What every phase of one restore shares.
    private struct PhaseContext {
        let target: RestoreTarget?
        /// In a dry run, the target folder when it exists: only looked at, to tell what
        /// would be written from what would be kept.
        let lookup: RestoreTarget?
        let selection: RestoreSelection
        let request: RestoreRequest
    }

    /// Reads one archive front to back, restoring what belongs to this phase: with `holder`
    /// nil, this backup's own entries; otherwise the files `expected` says `holder` holds.
    /// Returns the archive's own manifest when it was read (and no manifest was known).
    /// A damaged archive ends the phase with `archiveProblem` set; target failures throw.
    /// With `onlyEntries`, only the frames holding those entries are read when the archive
    /// allows it (see `narrowed`).
    private func readArchive(_ source: RandomAccessSource, name: String, holder: BackupID?, expected: ManifestIndex?,
                             seen: inout Set<PathKey>, context: PhaseContext, onlyEntries: ManifestEntries? = nil) throws -> [UInt8]? {
        var innerManifest: [UInt8]?
        var sawMarker = false
        var sawManifest = false
        expectsOwnManifest = false
        let ranged = onlyEntries.flatMap { narrowed(source, name: name, entries: $0) }
        let counting = ranged == nil ? CountingSource(source) : nil
        defer {
            result.archiveBytesRead += ranged?.compressedBytesRead ?? counting?.count ?? 0
            if ranged != nil { result.archivesReadInPart += 1 }
        }
        do {
            let input: ByteSource = ranged.map { $0 as ByteSource } ?? counting.map { $0 as ByteSource } ?? source
            let reader = try ArchiveReader(source: input, name: name, plainTar: ranged != nil,
                                           cancellation: cancellation)
            while let header = try reader.nextHeader() {
                try cancellation.check()
                if BackupNaming.isMetadataEntry(header.path) {
                    if header.path == BackupNaming.manifestEntryPath {
                        sawManifest = true
                        if expected == nil {
                            innerManifest = try readInnerManifest(reader, archiveName: name)
                        } else {
                            try reader.skipContent()
                        }
                    } else {
                        if header.path == BackupNaming.markerEntryPath {
                            sawMarker = true
                            expectsOwnManifest = true
                        }
                        try reader.skipContent()
                    }
                    continue
                }
                try restoreEntry(header, reader: reader, holder: holder, expected: expected, seen: &seen, context: context)
            }
            if sawMarker && !sawManifest && ranged == nil {
                noteArchiveProblem("\(name) is a Keepsake archive but ends before its manifest: it is truncated or damaged")
            }
        } catch let failure as ArchiveError {
            noteArchiveProblem(failure.description)
        } catch let failure as StorageError {
            noteArchiveProblem(failure.description)
        }
        try finishWrites()
        return innerManifest
    }

    /// The archive's own manifest, or nil (with the problem noted) when it is larger than
    /// what it describes can need: the files waiting for it then land unverified.
    private func readInnerManifest(_ reader: ArchiveReader, archiveName: String) throws -> [UInt8]? {
        do {
            return try reader.readManifest(name: "the manifest inside \(archiveName)")
        } catch let error as ManifestError {
            noteArchiveProblem("\(error); its files were restored unchecked, named *\(Restorer.unverifiedSuffix): "
                + "restore from another copy of this backup if there is one")
            return nil
        }
    }

    /// Only the parts of `source` that hold `entries`, when that is possible: the archive
    /// has a seek table, and the manifest knows where every entry lies. Nil otherwise (the
    /// whole archive is read, which is always correct).
    private func narrowed(_ source: RandomAccessSource, name: String, entries: ManifestEntries) -> RangedZstdSource? {
        var ranges: [Range<Int64>] = []
        ranges.reserveCapacity(entries.count)
        for entry in entries {
            guard let offset = entry.archiveOffset, let length = entry.archiveLength,
                  offset <= Int64.max - length else { return nil }
            ranges.append(offset..<(offset + length))
        }
        // The table comes from the archive: frames bigger than Keepsake would decompress in
        // one piece are read the ordinary way.
        guard let size = try? source.size(),
              let table = try? SeekTable.read(streamSize: size, read: { try source.bytes(at: $0, count: $1) }),
              table.largestFrame <= ZstdContext.compressBound(ParallelZstdSource.largestParallelFrame) else { return nil }
        return RangedZstdSource(source: source, table: table, ranges: ranges, name: name, workers: DecodedArchiveSource.workers)
    }

    private func noteArchiveProblem(_ problem: String) {
        result.archiveProblem = result.archiveProblem.map { $0 + "; " + problem } ?? problem
    }

    /// Restores the selected files whose content lives in earlier archives, reading each
    /// of those archives once.
    private func restoreFromEarlierArchives(_ manifest: Manifest, locateArchive: ArchiveLocator?,
                                            context: PhaseContext) throws {
        var groups: [BackupID: ManifestEntries] = [:]
        for entry in manifest.entries where entry.type == .file {
            guard let holder = entry.storedIn, context.selection.matches(entry.path, isDirectory: false) else { continue }
            groups[holder, default: ManifestEntries()].append(entry)
        }
        for holder in groups.keys.sorted() {
            guard let group = groups.removeValue(forKey: holder) else { continue }
            let files = ManifestIndex(group)
            let located: (source: RandomAccessSource, name: String)?
            do {
                located = try locateArchive?(holder)
            } catch {
                located = nil
            }
            guard let located else {
                // Not found at all (not found damaged): the caller says what to bring.
                let host = manifest.summary.host.isEmpty ? "HOST" : HostIdentity.fileSafe(manifest.summary.host)
                let fileName = "\(host)_\(holder.rawValue)\(manifest.summary.compression.fileExtension)"
                result.missingArchives.append(MissingArchive(backupID: holder, fileName: fileName,
                                                             paths: files.map { PathBytes.display($0.key.bytes) }.sorted()))
                continue
            }
            defer { located.source.close() }
            var seen = Set<PathKey>()
            _ = try readArchive(located.source, name: located.name, holder: holder, expected: files, seen: &seen,
                                context: context, onlyEntries: context.selection.isEverything ? nil : files.entries)
            for (key, _) in files where !seen.contains(key) {
                result.damaged.append(PathWarning(kind: .damaged, path: PathBytes.display(key.bytes),
                                                  reason: "missing from the archive of backup \(holder)"))
            }
        }
    }

    /// Hard links recorded only in the manifest (their first name's content is in an earlier
    /// archive): made last, once every file is in place.
    private func restoreRecordedLinks(_ manifest: Manifest, target: RestoreTarget, context: PhaseContext) throws {
        for entry in manifest.entries where entry.type == .hardlink && entry.storedIn != nil {
            guard context.selection.matches(entry.path, isDirectory: false) else { continue }
            let components: [[UInt8]]
            switch placement(of: entry.path) {
            case .success(let parts)?: components = parts
            case .failure(let refusal)?:
                refuse(entry.path, refusal.reason)
                continue
            case nil: continue
            }
            let header = ArchiveEntryHeader(path: entry.path, type: .hardlink, linkTarget: entry.linkTarget)
            do {
                let parentFD = try target.directory(components.dropLast(), create: true)
                var replaces = false
                if let existing = RestoreTarget.existing(components[components.count - 1], in: parentFD) {
                    if context.request.overwrite == .never {
                        result.skippedExisting += 1
                        if !isLink(existing, to: entry.linkTarget, rootFD: target.rootFD) {
                            result.keptDifferent.append(entry.displayPath)
                        }
                        continue
                    }
                    replaces = true
                }
                try restoreHardLink(header, components: components, path: entry.path, parentFD: parentFD, deferred: false,
                                    replaces: replaces)
            } catch let failure as TargetFailure {
                throw failure
            } catch {
                result.warnings.append(PathWarning(kind: .unwritable, path: entry.displayPath, reason: "\(error)"))
            }
        }
        try finishWrites()
    }

    // MARK: Entries

    private func restoreEntry(_ header: ArchiveEntryHeader, reader: ArchiveReader, holder: BackupID?,
                              expected: ManifestIndex?, seen: inout Set<PathKey>,
                              context: PhaseContext) throws {
        let target = context.target
        let selection = context.selection
        let request = context.request
        var header = header
        var components: [[UInt8]]
        switch RestoreTarget.components(of: header.path) {
        case .failure(let refusal):
            refuse(header.path, refusal.reason)
            try reader.skipContent()
            return
        case .success(let parts):
            components = parts
        }
        // The archive's path as it is when it is already in normal form (the usual case):
        // the joined components are that long only when they are the same bytes.
        var path = components.reduce(components.count - 1) { $0 + $1.count } == header.path.count
            ? header.path : components.dropFirst().reduce(components[0]) { PathBytes.join($0, $1) }
        if request.stripComponents > 0 {
            // Placed without its first components; the archive path stays its name here.
            guard components.count > request.stripComponents else {
                seen.insert(PathKey(path))
                try reader.skipContent()
                return
            }
            components.removeFirst(request.stripComponents)
        }
        let archivePath = path
        let archiveKey = PathKey(archivePath)
        if let holder {
            // An earlier backup's archive: only the files the restored backup takes from it,
            // with the restored backup's metadata.
            guard header.type == .file, let entry = expected?[archiveKey], entry.storedIn == holder else {
                try reader.skipContent()
                return
            }
            header = Restorer.header(header, describedBy: entry)
        } else if let entry = expected?[archiveKey] {
            if entry.storedIn != nil {
                try reader.skipContent()
                return
            }
            // The manifest is the record: a damaged tar header must not change the metadata.
            if header.type == .file || header.type == .directory { header = Restorer.header(header, describedBy: entry) }
        }
        if !selection.matches(path, isDirectory: header.type == .directory) {
            // A file left out whose other (selected) name is a hard link: restore it there.
            guard header.type == .file, let redirected = redirects[PathKey(path)],
                  case .success(let parts)? = placement(of: redirected) else {
                try reader.skipContent()
                return
            }
            path = redirected
            components = parts
        } else if header.type == .hardlink, let linkTarget = header.linkTarget, redirects[PathKey(linkTarget)] == path {
            // This name already holds the content (see above).
            seen.insert(PathKey(path))
            try reader.skipContent()
            return
        }
        var entry: ManifestEntry?
        if let expected {
            seen.insert(archiveKey)
            entry = expected[archiveKey]
            if let problem = ManifestCheck.mismatch(header, entry) {
                result.damaged.append(PathWarning(kind: .damaged, path: PathBytes.display(path), reason: problem))
                try reader.skipContent()
                return
            }
        }
        reportProgress(path)
        guard let target else {
            return try plan(header, reader: reader, components: components, path: path, entry: entry, context: context)
        }

        let parentFD: Int32
        do {
            parentFD = try target.directory(components.dropLast(), create: true)
        } catch let refusal as RestoreTarget.Refusal {
            refuse(path, refusal.reason)
            try reader.skipContent()
            return
        } catch let failure as RestoreTarget.Unwritable {
            try targetProblem(path, failure.code)
            try reader.skipContent()
            return
        }
        let name = components[components.count - 1]
        // Whether an existing entry is replaced (counted once the new one is in place).
        var replaces = false
        // Into a folder that started empty, only folders can already be there (made on the way).
        let mayExist = !target.startedEmpty || header.type == .directory
        if mayExist, let existing = RestoreTarget.existing(name, in: parentFD) {
            let isFolder = existing.st_mode & S_IFMT == S_IFDIR
            if header.type == .directory {
                if !isFolder {
                    result.warnings.append(PathWarning(kind: .skipped, path: PathBytes.display(path),
                                                       reason: "something that is not a folder is in the way"))
                    return
                }
                if request.overwrite == .always { directoryFixes.append(DirectoryFix(components: components, header: header)) }
                // Counted only when this restore made it (on the way to an earlier entry):
                // a folder that was there before is not restored by being met.
                if target.startedEmpty { result.directories += 1 } else { result.existingDirectories += 1 }
                return
            }
            if Restorer.keeps(existing, for: header, policy: request.overwrite) {
                try keepExisting(header, reader: reader, existing: existing, name: name, parentFD: parentFD, path: path,
                                 entry: entry, rootFD: target.rootFD)
                return
            }
            if isFolder {
                result.warnings.append(PathWarning(kind: .skipped, path: PathBytes.display(path),
                                                   reason: "a folder is in the way; it was left alone"))
                try reader.skipContent()
                return
            }
            replaces = true
        }

        switch header.type {
        case .directory:
            if PathBytes.syscall(name, { mkdirat(parentFD, $0, 0o700) }) != 0 {
                try targetProblem(path, errno)
                return
            }
            directoryFixes.append(DirectoryFix(components: components, header: header))
            result.directories += 1
            if expected == nil { placedBeforeManifest.append((components, path, RecordedAttributes(header))) }
        case .file:
            try restoreFile(header, reader: reader, components: components, path: path, parentFD: parentFD,
                            expected: entry, hasManifest: expected != nil, replaces: replaces)
        case .symlink:
            let temporary = RestoreTarget.temporaryName()
            let status = PathBytes.syscall(header.linkTarget ?? []) { link in
                PathBytes.syscall(temporary) { symlinkat(link, parentFD, $0) }
            }
            guard status == 0 else { try targetProblem(path, errno); return }
            guard RestoredMetadata.applyToNode(header, name: temporary, parentFD: parentFD, request: request, path: path,
                                               warnings: &result.warnings) else { return swapped(temporary, parentFD: parentFD, path: path) }
            guard try place(temporary, as: name, parentFD: parentFD, path: path) else { return }
            result.symlinks += 1
            if replaces { result.replaced += 1 }
            if expected == nil { placedBeforeManifest.append((components, path, RecordedAttributes(header))) }
        case .hardlink:
            try restoreHardLink(header, components: components, path: path, parentFD: parentFD, deferred: expected == nil,
                                replaces: replaces)
        case .fifo, .characterDevice, .blockDevice:
            guard header.type == .fifo || request.restoreSpecialFiles else {
                result.warnings.append(PathWarning(kind: .skipped, path: PathBytes.display(path),
                                                   reason: "device files are restored only with --same-owner, as root"))
                return
            }
            let temporary = RestoreTarget.temporaryName()
            let kind: mode_t = header.type == .fifo ? S_IFIFO : header.type == .characterDevice ? S_IFCHR : S_IFBLK
            let status = PathBytes.syscall(temporary) {
                mknodat(parentFD, $0, kind | mode_t(header.permissions & 0o777), dev_t(header.rdev))
            }
            guard status == 0 else { try targetProblem(path, errno); return }
            guard RestoredMetadata.applyToNode(header, name: temporary, parentFD: parentFD, request: request, path: path,
                                               warnings: &result.warnings) else { return swapped(temporary, parentFD: parentFD, path: path) }
            guard try place(temporary, as: name, parentFD: parentFD, path: path) else { return }
            result.other += 1
            if replaces { result.replaced += 1 }
            if expected == nil { placedBeforeManifest.append((components, path, RecordedAttributes(header))) }
        case .socket:
            try reader.skipContent()
        }
    }

    /// Queues a file's content for the writer, which writes it under a temporary name,
    /// hashing it, then places it (or leaves it pending until the archive's own manifest is
    /// read).
    private func restoreFile(_ header: ArchiveEntryHeader, reader: ArchiveReader, components: [[UInt8]], path: [UInt8],
                             parentFD: Int32, expected: ManifestEntry?, hasManifest: Bool, replaces: Bool) throws {
        guard let writer else { return try reader.skipContent() }
        try stopIfTargetFailed()
        if result.firstFilePlacement == nil {
            result.firstFilePlacement = components.dropFirst().reduce(components[0]) { PathBytes.join($0, $1) }
        }
        guard let (directory, isNew) = directoryHandle(components.dropLast(), fd: parentFD) else {
            try targetProblem(path, errno)
            try reader.skipContent()
            return
        }
        let check: RestoreFileWriter.Check = hasManifest ? .verify(sha256: expected?.sha256) : .wait(hashed: expectsOwnManifest)
        writer.beginFile(RestoreFileWriter.FileJob(directory: directory, components: components, path: path, header: header,
                                                   check: check, replaces: replaces), newDirectory: isNew)
        do {
            while let block = try reader.nextBlock() {
                try cancellation.check()
                try stopIfTargetFailed()
                writer.write(block.bytes, at: block.offset)
            }
        } catch {
            writer.abortFile()
            throw error
        }
        writer.endFile()
    }

    private func restoreHardLink(_ header: ArchiveEntryHeader, components: [[UInt8]], path: [UInt8], parentFD: Int32,
                                 deferred: Bool, replaces: Bool = false) throws {
        guard let writer else { return }
        guard case .success(let archiveParts) = RestoreTarget.components(of: header.linkTarget ?? []) else {
            refuse(path, "hard link to an unsafe path")
            return
        }
        let original = archiveParts.dropFirst().reduce(archiveParts[0]) { PathBytes.join($0, $1) }
        let linkPath = redirects[PathKey(original)] ?? original
        let linkParts: [[UInt8]]
        switch placement(of: linkPath) {
        case .success(let parts)?: linkParts = parts
        case .failure?:
            refuse(path, "hard link to an unsafe path")
            return
        case nil:
            result.warnings.append(PathWarning(kind: .skipped, path: PathBytes.display(path),
                                               reason: "the file it links to is above what --strip-components keeps"))
            return
        }
        try stopIfTargetFailed()
        guard let (directory, isNew) = directoryHandle(components.dropLast(), fd: parentFD) else {
            try targetProblem(path, errno)
            return
        }
        writer.link(RestoreFileWriter.LinkJob(directory: directory, components: components, path: path, linkPath: linkPath,
                                              linkParts: linkParts, deferred: deferred, replaces: replaces), newDirectory: isNew)
    }

    /// Where the archive path `path` lands in the target: its safe components less the
    /// first `--strip-components`; nil when none is left (it is not restored).
    private func placement(of path: [UInt8]) -> Result<[[UInt8]], ArchivePath.Refusal>? {
        switch RestoreTarget.components(of: path) {
        case .failure(let refusal): return .failure(refusal)
        case .success(let parts):
            let strip = currentRequestStrip
            guard strip > 0 else { return .success(parts) }
            return parts.count > strip ? .success(Array(parts.dropFirst(strip))) : nil
        }
    }

    /// The writer's handle on folder `components` (open here as `fd`), and whether it is
    /// new; the last one is reused while files keep going into the same folder.
    private func directoryHandle(_ components: ArraySlice<[UInt8]>, fd: Int32) -> (DirectoryHandle, Bool)? {
        if let last = lastDirectory, last.components == components { return (last.handle, false) }
        lastDirectory = nil
        guard let handle = DirectoryHandle(copying: fd) else { return nil }
        lastDirectory = (components, handle)
        return (handle, true)
    }

    // MARK: Existing entries

    /// Whether `policy` keeps `existing` rather than putting the backup's `header` there.
    private static func keeps(_ existing: stat, for header: ArchiveEntryHeader, policy: OverwritePolicy) -> Bool {
        switch policy {
        case .never: return true
        case .ifNewer:
            let existingTime = Int64(existing.st_mtim.tv_sec) * 1_000_000_000 + Int64(existing.st_mtim.tv_nsec)
            return existingTime >= header.mtimeTotalNanoseconds
        case .always: return false
        }
    }

    /// Counts an existing entry the policy keeps (reading past its content), and names it
    /// in `keptDifferent` when it is not what the backup holds there: other content (by
    /// SHA-256), another link target, another kind of node. Times and modes do not count.
    private func keepExisting(_ header: ArchiveEntryHeader, reader: ArchiveReader, existing: stat, name: [UInt8],
                              parentFD: Int32, path: [UInt8], entry: ManifestEntry?, rootFD: Int32) throws {
        result.skippedExisting += 1
        let kind = existing.st_mode & S_IFMT
        var same: Bool
        switch header.type {
        case .file:
            same = try keptFileMatches(header, reader: reader, existing: existing, name: name, parentFD: parentFD, entry: entry)
        case .symlink:
            same = kind == S_IFLNK && RestoreTarget.linkTarget(name, in: parentFD) == header.linkTarget
        case .hardlink:
            let linkTarget = header.linkTarget.map { redirects[PathKey($0)] ?? $0 }
            same = isLink(existing, to: linkTarget, rootFD: rootFD)
        case .fifo: same = kind == S_IFIFO
        case .characterDevice: same = kind == S_IFCHR && UInt64(existing.st_rdev) == UInt64(header.rdev)
        case .blockDevice: same = kind == S_IFBLK && UInt64(existing.st_rdev) == UInt64(header.rdev)
        case .directory, .socket: same = true
        }
        try reader.skipContent()
        if !same { result.keptDifferent.append(PathBytes.display(path)) }
    }

    /// Whether the regular file `name` holds the archive's content for `header`: same size,
    /// then the same SHA-256 (the manifest's, or else that of the content read from the
    /// archive). A file that cannot be read counts as different.
    private func keptFileMatches(_ header: ArchiveEntryHeader, reader: ArchiveReader, existing: stat, name: [UInt8],
                                 parentFD: Int32, entry: ManifestEntry?) throws -> Bool {
        guard existing.st_mode & S_IFMT == S_IFREG, Int64(existing.st_size) == header.size else { return false }
        // Non-blocking: a FIFO swapped in since the look must not hang the restore.
        let fd = PathBytes.syscall(name) { openat(parentFD, $0, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) }
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, Int64(info.st_size) == header.size else { return false }
        let wanted: String
        if let sha256 = entry?.sha256 {
            wanted = sha256
        } else {
            wanted = try ManifestCheck.hashContent(of: reader, declaredSize: header.size, cancellation: cancellation).sha256
        }
        return try ManifestCheck.hashFile(fd, size: header.size, cancellation: cancellation) == wanted
    }

    /// Whether `existing` is the very file (the same inode) found at `linkTarget` in the
    /// target folder `rootFD`: a hard link already in place.
    private func isLink(_ existing: stat, to linkTarget: [UInt8]?, rootFD: Int32) -> Bool {
        guard existing.st_mode & S_IFMT == S_IFREG, let linkTarget,
              case .success(let parts)? = placement(of: linkTarget),
              let folder = try? RestoreTarget.openDirectory(parts.dropLast()[...], in: rootFD, create: false) else { return false }
        defer { close(folder) }
        guard let other = RestoreTarget.existing(parts[parts.count - 1], in: folder) else { return false }
        return other.st_dev == existing.st_dev && other.st_ino == existing.st_ino
    }

    /// A dry run's entry: what would be written (listed in `planned`), replaced, or kept,
    /// looking at the target when it exists.
    private func plan(_ header: ArchiveEntryHeader, reader: ArchiveReader, components: [[UInt8]], path: [UInt8],
                      entry: ManifestEntry?, context: PhaseContext) throws {
        let name = components[components.count - 1]
        if let lookup = context.lookup, let parentFD = try? lookup.directory(components.dropLast(), create: false),
           let existing = RestoreTarget.existing(name, in: parentFD) {
            if header.type == .directory {
                // A folder already there is not written; something else in the way stops it.
                if existing.st_mode & S_IFMT != S_IFDIR {
                    result.warnings.append(PathWarning(kind: .skipped, path: PathBytes.display(path),
                                                       reason: "something that is not a folder is in the way"))
                } else {
                    result.existingDirectories += 1
                }
                return
            }
            if Restorer.keeps(existing, for: header, policy: context.request.overwrite) {
                return try keepExisting(header, reader: reader, existing: existing, name: name, parentFD: parentFD, path: path,
                                        entry: entry, rootFD: lookup.rootFD)
            }
            if existing.st_mode & S_IFMT == S_IFDIR {
                result.warnings.append(PathWarning(kind: .skipped, path: PathBytes.display(path),
                                                   reason: "a folder is in the way; it would be left alone"))
                return try reader.skipContent()
            }
            result.replaced += 1
        }
        result.planned.append(PathBytes.display(path))
        count(header)
        try reader.skipContent()
    }

    // MARK: The writer

    /// Throws the target's failure (a full disk) once the writer has met it.
    private func stopIfTargetFailed() throws {
        guard let writer, writer.hasFailed else { return }
        try finishWrites()
    }

    /// Waits for the writer, and takes in what it did; throws when the target failed.
    private func finishWrites() throws {
        if let failure = takeWriterOutcome() { throw TargetFailure(error: failure) }
        // A stop makes the writer drop what was queued: nothing after this may count as done.
        try cancellation.check()
    }

    /// Waits for the writer and adds what it did to the result; returns the target's
    /// failure, if it met one.
    private func takeWriterOutcome() -> EngineError? {
        guard let writer else { return nil }
        let done = writer.drain()
        result.files += done.files
        result.hardlinks += done.hardlinks
        result.bytes += done.bytes
        result.replaced += done.replaced
        result.damaged += done.damaged
        result.warnings += done.warnings
        return done.failure
    }

    /// The archive header with the metadata the manifest records for the restored backup
    /// (an unchanged file may have a new mode, owner or time since the archive was made).
    private static func header(_ header: ArchiveEntryHeader, describedBy entry: ManifestEntry) -> ArchiveEntryHeader {
        var described = header
        described.permissions = entry.mode
        described.uid = entry.uid
        described.gid = entry.gid
        described.userName = entry.userName
        described.groupName = entry.groupName
        (described.mtimeSeconds, described.mtimeNanoseconds) = entry.mtimeParts
        return described
    }

    // MARK: Placing

    /// Renames a finished temporary file into place (replacing what the policy allowed).
    /// False when it could not be placed (the path is then named in a warning).
    private func place(_ temporary: [UInt8], as name: [UInt8], parentFD: Int32, path: [UInt8]) throws -> Bool {
        let code = RestoreTarget.rename(temporary, to: name, in: parentFD)
        if code != 0 {
            RestoreTarget.remove(temporary, in: parentFD)
            try targetProblem(path, code)
            return false
        }
        return true
    }

    /// Why a node this restore made is not placed: its temporary name no longer holds it.
    static let swappedReason = "its temporary name was replaced by something else while it was restored "
        + "(someone else can write this folder); not placed"

    /// A node whose temporary name was swapped (see `RestoredMetadata.applyToNode`): the name
    /// is removed (which never follows a symlink), and the path is named in a warning.
    private func swapped(_ temporary: [UInt8], parentFD: Int32, path: [UInt8]) {
        RestoreTarget.remove(temporary, in: parentFD)
        result.warnings.append(PathWarning(kind: .unwritable, path: PathBytes.display(path), reason: Restorer.swappedReason))
    }

    /// Takes back what was placed before the archive's own manifest (`index`) was read and
    /// that it does not list, or lists with other attributes than the archive's header: a
    /// name or attribute damaged in the archive (a flipped bit in a gzip stream, which has
    /// no checksum of its own) must not stay as if restored. Deepest first, after the
    /// waiting files, so a folder with a damaged name is empty by then; one that is not
    /// empty (something else was put in it) is left and named.
    private func removeUnlisted(_ index: ManifestIndex, target: RestoreTarget) {
        var doubtful: [(node: (components: [[UInt8]], path: [UInt8], recorded: RecordedAttributes), problem: String?)] = []
        for node in placedBeforeManifest {
            if let entry = index[PathKey(node.path)] {
                if let differences = RecordedAttributes(entry).differences(from: node.recorded) {
                    doubtful.append((node, differences))
                }
            } else {
                doubtful.append((node, nil))
            }
        }
        placedBeforeManifest = []
        for (node, differences) in doubtful.sorted(by: { $0.node.components.count > $1.node.components.count }) {
            guard let parentFD = try? target.directory(node.components.dropLast(), create: false) else { continue }
            let name = node.components[node.components.count - 1]
            let type = node.recorded.type
            // Only what this restore made is taken back: the same kind of node, never followed.
            guard let existing = RestoreTarget.existing(name, in: parentFD) else { continue }
            let kind = existing.st_mode & S_IFMT
            let isFolder = kind == S_IFDIR
            guard isFolder == (type == .directory), type != .symlink || kind == S_IFLNK else { continue }
            let status = PathBytes.syscall(name) { unlinkat(parentFD, $0, isFolder ? AT_REMOVEDIR : 0) }
            let display = PathBytes.display(node.path)
            let why = differences.map(RecordedAttributes.disagreement) ?? "not in the backup's manifest"
            if status == 0 {
                switch type {
                case .directory: result.directories -= 1
                case .symlink: result.symlinks -= 1
                default: result.other -= 1
                }
                directoryFixes.removeAll { $0.components == node.components }
                result.damaged.append(PathWarning(kind: .damaged, path: display, reason: why + "; removed"))
            } else {
                result.damaged.append(PathWarning(kind: .damaged, path: display,
                                                  reason: why + ", and not empty: left in place; look at it"))
            }
        }
    }

    /// Places the files that waited for the archive's own manifest (`index`); with no
    /// manifest at all (a plain tarball), they are placed unverified.
    private func commitPendings(target: RestoreTarget, index: ManifestIndex?, hasManifest: Bool,
                                request: RestoreRequest) throws {
        var failed = Set<PathKey>()
        for pending in writer?.takePendings() ?? [] {
            guard let parentFD = try? target.directory(pending.components.dropLast(), create: false) else { continue }
            if cancellation.isCancelled {
                // Stopped: every waiting file goes (the throw below ends the restore).
                RestoreTarget.remove(pending.temporaryName, in: parentFD)
                continue
            }
            var problem: String?
            if let linkOf = pending.linkOf {
                if failed.contains(PathKey(linkOf)) { problem = "the file it links to was damaged" }
            } else if let index {
                if let entry = index[PathKey(pending.path)] {
                    // Not hashed while written (no marker said a manifest would follow): read back.
                    let sha256 = pending.sha256 ?? (entry.sha256 == nil ? nil : hashWaiting(pending, parentFD: parentFD))
                    if entry.sha256 != nil && entry.sha256 != sha256 {
                        problem = "content does not match its SHA-256 in the manifest; not restored"
                    } else if let recorded = pending.recorded,
                              let differences = RecordedAttributes(entry).differences(from: recorded) {
                        problem = RecordedAttributes.disagreement(differences) + "; not restored"
                    }
                } else {
                    problem = "not in the backup's manifest; not restored"
                }
            }
            if problem == nil, pending.linkOf == nil, let entry = index?[PathKey(pending.path)] {
                // Mode and time from the manifest, in case the archive's header was damaged;
                // through a descriptor of the very file written (see RestoredMetadata).
                guard let identity = pending.identity,
                      RestoredMetadata.applyRecordedModeAndTime(entry, name: pending.temporaryName, parentFD: parentFD,
                                                                identity: identity, request: request) else {
                    failed.insert(PathKey(pending.path))
                    swapped(pending.temporaryName, parentFD: parentFD, path: pending.path)
                    continue
                }
            }
            if let problem {
                failed.insert(PathKey(pending.path))
                RestoreTarget.remove(pending.temporaryName, in: parentFD)
                result.damaged.append(PathWarning(kind: .damaged, path: PathBytes.display(pending.path), reason: problem))
                continue
            }
            // Without a manifest and with the archive damaged, nothing proves a file intact:
            // it lands beside its final name, marked, never under it.
            var finalName = pending.components[pending.components.count - 1]
            if !hasManifest && result.archiveProblem != nil {
                finalName += Array(Restorer.unverifiedSuffix.utf8)
            }
            let code = RestoreTarget.rename(pending.temporaryName, to: finalName, in: parentFD)
            if code != 0 {
                RestoreTarget.remove(pending.temporaryName, in: parentFD)
                result.warnings.append(PathWarning(kind: .unwritable, path: PathBytes.display(pending.path),
                                                   reason: Restorer.notWritten(code)))
                continue
            }
            if pending.linkOf != nil { result.hardlinks += 1 } else { result.files += 1 }
            if pending.replaces { result.replaced += 1 }
            if !hasManifest && pending.linkOf == nil { result.unverifiedFiles += 1 }
        }
        if !hasManifest { result.plainTarball = result.archiveProblem == nil }
        try cancellation.check()
    }

    /// The SHA-256 of a file waiting under its temporary name, read back from the target;
    /// nil when it cannot be read or a stop was asked for.
    private func hashWaiting(_ pending: RestoreFileWriter.Pending, parentFD: Int32) -> String? {
        let fd = PathBytes.syscall(pending.temporaryName) { openat(parentFD, $0, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) }
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        // Only the very file written (see RestoredMetadata.Identity): nothing swapped in is read.
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG,
              let identity = pending.identity, identity == RestoredMetadata.Identity(info) else { return nil }
        return (try? ManifestCheck.hashFile(fd, size: Int64(info.st_size), cancellation: cancellation)) ?? nil
    }

    /// Removes every temporary file still waiting (after a fatal error).
    private func discardPendings(_ target: RestoreTarget?) {
        guard let target, let writer else { return }
        _ = takeWriterOutcome()
        for pending in writer.takePendings() {
            if let parentFD = try? target.directory(pending.components.dropLast(), create: false) {
                RestoreTarget.remove(pending.temporaryName, in: parentFD)
            }
        }
    }

    // MARK: Folders

    /// Directory modes and times last, deepest first.
    private func applyDirectoryFixes(target: RestoreTarget, request: RestoreRequest) {
        // Deepest first (a folder's time is set after everything inside it changed), and
        // siblings together, so the target's open folders on the way are reused: opening
        // each folder from the top cost 55,000 openat calls for 5,000 folders.
        let ordered = directoryFixes.sorted { first, second in
            if first.components.count != second.components.count { return first.components.count > second.components.count }
            return first.components.lexicographicallyPrecedes(second.components) { $0.lexicographicallyPrecedes($1) }
        }
        for fix in ordered {
            guard let fd = try? target.directory(fix.components[...], create: false) else { continue }
            let path = fix.components.dropFirst().reduce(fix.components[0]) { PathBytes.join($0, $1) }
            RestoredMetadata.apply(fix.header, fd: fd, request: request, path: path, warnings: &result.warnings)
        }
        directoryFixes = []
    }

    // MARK: Problems

    private func refuse(_ path: [UInt8], _ reason: String) {
        result.damaged.append(PathWarning(kind: .damaged, path: PathBytes.display(path), reason: "unsafe entry refused: \(reason)"))
    }

    /// A failure to create something in the target: fatal when the disk is full,
    /// otherwise a warning for that path.
    private func targetProblem(_ path: [UInt8], _ code: Int32) throws {
        if Restorer.stopsRestore(code) {
            throw TargetFailure(error: Restorer.targetError(targetPath, code, path: path))
        }
        result.warnings.append(PathWarning(kind: .unwritable, path: PathBytes.display(path), reason: Restorer.notWritten(code)))
    }

    /// The reason given for a path the target refused with `code`.
    static func notWritten(_ code: Int32) -> String {
        "could not be written (\(FileDescriptorIO.message(code)))"
    }

    /// Whether a failure to create something in the target stops the restore (nothing
    /// more can be written: the disk is full) rather than skipping one path. A read-only
    /// target is refused before the restore begins; met later (a read-only mount inside the
    /// target), it refuses only the paths below it.
    static func stopsRestore(_ code: Int32) -> Bool {
        code == ENOSPC || code == EDQUOT
    }

    static func targetError(_ target: String, _ code: Int32, path: [UInt8]) -> EngineError {
        .targetUnusable(path: target,
                        reason: "\(FileDescriptorIO.message(code)) while writing \(PathBytes.display(path)); the unfinished file was removed; "
                            + RestoreTarget.advice(code))
    }

    // MARK: Helpers

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
        let written = writer?.progress ?? (files: 0, bytes: 0)
        events.handle(.progress(ProgressSnapshot(entriesDone: result.entryCount + written.files,
                                                 filesDone: result.files + written.files,
                                                 bytesDone: result.bytes + written.bytes, totalBytes: nil,
                                                 currentPath: PathBytes.display(path))))
    }
}
