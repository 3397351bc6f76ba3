import Foundation
@testable import KeepsakeStorage
import KeepsakeSupport
import XCTest

@testable import BackupCore

/// Verifying an incremental backup checks that every backup it takes files from holds each
/// of them as recorded, whether what that backup holds comes from the verifier's memo
/// (`HeldFilesMemo`, each manifest read once per run) or from its manifest read again.
final class ChainVerifyTests: KeepsakeTestCase {
    // MARK: Setup

    private var root = ""
    private var storage: LocalFolderBackend!

    override func setUpWithError() throws {
        try super.setUpWithError()
        root = try makeTemporaryDirectory("chain-verify")
        storage = LocalFolderBackend(path: root + "/dest")
    }

    override func tearDownWithError() throws {
        storage = nil
        removeTemporaryDirectory(root)
        try super.tearDownWithError()
    }

    /// Backs up `src` at `day`; its catalog item.
    private func backup(day: Double) throws -> BackupCatalog.Item {
        let request = BackupRequest(sources: [root + "/src"], scan: try noExcludes(), toolVersion: "test", now: fixedDate(days: day))
        let id = try BackupEngine(storage: storage, events: nil, cancellation: CancellationFlag()).run(request).summary.id
        return try XCTUnwrap(try BackupCatalog(storage: storage).items().first { $0.id == id })
    }

    /// A chain of `count` backups, one file changed in each: the last relies on all the others.
    private func chain(_ count: Int) throws -> [BackupCatalog.Item] {
        var items: [BackupCatalog.Item] = []
        for index in 0..<count {
            try writeFile(root + "/src/file-\(index).txt", "night \(index)\n")
            items.append(try backup(day: Double(index)))
        }
        return items
    }

    private func verify(_ item: BackupCatalog.Item, memo limit: Int) throws -> VerifyReport {
        try Verifier(events: nil, cancellation: CancellationFlag(), heldFilesLimit: limit).verify(item, in: storage)
    }

    /// Runs `zstd` with `arguments` on `input`; its output.
    private func zstd(_ arguments: [String], _ input: [UInt8]) throws -> [UInt8] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/zstd")
        process.arguments = arguments
        let stdin = Pipe(), stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        try process.run()
        stdin.fileHandleForWriting.write(Data(input))
        try stdin.fileHandleForWriting.close()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, "zstd \(arguments)")
        return Array(output)
    }

    // MARK: Tests

    func testAnIntactChainVerifiesWithAndWithoutTheMemo() throws {
        let items = try chain(6)
        for limit in [200_000, 0] {
            let report = try verify(items[5], memo: limit)
            XCTAssertTrue(report.isIntact, "memo limit \(limit): \(report.problems) \(report.archiveProblems)")
            XCTAssertEqual(report.reliesOn, items[0..<5].map(\.id), "memo limit \(limit)")
        }
    }

    func testAFileAnEarlierBackupDoesNotHoldAsRecordedIsNamedWithAndWithoutTheMemo() throws {
        let items = try chain(3)
        // The last manifest records another SHA-256 for file-0.txt, which backup 0 holds.
        let name = items[2].manifestName
        var text = String(decoding: try zstd(["-dc"], try storage.readObject(name)), as: UTF8.self)
        let line = try XCTUnwrap(text.split(separator: "\n").first { $0.contains("file-0.txt") })
        let shaRange = try XCTUnwrap(String(line).range(of: #"[0-9a-f]{64}"#, options: .regularExpression))
        let sha = String(String(line)[shaRange])
        text = text.replacingOccurrences(of: sha, with: String(repeating: "0", count: 64))
        try storage.delete(name)
        try storage.writeObject(name, bytes: try zstd(["-q", "-c"], Array(text.utf8)))

        for limit in [200_000, 0] {
            let report = try verify(items[2], memo: limit)
            let named = report.problems.filter { $0.path.hasSuffix("/src/file-0.txt") }
            XCTAssertEqual(named.map(\.reason), ["backup \(items[0].id) does not hold this file as recorded"],
                           "memo limit \(limit): \(report.problems)")
            XCTAssertFalse(report.isIntact)
        }
    }

    func testTheMemoForgetsTheOldestBackupsPastItsLimit() throws {
        let items = try chain(3)
        let memo = HeldFilesMemo(limit: 2)
        for item in items {
            memo.keep(item.id, manifest: try BackupCatalog(storage: storage).manifest(of: item))
        }
        // Each archive holds one file of its own: the third pushes the first out.
        XCTAssertNil(memo.held(by: items[0].id))
        XCTAssertNotNil(memo.held(by: items[1].id))
        let newest = try XCTUnwrap(memo.held(by: items[2].id))
        XCTAssertEqual(newest.count, 1, "only the file stored in its own archive: \(newest.keys.map { PathBytes.display($0.bytes) })")
    }
}
