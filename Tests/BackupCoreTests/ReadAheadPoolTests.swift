import Foundation
@testable import KeepsakeArchive
import KeepsakeHashing
@testable import KeepsakeScan
import KeepsakeSupport
import XCTest

@testable import BackupCore

/// The pool of reader threads under a backup: files handed over whole and in order, and the
/// bytes read ahead held to the budget while nothing is written.
// test-tag(threads): the read-ahead pool
final class ReadAheadPoolTests: KeepsakeTestCase {
    // MARK: Fixtures

    private var folder = ""
    private var folderFD: Int32 = -1

    override func setUpWithError() throws {
        folder = try makeTemporaryDirectory("readahead")
        folderFD = open(folder, O_RDONLY | O_DIRECTORY)
    }

    override func tearDownWithError() throws {
        close(folderFD)
        removeTemporaryDirectory(folder)
    }

    /// `name` written with `contents`, opened as a backup opens it.
    private func openFile(_ name: String, contents: [UInt8], reader: SourceFileReader) throws -> SourceFileReader.OpenFile {
        try writeFile(folder + "/" + name, bytes: contents)
        var info = stat()
        XCTAssertEqual(fstatat(folderFD, name, &info, AT_SYMLINK_NOFOLLOW), 0)
        let path = Array((folder + "/" + name).utf8)
        let item = ScannedItem(parentFD: folderFD, name: Array(name.utf8), absolutePath: path,
                               archivePath: Array(path.dropFirst()), info: info)
        let header = ArchiveEntryHeader(path: item.archivePath, type: .file, permissions: 0o644, uid: 0, gid: 0, mtimeSeconds: 0)
        switch reader.open(item, header: header) {
        case .read(let file): return file
        case .problem(let warning): throw NSError(domain: "ReadAheadPoolTests", code: 1, userInfo: [NSLocalizedDescriptionKey: warning.reason])
        }
    }

    private func sha256(_ bytes: [UInt8]) -> String {
        let hasher = SHA256Hasher()
        bytes.withUnsafeBytes { hasher.update($0) }
        return hasher.finalizeHex()
    }

    // MARK: Tests

    func testFilesComeWholeAndInOrderWithinTheBudget() throws {
        let budget = 2 << 20
        let opener = SourceFileReader(cancellation: CancellationFlag(), readPause: 0)
        let contents: [[UInt8]] = [
            Array(repeating: 1, count: 10_000),
            // Filled through a buffer pointer (a closure call per byte takes seconds in a debug build).
            [UInt8](unsafeUninitializedCapacity: 12 << 20) { buffer, initialized in
                var index = 0
                while index < buffer.count {
                    buffer[index] = UInt8(truncatingIfNeeded: index &* 31 &+ index >> 9)
                    index += 1
                }
                initialized = buffer.count
            },
            [],
            Array(repeating: 3, count: 3 << 20),
            Array(repeating: 4, count: 700),
        ]
        let files = try contents.enumerated().map { try openFile("file-\($0.offset)", contents: $0.element, reader: opener) }
        let pool = ReadAhead(readers: 3, cancellation: CancellationFlag(), readPause: 0, budget: budget)
        defer { pool.stop() }
        let submitted = files.map { pool.submit($0) }
        // The first file is read ahead whole; how long that takes depends on the machine (a
        // loaded one under ThreadSanitizer took over 300 ms), so wait for it, bounded.
        let deadline = Date().addingTimeInterval(60)
        while !pool.isComplete(submitted[0]), Date() < deadline { usleep(10_000) }
        XCTAssertTrue(pool.isComplete(submitted[0]), "the first file was not read ahead within 60 s")
        // Nothing is written for a while: the readers stop at the budget, which only the
        // earliest file still being read may pass, by the allowance (a first piece of a
        // reader's may start it when nothing is held).
        usleep(300_000)
        XCTAssertLessThanOrEqual(pool.heldBytes, budget + ReadAhead.headAllowance)
        XCTAssertLessThan(pool.heldBytes, contents.reduce(0) { $0 + $1.count }, "the readers did not stop at the budget")
        for (index, prefetched) in submitted.enumerated() {
            var received: [UInt8] = []
            let content = try pool.consume(prefetched) { chunk in
                received.append(contentsOf: chunk)
                // Only the earliest file being read may go past the budget, by the allowance.
                XCTAssertLessThanOrEqual(pool.heldBytes, budget + ReadAhead.headAllowance)
            }
            XCTAssertEqual(received, contents[index], "file \(index)")
            XCTAssertEqual(content.sha256, sha256(contents[index]), "file \(index)")
            XCTAssertNil(content.problem)
        }
        XCTAssertEqual(pool.heldBytes, 0)
    }

    func testAStoppedPoolLetsItsReadersGo() throws {
        let opener = SourceFileReader(cancellation: CancellationFlag(), readPause: 0)
        let pool = ReadAhead(readers: 4, cancellation: CancellationFlag(), readPause: 0, budget: 1 << 20)
        for index in 0..<8 {
            _ = pool.submit(try openFile("big-\(index)", contents: Array(repeating: UInt8(index), count: 3 << 20), reader: opener))
        }
        usleep(100_000)
        // Readers wait for room that never comes; stop must still return.
        pool.stop()
    }
}
