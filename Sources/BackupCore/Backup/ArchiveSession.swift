import Foundation

/// Writes one backup's archive: every scanned item becomes a tar entry and a manifest line,
/// except a file the parent backup already holds, which gets a manifest line pointing at
/// the archive that holds it. The parts each do one job: `SourceFileReader` reads the
/// sources, `ChangeDetector` compares with the parent, `ManifestSpool` gathers the
/// manifest, `StandardInputFile` takes a stream; the session puts their results into the
/// `ArchiveWriter` in scan order, counts, and reports progress and warnings.
final class ArchiveSession {
    // MARK: Parts

    private let writer: ArchiveWriter
    private let reader: SourceFileReader
    private let changes: ChangeDetector
    /// The manifest's lines (and SHA256SUMS), written at the end of the archive.
    let manifest: ManifestSpool
    private let cancellation: CancellationFlag
    private weak var events: EngineEventSink?
    private let warn: (PathWarning) -> Void

    // MARK: State

    /// First archive path, hash and holder of each multiply-linked file.
    private var linkedFiles: [FileIdentity: (path: [UInt8], sha256: String, size: Int64, storedIn: BackupID?)] = [:]
    /// What the sources are expected to hold, in bytes (the last backup of the same
    /// sources), for a determinate progress bar; nil when unknown.
    var expectedBytes: Int64?
    /// The earlier backups whose archives hold unchanged files.
    private var holders = Set<BackupID>()
    private var counts = BackupCounts()
    /// Files stored in this archive (not pointed at in an earlier one), and their bytes.
    private var newFiles: Int64 = 0
    private var newBytes: Int64 = 0
    private var lastProgress = Date.distantPast

    // MARK: Life cycle

    /// A session writing into `writer`; `parent` (read in step with the scan) and `chain`
    /// decide which files are unchanged, `readPause` is `BackupRequest.readPause`, and
    /// problems with single items go to `warn`.
    init(writer: ArchiveWriter, cancellation: CancellationFlag, events: EngineEventSink?, parent: ParentCursor?,
         chain: ChainPolicy, readPause: TimeInterval, warn: @escaping (PathWarning) -> Void) throws {
        self.writer = writer
        self.cancellation = cancellation
        self.events = events
        self.warn = warn
        reader = SourceFileReader(cancellation: cancellation, readPause: readPause)
        changes = ChangeDetector(parent: parent, chain: chain, cancellation: cancellation)
        manifest = try ManifestSpool()
    }

    /// Writes the marker folder that opens every Keepsake archive.
    func writeMarker(now: Date) throws {
        try writer.writeHeader(ArchiveEntryHeader(path: BackupNaming.markerEntryPath, type: .directory, permissions: 0o755,
                                                  uid: geteuid(), gid: getegid(),
                                                  mtimeSeconds: Int64(now.timeIntervalSince1970.rounded(.down))))
    }

    // MARK: Items

    /// Adds one scanned item. Problems with the item become warnings; only archive or
    /// destination failures throw.
    func add(_ item: ScannedItem) throws {
        try cancellation.check()
        if BackupNaming.isMetadataEntry(item.archivePath) {
            warn(PathWarning(kind: .skipped, path: PathBytes.display(item.absolutePath),
                             reason: "the name is reserved for Keepsake's own manifest; left out"))
            return
        }
        let info = item.info
        var header = ArchiveEntryHeader(path: item.archivePath, type: item.type, permissions: UInt32(info.st_mode) & 0o7777,
                                        uid: info.st_uid, gid: info.st_gid,
                                        userName: UserNames.shared.userName(for: info.st_uid),
                                        groupName: UserNames.shared.groupName(for: info.st_gid),
                                        mtimeSeconds: Int64(info.st_mtim.tv_sec),
                                        mtimeNanoseconds: Int32(info.st_mtim.tv_nsec))
        var entry = manifestEntry(header, info: info)
        switch item.type {
        case .socket:
            return // tar formats cannot hold sockets; like tar, they are left out
        case .directory:
            header.xattrs = reader.folderAttributes(of: item)
            try writeHeaderEntry(header, entry: &entry)
            counts.directories += 1
        case .symlink:
            switch reader.linkTarget(of: item) {
            case .read(let target):
                header.linkTarget = target
                entry.linkTarget = target
            case .problem(let warning):
                warn(warning)
                return
            }
            try writeHeaderEntry(header, entry: &entry)
            counts.symlinks += 1
        case .fifo, .characterDevice, .blockDevice:
            header.rdev = UInt64(info.st_rdev)
            entry.rdev = UInt64(info.st_rdev)
            try writeHeaderEntry(header, entry: &entry)
            counts.other += 1
        case .file, .hardlink:
            let identity = FileIdentity(info)
            if info.st_nlink > 1, let first = linkedFiles[identity] {
                header.type = .hardlink
                header.linkTarget = first.path
                entry.type = .hardlink
                entry.linkTarget = first.path
                entry.size = first.size
                entry.sha256 = first.sha256
                if let holder = first.storedIn {
                    // The first name's content lives in an earlier archive: a tar hard link
                    // cannot point there, so this name is recorded in the manifest only.
                    entry.storedIn = holder
                } else {
                    try writeHeaderEntry(header, entry: &entry)
                    try manifest.appendChecksum(first.sha256, path: item.archivePath)
                }
                counts.hardlinks += 1
            } else if let reference = try changes.unchanged(item) {
                // Same file as in the parent backup: point at the archive that holds it.
                entry.size = reference.size
                entry.sha256 = reference.sha256
                entry.storedIn = reference.storedIn
                entry.archiveOffset = reference.archiveOffset
                entry.archiveLength = reference.archiveLength
                if let holder = reference.storedIn { holders.insert(holder) }
                if info.st_nlink > 1 {
                    linkedFiles[identity] = (item.archivePath, reference.sha256 ?? "", reference.size, reference.storedIn)
                }
                counts.files += 1
                counts.bytes += reference.size
            } else {
                guard let sha256 = try storeNewFile(item, header: header, entry: &entry) else { return }
                if info.st_nlink > 1 { linkedFiles[identity] = (item.archivePath, sha256, entry.size, nil) }
                try manifest.appendChecksum(sha256, path: item.archivePath)
                counts.files += 1
                counts.bytes += entry.size
                newFiles += 1
                newBytes += entry.size
            }
        }
        try manifest.append(entry)
        reportProgress(item.archivePath, force: false)
    }

