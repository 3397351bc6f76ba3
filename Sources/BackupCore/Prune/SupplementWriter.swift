import Foundation
import KeepsakeAge
import KeepsakeArchive
import KeepsakeEncryption
import KeepsakeHashing
import KeepsakeModel
import KeepsakeStorage
import KeepsakeSupport

/// Writes one supplement (see `SupplementManifest`): the files a kept backup takes from
/// backups prune is letting go, copied out of their archives (or out of older supplements)
/// into an archive of its own, each checked against the kept manifest's SHA-256 on the way.
/// The archive is committed first, its manifest last (which commits the supplement), and
/// both are read back before prune may remove anything the supplement replaces.
struct SupplementWriter {
    // MARK: Kinds

    /// A file to copy into the supplement.
    struct Wanted {
        /// The kept backup's entry for it (its metadata and SHA-256), `storedIn` the backup it
        /// came from.
        var entry: ManifestEntry
        /// The archive object it is read from, and where it lies in its tar stream, if known.
        var source: String
        var location: Range<Int64>?
    }

    /// Blocks of a big file to copy into the supplement (see `HeldBlocks`): all from one
    /// entry of one archive, which holds them at their offsets in the file.
    struct WantedBlocks {
        /// What the supplement will hold (its place there is set when written).
        var held: HeldBlocks
        /// The archive object they are read from, the entry's name there (the file whole, or
        /// a block entry), and where it lies in the archive's tar stream, if known.
        var source: String
        var entryPath: [UInt8]
        var location: Range<Int64>?
    }

    /// An archive files were to be copied from that does not hold them as the kept
    /// manifests record (read again without writing, to tell its damage from a failure
    /// to write): prune keeps the backup it belongs to rather than stopping.
    struct DamagedSource: Error {
        /// The archive object.
        var archive: String
        /// What was wrong, naming the file.
        var reason: String
    }

    // MARK: Dependencies

    let storage: any WritableStorage
    /// The same storage, to read archives through (plain ones here).
    let reading: KeyedStorage
    let cancellation: CancellationFlag
    /// Called between committing the archive and committing the manifest (fault-injection
    /// tests pause there: `PruneRequest.removalPause`).
    var betweenCommits: () -> Void = {}

    // MARK: Writing

    /// How an encrypted supplement is written: as its owner is (`record`), with `keys` that
    /// the person running prune gave for it.
    struct Encryption {
        var record: BackupEncryption
        var keys: AgeEncryption
    }

