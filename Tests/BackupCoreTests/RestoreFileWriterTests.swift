import Foundation
@testable import KeepsakeArchive
import KeepsakeHashing
import KeepsakeSupport
import XCTest

@testable import BackupCore

/// The restore's file writer, on real files in a temporary folder: content in pieces of
/// every size and with holes, checked against SHA-256 before it gets its final name;
/// damaged and abandoned files leave nothing behind; files waiting for a manifest and hard
/// links to them; and many folders without holding a descriptor for each.
// test-tag(threads): the restore's writer thread
final class RestoreFileWriterTests: KeepsakeTestCase {
    // MARK: Fixtures

    private var root = ""
    private var rootFD: Int32 = -1

    override func setUpWithError() throws {
        root = try makeTemporaryDirectory("writer")
        rootFD = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(rootFD, 0)
    }

    override func tearDown() {
        if rootFD >= 0 { close(rootFD) }
        removeTemporaryDirectory(root)
    }

    private func makeWriter() throws -> RestoreFileWriter {
        try XCTUnwrap(RestoreFileWriter(rootFD: rootFD, request: RestoreRequest(target: root, preserveOwnership: false),
                                         cancellation: CancellationFlag()))
    }

    private func folder(_ name: String) throws -> DirectoryHandle {
        mkdir(root + "/" + name, 0o755)
        let fd = open(root + "/" + name, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { close(fd) }
        return try XCTUnwrap(DirectoryHandle(copying: fd))
    }

    private func job(_ directory: DirectoryHandle, _ folder: String, _ name: String, size: Int, check: RestoreFileWriter.Check,
                     mtime: Int64 = 1_700_000_000, mode: UInt32 = 0o640) -> RestoreFileWriter.FileJob {
        let path = Array("\(folder)/\(name)".utf8)
        return RestoreFileWriter.FileJob(directory: directory, components: [Array(folder.utf8), Array(name.utf8)], path: path,
                                         header: ArchiveEntryHeader(path: path, type: .file, size: Int64(size),
                                                                    permissions: mode, mtimeSeconds: mtime),
                                         check: check)
    }

    /// A hard link `folder/name` to `folder/target`.
    private func linkJob(_ directory: DirectoryHandle, _ folder: String, _ name: String, to target: String,
                         deferred: Bool = false) -> RestoreFileWriter.LinkJob {
        RestoreFileWriter.LinkJob(directory: directory, components: [Array(folder.utf8), Array(name.utf8)],
                                  path: Array("\(folder)/\(name)".utf8), linkPath: Array("\(folder)/\(target)".utf8),
                                  linkParts: [Array(folder.utf8), Array(target.utf8)], deferred: deferred)
    }

    /// Queues a whole file with `content` and ends it.
    private func queue(_ writer: RestoreFileWriter, _ job: RestoreFileWriter.FileJob, _ content: [UInt8],
                       newDirectory: Bool = false) {
        writer.beginFile(job, newDirectory: newDirectory)
        content.withUnsafeBytes { writer.write($0, at: 0) }
        writer.endFile()
    }

    private func mode(of path: String) -> mode_t {
        var info = stat()
        return stat(root + "/" + path, &info) == 0 ? info.st_mode & 0o7777 : 0
    }

    private func names(in folder: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: root + "/" + folder).sorted()
    }

    // MARK: Tests

