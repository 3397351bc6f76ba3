import Foundation
import KeepsakeJSON
@testable import KeepsakeModel
import KeepsakeSupport
import XCTest

@testable import BackupCore

/// The compact entry store, the streaming manifest parser and the in-order SHA256SUMS check.
final class ManifestEntriesTests: KeepsakeTestCase {
    // MARK: Fixtures

    private let sha = String(repeating: "0123456789abcdef", count: 4)
    private let otherSHA = String(repeating: "fedcba9876543210", count: 4)
    private let id = BackupID("20261129T023000Z-3f9a1c2e")!
    private let older = BackupID("20261128T023000Z-00000001")!

    private var summaryLine: String {
        BackupSummary(id: id, created: Date(timeIntervalSince1970: 1_795_919_400), host: "box", user: "ana",
                      sources: ["/home/ana"], tags: [], compression: .zstd, level: 3, fileCount: 3, directoryCount: 1,
                      symlinkCount: 1, hardlinkCount: 1, otherCount: 1, originalBytes: 10, warningCount: 0,
                      toolVersion: "keepsake 0.2.0", archive: nil).json.serialized()
    }

    /// Entries using every field, with every optional part present and absent.
    private var sampleEntries: [ManifestEntry] {
        var located = ManifestEntry(path: Array("home/ana/a.txt".utf8), type: .file, size: 5, mode: 0o4755, uid: 1000,
                                    gid: 1000, userName: "ana", groupName: "staff", mtimeNanoseconds: -1_500_000_001,
                                    ctimeNanoseconds: Int64.max, inode: UInt64.max, device: 42, sha256: sha)
        located.archiveOffset = 512
        located.archiveLength = 2048
        return [
            ManifestEntry(path: Array("home/ana".utf8), type: .directory, mode: 0o755, userName: "ana", groupName: "ana"),
            located,
            ManifestEntry(path: Array("home/ana/b".utf8), type: .hardlink, size: 5, linkTarget: Array("home/ana/a.txt".utf8),
                          sha256: sha),
            ManifestEntry(path: Array("home/ana/old".utf8), type: .file, size: 9, sha256: otherSHA, storedIn: older),
            ManifestEntry(path: Array("home/ana/l".utf8), type: .symlink, linkTarget: Array("a.txt".utf8)),
            ManifestEntry(path: [0x68, 0x6f, 0x6d, 0x65, 0x2f, 0xff], type: .characterDevice, rdev: 0x0501),
            ManifestEntry(path: Array("home/ana/d".utf8), type: .file, sha256: "not a digest"),
        ]
    }

    private func manifestBytes(_ entries: [ManifestEntry]) -> [UInt8] {
        var bytes = Array((summaryLine + "\n").utf8)
        for entry in entries {
            var writer = JSONWriter()
            entry.write(to: &writer)
            bytes += writer.bytes + [10]
        }
        return bytes
    }

    // MARK: Storage

    func testEveryFieldComesBackAsItWasAppended() {
        let entries = sampleEntries
        let stored = ManifestEntries(entries)
        XCTAssertEqual(Array(stored), entries)
        for (position, entry) in entries.enumerated() {
            XCTAssertEqual(Array(stored.path(at: position)), entry.path)
            XCTAssertEqual(stored.type(at: position), entry.type)
            XCTAssertEqual(stored.storedIn(at: position), entry.storedIn)
            XCTAssertEqual(stored.sha256(at: position), entry.sha256)
        }
        XCTAssertEqual(stored.holdingBackups, [older])
        // What 100,000 entries take besides their paths: 12.8 MB.
        XCTAssertEqual(ManifestEntries.recordSize, 128)
    }

    func testAppendingAnotherStoreRenumbersItsNamesAndHolders() {
        let entries = sampleEntries
        var first = ManifestEntries(entries.prefix(2))
        let second = ManifestEntries([ManifestEntry(path: Array("x".utf8), type: .file, userName: "bo", groupName: "ana",
                                                    sha256: otherSHA, storedIn: older)] + entries.suffix(3))
        first.append(contentsOf: second)
        XCTAssertEqual(Array(first), Array(entries.prefix(2)) + Array(second))
        var empty = ManifestEntries()
        empty.append(contentsOf: second)
        XCTAssertEqual(empty, second)
    }