    /// Reads a regular file into the archive and fills in its entry (size, SHA-256, the
    /// time it had when opened); returns its SHA-256, or nil (after a warning) when it
    /// could not be opened.
    private func storeNewFile(_ item: ScannedItem, header: ArchiveEntryHeader, entry: inout ManifestEntry) throws -> String? {
        let file: SourceFileReader.OpenFile
        switch reader.open(item, header: header) {
        case .read(let opened): file = opened
        case .problem(let warning):
            warn(warning)
            return nil
        }
        let start = try startEntry()
        try writer.writeHeader(file.header)
        var written: Int64 = 0
        let content = try reader.readContent(of: file) { chunk in
            try writer.writeData(chunk, path: file.header.path)
            written += Int64(chunk.count)
            // A big file reports progress every 64 MiB on its way.
            if written & ((1 << 26) - 1) < Int64(chunk.count) { reportProgress(item.archivePath, force: false) }
        }
        if let problem = content.problem { warn(problem) }
        try endEntry(&entry, from: start)
        entry.size = file.header.size
        entry.sha256 = content.sha256
        entry.mtimeNanoseconds = file.mtimeNanoseconds
        return content.sha256
    }

    // MARK: Standard input

    /// Stores standard input as one file named `name`, made at `now`.
    func addStandardInput(name: [UInt8], now: Date) throws {
        let input = try StandardInputFile(name: name, cancellation: cancellation)
        let header = input.header(now: now)
        var entry = manifestEntry(header, info: nil)
        let start = try startEntry()
        try writer.writeHeader(header)
        try input.content.forEachChunk { try writer.writeData($0, path: input.path) }
        try endEntry(&entry, from: start)
        entry.size = header.size
        entry.sha256 = input.sha256
        try manifest.append(entry)
        try manifest.appendChecksum(input.sha256, path: input.path)
        newFiles += 1
        newBytes += header.size
        counts.files += 1
        counts.bytes += header.size
    }

    // MARK: Entries

    /// Writes an entry that is a header only (a folder, link or special file).
    private func writeHeaderEntry(_ header: ArchiveEntryHeader, entry: inout ManifestEntry) throws {
        let start = try startEntry()
        try writer.writeHeader(header)
        try endEntry(&entry, from: start)
    }

    /// Where the next entry starts in the uncompressed tar stream.
    private func startEntry() throws -> Int64 {
        try writer.finishEntry()
        return writer.position
    }

    /// Records where the entry that started at `start` lies in the tar stream, so that a
    /// partial restore can decompress only the frames it spans.
    private func endEntry(_ entry: inout ManifestEntry, from start: Int64) throws {
        try writer.finishEntry()
        entry.archiveOffset = start
        entry.archiveLength = writer.position - start
    }

    private func manifestEntry(_ header: ArchiveEntryHeader, info: stat?) -> ManifestEntry {
        ManifestEntry(path: header.path, type: header.type, size: 0, mode: header.permissions, uid: header.uid,
                      gid: header.gid, userName: header.userName, groupName: header.groupName,
                      mtimeNanoseconds: header.mtimeTotalNanoseconds,
                      ctimeNanoseconds: info.map { Int64($0.st_ctim.tv_sec) * 1_000_000_000 + Int64($0.st_ctim.tv_nsec) } ?? header.mtimeTotalNanoseconds,
                      inode: info.map { UInt64($0.st_ino) } ?? 0, device: info.map { UInt64($0.st_dev) } ?? 0)
    }

    // MARK: Finishing

    /// Appends SHA256SUMS and the manifest as the archive's last entries.
    func writeMetadataEntries(summary: BackupSummary) throws {
        try manifest.writeMetadataEntries(summary: summary, into: writer)
        reportProgress(BackupNaming.manifestEntryPath, force: true)
    }

    /// Copies the counts into the summary.
    func fill(_ summary: inout BackupSummary) {
        counts.fill(&summary)
        summary.newFileCount = newFiles
        summary.newBytes = newBytes
        summary.reliesOn = holders.sorted()
    }

    // MARK: Progress

    private func reportProgress(_ path: [UInt8], force: Bool) {
        guard let events else { return }
        let now = Date()
        guard force || now.timeIntervalSince(lastProgress) >= 0.1 else { return }
        lastProgress = now
        events.handle(.progress(ProgressSnapshot(entriesDone: counts.entries, filesDone: counts.files,
                                                 bytesDone: counts.bytes, totalBytes: expectedBytes.map { max($0, counts.bytes) },
                                                 currentPath: PathBytes.display(path))))
    }
}