    /// Files handed over in pieces of every size (crossing batches), one with a hole in the
    /// middle and one ending in a hole, land with their content, mode and time; the counts
    /// and bytes add up.
    func testFilesInPiecesLandWithContentModeAndTime() throws {
        let writer = try makeWriter()
        let directory = try folder("d")
        var expected: [String: [UInt8]] = [:]
        var generator = SystemRandomNumberGenerator()
        for (index, size) in [0, 1, 4095, 65_536, 3 * RestoreFileWriter.batchSize + 17].enumerated() {
            let content = (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let name = "file-\(index)"
            expected[name] = content
            writer.beginFile(job(directory, "d", name, size: size, check: .verify(sha256: SHA256Hasher.hex(of: content))),
                             newDirectory: index == 0)
            var offset = 0
            var piece = 1
            while offset < size {
                let count = min(piece, size - offset)
                content.withUnsafeBytes { writer.write(UnsafeRawBufferPointer(rebasing: $0[offset..<(offset + count)]), at: Int64(offset)) }
                offset += count
                piece = piece * 3 + 1
            }
            writer.endFile()
        }
        // A hole in the middle (the bytes between are never handed over) and one at the end.
        var holey = [UInt8](repeating: 0, count: 300_000)
        for index in 0..<1000 { holey[index] = 7; holey[200_000 + index] = 9 }
        expected["holey"] = holey
        writer.beginFile(job(directory, "d", "holey", size: holey.count, check: .verify(sha256: SHA256Hasher.hex(of: holey))),
                         newDirectory: false)
        holey.withUnsafeBytes {
            writer.write(UnsafeRawBufferPointer(rebasing: $0[0..<1000]), at: 0)
            writer.write(UnsafeRawBufferPointer(rebasing: $0[200_000..<201_000]), at: 200_000)
        }
        writer.endFile()

        let outcome = writer.drain()
        XCTAssertNil(outcome.failure)
        XCTAssertEqual(outcome.damaged, [])
        XCTAssertEqual(outcome.warnings, [])
        XCTAssertEqual(outcome.files, Int64(expected.count))
        XCTAssertEqual(outcome.bytes, Int64(expected.values.reduce(0) { $0 + $1.count }))
        XCTAssertEqual(try names(in: "d"), expected.keys.sorted(), "no temporary names are left")
        for (name, content) in expected {
            let path = root + "/d/" + name
            XCTAssertEqual(Array(try Data(contentsOf: URL(fileURLWithPath: path))), content, name)
            var info = stat()
            XCTAssertEqual(stat(path, &info), 0)
            XCTAssertEqual(info.st_mode & 0o7777, 0o640, name)
            XCTAssertEqual(info.st_mtim.tv_sec, 1_700_000_000, name)
        }
        XCTAssertEqual(writer.progress.files, 0, "a drain hands the counts over")
    }

    /// Content that does not match its SHA-256 never gets its final name, and a file
    /// abandoned half-way (the archive broke off) leaves nothing; the files around them land.
    func testDamagedAndAbandonedFilesLeaveNothing() throws {
        let writer = try makeWriter()
        let directory = try folder("d")
        let good = Array("good\n".utf8)
        writer.beginFile(job(directory, "d", "damaged", size: 4, check: .verify(sha256: SHA256Hasher.hex(of: Array("abcd".utf8)))),
                         newDirectory: true)
        Array("abce".utf8).withUnsafeBytes { writer.write($0, at: 0) }
        writer.endFile()
        writer.beginFile(job(directory, "d", "cut", size: 10, check: .verify(sha256: nil)), newDirectory: false)
        Array("half".utf8).withUnsafeBytes { writer.write($0, at: 0) }
        writer.abortFile()
        writer.beginFile(job(directory, "d", "good", size: good.count, check: .verify(sha256: SHA256Hasher.hex(of: good))),
                         newDirectory: false)
        good.withUnsafeBytes { writer.write($0, at: 0) }
        writer.endFile()

        let outcome = writer.drain()
        XCTAssertEqual(outcome.files, 1)
        XCTAssertEqual(outcome.damaged.map(\.path), ["d/damaged"])
        XCTAssertTrue(outcome.damaged.first?.reason.contains("SHA-256") ?? false)
        XCTAssertEqual(try names(in: "d"), ["good"])
    }

    /// In a target that started empty, files are written unnamed and named once checked: no
    /// temporary name ever appears, a file being written has no name at all, damaged and
    /// abandoned files leave nothing, a path met twice keeps the later content (as a rename
    /// would), modes the umask would change are set, and a hard link goes straight to its name.
    func testATargetThatStartedEmptyHoldsNoTemporaryName() throws {
        guard let unnamed = UnnamedFiles.probe(in: rootFD) else {
            throw XCTSkip("the file system of /tmp makes no unnamed files (O_TMPFILE)")
        }
        let request = RestoreRequest(target: root, preserveOwnership: false, samePermissions: true)
        let writer = try XCTUnwrap(RestoreFileWriter(rootFD: rootFD, request: request, cancellation: CancellationFlag(),
                                                     targetStartedEmpty: true, unnamed: unnamed))
        let directory = try folder("d")
        let first = Array("first\n".utf8)
        writer.beginFile(job(directory, "d", "file", size: first.count, check: .verify(sha256: SHA256Hasher.hex(of: first))),
                         newDirectory: true)
        first.withUnsafeBytes { writer.write($0, at: 0) }
        XCTAssertNil(writer.drain().failure)
        XCTAssertEqual(try names(in: "d"), [], "a file being written has no name")
        writer.endFile()
        let expected = SHA256Hasher.hex(of: Array("abcd".utf8))
        queue(writer, job(directory, "d", "damaged", size: 4, check: .verify(sha256: expected)), Array("abce".utf8))
        writer.beginFile(job(directory, "d", "cut", size: 10, check: .verify(sha256: nil)), newDirectory: false)
        Array("half".utf8).withUnsafeBytes { writer.write($0, at: 0) }
        writer.abortFile()
        let later = Array("the later copy\n".utf8)
        queue(writer, job(directory, "d", "file", size: later.count, check: .verify(sha256: SHA256Hasher.hex(of: later))), later)
        let open = Array("open\n".utf8)
        queue(writer, job(directory, "d", "open", size: open.count, check: .verify(sha256: SHA256Hasher.hex(of: open)),
                          mode: 0o666), open)
        writer.link(linkJob(directory, "d", "alias", to: "file"), newDirectory: false)

        let outcome = writer.drain()
        XCTAssertNil(outcome.failure)
        XCTAssertEqual(outcome.files, 3, "the first copy, the later one and 'open'")
        XCTAssertEqual(outcome.hardlinks, 1)
        XCTAssertEqual(outcome.damaged.map(\.path), ["d/damaged"])
        XCTAssertEqual(outcome.warnings, [])
        XCTAssertEqual(try names(in: "d"), ["alias", "file", "open"], "no temporary name, nothing damaged or cut")
        XCTAssertEqual(Array(try Data(contentsOf: URL(fileURLWithPath: root + "/d/file"))), later)
        XCTAssertEqual(mode(of: "d/file"), 0o640)
        XCTAssertEqual(mode(of: "d/open"), 0o666, "a mode the umask takes bits from is set after all")
        var file = stat()
        var alias = stat()
        XCTAssertEqual(stat(root + "/d/file", &file), 0)
        XCTAssertEqual(stat(root + "/d/alias", &alias), 0)
        XCTAssertEqual(file.st_ino, alias.st_ino, "the link names the file")
        XCTAssertEqual(file.st_mtim.tv_sec, 1_700_000_000)
    }

    /// Without a manifest yet, files wait under temporary names with their digests, and a
    /// hard link to one of them is made to its temporary name (so it shares the content).
    func testWaitingFilesAndLinksToThem() throws {
        let writer = try makeWriter()
        let directory = try folder("d")
        let content = Array("shared content\n".utf8)
        writer.beginFile(job(directory, "d", "first", size: content.count, check: .wait(hashed: true)), newDirectory: true)
        content.withUnsafeBytes { writer.write($0, at: 0) }
        writer.endFile()
        writer.link(linkJob(directory, "d", "second", to: "first", deferred: true), newDirectory: false)
        let outcome = writer.drain()
        XCTAssertEqual(outcome.files, 0, "waiting files are not counted yet")
        XCTAssertEqual(outcome.bytes, Int64(content.count))
        let pendings = writer.takePendings()
        XCTAssertEqual(pendings.map { PathBytes.display($0.path) }, ["d/first", "d/second"])
        XCTAssertEqual(pendings.first?.sha256, SHA256Hasher.hex(of: content))
        XCTAssertEqual(pendings.last?.linkOf, Array("d/first".utf8))
        let temporaries = pendings.map { String(decoding: $0.temporaryName, as: UTF8.self) }
        XCTAssertEqual(try names(in: "d"), temporaries.sorted())
        var first = stat()
        var second = stat()
        XCTAssertEqual(stat(root + "/d/" + temporaries[0], &first), 0)
        XCTAssertEqual(stat(root + "/d/" + temporaries[1], &second), 0)
        XCTAssertEqual(first.st_ino, second.st_ino, "the link names the waiting file")
        XCTAssertEqual(writer.takePendings().count, 0, "taken once")
    }

    /// A link to a file that was never restored is a warning, not a failure.
    func testLinkToMissingFileIsAWarning() throws {
        let writer = try makeWriter()
        let directory = try folder("d")
        writer.link(linkJob(directory, "d", "link", to: "absent"), newDirectory: true)
        let outcome = writer.drain()
        XCTAssertNil(outcome.failure)
        XCTAssertEqual(outcome.hardlinks, 0)
        XCTAssertEqual(outcome.warnings.map(\.path), ["d/link"])
        XCTAssertEqual(try names(in: "d"), [])
    }

    /// Thousands of folders with one file each: the writer never holds more than a bounded
    /// number of folder descriptors, however far ahead the caller queues.
    func testManyFoldersKeepDescriptorsBounded() throws {
        let writer = try makeWriter()
        let before = openDescriptorCount()
        var most = 0
        for index in 0..<2000 {
            let name = "f\(index)"
            let directory = try folder(name)
            let content = Array("file \(index)\n".utf8)
            writer.beginFile(job(directory, name, "x", size: content.count, check: .verify(sha256: SHA256Hasher.hex(of: content))),
                             newDirectory: true)
            content.withUnsafeBytes { writer.write($0, at: 0) }
            writer.endFile()
            if index % 50 == 0 { most = max(most, openDescriptorCount() - before) }
        }
        let outcome = writer.drain()
        XCTAssertEqual(outcome.files, 2000)
        XCTAssertEqual(outcome.warnings, [])
        XCTAssertLessThanOrEqual(most, RestoreFileWriter.maximumDescriptors, "folder descriptors held while queued")
        XCTAssertEqual(openDescriptorCount() - before, 0, "no folder stays open once the writes are drained")
        XCTAssertEqual(try String(contentsOfFile: root + "/f1999/x", encoding: .utf8), "file 1999\n")
    }

    private func openDescriptorCount() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
    }
}
