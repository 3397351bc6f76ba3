import Foundation
import KeepsakeArchive
import KeepsakeHashing
import KeepsakeModel
import KeepsakeScan
import KeepsakeSupport

/// Writes one backup's archive: every scanned item becomes a tar entry and a manifest line,
/// except a file the parent backup already holds, which gets a manifest line pointing at
/// the archive that holds it. The parts each do one job: `SourceFileReader` reads the
/// sources, `ChangeDetector` compares with the parent, `ManifestSpool` gathers the
/// manifest, `StandardInputFile` takes a stream; the session puts their results into the
/// `ArchiveWriter` in scan order, counts, and reports progress and warnings.
///
/// With several readers, files are opened as they are scanned and read by a `ReadAhead`
/// pool while the scan goes on; what each scanned item needs written waits in `queue`, in
/// scan order, and is written as soon as everything before it is (so the archive, the
/// manifest and the warnings come out exactly as from one thread).
final class ArchiveSession {
    // MARK: Parts

    private let writer: ArchiveWriter
    /// Reads on the writing thread: every file with one reader, and a further name of a
    /// multiply-linked file whose first name was left out.
    private let reader: SourceFileReader
    /// Reads files ahead on threads of its own (nil with one reader).
    private let readAhead: ReadAhead?
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
    /// Digests in the block tables of the files read (see `BlockTable`).
    private var blockDigests: Int64 = 0
    /// Whether a line says a file is stored by blocks: the manifest is then of
    /// `BackupSummary.blocksFormat`, which older versions refuse (`tablesAsChangesFormat`
    /// when a table is stored as changes).
    private var storesByBlocks = false
    private var storesTablesAsChanges = false
    /// Whether a file stored by blocks gets its table stored as changes: not when the
    /// backup is encrypted to public keys, whose next backup may not read this one's chain
    /// (nor its supplements) back to gather the other digests, only this host's cached
    /// copies of its newest manifests.
    var tablesAsChanges = true
    private var lastProgress = Date.distantPast

    /// Scanned items waiting to be written, in scan order (from `queueStart` on): the file
    /// whose content is being read ahead, if any, and what writing the item takes.
    private var queue: [(file: PrefetchedFile?, write: () throws -> Void)] = []
    private var queueStart = 0
    /// The most items scanned ahead of the one being written (each may hold an open file).
    private static let scanAhead = 256
    /// Identities of multiply-linked files met by the scan: a further name is written as a
    /// link to the first, so its content is not read ahead.
    private var scannedLinks = Set<FileIdentity>()

    // MARK: Life cycle

    /// A session writing into `writer`; `parent` (read in step with the scan) and `chain`
    /// decide which files are unchanged, `readers` files are read at once, `readPause` is
    /// `BackupRequest.readPause`, and problems with single items go to `warn`.
    init(writer: ArchiveWriter, cancellation: CancellationFlag, events: EngineEventSink?, parent: ParentCursor?,
         basis: BlockBasis?, chain: ChainPolicy, readers: Int, readPause: TimeInterval,
         warn: @escaping (PathWarning) -> Void) throws {
        self.writer = writer
        self.cancellation = cancellation
        self.events = events
        self.warn = warn
        reader = SourceFileReader(cancellation: cancellation, readPause: readPause)
        readAhead = readers > 1 ? ReadAhead(readers: readers, cancellation: cancellation, readPause: readPause) : nil
        changes = ChangeDetector(parent: parent, basis: basis, chain: chain, cancellation: cancellation)
        manifest = try ManifestSpool()
    }

    /// Stops the readers; call once the session is done with, however it ended.
    func close() {
        readAhead?.stop()
        queue.removeAll()
        queueStart = 0
    }

    /// Writes the marker folder that opens every Keepsake archive.
    func writeMarker(now: Date) throws {
        try writer.writeHeader(ArchiveEntryHeader(path: ArchiveLayout.markerEntryPath, type: .directory, permissions: 0o755,
                                                  uid: geteuid(), gid: getegid(),
                                                  mtimeSeconds: Int64(now.timeIntervalSince1970.rounded(.down))))
    }

    // MARK: Items

    /// Adds one scanned item: what it needs from the file system is read now (while the
    /// scan's folder descriptor is open), its content may be read ahead, and it is written
    /// once everything scanned before it is. Problems with the item become warnings; only
    /// archive or destination failures throw.
    func add(_ item: ScannedItem) throws {
        try cancellation.check()
        try enqueue(item)
        try writeQueued(keeping: readAhead == nil ? 0 : ArchiveSession.scanAhead)
    }

