import Foundation
import KeepsakeArchive
import KeepsakeModel
import KeepsakeSupport

/// A file stored by blocks (see `BlockTable`), read as one entry's content: each run of its
/// blocks from the archive entry that holds it (the file whole, or a block entry), in the
/// file's order. Each archive is opened once, when its first run comes, and read forward
/// only, as the runs ask for its blocks in order. The bytes are not judged here: what is
/// put together is checked against the file's SHA-256 as it is written, like any file, so a
/// wrong or missing block (read as zeros) makes the file damaged, never quietly wrong.
final class BlockAssembly: EntryContentReader {
    // MARK: Types

    /// An archive entry open at its content, and how to let it go.
    struct OpenedEntry {
        let reader: ArchiveReader
        let header: ArchiveEntryHeader
        let close: () -> Void
    }

    /// Opens the entry of the file in `source`'s archive, positioned at its content, decoding
    /// up to `workers` of its frames at once.
    typealias Opener = (_ source: BlockTable.Source, _ workers: Int) throws -> OpenedEntry

    /// Why the file cannot be put together: an archive does not hold its entry.
    struct Problem: Error, CustomStringConvertible {
        let description: String
    }

    /// The archive of backup `holder`, which holds some of its blocks, is not found (the
    /// restore names it to bring).
    struct MissingArchive: Error {
        let holder: BackupID
    }

    /// One source's entry, read forward: the block last read from it and how far it is used.
    private final class Feed {
        let opened: OpenedEntry
        var chunk: (bytes: UnsafeRawBufferPointer, offset: Int64)?
        var ended = false

        init(_ opened: OpenedEntry) {
            self.opened = opened
        }

        /// The block that holds `position` or comes after it; nil once the entry ends.
        func chunk(reaching position: Int64) throws -> (bytes: UnsafeRawBufferPointer, offset: Int64)? {
            while !ended {
                if let chunk, chunk.offset + Int64(chunk.bytes.count) > position { return chunk }
                chunk = try opened.reader.nextBlock()
                if chunk == nil { ended = true }
            }
            return nil
        }
    }

    // MARK: State

    private let table: BlockTable
    private let size: Int64
    private let open: Opener
    private var feeds: [Int: Feed] = [:]
    /// When each open feed was last read from (a count of reads), to close the one read
    /// longest ago when `mostOpen` are open.
    private var lastRead: [Int: Int] = [:]
    private var reads = 0
    /// The most archives open at once: a real file's blocks lie in a few dozen, and a table
    /// naming thousands must not open them all (a feed closed early is opened again, and read
    /// forward to where it is needed).
    static let mostOpen = 32
    private let mostOpen: Int
    /// How many frames of each source's archive are decoded at once: all of
    /// `DecodedArchiveSource.workers` for a source holding a quarter of the file or more
    /// (a full backup's whole copy, most often), which is read at the pace of a plain
    /// restore; one for the others, each read for a few blocks (so a table naming many
    /// archives keeps few frames in memory).
    private let workers: [Int]
    /// Runs left to read, and the one being read: its source and where it ends in the file.
    private var runs: IndexingIterator<[BlockTable.Run]>
    private var run: (source: Int, end: Int64)?
    private var position: Int64 = 0

    // MARK: Life cycle

    /// The file `entry` (a file stored by blocks, of `table`), its archives opened by `open`,
    /// at most `mostOpen` at once.
    init(entry: ManifestEntry, table: BlockTable, mostOpen: Int = BlockAssembly.mostOpen, open: @escaping Opener) {
        self.table = table
        size = max(0, entry.size)
        self.mostOpen = max(1, mostOpen)
        self.open = open
        runs = table.runs.makeIterator()
        var held = [Double](repeating: 0, count: table.sources.count)
        for run in table.runs where held.indices.contains(run.source) { held[run.source] += Double(max(0, run.count)) }
        let quarter = held.reduce(0, +) / 4
        workers = held.map { $0 > 0 && $0 >= quarter ? DecodedArchiveSource.workers : 1 }
    }

    deinit { close() }

    /// Lets every archive go.
    func close() {
        for feed in feeds.values { feed.opened.close() }
        feeds = [:]
        lastRead = [:]
    }

