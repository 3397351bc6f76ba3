import Foundation
import KeepsakeJSON
@testable import KeepsakeModel
@testable import KeepsakeStorage
import KeepsakeSupport
import XCTest

@testable import BackupCore

/// `PruneEngine`: retention over a simulated calendar, chain protection (`--keep-chains`),
/// dry runs, removal order and the refusals.
final class PruneEngineTests: KeepsakeTestCase {
    // MARK: Setup

    private var root = ""
    private var destination = ""
    private var storage: LocalFolderBackend!

    /// Where periods begin in every scenario: UTC.
    private var utc: Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0) ?? .gmt
        return calendar
    }

    override func setUpWithError() throws {
        try super.setUpWithError()
        root = try makeTemporaryDirectory("prune")
        destination = root + "/dest"
        storage = LocalFolderBackend(path: destination)
        try storage.prepare()
    }

    override func tearDownWithError() throws {
        storage = nil
        removeTemporaryDirectory(root)
        try super.tearDownWithError()
    }

    // MARK: Helpers

    /// A UTC instant.
    private func date(_ year: Int, _ month: Int, _ day: Int, _ hour: Int = 0, _ minute: Int = 0) throws -> Date {
        try XCTUnwrap(utc.date(from: DateComponents(year: year, month: month, day: day, hour: hour, minute: minute)))
    }

    /// A real full backup made by `BackupEngine` at `now`.
    @discardableResult
    private func realBackup(at now: Date, source name: String = "src", tags: [String] = []) throws -> BackupID {
        let source = root + "/" + name
        try writeFile(source + "/note.txt", "made at \(now.timeIntervalSince1970)\n")
        let engine = BackupEngine(storage: storage, events: nil, cancellation: CancellationFlag())
        let result = try engine.run(BackupRequest(sources: [source], tags: tags, scan: try noExcludes(),
                                                  chain: ChainPolicy(forceFull: true), toolVersion: "test", now: now))
        return result.summary.id
    }

    /// Stores a backup by hand, as the engine commits one: archive first, then the manifest.
    /// `parent` makes it incremental; `storedIn` lists, per file, the backup holding its
    /// content (nil: this backup's own archive).
    @discardableResult
    private func craftedBackup(at created: Date, sources: [String] = ["/data"], host: String = "host-a",
                               tags: [String] = [], parent: BackupID? = nil,
                               storedIn: [BackupID?] = [nil]) throws -> BackupID {
        let id = BackupID(date: created, after: try BackupCatalog(storage: storage).newestID())
        let archiveName = BackupNaming.archiveName(host: HostIdentity.fileSafe(host), id: id, compression: .zstd)
        let content = Array("archive of \(id)\n".utf8) + [UInt8](repeating: 7, count: 1000)
        let archive = try storage.create(archiveName)
        try content.withUnsafeBytes { try archive.write($0) }
        try archive.commit()

        let entries = storedIn.enumerated().map { index, holder in
            ManifestEntry(path: Array("data/file\(index).txt".utf8), type: .file, size: 10,
                          sha256: String(repeating: "a", count: 64), storedIn: holder)
        }
        let summary = BackupSummary(id: id, created: created, host: host, user: "tester", sources: sources, tags: tags,
                                    compression: .zstd, level: 3, fileCount: Int64(entries.count), toolVersion: "test",
                                    parent: parent, chainLength: parent == nil ? 1 : 2,
                                    archive: .init(name: archiveName, size: Int64(content.count),
                                                   sha256: String(repeating: "b", count: 64)))
        var writer = JSONWriter()
        writer.value(summary.json)
        writer.endLine()
        for entry in entries {
            entry.write(to: &writer)
            writer.endLine()
        }
        let manifest = try storage.create(BackupNaming.manifestName(host: HostIdentity.fileSafe(host), id: id))
        try writer.bytes.withUnsafeBytes { try manifest.write($0) }
        try manifest.commit()
        return id
    }

    /// Runs a prune.
    @discardableResult
    private func prune(_ policy: RetentionPolicy, dryRun: Bool = false, now: Date, events: EngineEventSink? = nil,
                       cancellation: CancellationFlag = CancellationFlag(),
                       storage backend: WritableStorage? = nil, hosts: HostSelection = .all) throws -> PruneResult {
        let engine = PruneEngine(storage: backend ?? storage, events: events, cancellation: cancellation)
        var request = PruneRequest(policy: policy, dryRun: dryRun, now: now, calendar: utc)
        // The backups here are made up, by hosts that are not this one.
        request.hosts = hosts
        // Their archives are made up too (nothing to copy into a supplement): these are the
        // rules of `--keep-chains`; consolidation is ConsolidationTests' (the built binary).
        request.consolidate = false
        return try engine.run(request)
    }

    /// The ids still listed in the destination.
    private func listedIDs() throws -> Set<BackupID> {
        Set(try BackupCatalog(storage: storage).items().map(\.id))
    }

    /// Fails unless every listed backup's archive is present.
    private func assertEveryListedBackupHasItsArchive(file: StaticString = #filePath, line: UInt = #line) throws {
        let names = Set(try storage.list().map(\.name))
        for item in try BackupCatalog(storage: storage).items() {
            let archive = try XCTUnwrap(item.summary?.archive?.name, file: file, line: line)
            XCTAssertTrue(names.contains(archive), "\(item.id) is listed without its archive", file: file, line: line)
        }
    }

    private func decision(_ id: BackupID, in result: PruneResult, file: StaticString = #filePath,
                          line: UInt = #line) throws -> PruneDecision {
        try XCTUnwrap(result.decisions.first { $0.id == id }, "no decision for \(id)", file: file, line: line)
    }

    // MARK: Calendar scenarios

    /// Three weeks of daily backups made by the engine, plus a second one on the last day:
    /// `--keep-daily 3 --keep-weekly 2`.
    func testDailyAndWeeklyOverThreeWeeksOfRealBackups() throws {
        var ids: [Date: BackupID] = [:]
        for day in 1...21 {  // Monday 1 January 2024 to Sunday 21 January
            let when = try date(2024, 1, day, 2, 30)
            ids[when] = try realBackup(at: when)
        }
        let afternoon = try date(2024, 1, 21, 14)
        ids[afternoon] = try realBackup(at: afternoon)
        let now = try date(2024, 1, 21, 15)

        let result = try prune(RetentionPolicy(keepDaily: 3, keepWeekly: 2), now: now)

        let expected: Set<Date> = [afternoon, try date(2024, 1, 20, 2, 30), try date(2024, 1, 19, 2, 30),
                                   try date(2024, 1, 14, 2, 30)]
        XCTAssertEqual(Set(result.kept), Set(expected.compactMap { ids[$0] }))
        XCTAssertEqual(result.decisions.count, 22)
        XCTAssertEqual(result.removed.count, 18)
        XCTAssertEqual(result.decisions.map(\.id), result.decisions.map(\.id).sorted(by: >), "newest first")
        XCTAssertEqual(try listedIDs(), Set(result.kept))
        XCTAssertEqual(try decision(try XCTUnwrap(ids[afternoon]), in: result).reasons,
                       ["daily backup #1", "weekly backup #1"])
        XCTAssertEqual(try decision(try XCTUnwrap(ids[try date(2024, 1, 14, 2, 30)]), in: result).reasons,
                       ["weekly backup #2"])
        XCTAssertEqual(try storage.list().count, 8, "an archive and a manifest per kept backup, nothing else")
        try assertEveryListedBackupHasItsArchive()
    }

    /// Two years of backups on the 1st and 15th: `--keep-monthly 3 --keep-yearly 2`.
    func testMonthlyAndYearlyOverTwoYears() throws {
        var ids: [String: BackupID] = [:]
        for year in 2022...2023 {
            for month in 1...12 {
                for day in [1, 15] {
                    ids["\(year)-\(month)-\(day)"] = try craftedBackup(at: try date(year, month, day, 3))
                }
            }
        }
        let result = try prune(RetentionPolicy(keepMonthly: 3, keepYearly: 2), now: try date(2023, 12, 20))
        let expected = ["2023-12-15", "2023-11-15", "2023-10-15", "2022-12-15"].compactMap { ids[$0] }
        XCTAssertEqual(result.kept, expected)
        XCTAssertEqual(result.removed.count, 44)
        XCTAssertEqual(try listedIDs(), Set(expected))
        XCTAssertEqual(try decision(expected[0], in: result).reasons, ["monthly backup #1", "yearly backup #1"])
        XCTAssertEqual(try decision(expected[3], in: result).reasons, ["yearly backup #2"])
    }

    /// Backups every 12 hours for ten days, one tagged: `--keep-within 3d --keep-tag release`.
    func testKeepWithinCountsBackFromTheNewestBackupAndTagsAreKept() throws {
        let start = try date(2024, 3, 1)
        var ids: [BackupID] = []
        for step in 0..<20 {
            let tags = step == 4 ? ["release", "v1"] : []
            ids.append(try craftedBackup(at: start.addingTimeInterval(Double(step) * 43_200), tags: tags))
        }
        // Weeks later: keepWithin counts back from the newest backup, not from now.
        let result = try prune(RetentionPolicy(keepWithin: DurationSpec(days: 3), keepTags: [["release"]]),
                               now: try date(2024, 4, 1))
        // Newest at day 9.5; the cutoff is day 6.5, itself not within.
        let expected = Array(ids[14...].reversed()) + [ids[4]]
        XCTAssertEqual(result.kept, expected)
        XCTAssertEqual(try decision(ids[19], in: result).reasons, ["within 3d"])
        XCTAssertEqual(try decision(ids[4], in: result).reasons, ["has tags [release]"])
        XCTAssertEqual(try decision(ids[13], in: result).reasons, [])
        XCTAssertFalse(try decision(ids[13], in: result).keep)
    }

    /// Groups are host and sources (in any order): each group keeps its own newest backup.
    func testPolicyAppliesToEachHostAndSourcesGroup() throws {
        let day = try date(2024, 5, 1)
        let a1 = try craftedBackup(at: day, sources: ["/etc", "/home"])
        let b1 = try craftedBackup(at: day.addingTimeInterval(60), sources: ["/srv"])
        let a2 = try craftedBackup(at: day.addingTimeInterval(120), sources: ["/home", "/etc"])
        let c1 = try craftedBackup(at: day.addingTimeInterval(180), sources: ["/srv"], host: "host-b")
        let b2 = try craftedBackup(at: day.addingTimeInterval(240), sources: ["/srv"])

        let result = try prune(RetentionPolicy(keepLast: 1), now: day.addingTimeInterval(3600))

        XCTAssertEqual(Set(result.kept), [a2, b2, c1])
        XCTAssertEqual(Set(result.removed), [a1, b1])
        XCTAssertEqual(try decision(c1, in: result).host, "host-b")
        XCTAssertEqual(try decision(a2, in: result).sources, ["/home", "/etc"])
        XCTAssertEqual(try listedIDs(), [a2, b2, c1])
    }

    /// Hosts sharing a destination prune their own: another host's backups are neither
    /// judged nor removed, whatever the policy.
    func testOnlyTheSelectedHostsBackupsArePruned() throws {
        let day = try date(2024, 5, 1)
        var mine: [BackupID] = []
        var theirs: [BackupID] = []
        for minute in 0..<3 {
            mine.append(try craftedBackup(at: day.addingTimeInterval(Double(minute) * 60)))
            theirs.append(try craftedBackup(at: day.addingTimeInterval(Double(minute) * 60 + 30), host: "host-b"))
        }
        let result = try prune(RetentionPolicy(keepLast: 1), now: day.addingTimeInterval(3600), hosts: .only("host-a"))
        XCTAssertEqual(Set(result.decisions.map(\.host)), ["host-a"], "only host-a's backups are in the report")
        XCTAssertEqual(result.kept, [mine[2]])
        XCTAssertEqual(Set(result.removed), Set([mine[0], mine[1]]))
        XCTAssertEqual(try listedIDs(), Set([mine[2]] + theirs))
    }

    /// Backups made in the same second (dates stored to the second) count newest by id.
    func testBackupsOfTheSameSecondCountInTheOrderTheyWereMade() throws {
        let moment = try date(2024, 5, 2, 12)
        let ids = try (0..<4).map { _ in try craftedBackup(at: moment) }
        XCTAssertEqual(ids, ids.sorted(), "ids sort in the order the backups were made")
        let result = try prune(RetentionPolicy(keepLast: 2), now: moment.addingTimeInterval(60))
        XCTAssertEqual(result.kept, [ids[3], ids[2]])
        XCTAssertEqual(result.removed, [ids[1], ids[0]])
    }

    /// A clock set back an hour: the backup made last is dated an hour before the one made
    /// before it. It counts as the newer (made later), so keep-daily 1 keeps it, not the
    /// backup made before it (restic, sorting by time alone, would remove the one just made).
    func testABackupMadeAfterTheClockWentBackCountsAsTheNewer() throws {
        let before = try craftedBackup(at: try date(2027, 3, 1, 2))
        let after = try craftedBackup(at: try date(2027, 3, 1, 1))
        XCTAssertLessThan(before, after, "made later, its id sorts after")
        let result = try prune(RetentionPolicy(keepDaily: 1), now: try date(2027, 3, 1, 3))
        XCTAssertEqual(result.kept, [after])
        XCTAssertEqual(result.removed, [before])
    }

    // MARK: Chain protection

    /// A kept incremental keeps what its entries are stored in, transitively, with reasons.
    func testKeptIncrementalKeepsItsChainTransitively() throws {
        let day = try date(2024, 6, 1)
        let full = try craftedBackup(at: day, storedIn: [nil, nil])
        let first = try craftedBackup(at: day.addingTimeInterval(3600), parent: full, storedIn: [full, nil])
        let second = try craftedBackup(at: day.addingTimeInterval(7200), parent: first, storedIn: [first, nil])
        let third = try craftedBackup(at: day.addingTimeInterval(10_800), parent: second, storedIn: [second, nil])

        let result = try prune(RetentionPolicy(keepLast: 1), now: day.addingTimeInterval(86_400))

        XCTAssertEqual(result.kept, [third, second, first, full])
        XCTAssertTrue(result.removed.isEmpty)
        XCTAssertEqual(try decision(third, in: result).reasons, ["last backup #1"])
        XCTAssertEqual(try decision(second, in: result).reasons, ["needed by \(third)"])
        XCTAssertEqual(try decision(first, in: result).reasons, ["needed by \(second)"])
        XCTAssertEqual(try decision(full, in: result).reasons, ["needed by \(first)"])
        XCTAssertTrue(try decision(third, in: result).isIncremental)
        XCTAssertFalse(try decision(full, in: result).isIncremental)
        XCTAssertEqual(try listedIDs().count, 4)
    }

    /// Only what entries are stored in is needed: an old chain nothing kept refers to goes,
    /// and so does a parent whose archive no kept file uses.
    func testUnreferencedBackupsOfAChainAreRemoved() throws {
        let day = try date(2024, 6, 1)
        let oldFull = try craftedBackup(at: day)
        let oldIncremental = try craftedBackup(at: day.addingTimeInterval(3600), parent: oldFull, storedIn: [oldFull])
        let full = try craftedBackup(at: day.addingTimeInterval(7200), storedIn: [nil, nil])
        let allChanged = try craftedBackup(at: day.addingTimeInterval(10_800), parent: full, storedIn: [nil, nil])
        let latest = try craftedBackup(at: day.addingTimeInterval(14_400), parent: allChanged,
                                       storedIn: [full, allChanged])
        let tip = try craftedBackup(at: day.addingTimeInterval(18_000), parent: latest, storedIn: [nil, nil, nil])

        let result = try prune(RetentionPolicy(keepLast: 2), now: day.addingTimeInterval(86_400))

        XCTAssertEqual(result.kept, [tip, latest, allChanged, full])
        XCTAssertEqual(result.removed, [oldIncremental, oldFull])
        XCTAssertEqual(try decision(full, in: result).reasons, ["needed by \(latest)"])
        XCTAssertEqual(try listedIDs(), [tip, latest, allChanged, full])
        try assertEveryListedBackupHasItsArchive()

        // Later, with only the tip kept by the policy: nothing refers to the older ones.
        let again = try prune(RetentionPolicy(keepLast: 1), now: day.addingTimeInterval(86_400))
        XCTAssertEqual(again.kept, [tip])
        XCTAssertEqual(again.removed, [latest, allChanged, full])
    }

    /// Several kept backups needing one backup give one reason each.
    func testABackupNeededBySeveralGetsEveryReason() throws {
        let day = try date(2024, 6, 1)
        let full = try craftedBackup(at: day)
        let first = try craftedBackup(at: day.addingTimeInterval(3600), parent: full, storedIn: [full, nil])
        let second = try craftedBackup(at: day.addingTimeInterval(7200), parent: first, storedIn: [full, nil])
        let result = try prune(RetentionPolicy(keepLast: 2), now: day.addingTimeInterval(86_400))
        XCTAssertEqual(result.kept, [second, first, full])
        XCTAssertEqual(try decision(full, in: result).reasons, ["needed by \(second)", "needed by \(first)"])
        XCTAssertEqual(try decision(first, in: result).reasons, ["last backup #2"], "kept by the policy anyway")
    }

    /// Real incremental backups made by the engine: the kept tip protects its chain.
    func testRealIncrementalChainIsProtected() throws {
        let source = root + "/chain"
        try writeFile(source + "/stable.txt", "never changes\n")
        var ids: [BackupID] = []
        for step in 0..<3 {
            try writeFile(source + "/changing-\(step).txt", "step \(step)\n")
            let engine = BackupEngine(storage: storage, events: nil, cancellation: CancellationFlag())
            let when = try date(2024, 7, 1 + step, 1)
            ids.append(try engine.run(BackupRequest(sources: [source], scan: try noExcludes(), toolVersion: "test",
                                                    now: when)).summary.id)
        }
        let catalog = BackupCatalog(storage: storage)
        let tip = try catalog.manifest(of: try catalog.resolve(ids[2].rawValue))
        let needed = Set(tip.entries.compactMap(\.storedIn))
        // Without incremental backups there is nothing to keep for them: the test would prove nothing.
        XCTAssertFalse(needed.isEmpty, "the engine made no incremental backups")

        let result = try prune(RetentionPolicy(keepLast: 1), now: try date(2024, 7, 10))

        XCTAssertTrue(needed.isSubset(of: Set(result.kept)), "kept \(result.kept), needed \(needed)")
        for id in needed {
            XCTAssertTrue(try decision(id, in: result).reasons.contains("needed by \(ids[2])"))
        }
        try assertEveryListedBackupHasItsArchive()
        let report = try Verifier(events: nil, cancellation: CancellationFlag())
            .verify(try catalog.resolve(ids[2].rawValue), in: storage)
        XCTAssertTrue(report.isIntact, "the kept tip still verifies: \(report.archiveProblems) \(report.problems)")
    }

    // MARK: Unreadable manifests

    /// A backup whose manifest cannot be read is never removed, and is outside every group.
    func testUnreadableManifestIsKept() throws {
        let day = try date(2024, 8, 1)
        let old = try craftedBackup(at: day)
        let broken = BackupID(date: day.addingTimeInterval(60), after: old)
        let pending = try storage.create(BackupNaming.manifestName(host: "host-a", id: broken))
        try Array("this is not json\n".utf8).withUnsafeBytes { try pending.write($0) }
        try pending.commit()
        let newest = try craftedBackup(at: day.addingTimeInterval(120))

        let result = try prune(RetentionPolicy(keepLast: 1), now: day.addingTimeInterval(3600))

        XCTAssertEqual(result.kept, [newest, broken])
        XCTAssertEqual(result.removed, [old])
        XCTAssertEqual(try decision(broken, in: result).reasons, [PruneEngine.unreadableReason])
        XCTAssertEqual(try decision(broken, in: result).created, broken.date, "the id's time stands in")
        XCTAssertTrue(try listedIDs().contains(broken))
    }

    /// A kept backup whose entries cannot be parsed keeps every backup its bytes name and its
    /// parent chain, and says so.
    func testKeptBackupWithDamagedEntriesKeepsWhatItMayNeed() throws {
        let day = try date(2024, 8, 1)
        let full = try craftedBackup(at: day)
        let middle = try craftedBackup(at: day.addingTimeInterval(60), parent: full, storedIn: [nil])
        let named = try craftedBackup(at: day.addingTimeInterval(90))
        let tip = try craftedBackup(at: day.addingTimeInterval(120), parent: middle, storedIn: [nil])
        // Damage the tip's entries: a line that is not JSON but still names `named`.
        let manifestName = BackupNaming.manifestName(host: "host-a", id: tip)
        var bytes = try storage.readObject(manifestName)
        bytes += Array("{\"path\": \"x\", \"in\": \"\(named)\" garbage\n".utf8)
        try storage.delete(manifestName)
        let pending = try storage.create(manifestName)
        try bytes.withUnsafeBytes { try pending.write($0) }
        try pending.commit()

        let recorder = EventRecorder()
        let result = try prune(RetentionPolicy(keepLast: 1), now: day.addingTimeInterval(3600), events: recorder)

        XCTAssertEqual(result.kept, [tip, named, middle, full])
        XCTAssertEqual(try decision(named, in: result).reasons, ["needed by \(tip)"])
        XCTAssertEqual(try decision(full, in: result).reasons, ["needed by \(tip)"])
        XCTAssertTrue(recorder.messages.contains { $0.contains("cannot read the manifest of backup \(tip)") },
                      "\(recorder.messages)")
    }

    /// A reference to a backup that is not there is reported, and nothing else changes.
    func testMissingNeededBackupIsReported() throws {
        let day = try date(2024, 8, 1)
        let gone = BackupID(date: day)
        let tip = try craftedBackup(at: day.addingTimeInterval(60), parent: gone, storedIn: [gone])
        let recorder = EventRecorder()
        let result = try prune(RetentionPolicy(keepLast: 1), now: day.addingTimeInterval(3600), events: recorder)
        XCTAssertEqual(result.kept, [tip])
        XCTAssertTrue(recorder.messages.contains { $0.contains("needs backup \(gone), which is not in") },
                      "\(recorder.messages)")
    }

    // MARK: Dry run and removal

    func testDryRunRemovesNothingAndReportsWhatWouldBeFreed() throws {
        let day = try date(2024, 9, 1)
        var ids: [BackupID] = []
        for hour in 0..<4 { ids.append(try craftedBackup(at: day.addingTimeInterval(Double(hour) * 3600))) }
        let before = try storage.list()

        let result = try prune(RetentionPolicy(keepLast: 2), dryRun: true, now: day.addingTimeInterval(86_400))

        XCTAssertTrue(result.dryRun)
        XCTAssertEqual(result.kept, [ids[3], ids[2]])
        XCTAssertEqual(result.removed, [ids[1], ids[0]], "what would be removed")
        XCTAssertEqual(try storage.list(), before, "nothing was removed")
        let wouldFree = before.filter { $0.name.contains(ids[0].rawValue) || $0.name.contains(ids[1].rawValue) }
            .reduce(Int64(0)) { $0 + $1.size }
        XCTAssertEqual(result.freedBytes, wouldFree)
        XCTAssertGreaterThan(result.freedBytes, 2000)

        let real = try prune(RetentionPolicy(keepLast: 2), now: day.addingTimeInterval(86_400))
        XCTAssertFalse(real.dryRun)
        XCTAssertEqual(real.removed, result.removed)
        XCTAssertEqual(real.freedBytes, wouldFree)
        XCTAssertEqual(try storage.list().count, 4)
    }

    func testEachRemovalIsReportedAndDeletesTheManifestBeforeTheArchive() throws {
        let day = try date(2024, 9, 1)
        var ids: [BackupID] = []
        for hour in 0..<3 { ids.append(try craftedBackup(at: day.addingTimeInterval(Double(hour) * 3600))) }
        let spy = RecordingStorage(storage)
        let recorder = EventRecorder()

        let result = try prune(RetentionPolicy(keepLast: 1), now: day.addingTimeInterval(86_400), events: recorder,
                               storage: spy)

        XCTAssertEqual(result.removed, [ids[1], ids[0]])
        let expected = [ids[1], ids[0]].flatMap { id in
            [BackupNaming.manifestName(host: "host-a", id: id),
             BackupNaming.archiveName(host: "host-a", id: id, compression: .zstd),
             "host-a_\(id.rawValue)" + BackupNaming.pruneMarkerSuffix]
        }
        XCTAssertEqual(spy.deleted, expected,
                       "manifest (un-commit) first, then the archive, then the marker that said a prune was under way")
        XCTAssertEqual(spy.locks, ["prune"], "the lock is taken once for the whole run")
        XCTAssertEqual(recorder.messages.filter { $0.contains("removed backup") }.count, 2, "\(recorder.messages)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: destination + "/keepsake.lock"), "the lock is released")
    }

    /// Cancelled after the first removal: that backup is wholly gone, the rest wholly there.
    func testCancellationBetweenRemovalsLeavesNothingHalfListed() throws {
        let day = try date(2024, 9, 1)
        var ids: [BackupID] = []
        for hour in 0..<4 { ids.append(try craftedBackup(at: day.addingTimeInterval(Double(hour) * 3600))) }
        let cancellation = CancellationFlag()
        let canceller = CancelOnFirstNotice(cancellation)

        let error = assertThrows(try prune(RetentionPolicy(keepLast: 1), now: day.addingTimeInterval(86_400),
                                           events: canceller, cancellation: cancellation))

        XCTAssertEqual(error as? Interruption, Interruption())
        XCTAssertEqual(try listedIDs(), [ids[0], ids[1], ids[3]], "only the first removal happened")
        XCTAssertEqual(try storage.list().count, 6, "no archive without its manifest, or the reverse")
        try assertEveryListedBackupHasItsArchive()
        XCTAssertFalse(FileManager.default.fileExists(atPath: destination + "/keepsake.lock"), "the lock is released")
    }

    /// A crash between un-committing and deleting the archive leaves an orphan archive: not
    /// listed, and removed by the next backup.
    func testOrphanArchiveOfAnInterruptedRemovalIsNotListedAndCleanedByTheNextBackup() throws {
        let day = try date(2024, 9, 1)
        let old = try craftedBackup(at: day)
        let kept = try craftedBackup(at: day.addingTimeInterval(3600))
        let manifestSize = Int64(try storage.readObject(BackupNaming.manifestName(host: "host-a", id: old)).count)
        let failing = RecordingStorage(storage, failingArchiveDeletes: true)
        let recorder = EventRecorder()

        let result = try prune(RetentionPolicy(keepLast: 1), now: day.addingTimeInterval(86_400), events: recorder,
                               storage: failing)

        XCTAssertEqual(result.removed, [old])
        XCTAssertEqual(try listedIDs(), [kept])
        try assertEveryListedBackupHasItsArchive()
        let orphan = BackupNaming.archiveName(host: "host-a", id: old, compression: .zstd)
        XCTAssertTrue(try storage.list().contains { $0.name == orphan }, "the archive is still there")
        XCTAssertTrue(recorder.messages.contains { $0.contains("no longer listed") }, "\(recorder.messages)")
        XCTAssertEqual(result.freedBytes, manifestSize, "only the manifest was freed")

        try realBackup(at: day.addingTimeInterval(7200))
        XCTAssertFalse(try storage.list().contains { $0.name == orphan }, "the next backup removed the orphan")
        XCTAssertFalse(try storage.list().contains { $0.name.hasSuffix(BackupNaming.pruneMarkerSuffix) }, "and the prune marker")
        XCTAssertEqual(try listedIDs().count, 2, "the pruned backup did not come back")
    }

    // MARK: Refusals

    func testEmptyPolicyIsRefused() throws {
        try craftedBackup(at: try date(2024, 10, 1))
        let error = assertThrows(try prune(RetentionPolicy(keepLast: 0, keepWithin: DurationSpec()),
                                           now: try date(2024, 10, 2)))
        guard case .invalidRequest(let message)? = error as? EngineError else {
            return XCTFail("expected invalidRequest, got \(String(describing: error))")
        }
        for option in ["keep-last", "keep-hourly", "keep-daily", "keep-weekly", "keep-monthly", "keep-yearly",
                       "keep-within", "keep-tag"] {
            XCTAssertTrue(message.contains(option), "the message names \(option): \(message)")
        }
        XCTAssertEqual(try listedIDs().count, 1)
    }

    func testPolicyThatKeepsNothingOfAGroupIsRefusedBeforeAnythingIsRemoved() throws {
        let day = try date(2024, 10, 1)
        let tagged = try craftedBackup(at: day, sources: ["/a"], tags: ["keep"])
        try craftedBackup(at: day.addingTimeInterval(60), sources: ["/a"])
        try craftedBackup(at: day.addingTimeInterval(120), sources: ["/b"])
        let before = try storage.list()

        let error = assertThrows(try prune(RetentionPolicy(keepTags: [["keep"]]), now: day.addingTimeInterval(3600)))

        guard case .invalidRequest(let message)? = error as? EngineError else {
            return XCTFail("expected invalidRequest, got \(String(describing: error))")
        }
        XCTAssertTrue(message.contains("Refusing"), message)
        XCTAssertTrue(message.contains("/b"), "names the group: \(message)")
        XCTAssertEqual(try storage.list(), before, "nothing was removed, not even in the group that keeps one")
        XCTAssertTrue(try listedIDs().contains(tagged))
    }

    func testHeldLockRefusesARealRunButNotADryRun() throws {
        let day = try date(2024, 10, 1)
        try craftedBackup(at: day)
        try craftedBackup(at: day.addingTimeInterval(60))
        let lock = try storage.acquireLock(LockOwner.current(operation: "backup"))
        defer { lock.release() }

        let dry = try prune(RetentionPolicy(keepLast: 1), dryRun: true, now: day.addingTimeInterval(3600))
        XCTAssertEqual(dry.removed.count, 1)
        let error = assertThrows(try prune(RetentionPolicy(keepLast: 1), now: day.addingTimeInterval(3600)))
        XCTAssertTrue(error is LockError, "\(String(describing: error))")
        XCTAssertEqual(try listedIDs().count, 2)
    }

    func testMissingDestinationIsNotCreated() throws {
        let missing = LocalFolderBackend(path: root + "/nowhere")
        let result = try prune(RetentionPolicy(keepLast: 1), now: Date(), storage: missing)
        XCTAssertTrue(result.decisions.isEmpty)
        XCTAssertFalse(FileManager.default.fileExists(atPath: root + "/nowhere"))
    }

    // MARK: Raw scanning

    func testBackupIDsAreFoundInRawBytes() throws {
        let one = BackupID(date: fixedDate())
        let two = BackupID(date: fixedDate(days: 3))
        let text = "{\"in\":\"\(one)\"}xx\(two)\nZ-20240101T000000Z-zzzzzzzz \(one.rawValue.prefix(20))"
        XCTAssertEqual(PruneEngine.backupIDs(in: Array(text.utf8)), [one, two])
        XCTAssertEqual(PruneEngine.backupIDs(in: Array(one.rawValue.utf8)), [one])
        XCTAssertEqual(PruneEngine.backupIDs(in: []), [])
    }
}