    func testIndexFindsEveryPathAndTheLaterDuplicateWins() {
        var entries = sampleEntries
        let duplicate = ManifestEntry(path: Array("home/ana/l".utf8), type: .fifo)
        entries.append(duplicate)
        let index = ManifestIndex(entries)
        XCTAssertEqual(index.count, entries.count - 1)
        for entry in entries where entry.path != duplicate.path {
            XCTAssertEqual(index[PathKey(entry.path)], entry)
        }
        XCTAssertEqual(index[PathKey(duplicate.path)], duplicate)
        XCTAssertNil(index[PathKey(Array("home/ana/missing".utf8))])
        XCTAssertEqual(Set(index.map(\.key)).count, index.count)
    }

    func testIndexOfManyPathsWithCollidingPrefixes() {
        let entries = (0..<5000).map { ManifestEntry(path: Array("dir/\($0 % 7)/file-\($0)".utf8), type: .file, size: Int64($0)) }
        let index = ManifestIndex(entries)
        XCTAssertEqual(index.count, 5000)
        for entry in entries.shuffled().prefix(500) {
            XCTAssertEqual(index[PathKey(entry.path)]?.size, entry.size)
        }
    }

    /// Paths are kept as a shared folder and a name: odd shapes (no slash, a slash at either
    /// end, doubled slashes, a folder met again after others) come back byte for byte, and
    /// the index finds them whether it compares two stored paths or a stored one and bytes.
    func testPathsOfEveryShapeComeBackWholeAndAreFound() {
        let paths = ["top", "/", "a/", "/b", "a//c", "a/b/c", "a/b/d", "x/y", "a/b/e", "a/b", "", "a/b/c"]
        let entries = paths.enumerated().map { ManifestEntry(path: Array($1.utf8), type: .file, size: Int64($0)) }
        var stored = ManifestEntries(entries.prefix(6))
        stored.trim()
        // Appending after trim (which forgets which folders it has) or from another store
        // may keep a folder twice; paths and look-ups must not care.
        stored.append(contentsOf: ManifestEntries(entries.dropFirst(6)))
        for (position, path) in paths.enumerated() {
            XCTAssertEqual(stored.path(at: position), Array(path.utf8), "position \(position)")
            XCTAssertTrue(stored.path(at: position, equals: Array(path.utf8)[...]))
            XCTAssertFalse(stored.path(at: position, equals: Array((path + "x").utf8)[...]))
        }
        XCTAssertTrue(stored.paths(at: 5, and: 11))
        XCTAssertFalse(stored.paths(at: 5, and: 6))
        XCTAssertFalse(stored.paths(at: 9, and: 1))
        let index = ManifestIndex(stored)
        XCTAssertEqual(index.count, paths.count - 1)
        XCTAssertEqual(index.position(of: Array("a/b/c".utf8)), 11, "the later duplicate wins")
        XCTAssertEqual(index.distinctPositions, Array(0..<5) + Array(6..<12))
        // Without duplicates every position is its path's; a subset keeps only its own.
        XCTAssertEqual(ManifestIndex(stored, positions: [0, 2, 4, 11]).distinctPositions, [0, 2, 4, 11])
        XCTAssertEqual(ManifestIndex(stored, positions: [0, 5, 7, 11]).distinctPositions, [0, 7, 11])
        XCTAssertEqual(ManifestIndex(ManifestEntries(entries.prefix(5))).distinctPositions, Array(0..<5))
        for (position, path) in paths.enumerated() where position != 5 {
            XCTAssertEqual(index.position(of: Array(path.utf8)), position, path)
        }
        XCTAssertNil(index.position(of: Array("a/b/c/".utf8)))
        XCTAssertNil(index.position(of: Array("a/bc".utf8)))
    }

    // MARK: Streaming parse

    func testParsingInPiecesOfAnySizeGivesTheSameManifest() throws {
        let bytes = manifestBytes(sampleEntries.filter { $0.sha256 != "not a digest" })
        let whole = try Manifest.parse(bytes)
        XCTAssertEqual(whole.entries.count, sampleEntries.count - 1)
        for size in [1, 2, 3, 7, 64, 1000] {
            var parser = ManifestParser(keeping: nil)
            var start = 0
            while start < bytes.count {
                let end = min(bytes.count, start + size)
                try bytes[start..<end].withUnsafeBytes { try parser.feed($0) }
                start = end
            }
            let pieces = try parser.finish()
            XCTAssertEqual(pieces.summary, whole.summary, "pieces of \(size)")
            XCTAssertEqual(pieces.entries, whole.entries, "pieces of \(size)")
        }
    }