    /// Writes and commits the supplement `id` of `host` for backup `owner`, holding `wanted`
    /// (encrypted as `encryption` says), then reads it back; returns its manifest.
    /// - Throws: `SupplementDamage` when a file is not found where it was said to be or does
    ///   not match its SHA-256, or the supplement does not read back as written;
    ///   `DamagedSource` when an archive read from is damaged; storage errors.
    func write(host: String, id: BackupID, owner: BackupID, now: Date, wanted: [Wanted], blocks wantedBlocks: [WantedBlocks] = [],
               encryption: Encryption? = nil) throws -> SupplementManifest {
        let archiveName = SupplementNaming.archiveName(host: host, id: id, encrypted: encryption != nil)
        let pending = try storage.create(archiveName)
        var committed = false
        defer { if !committed { pending.abort() } }
        // The SHA-256 is of the bytes stored (ciphertext when encrypted), as a backup's.
        let hashing = HashingSink(target: pending)
        let encrypting = try encryption.map { try AgeEncryptingSink(downstream: hashing, encryption: $0.keys) }
        // Files, then a copy of its manifest; no `.keepsake` marker (a reader that met the
        // marker would look for a backup's manifest at its end).
        let writer = try ArchiveWriter(sink: encrypting ?? hashing, compression: .zstd, level: nil, threads: 1)
        var entries: [ManifestEntry] = []
        let bySource = Dictionary(grouping: wanted, by: \.source)
        for source in bySource.keys.sorted() {
            let files = bySource[source] ?? []
            do {
                try copy(files, from: source, into: writer, entries: &entries)
            } catch let error as Interruption {
                throw error
            } catch {
                // Read again, writing nothing: a source that fails alone is damaged; one that
                // reads whole leaves the failure to the writing (a full disk, a lost connection).
                var unused: [ManifestEntry] = []
                do {
                    try copy(files, from: source, into: nil, entries: &unused)
                } catch let again as Interruption {
                    throw again
                } catch let again {
                    throw DamagedSource(archive: source, reason: "\(again)")
                }
                throw error
            }
        }
        var blocks: [HeldBlocks] = []
        for wanted in wantedBlocks.sorted(by: { ($0.source, $0.location?.lowerBound ?? 0) < ($1.source, $1.location?.lowerBound ?? 0) }) {
            do {
                blocks.append(try copyBlocks(wanted, into: writer))
            } catch let error as Interruption {
                throw error
            } catch {
                do {
                    _ = try copyBlocks(wanted, into: nil)
                } catch let again as Interruption {
                    throw again
                } catch let again {
                    throw DamagedSource(archive: wanted.source, reason: "\(again)")
                }
                throw error
            }
        }
        // A copy of the manifest as its last entry: the supplement can be committed again
        // from the archive alone if its manifest object is lost. Whole seconds, as a
        // manifest records them, so that it reads back equal.
        let created = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
        let inner = SupplementManifest(id: id, host: host, owner: owner, created: created, archiveName: archiveName,
                                       archiveSize: 0, archiveSHA256: "", encryption: encryption?.record,
                                       entries: entries, blocks: blocks).encoded(inner: true)
        try writer.writeHeader(ArchiveEntryHeader(path: SupplementNaming.innerManifestPath, type: .file, size: Int64(inner.count),
                                                  permissions: 0o644, uid: geteuid(), gid: getegid(),
                                                  mtimeSeconds: Int64(created.timeIntervalSince1970)))
        try inner.withUnsafeBytes { try writer.writeData($0, path: SupplementNaming.innerManifestPath) }
        try writer.finish()
        try encrypting?.finish()
        try pending.commit()
        committed = true
        betweenCommits()
        let manifest = SupplementManifest(id: id, host: host, owner: owner, created: created, archiveName: archiveName,
                                          archiveSize: hashing.count, archiveSHA256: hashing.finalizeHex(),
                                          encryption: encryption?.record, entries: entries, blocks: blocks)
        do {
            try SupplementContent.writeManifest(manifest, keys: encryption?.keys, to: storage)
            try check(manifest)
        } catch {
            // Never left committed when it does not read back: un-committed, then gone.
            try? storage.delete(manifest.manifestName)
            try? storage.delete(archiveName)
            if encryption != nil { try? storage.delete(manifest.summary.summaryName) }
            throw error
        }
        return manifest
    }

    /// Copies the files of `wanted` (all in the archive `source`) into `writer`; without one,
    /// only checks that `source` holds them as recorded.
    private func copy(_ wanted: [Wanted], from source: String, into writer: ArchiveWriter?, entries: inout [ManifestEntry]) throws {
        var byPath: [PathKey: [Int]] = [:]
        for (index, file) in wanted.enumerated() { byPath[PathKey(file.entry.path), default: []].append(index) }
        var done = Set<Int>()
        let opened = try reading.open(source)
        defer { opened.close() }
        let locations = wanted.compactMap(\.location)
        let reader: ArchiveReader
        if locations.count == wanted.count, let table = RangedZstdSource.table(of: opened) {
            let ranged = RangedZstdSource(source: opened, table: table, ranges: locations, name: source, workers: 1)
            reader = try ArchiveReader(decoded: ranged, name: source, keepsakeTar: true, cancellation: cancellation)
        } else {
            reader = try ArchiveReader(source: opened, name: source, cancellation: cancellation)
        }
        while let header = try reader.nextHeader() {
            try cancellation.check()
            guard header.type == .file, let candidates = byPath[PathKey(header.path)],
                  let index = candidates.first(where: { !done.contains($0) }) else {
                try reader.skipContent()
                continue
            }
            let file = wanted[index]
            let start = writer?.position ?? 0
            try writer?.writeHeader(header)
            let sha = try SupplementContent.copy(of: header, from: reader, into: writer)
            try writer?.finishEntry()
            guard sha == file.entry.sha256, header.size == file.entry.size else {
                throw SupplementDamage(reason: "\(file.entry.displayPath) in \(source) is not the file backup "
                    + "\(file.entry.storedIn?.rawValue ?? "?") recorded (its SHA-256 or size differs)")
            }
            var held = file.entry
            held.archiveOffset = start
            held.archiveLength = (writer?.position ?? 0) - start
            entries.append(held)
            done.insert(index)
        }
        if let missing = wanted.indices.first(where: { !done.contains($0) }) {
            throw SupplementDamage(reason: "\(wanted[missing].entry.displayPath) is not in \(source)")
        }
    }