    /// The header of the newest archive's entry: its extended attributes are the file's
    /// when it was last read (every read of a file stored by blocks stores one block at least).
    func newestHeader() throws -> ArchiveEntryHeader {
        let newest = table.sources.indices.max { left, right in
            switch (table.sources[left].holder, table.sources[right].holder) {
            case (nil, _): return false
            case (_, nil): return true
            case (let a?, let b?): return a < b
            }
        } ?? 0
        return try feed(newest).opened.header
    }

    // MARK: Reading

    func nextBlock() throws -> (bytes: UnsafeRawBufferPointer, offset: Int64)? {
        while position < size {
            guard let current = currentRun() else { return nil }
            guard let chunk = try feed(current.source).chunk(reaching: position), chunk.offset < current.end else {
                // A hole to the end of the run (or the entry ended): zeros.
                position = current.end
                continue
            }
            let start = max(chunk.offset, position)
            let end = min(chunk.offset + Int64(chunk.bytes.count), current.end)
            position = end
            let from = Int(start - chunk.offset), to = Int(end - chunk.offset)
            return (UnsafeRawBufferPointer(rebasing: chunk.bytes[from..<to]), start)
        }
        return nil
    }

    func skipContent() throws {
        position = size
        close()
    }

    /// The run that holds `position`, moving on past the ones that end before it.
    private func currentRun() -> (source: Int, end: Int64)? {
        while run == nil || position >= run?.end ?? 0 {
            guard let next = runs.next() else { return nil }
            let start = run?.end ?? 0
            let end = min(size, start + Int64(next.count) * Int64(table.blockSize))
            run = (next.source, end)
        }
        return run
    }

    private func feed(_ source: Int) throws -> Feed {
        reads += 1
        lastRead[source] = reads
        if let feed = feeds[source] { return feed }
        guard table.sources.indices.contains(source) else { throw Problem(description: "its block table names no such archive") }
        if feeds.count >= mostOpen,
           let oldest = lastRead.filter({ feeds[$0.key] != nil && $0.key != source }).min(by: { $0.value < $1.value })?.key {
            feeds.removeValue(forKey: oldest)?.opened.close()
        }
        let feed = Feed(try open(table.sources[source], workers[source]))
        feeds[source] = feed
        return feed
    }
}

// MARK: - Opening

extension BlockAssembly {
    /// Opens, in `archive` (named `name`; kept open when `closing` is false), the entry of
    /// the file at `path` that `source` says holds its blocks: only the frames of its
    /// recorded place when the archive has a seek table (`workers` of them decoded at once),
    /// else the archive from its start.
    static func openEntry(of path: [UInt8], in source: BlockTable.Source, archive: RandomAccessSource, name: String,
                          closing: Bool, workers: Int = 1, cancellation: CancellationFlag) throws -> OpenedEntry {
        try openEntry(named: source.entryPath(for: path), at: source.archiveRange, archive: archive, name: name,
                      closing: closing, workers: workers, cancellation: cancellation,
                      missing: "its \(source.whole ? "content" : "blocks")")
    }

    /// Opens the file entry `wanted` in `archive` (see above), recorded at `range` of its tar
    /// stream; `missing` says what is not found, when it is not.
    static func openEntry(named wanted: [UInt8], at range: Range<Int64>?, archive: RandomAccessSource, name: String,
                          closing: Bool, workers: Int = 1, cancellation: CancellationFlag, missing: String) throws -> OpenedEntry {
        do {
            let reader: ArchiveReader
            if let range, let table = RangedZstdSource.table(of: archive) {
                let ranged = RangedZstdSource(source: archive, table: table, ranges: [range], name: name, workers: max(1, workers))
                reader = try ArchiveReader(decoded: ranged, name: name, keepsakeTar: true, cancellation: cancellation)
            } else {
                reader = try ArchiveReader(source: FromTheStart(archive), name: name, cancellation: cancellation)
            }
            while let header = try reader.nextHeader() {
                if header.path == wanted, header.type == .file {
                    return OpenedEntry(reader: reader, header: header, close: { if closing { archive.close() } })
                }
                try reader.skipContent()
            }
            throw Problem(description: "\(name) does not hold \(missing) where its manifest says")
        } catch {
            if closing { archive.close() }
            throw error
        }
    }

    /// An archive read again from its first byte, whatever was read of it before.
    private final class FromTheStart: ByteSource {
        private let archive: RandomAccessSource
        private var offset: Int64 = 0

        init(_ archive: RandomAccessSource) {
            self.archive = archive
        }

        func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            let count = try archive.read(at: offset, into: buffer)
            offset += Int64(count)
            return count
        }

        func close() {}
    }
}