// MARK: - Test doubles

/// A storage that records deletions and locks, and can fail every archive deletion (a crash
/// between un-committing a backup and deleting its archive).
private final class RecordingStorage: WritableStorage {
    private let inner: WritableStorage
    private let failingArchiveDeletes: Bool
    private(set) var deleted: [String] = []
    private(set) var locks: [String] = []

    init(_ inner: WritableStorage, failingArchiveDeletes: Bool = false) {
        self.inner = inner
        self.failingArchiveDeletes = failingArchiveDeletes
    }

    var location: String { inner.location }
    func prepare() throws { try inner.prepare() }
    func list() throws -> [StoredObject] { try inner.list() }
    func create(_ name: String) throws -> PendingObject { try inner.create(name) }
    func open(_ name: String) throws -> RandomAccessSource { try inner.open(name) }
    func removeLeftovers() throws -> [String] { try inner.removeLeftovers() }

    func move(_ name: String, to newName: String) throws {
        try inner.move(name, to: newName)
    }

    func delete(_ name: String) throws {
        if failingArchiveDeletes && BackupNaming.stem(of: name) != nil && !name.hasSuffix(BackupNaming.manifestSuffix) {
            throw StorageError.io(name: name, operation: "delete", reason: "simulated crash")
        }
        deleted.append(name)
        try inner.delete(name)
    }

    func acquireLock(_ owner: LockOwner) throws -> DestinationLock {
        locks.append(owner.operation)
        return try inner.acquireLock(owner)
    }
}

/// Cancels the run when the first removal is reported.
private final class CancelOnFirstNotice: EngineEventSink {
    private let cancellation: CancellationFlag

    init(_ cancellation: CancellationFlag) {
        self.cancellation = cancellation
    }

    func handle(_ event: EngineEvent) {
        if case .notice = event { cancellation.cancel() }
    }
}
