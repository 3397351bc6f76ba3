import Foundation
@testable import KeepsakeModel
@testable import KeepsakeStorage
import KeepsakeSupport
import XCTest

@testable import BackupCore

/// When a backup is incremental and when it starts a new chain, on a simulated clock.
final class ChainPolicyTests: KeepsakeTestCase {
    // MARK: Setup

    private var root = ""
    private var storage: LocalFolderBackend!

    override func setUpWithError() throws {
        try super.setUpWithError()
        root = try makeTemporaryDirectory("chain")
        storage = LocalFolderBackend(path: root + "/dest")
        try writeFile(root + "/src/a.txt", "a")
        try writeFile(root + "/src/b.txt", "b")
    }

    override func tearDownWithError() throws {
        storage = nil
        removeTemporaryDirectory(root)
        try super.tearDownWithError()
    }

    private func backup(day: Double, chain: ChainPolicy = ChainPolicy()) throws -> BackupSummary {
        let engine = BackupEngine(storage: storage, events: nil, cancellation: CancellationFlag())
        return try engine.run(BackupRequest(sources: [root + "/src"], scan: try noExcludes(), chain: chain,
                                            toolVersion: "test", now: fixedDate(days: day))).summary
    }

    // MARK: Tests

    func testANewChainStartsWhenTheFullBackupIsOlderThanTheLimit() throws {
        let policy = ChainPolicy(fullIfOlderThan: DurationSpec(days: 7))
        let first = try backup(day: 0, chain: policy)
        let second = try backup(day: 3, chain: policy)
        let third = try backup(day: 6, chain: policy)
        let fourth = try backup(day: 8, chain: policy)
        XCTAssertFalse(first.isIncremental)
        XCTAssertEqual(second.parent, first.id)
        XCTAssertEqual(third.parent, second.id)
        XCTAssertEqual(third.chainLength, 3)
        XCTAssertEqual(third.chainStarted, first.created)
        XCTAssertFalse(fourth.isIncremental, "the chain began 8 days ago")
        XCTAssertEqual(fourth.chainLength, 1)
    }

    func testFullEveryBoundsTheChain() throws {
        let policy = ChainPolicy(fullEvery: 3, fullIfOlderThan: nil)
        let lengths = try (0..<7).map { try backup(day: Double($0), chain: policy).chainLength }
        XCTAssertEqual(lengths, [1, 2, 3, 1, 2, 3, 1])
    }

    func testUnchangedFilesPointAtTheArchiveThatHoldsThem() throws {
        let first = try backup(day: 0)
        try writeFile(root + "/src/b.txt", "b changed")
        let second = try backup(day: 1)
        let third = try backup(day: 2)
        let manifest = try BackupCatalog(storage: storage).manifest(of: try BackupCatalog(storage: storage).resolve(third.id.rawValue))
        let holders = Dictionary(uniqueKeysWithValues: manifest.entries.filter { $0.type == .file }.map {
            (String(decoding: PathBytes.lastComponent($0.path), as: UTF8.self), $0.storedIn)
        })
        XCTAssertEqual(holders["a.txt"], first.id, "unchanged since the full backup")
        XCTAssertEqual(holders["b.txt"], second.id, "changed in the second backup")
        XCTAssertEqual(third.newFileCount, 0)
        XCTAssertEqual(third.fileCount, 2)
        XCTAssertEqual(second.newFileCount, 1)
    }

    func testPolicyValuesAreBounded() throws {
        XCTAssertNil(ChainPolicy().fullEvery, "by default, by the archives a restore reads")
        XCTAssertNil(ChainPolicy().fullIfOlderThan)
        XCTAssertEqual(ChainPolicy(fullEvery: 0).fullEvery, 1, "a chain holds at least one backup")
    }

    /// Without --full-every, a chain restarts once a restore of the next backup would read
    /// more than 30 archives: when every backup adds a file (each backup's archive holds
    /// something the newest needs), after 30 backups, as --full-every 30 did.
    func testByDefaultAChainRestartsWhenARestoreWouldReadMoreThanThirtyArchives() throws {
        var lengths: [Int] = []
        for day in 0..<33 {
            try writeFile(root + "/src/day-\(day).txt", "day \(day)")
            lengths.append(try backup(day: Double(day)).chainLength)
        }
        XCTAssertEqual(lengths, Array(1...30) + [1, 2, 3])
    }

    /// ... and, in a destination where prune has written no supplement (it keeps chains), as
    /// before supplements: every 30 backups or 30 days, whichever comes first.
    func testWithoutSupplementsAChainRestartsEveryThirtyBackupsOrThirtyDays() throws {
        var lengths: [Int] = []
        for day in 0..<40 {
            try writeFile(root + "/src/a.txt", "a on day \(day)")
            try writeFile(root + "/src/b.txt", "b on day \(day)")
            lengths.append(try backup(day: Double(day) / 2).chainLength)
        }
        XCTAssertEqual(lengths, Array(1...30) + Array(1...10), "every 30 backups")
        let monthly = try (0..<4).map { try backup(day: 30 + Double($0) * 12).chainLength }
        XCTAssertEqual(monthly, [11, 12, 1, 2], "the chain began 30 days before the third")
    }

    /// With consolidating prune after every backup (keep-last 3), a chain whose every backup
    /// adds a file goes on past 30 backups and 30 days: a restore reads the three kept
    /// backups and their supplements, not every archive of the chain.
    func testPruneKeepsAChainsArchivesFewSoItGoesOn() throws {
        var lengths: [Int] = []
        for day in 0..<40 {
            try writeFile(root + "/src/day-\(day).txt", "day \(day)")
            lengths.append(try backup(day: Double(day)).chainLength)
            var request = PruneRequest(policy: RetentionPolicy(keepLast: 3), now: fixedDate(days: Double(day)))
            request.hosts = .all
            _ = try PruneEngine(storage: storage, events: nil, cancellation: CancellationFlag()).run(request)
        }
        XCTAssertEqual(lengths, Array(1...40))
        XCTAssertEqual(try BackupCatalog(storage: storage).items().count, 3)
    }
}