    /// Writes every item still waiting; call after the last `add`.
    func finishItems() throws {
        try writeQueued(keeping: 0)
    }

    /// Writes waiting items in order until at most `keeping` wait: past that many, the
    /// first waits for its content; within it, only what needs no more reading is written.
    private func writeQueued(keeping: Int) throws {
        while queueStart < queue.count {
            let next = queue[queueStart]
            if queue.count - queueStart <= keeping, let file = next.file, let readAhead, !readAhead.isComplete(file) { break }
            queue[queueStart] = (nil, {})
            queueStart += 1
            try next.write()
        }
        if queueStart == queue.count {
            queue.removeAll(keepingCapacity: true)
            queueStart = 0
        } else if queueStart > 4096 {
            queue.removeFirst(queueStart)
            queueStart = 0
        }
    }

    /// Queues what writing `item` takes.
    private func enqueue(_ item: ScannedItem) throws {
        func later(_ file: PrefetchedFile? = nil, _ write: @escaping () throws -> Void) {
            queue.append((file, write))
        }
        if ArchiveLayout.isMetadataEntry(item.archivePath) {
            let warning = PathWarning(kind: .skipped, path: PathBytes.display(item.absolutePath),
                                      reason: "the name is reserved for Keepsake's own manifest; left out")
            later { self.warn(warning) }
            return
        }
        let info = item.info
        var header = ArchiveEntryHeader(path: item.archivePath, type: item.type, permissions: UInt32(info.st_mode) & 0o7777,
                                        uid: info.st_uid, gid: info.st_gid,
                                        userName: UserNames.shared.userName(for: info.st_uid),
                                        groupName: UserNames.shared.groupName(for: info.st_gid),
                                        mtimeSeconds: Int64(info.st_mtim.tv_sec),
                                        mtimeNanoseconds: Int32(info.st_mtim.tv_nsec))
        let entry = manifestEntry(header, info: info)
        switch item.type {
        case .socket:
            return // tar formats cannot hold sockets; like tar, they are left out
        case .directory:
            header.xattrs = reader.folderAttributes(of: item)
            later { try self.writeHeaderEntry(header, entry: entry) { $0.directories += 1 } }
        case .symlink:
            switch reader.linkTarget(of: item) {
            case .read(let target):
                header.linkTarget = target
                var linked = entry
                linked.linkTarget = target
                later { try self.writeHeaderEntry(header, entry: linked) { $0.symlinks += 1 } }
            case .problem(let warning):
                later { self.warn(warning) }
            }
        case .fifo, .characterDevice, .blockDevice:
            header.rdev = UInt64(info.st_rdev)
            var node = entry
            node.rdev = UInt64(info.st_rdev)
            later { try self.writeHeaderEntry(header, entry: node) { $0.other += 1 } }
        case .file, .hardlink:
            let identity = FileIdentity(info)
            if info.st_nlink > 1, !scannedLinks.insert(identity).inserted {
                // A further name: a link to the first one, written once that one is. While the
                // first is still waiting to be written, opened now all the same, to be stored
                // whole if the first name is left out (`linkedFiles` only grows).
                let opened = linkedFiles[identity] == nil ? reader.open(item, header: header) : nil
                later { try self.writeFurtherName(item.archivePath, identity: identity, header: header, entry: entry, opened: opened) }
            } else {
                switch try changes.compare(item) {
                case .unchanged(let reference):
                    later { try self.writeUnchanged(item.archivePath, identity: identity, links: info.st_nlink, reference: reference, entry: entry) }
                case .changed(let basis):
                    switch reader.open(item, header: header) {
                    case .read(let file):
                        if let basis, file.status.st_nlink == 1 {
                            // Read when its turn comes: what it stores is known only once it is read.
                            later { try self.writeChangedBlocks(file, basis: basis, identity: identity, entry: entry) }
                            return
                        }
                        let prefetched = readAhead?.submit(file)
                        later(prefetched) {
                            try self.writeNewFile(file, prefetched: prefetched, identity: identity, links: info.st_nlink, entry: entry)
                        }
                    case .problem(let warning):
                        later { self.warn(warning) }
                    }
                }
            }
        }
    }

    // MARK: Writing items