    func testReadingFromASourceHoldsTheSizeLimit() throws {
        // The summary declares 7 entries; far more bytes than 7 entries may take are refused
        // while reading, before they are all read.
        var bytes = manifestBytes(Array(sampleEntries.prefix(2)))
        bytes += [UInt8](repeating: UInt8(ascii: "\n"), count: ManifestSizeLimit.limit(forEntries: 7) + 100_000)
        let source = MemorySource(bytes)
        XCTAssertThrowsError(try Manifest.read(source, name: "the manifest X")) { error in
            guard case ManifestError.tooLarge = error else { return XCTFail("\(error)") }
        }
        XCTAssertLessThan(source.delivered, bytes.count)
        let fine = try Manifest.read(MemorySource(manifestBytes(Array(sampleEntries.prefix(2)))), name: "the manifest X")
        XCTAssertEqual(fine.entries.count, 2)
    }

    func testAnEndlessFirstLineIsRefusedWhileReading() {
        let bytes = [UInt8](repeating: UInt8(ascii: "a"), count: ManifestSizeLimit.summaryLineLimit + 10)
        XCTAssertThrowsError(try Manifest.read(MemorySource(bytes), name: "the manifest X")) { error in
            guard case ManifestError.notAManifest(let reason) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(reason.contains("longer than"), reason)
        }
    }

    // MARK: SHA256SUMS

    private func checksums(_ lines: [(String, [UInt8])]) -> [UInt8] {
        lines.flatMap { Array("\($0.0)  ".utf8) + $0.1 + [10] }
    }

    func testChecksumsInManifestOrderMatch() throws {
        let manifest = Manifest(summary: try Manifest.parseSummary(Array(summaryLine.utf8)), entries: sampleEntries)
        // Files and hard links held by this archive, in order; not the one stored in `older`.
        let list = checksums([(sha, Array("home/ana/a.txt".utf8)), (sha, Array("home/ana/b".utf8))])
        XCTAssertTrue(ChecksumListCheck.matches(list, manifest: manifest) == false,
                      "the entry whose digest is not hex is listed by nobody, and the list must still name it")
        let clean = Manifest(summary: manifest.summary, entries: sampleEntries.filter { $0.sha256 != "not a digest" })
        XCTAssertTrue(ChecksumListCheck.matches(list, manifest: clean))
        // Fed a byte at a time.
        let check = ChecksumListCheck(manifest: clean)
        for byte in list { [byte].withUnsafeBytes { check.update($0) } }
        XCTAssertTrue(check.finish())
    }

    func testChecksumsThatDifferInAnyWayDoNotMatch() throws {
        let summary = try Manifest.parseSummary(Array(summaryLine.utf8))
        let manifest = Manifest(summary: summary, entries: sampleEntries.filter { $0.sha256 != "not a digest" })
        let a = Array("home/ana/a.txt".utf8), b = Array("home/ana/b".utf8)
        for list in [
            checksums([(sha, a)]),                                      // one missing
            checksums([(sha, b), (sha, a)]),                            // out of order
            checksums([(otherSHA, a), (sha, b)]),                       // wrong digest
            checksums([(sha, a), (sha, b), (sha, Array("extra".utf8))]), // one too many
            checksums([(sha, a), (sha, Array("home/ana/c".utf8))]),     // wrong name
            Array("short line\n".utf8),
        ] {
            XCTAssertFalse(ChecksumListCheck.matches(list, manifest: manifest), String(decoding: list, as: UTF8.self))
        }
    }

    func testEscapedNamesInChecksumsMatch() throws {
        let summary = try Manifest.parseSummary(Array(summaryLine.utf8))
        let name = Array("dir/new\nline\\back".utf8)
        let manifest = Manifest(summary: summary, entries: [ManifestEntry(path: name, type: .file, sha256: sha)])
        let list = Array("\\\(sha)  dir/new\\nline\\\\back\n".utf8)
        XCTAssertTrue(ChecksumListCheck.matches(list, manifest: manifest))
    }
}

/// Bytes handed out in pieces of at most 4 KiB, counting what was handed out.
private final class MemorySource: ByteSource {
    private let bytes: [UInt8]
    private(set) var delivered = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let count = min(buffer.count, 4096, bytes.count - delivered)
        bytes[delivered..<(delivered + count)].withUnsafeBytes { buffer.copyMemory(from: $0) }
        delivered += count
        return count
    }

    func close() {}
}
