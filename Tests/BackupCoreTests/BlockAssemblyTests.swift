import Foundation
import KeepsakeArchive
import KeepsakeModel
import KeepsakeSupport
import XCTest

@testable import BackupCore

/// A file stored by blocks put together from the archives that hold them (`BlockAssembly`):
/// each run from its archive's entry, in the file's order, also when the runs go back and
/// forth between more archives than it keeps open.
final class BlockAssemblyTests: KeepsakeTestCase {
    // MARK: Fixtures

    private let path = Array("srv/disk.img".utf8)
    private let blockSize = 4096
    private let blocks = 6

    /// An archive (zstd frames and a seek table) holding another file, then the file at
    /// `path` whole, every byte `fill`: its bytes and where that entry lies in its tar stream.
    private func archive(filledWith fill: UInt8) throws -> (bytes: [UInt8], entry: Range<Int64>) {
        let sink = AgeMemorySink()
        let writer = try ArchiveWriter(sink: sink, compression: .zstd, level: nil, threads: 1)
        let other = [UInt8](repeating: 1, count: 5000)
        try writer.writeHeader(ArchiveEntryHeader(path: Array("srv/other".utf8), type: .file, size: Int64(other.count)))
        try other.withUnsafeBytes { try writer.writeData($0, path: Array("srv/other".utf8)) }
        try writer.finishEntry()
        let start = writer.position
        let content = [UInt8](repeating: fill, count: blocks * blockSize)
        try writer.writeHeader(ArchiveEntryHeader(path: path, type: .file, size: Int64(content.count)))
        try content.withUnsafeBytes { try writer.writeData($0, path: path) }
        try writer.finishEntry()
        let end = writer.position
        try writer.finish()
        return (sink.bytes, start..<end)
    }

    /// The file `table` describes, read through a `BlockAssembly` keeping at most `mostOpen`
    /// archives open; how many times an archive was opened; and how many frames of each
    /// archive were decoded at once.
    private func assembled(_ table: BlockTable, archives: [BackupID: [UInt8]],
                           mostOpen: Int) throws -> (file: [UInt8], opened: Int, workers: [BackupID: Int]) {
        var opened = 0
        var workersOf: [BackupID: Int] = [:]
        let entry = ManifestEntry(path: path, type: .file, size: Int64(blocks * blockSize))
        let assembly = BlockAssembly(entry: entry, table: table, mostOpen: mostOpen) { source, workers in
            opened += 1
            if let holder = source.holder { workersOf[holder] = workers }
            let bytes = try XCTUnwrap(source.holder.flatMap { archives[$0] })
            return try BlockAssembly.openEntry(of: self.path, in: source, archive: AgeMemorySource(bytes), name: "archive",
                                               closing: true, workers: workers, cancellation: CancellationFlag())
        }
        defer { assembly.close() }
        var file = [UInt8](repeating: 0, count: blocks * blockSize)
        var end: Int64 = 0
        while let block = try assembly.nextBlock() {
            XCTAssertGreaterThanOrEqual(block.offset, end, "the file comes in order")
            file.replaceSubrange(Int(block.offset)..<(Int(block.offset) + block.bytes.count), with: block.bytes)
            end = block.offset + Int64(block.bytes.count)
        }
        return (file, opened, workersOf)
    }

    /// Three archives of the same file, A's filled with "A", B's with "B" and C's with "C",
    /// as the sources of a table; and the file the blocks `holders` name (0 A, 1 B, 2 C) make.
    private func threeArchives(_ holders: [Int]) throws
        -> (archives: [BackupID: [UInt8]], ids: [BackupID], table: BlockTable, expected: [UInt8]) {
        let ids = (1...3).map { BackupID("2027010\($0)T020000Z-0000000\($0)")! }
        var archives: [BackupID: [UInt8]] = [:]
        var sources: [BlockTable.Source] = []
        for (index, id) in ids.enumerated() {
            let made = try archive(filledWith: UInt8(ascii: "A") + UInt8(index))
            archives[id] = made.bytes
            sources.append(.init(holder: id, whole: true, archiveOffset: made.entry.lowerBound,
                                 archiveLength: made.entry.upperBound - made.entry.lowerBound))
        }
        let table = BlockTable(blockSize: blockSize, digests: [UInt8](repeating: 0, count: blocks * BlockTable.digestLength),
                               sources: sources, runs: holders.map { .init(count: 1, source: $0) })
        let expected = holders.flatMap { [UInt8](repeating: UInt8(ascii: "A") + UInt8($0), count: blockSize) }
        return (archives, ids, table, expected)
    }

    // MARK: Tests

    func testRunsComeFromTheirArchivesInOrderEvenWhenFewAreKeptOpen() throws {
        // Blocks 0…5 from A, B, C, A, B, C.
        let (archives, _, table, expected) = try threeArchives((0..<blocks).map { $0 % 3 })
        let (file, opened, _) = try assembled(table, archives: archives, mostOpen: 32)
        XCTAssertEqual(file, expected)
        XCTAssertEqual(opened, 3, "each archive opened once")
        // Two open at most: an archive closed early is opened again and read on to its block.
        let (again, reopened, _) = try assembled(table, archives: archives, mostOpen: 2)
        XCTAssertEqual(again, expected)
        XCTAssertEqual(reopened, 6)
    }

    /// The archive holding most of the file (the full backup's copy, as a rule) is decoded
    /// with every worker, as a plain restore is; the few blocks of others with one each.
    func testAnArchiveHoldingAQuarterOfTheFileOrMoreIsDecodedWithEveryWorker() throws {
        let (archives, ids, table, expected) = try threeArchives([0, 0, 1, 0, 0, 2])
        let (file, _, workers) = try assembled(table, archives: archives, mostOpen: 32)
        XCTAssertEqual(file, expected)
        XCTAssertEqual(workers, [ids[0]: DecodedArchiveSource.workers, ids[1]: 1, ids[2]: 1])
        // Two blocks of six each: a third of the file each, so every worker for all three.
        let even = try threeArchives([0, 1, 2, 2, 1, 0])
        let (evenFile, _, evenWorkers) = try assembled(even.table, archives: even.archives, mostOpen: 32)
        XCTAssertEqual(evenFile, even.expected)
        XCTAssertEqual(Set(evenWorkers.values), [DecodedArchiveSource.workers])
    }

    func testAnArchiveWithoutTheEntryIsAProblemNamingIt() throws {
        let id = BackupID("20270101T020000Z-00000001")!
        let made = try archive(filledWith: 7)
        // Its blocks said to be in a block entry, which the archive does not have.
        let table = BlockTable(blockSize: blockSize, digests: [UInt8](repeating: 0, count: blocks * BlockTable.digestLength),
                               sources: [.init(holder: id, whole: false)], runs: [.init(count: blocks, source: 0)])
        XCTAssertThrowsError(try assembled(table, archives: [id: made.bytes], mostOpen: 32)) { error in
            XCTAssertTrue("\(error)".contains("does not hold its blocks"), "\(error)")
        }
    }
}