    /// A further name of a multiply-linked file: a tar hard link to the first name, or only
    /// a manifest line when the first name's content lives in an earlier archive; stored
    /// whole when the first name was left out.
    private func writeFurtherName(_ path: [UInt8], identity: FileIdentity, header: ArchiveEntryHeader, entry: ManifestEntry,
                                  opened: SourceFileReader.Outcome<SourceFileReader.OpenFile>?) throws {
        guard let first = linkedFiles[identity] else {
            switch opened {
            case .read(let file)?:
                try writeNewFile(file, prefetched: nil, identity: identity, links: 2, entry: entry)
            case .problem(let warning)?:
                warn(warning)
            case nil:
                break // not opened only when the first name was already written
            }
            return
        }
        var header = header
        var entry = entry
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
            try finishItem(entry) { $0.hardlinks += 1 }
        } else {
            try writeHeaderEntry(header, entry: entry) { $0.hardlinks += 1 }
            try manifest.appendChecksum(first.sha256, path: path)
        }
    }

    /// A file the parent backup already holds: a manifest line pointing at the archive
    /// that holds it.
    private func writeUnchanged(_ path: [UInt8], identity: FileIdentity, links: UInt, reference: ManifestEntry,
                                entry: ManifestEntry) throws {
        var entry = entry
        entry.size = reference.size
        entry.sha256 = reference.sha256
        entry.storedIn = reference.storedIn
        entry.archiveOffset = reference.archiveOffset
        entry.archiveLength = reference.archiveLength
        entry.blocks = reference.blocks
        if let holder = reference.storedIn { holders.insert(holder) }
        if let blocks = reference.blocks {
            holders.formUnion(blocks.holders)
            blockDigests += Int64(blocks.digests.count / BlockTable.digestLength)
            storesByBlocks = storesByBlocks || blocks.isStoredByBlocks
            storesTablesAsChanges = storesTablesAsChanges || !blocks.holdsEveryDigest
        }
        if links > 1 { linkedFiles[identity] = (path, reference.sha256 ?? "", reference.size, reference.storedIn) }
        try finishItem(entry) { counts in
            counts.files += 1
            counts.bytes += reference.size
        }
    }

    /// A regular file's content into the archive (read ahead by `prefetched`, or read now),
    /// with its entry's size, SHA-256 and the time it had when opened.
    private func writeNewFile(_ file: SourceFileReader.OpenFile, prefetched: PrefetchedFile?, identity: FileIdentity,
                              links: UInt, entry: ManifestEntry) throws {
        // A version saved since the scan is described as opened: its mode, owner, inode, ctime.
        var entry = file.replaced ? manifestEntry(file.header, info: file.status) : entry
        let start = try startEntry()
        try writer.writeHeader(file.header)
        var written: Int64 = 0
        let write: (UnsafeRawBufferPointer) throws -> Void = { chunk in
            try self.writer.writeData(chunk, path: file.header.path)
            written += Int64(chunk.count)
            self.reportProgress(file.header.path, read: written, last: chunk.count)
        }
        let content: SourceFileReader.Content
        if let prefetched, let readAhead {
            content = try readAhead.consume(prefetched, write)
        } else {
            content = try reader.readContent(of: file, into: write)
        }
        if let problem = content.problem { warn(problem) }
        try endEntry(&entry, from: start)
        entry.size = file.header.size
        entry.sha256 = content.sha256
        entry.blocks = content.blocks
        blockDigests += Int64(content.blocks?.count ?? 0)
        entry.mtimeNanoseconds = file.mtimeNanoseconds
        if links > 1 { linkedFiles[identity] = (file.header.path, content.sha256, entry.size, nil) }
        try manifest.appendChecksum(content.sha256, path: file.header.path)
        newFiles += 1
        newBytes += entry.size
        try finishItem(entry) { counts in
            counts.files += 1
            counts.bytes += entry.size
        }
    }

    /// A changed big file whose last version `basis` describes (`--blocks`): read once, its
    /// changed blocks go into a block entry (`ArchiveLayout.blocksEntryPath`), and its line
    /// says where every block is; stored whole when no block is the same, and read again
    /// and stored whole when more changed than the spool takes (`BlockSpool.mostSpooled`).
    private func writeChangedBlocks(_ file: SourceFileReader.OpenFile, basis: BlockTable, identity: FileIdentity,
                                    entry: ManifestEntry) throws {
        let spooling = try BlockSpool(basis: basis, fileSize: file.header.size)
        var read: Int64 = 0
        let content = try reader.readContent(of: file, digestingBlocks: false) { chunk in
            try spooling.add(chunk)
            read += Int64(chunk.count)
            self.reportProgress(file.header.path, read: read, last: chunk.count)
        }
        let outcome = try spooling.finish()
        if outcome.overflowed {
            return try writeNewFile(file, prefetched: nil, identity: identity, links: 1, entry: entry)
        }
        var entry = file.replaced ? manifestEntry(file.header, info: file.status) : entry
        if let problem = content.problem { warn(problem) }
        entry.size = file.header.size
        entry.sha256 = content.sha256
        entry.mtimeNanoseconds = file.mtimeNanoseconds
        let path = file.header.path
        let start = try startEntry()
        if outcome.changedWhole {
            try writer.writeHeader(file.header)
            try outcome.spool.forEachChunk { try writer.writeData($0, path: path) }
            try endEntry(&entry, from: start)
            entry.blocks = outcome.table
            try manifest.appendChecksum(content.sha256, path: path)
        } else {
            var header = file.header
            header.path = ArchiveLayout.blocksEntryPath(for: path)
            header.sparseRegions = BlockSpool.regions(of: outcome.changed, blockSize: basis.blockSize, fileSize: header.size)
            try writer.writeHeader(header)
            var regions = header.sparseRegions.makeIterator()
            var region = regions.next()
            var left: Int64 = 0
            try outcome.spool.forEachChunk { chunk in
                var rest = chunk[...]
                while !rest.isEmpty {
                    if left == 0 {
                        guard let next = region else {
                            throw ArchiveError.write(path: PathBytes.display(path), reason: "more changed blocks than its regions hold")
                        }
                        try writer.skip(to: next.offset, path: header.path)
                        left = next.length
                        region = regions.next()
                    }
                    let count = Int(min(left, Int64(rest.count)))
                    try writer.writeData(UnsafeRawBufferPointer(rebasing: rest.prefix(count)), path: header.path)
                    left -= Int64(count)
                    rest = rest.dropFirst(count)
                }
            }
            var own = entry
            try endEntry(&own, from: start)
            let source = BlockTable.Source(holder: nil, whole: false, archiveOffset: own.archiveOffset, archiveLength: own.archiveLength)
            let placed = BlockTable.storedByBlocks(digests: outcome.table.digests, blockSize: basis.blockSize,
                                                   changed: outcome.changed, basis: basis, own: source)
            // Stored as changes: its own blocks' digests, and the SHA-256 of every one (the
            // others are in the lines of the backups that hold their blocks).
            let table = tablesAsChanges ? placed.asChanges(sha256: SHA256Hasher.hex(of: placed.digests)) ?? placed : placed
            entry.blocks = table
            holders.formUnion(table.holders)
            storesByBlocks = true
            storesTablesAsChanges = storesTablesAsChanges || !table.holdsEveryDigest
        }
        blockDigests += Int64((entry.blocks?.digests.count ?? 0) / BlockTable.digestLength)
        newFiles += 1
        newBytes += outcome.storedBytes
        try finishItem(entry) { counts in
            counts.files += 1
            counts.bytes += entry.size
        }
    }

    /// The item's manifest line, counts and progress, once it is in the archive.
    private func finishItem(_ entry: ManifestEntry, counting: (inout BackupCounts) -> Void) throws {
        counting(&counts)
        try manifest.append(entry)
        reportProgress(entry.path, force: false)
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

    /// Writes an entry that is a header only (a folder, link or special file) and finishes
    /// the item.
    private func writeHeaderEntry(_ header: ArchiveEntryHeader, entry: ManifestEntry,
                                  counting: (inout BackupCounts) -> Void) throws {
        var entry = entry
        let start = try startEntry()
        try writer.writeHeader(header)
        try endEntry(&entry, from: start)
        try finishItem(entry, counting: counting)
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
        reportProgress(ArchiveLayout.manifestEntryPath, force: true)
    }

    /// Copies the counts into the summary.
    func fill(_ summary: inout BackupSummary) {
        counts.fill(&summary)
        summary.newFileCount = newFiles
        summary.newBytes = newBytes
        summary.blockDigests = blockDigests
        if storesByBlocks { summary.format = BackupSummary.blocksFormat }
        if storesTablesAsChanges { summary.format = BackupSummary.tablesAsChangesFormat }
        summary.reliesOn = holders.sorted()
    }

    // MARK: Progress

    /// A big file reports progress every 64 MiB on its way: `read` bytes of it so far, the
    /// last `last` of them just now.
    private func reportProgress(_ path: [UInt8], read: Int64, last: Int) {
        if read & ((1 << 26) - 1) < Int64(last) { reportProgress(path, force: false) }
    }

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