    /// Copies the blocks of `wanted` from its entry into a block entry of `writer` (each
    /// checked against its digest on the way); without one, only checks that the source
    /// holds them. Returns what the supplement holds, placed in its tar stream.
    private func copyBlocks(_ wanted: WantedBlocks, into writer: ArchiveWriter?) throws -> HeldBlocks {
        var held = wanted.held
        let shown = PathBytes.display(held.path)
        let archive = try reading.open(wanted.source)
        let opened = try BlockAssembly.openEntry(named: wanted.entryPath, at: wanted.location, archive: archive, name: wanted.source,
                                                 closing: true, cancellation: cancellation, missing: "the blocks of \(shown)")
        defer { opened.close() }
        var header = opened.header
        header.path = SupplementNaming.blocksEntryPath(origin: held.origin, path: held.path)
        header.type = .file
        header.size = held.entrySize
        header.linkTarget = nil
        let regions = held.regions
        header.sparseRegions = regions.map { ArchiveEntryHeader.SparseRegion(offset: $0.offset, length: $0.length) }
        let start = writer?.position ?? 0
        try writer?.writeHeader(header)
        let check = BlockCheck(held: held)
        // The entry is read as the file it holds, holes as zeros (a sparse file stored whole
        // has them, as a restore reads them); only the regions held are written.
        var next = 0
        var written: Int64 = 0
        let zeros = [UInt8](repeating: 0, count: 64 * 1024)
        /// Takes the file's bytes from `start` to `end` (`bytes`, or zeros when nil).
        func take(_ bytes: UnsafeRawBufferPointer?, from start: Int64, to end: Int64) throws {
            while next < regions.count, regions[next].offset + regions[next].length <= start { next += 1 }
            var region = next
            while region < regions.count, regions[region].offset < end {
                var from = max(regions[region].offset, start)
                let to = min(regions[region].offset + regions[region].length, end)
                while from < to {
                    let count = bytes == nil ? Int(min(to - from, Int64(zeros.count))) : Int(to - from)
                    try zeros.withUnsafeBytes { zero in
                        let part = bytes.map { UnsafeRawBufferPointer(rebasing: $0[Int(from - start) ..< Int(from - start) + count]) }
                            ?? UnsafeRawBufferPointer(rebasing: zero[..<count])
                        check.add(part, at: from)
                        // Over a hole only: a skip to where the entry stands inside a region is refused.
                        if from > written { try writer?.skip(to: from, path: header.path) }
                        try writer?.writeData(part, path: header.path)
                    }
                    from += Int64(count)
                    written = from
                }
                region += 1
            }
        }
        var read: Int64 = 0
        while let chunk = try opened.reader.nextBlock() {
            try cancellation.check()
            guard chunk.offset >= read else {
                throw SupplementDamage(reason: "\(shown) in \(wanted.source): its content is out of order in its archive")
            }
            try take(nil, from: read, to: chunk.offset)
            read = chunk.offset + Int64(chunk.bytes.count)
            try take(chunk.bytes, from: chunk.offset, to: read)
        }
        try take(nil, from: read, to: max(read, min(held.entrySize, opened.header.size)))
        let found = check.finish()
        if let problem = found.problem ?? (found.matched.count == held.indices.count ? nil
            : "it holds \(found.matched.count) of the \(held.indices.count) blocks kept backups take") {
            throw SupplementDamage(reason: "blocks of \(shown) in \(wanted.source): \(problem)")
        }
        try writer?.finishEntry()
        held.archiveOffset = start
        held.archiveLength = (writer?.position ?? 0) - start
        return held
    }

    // MARK: Reading back

    /// Reads the committed supplement back: its manifest parses to what was written, its
    /// archive has the size and SHA-256 recorded, and every file in it the SHA-256 its line
    /// gives, each once.
    func check(_ manifest: SupplementManifest) throws {
        let name = manifest.manifestName
        guard try SupplementShelf.readManifest(name, from: reading) == manifest else {
            throw SupplementDamage(reason: "\(name) does not read back as written")
        }
        if manifest.encryption != nil {
            let summary = manifest.summary
            guard try SupplementShelf.readSummary(host: manifest.host, id: manifest.id, from: storage) == summary else {
                throw SupplementDamage(reason: "\(summary.summaryName) does not read back as written")
            }
        }
        try SupplementContent.checkArchive(of: manifest, in: reading, cancellation: cancellation)
    }
}
