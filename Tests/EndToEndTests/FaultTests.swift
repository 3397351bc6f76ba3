import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `kill -9` at many moments of a backup and of a prune: every earlier backup survives,
/// nothing half-done is listed, the next run needs no help and cleans up; and during a
/// restore into an empty target: no half-written file under a final name, no temporary.
final class FaultTests: FaultTestCase {
    // MARK: Kill -9 during a backup

    /// Kills a 200 MiB backup at 26 moments — 16 spread by time over a measured run, 10 at
    /// events seen in the destination (lock taken, temporary archive created, 10 %…99 % of
    /// it written, archive renamed, manifest being written). After each kill: only
    /// committed backups are listed, every earlier backup verifies, the next backup exits 0
    /// (taking over the stale lock, saying so) and leaves no temporary or orphan. After the
    /// last kill every earlier backup restores equal to its snapshot, and a full uninterrupted
    /// backup of the big source commits and verifies.
    // test-tag(plain-only): 26 runs of the whole binary repeat code the other tests run under the sanitizers
    func testKillNineDuringBackupAtManyPoints() throws {
        let big = try bigSource()
        let small = path("small")
        try Fixtures.makeMixedTree(at: small)
        let dest = path("dest")
        let tmpdir = path("tmpdir")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(tmpdir))
        let environment: [String: String?] = ["TMPDIR": tmpdir]

        // Earlier backups: the small source, changed a little before each one.
        var earlier: [String] = []
        var snapshots: [String: String] = [:]
        func commitSmall(_ round: Int) throws -> (id: String, outcome: ProcessRunner.Outcome) {
            try Fixtures.makeTree(at: small, files: ["rounds/round-\(round).txt": "round \(round)\n"])
            // Full backups: `verify` of every earlier backup after each kill stays quick (it reads
            // every manifest's summary again for each backup an incremental one relies on).
            let outcome = try run(["backup", small, "--dest", dest, "--json", "--full"], environment: environment)
            assertExit(outcome, 0, "backup of the small source, round \(round)")
            let id = try XCTUnwrap(try json(outcome)["id"] as? String, "no id:\n\(outcome)")
            let copy = path("snapshots/\(round)")
            try RawFileSystem.makeDirectory(RawFileSystem.bytes(path("snapshots")))
            try snapshot(small, to: copy)
            earlier.append(id)
            snapshots[id] = copy
            return (id, outcome)
        }
        _ = try commitSmall(0)

        // How long an uninterrupted full backup of the big source takes (the shorter of two
        // runs: one slowed by a busy machine would put the timed kills after the end), and
        // its size.
        let measureDest = path("measure")
        var stored = 0
        var duration = Double.infinity
        for _ in 0..<2 {
            duration = min(duration, try seconds {
                let outcome = try run(["backup", big, "--dest", measureDest, "--json", "--full"], environment: environment)
                assertExit(outcome, 0, "the measuring backup")
                stored = try XCTUnwrap(try json(outcome)["stored_bytes"] as? Int, "no stored_bytes:\n\(outcome)")
            })
            _ = try tool("rm", ["-rf", measureDest])
        }

        var points = (0..<16).map { index in
            KillPoint(label: "after \(Int(duration * Double(index) / 16 * 1000)) ms", delay: duration * Double(index) / 16)
        }
        points.append(KillPoint(label: "when the lock appears") { $0.locked })
        points.append(KillPoint(label: "when the temporary archive appears") { !$0.temporaryArchives.isEmpty })
        for fraction in [0.1, 0.3, 0.5, 0.7, 0.9, 0.99] {
            points.append(KillPoint(label: "at \(Int(fraction * 100)) % of the archive written") {
                $0.temporaryArchiveBytes >= Int(Double(stored) * fraction)
            })
        }
        points.append(KillPoint(label: "when the archive has its final name") { !$0.orphanArchives.isEmpty })
        points.append(KillPoint(label: "when the manifest is being written") { !$0.temporaryManifests.isEmpty })

        var bigBackups: Set<String> = []
        var recovered = 0
        var killedMidRun = 0
        var phases: [String: Int] = [:]
        var rebuilt = 0
        var orphansRemoved = 0
        var takeovers = 0
        for (index, point) in points.enumerated() {
            let failuresBefore = testRun?.failureCount ?? 0
            let before = try DestinationState(dest)
            let running = try keepsake.start(["backup", big, "--dest", dest, "--full"], environment: environment)
            defer { running.kill() }
            try reach(point, running: running, dest: dest)
            let pid = running.processIdentifier
            let outcome = try signalAndWait(running, SIGKILL)
            let context = "kill -9 #\(index + 1) \(point.label)"
            XCTAssertTrue([0, 128 + SIGKILL].contains(outcome.exitCode), "\(context)\n\(outcome)")
            if outcome.exitCode == 128 + SIGKILL { killedMidRun += 1 }

            // What the killed run left, and how far it had come.
            let after = try DestinationState(dest)
            let knownIDs = before.manifestIDs
            let leftIDs = Set(after.names.compactMap(DestinationState.id(of:))).subtracting(knownIDs)
            XCTAssertLessThanOrEqual(leftIDs.count, 1, "\(context): one backup was running: \(after.names)")
            let killedID = leftIDs.first
            let committed = killedID.map { after.manifestIDs.contains($0) } ?? false
            let phase = BackupPhase(after: after, killedID: killedID)
            phases[phase.rawValue, default: 0] += 1

            // Only committed backups are listed, and the earlier ones verify.
            let expected = knownIDs.union(committed ? [killedID!] : [])
            XCTAssertEqual(Set(try listedIDs(dest)), expected, "\(context): listed backups")
            try assertVerifies(dest, earlier, context)
            if committed, let killedID {
                try assertVerifies(dest, [killedID], "\(context): committed before the kill")
                bigBackups.insert(killedID)
            }
            try assertEmptyFolder(tmpdir, context)

            // After the last kill: every earlier backup restores equal to its snapshot.
            if index == points.count - 1 {
                for id in earlier {
                    try assertRestoresEqual(id, dest: dest, source: small, expected: try XCTUnwrap(snapshots[id]),
                                            target: path("restore-\(id)"))
                    _ = try tool("rm", ["-rf", path("restore-\(id)")])
                }
            }

            // The next backup needs no help and cleans up.
            let next = try commitSmall(index + 1)
            if after.locked {
                takeovers += 1
                XCTAssertTrue(next.outcome.stderrText.lowercased().contains("stale") && next.outcome.stderrText.contains("\(pid)"),
                              "\(context): the next backup must say it took over the stale lock of pid \(pid):\n\(next.outcome)")
            }
            try assertClean(dest, context)
            let cleaned = try DestinationState(dest)
            if let killedID, !committed {
                if cleaned.manifestIDs.contains(killedID) {
                    // A complete archive whose manifest never arrived may be given its manifest back.
                    try assertVerifies(dest, [killedID], "\(context): rebuilt from the archive's own manifest")
                    bigBackups.insert(killedID)
                    rebuilt += 1
                } else if after.archiveIDs.contains(killedID) {
                    orphansRemoved += 1
                }
            }
            XCTAssertEqual(Set(try listedIDs(dest)), Set(earlier).union(bigBackups), "\(context): after the next backup")
            if (testRun?.failureCount ?? 0) == failuresBefore { recovered += 1 }
        }

        // The big backup itself still works.
        let final = try run(["backup", big, "--dest", dest, "--json", "--full"], environment: environment)
        assertExit(final, 0, "an uninterrupted backup after all the kills")
        let finalID = try XCTUnwrap(try json(final)["id"] as? String)
        try assertVerifies(dest, [finalID])
        try assertClean(dest)

        let phaseList = BackupPhase.allCases.compactMap { phase in phases[phase.rawValue].map { "\(phase.rawValue): \($0)" } }
        print("crash points: \(recovered)/\(points.count) recovered (backup of \(FaultTestCase.bigSourceBytes >> 20) MiB "
            + "taking \(String(format: "%.2f", duration)) s; \(killedMidRun) killed mid-run; "
            + phaseList.joined(separator: ", ") + "; stale locks taken over: \(takeovers); archives without manifest "
            + "afterwards rebuilt: \(rebuilt), removed: \(orphansRemoved))")
        XCTAssertGreaterThanOrEqual(killedMidRun, 20, "at least 20 kills must land inside a run")
        XCTAssertEqual(recovered, points.count)
    }

    // MARK: Kill -9 during a restore

    /// Kills a restore of the big backup into an empty target once 1, 3 and 6 of its eight
    /// 25 MiB files are in place, and 0.5 s after it started: nothing can clean up after a
    /// kill -9, yet every file under a final name is complete and correct, and no `.keepsake-`
    /// temporary is left (there, a file being written has no name yet). A restore into the
    /// target afterwards completes the tree.
    func testKillNineDuringRestoreLeavesNoPartialFileAndNoTemporary() throws {
        let big = try bigSource()
        let dest = path("dest")
        let id = try backup([big], dest: dest)

        var clean = 0
        var killedMidRun = 0
        let moments: [Int?] = [1, 3, 6, nil]
        for (index, placed) in moments.enumerated() {
            let failuresBefore = testRun?.failureCount ?? 0
            let context = placed.map { "kill -9 once \($0) large files are restored" } ?? "kill -9 0.5 s into the restore"
            let target = path("target-\(index)")
            let root = restored(big, into: target)
            let running = try keepsake.start(["restore", id, "--dest", dest, "--target", target])
            defer { running.kill() }
            if let placed {
                try waitForLargeFiles(placed, in: root, restoredBy: running)
            } else {
                usleep(500_000)
            }
            if running.isRunning { killedMidRun += 1 }
            let outcome = try signalAndWait(running, SIGKILL)
            XCTAssertTrue([0, 128 + SIGKILL].contains(outcome.exitCode), "\(context)\n\(outcome)")
            try assertOnlyCorrectFiles(target: target, restoredRoot: root, source: big, context)
            if index == 0 { try assertRestoresAgain(id, dest: dest, target: target, root: root, source: big, context) }
            _ = try tool("rm", ["-rf", target])
            if (testRun?.failureCount ?? 0) == failuresBefore { clean += 1 }
        }
        print("kill -9 during restore: \(clean)/\(moments.count) left only complete, correct files and no temporary "
            + "(\(killedMidRun) killed mid-run: once 1, 3 and 6 of 8 large files were in place, and at 0.5 s)")
        XCTAssertEqual(clean, moments.count)
        XCTAssertGreaterThanOrEqual(killedMidRun, 3, "most kills must land inside the restore")
    }

    // MARK: Kill -9 during a prune

    /// Kills `prune --keep-last 2` of ten full backups at 25 moments — 8 spread by time, one
    /// when the lock appears, one at the first prune marker, and after 1…15 of the 16 objects
    /// to remove are gone. After each kill: every listed backup has its archive and
    /// verifies, the newest two are listed, prune run again exits 0 (taking over the stale
    /// lock) and keeps exactly those two, and the next backup exits 0 and leaves only
    /// complete pairs.
    // test-tag(plain-only): 25 runs of the whole binary repeat code the other tests run under the sanitizers
    func testKillNineDuringPruneAtManyPoints() throws {
        let small = path("small")
        try Fixtures.makeMixedTree(at: small)
        let template = path("template")
        let tmpdir = path("tmpdir")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(tmpdir))
        let environment: [String: String?] = ["TMPDIR": tmpdir]
        // The prunes killed pause 20 ms before each removal, so that a prune lasts the same
        // whatever the machine's load, and the kills spread by time land inside it (on a
        // busy machine, a prune of a few milliseconds' work was over before most of them).
        var killed = environment
        killed["KEEPSAKE_TEST_REMOVAL_PAUSE_MS"] = "20"
        var ids: [String] = []
        for round in 0..<10 {
            try Fixtures.makeTree(at: small, files: ["rounds/round-\(round).txt": String(repeating: "\(round)\n", count: round + 1)])
            ids.append(try backup([small], dest: template, options: ["--full"]))
        }
        let kept = Set(ids.suffix(2))
        let templateNames = Set(try DestinationState(template).names)
        XCTAssertEqual(templateNames.count, 20)

        let measureDest = path("measure")
        try copyDestination(template, to: measureDest)
        let duration = try seconds {
            assertExit(try run(["prune", "--dest", measureDest, "--keep-last", "2"], environment: killed), 0, "measuring prune")
        }
        XCTAssertEqual(Set(try listedIDs(measureDest)), kept)

        let dest = path("dest")
        func removedObjects(_ state: DestinationState) -> Int { templateNames.subtracting(state.names).count }
        var points = (0..<8).map { index in
            KillPoint(label: "after \(Int(duration * Double(index) / 8 * 1000)) ms", delay: duration * Double(index) / 8)
        }
        points.append(KillPoint(label: "when the lock appears") { $0.locked })
        points.append(KillPoint(label: "at the first prune marker") { !$0.markers.isEmpty })
        for count in 1...15 {
            points.append(KillPoint(label: "after \(count) objects are removed") { removedObjects($0) >= count })
        }

        var recovered = 0
        var killedMidRun = 0
        var takeovers = 0
        var removedAtKill: [Int: Int] = [:]
        for (index, point) in points.enumerated() {
            let failuresBefore = testRun?.failureCount ?? 0
            try copyDestination(template, to: dest)
            let running = try keepsake.start(["prune", "--dest", dest, "--keep-last", "2"], environment: killed)
            defer { running.kill() }
            try reach(point, running: running, dest: dest)
            let pid = running.processIdentifier
            let outcome = try signalAndWait(running, SIGKILL)
            let context = "prune kill -9 #\(index + 1) \(point.label)"
            XCTAssertTrue([0, 128 + SIGKILL].contains(outcome.exitCode), "\(context)\n\(outcome)")
            if outcome.exitCode == 128 + SIGKILL { killedMidRun += 1 }
            let after = try DestinationState(dest)
            removedAtKill[removedObjects(after), default: 0] += 1

            // Every listed backup has its archive and verifies; the kept ones are all there.
            let listed = Set(try listedIDs(dest))
            XCTAssertTrue(listed.isSubset(of: ids), "\(context): \(listed)")
            XCTAssertTrue(kept.isSubset(of: listed), "\(context): a kept backup disappeared: \(listed)")
            XCTAssertTrue(listed.isSubset(of: after.archiveIDs), "\(context): a listed backup lost its archive: \(after.names)")
            try assertVerifies(dest, [], context)

            // Prune again: it takes over the lock and finishes the job.
            let again = try run(["prune", "--dest", dest, "--keep-last", "2"], environment: environment)
            assertExit(again, 0, "\(context): prune again")
            if after.locked {
                takeovers += 1
                XCTAssertTrue(again.stderrText.lowercased().contains("stale") && again.stderrText.contains("\(pid)"),
                              "\(context): prune must say it took over the stale lock of pid \(pid):\n\(again)")
            }
            XCTAssertEqual(Set(try listedIDs(dest)), kept, "\(context): after prune again")

            // The next backup cleans what the killed prune left.
            let next = try run(["backup", small, "--dest", dest, "--json"], environment: environment)
            assertExit(next, 0, "\(context): the next backup")
            let nextID = try XCTUnwrap(try json(next)["id"] as? String)
            try assertClean(dest, context)
            XCTAssertEqual(Set(try listedIDs(dest)), kept.union([nextID]), "\(context): after the next backup")
            try assertVerifies(dest, [], "\(context): after the next backup")
            try assertEmptyFolder(tmpdir, context)
            if (testRun?.failureCount ?? 0) == failuresBefore { recovered += 1 }
        }

        let histogram = removedAtKill.keys.sorted().map { "\($0): \(removedAtKill[$0]!)" }.joined(separator: ", ")
        print("prune crash points: \(recovered)/\(points.count) recovered (prune of 8 of 10 backups taking "
            + "\(String(format: "%.3f", duration)) s; \(killedMidRun) killed mid-run; stale locks taken over: \(takeovers); "
            + "objects removed when killed → kills: " + histogram + ")")
        XCTAssertGreaterThanOrEqual(killedMidRun, 20, "at least 20 kills must land inside a run")
        XCTAssertEqual(recovered, points.count)
    }

    // MARK: Helpers

    /// Waits until `point`: its delay after now, or the first moment its condition holds for
    /// `dest` (or the child ends on its own).
    private func reach(_ point: KillPoint, running: ProcessRunner.Running, dest: String) throws {
        if let delay = point.delay {
            let deadline = Date().addingTimeInterval(delay)
            while Date() < deadline && running.isRunning { usleep(200) }
        } else if let condition = point.condition {
            try waitUntil(timeout: 60, interval: 50) { try !running.isRunning || condition(DestinationState(dest)) }
        }
    }
}

// MARK: - Kill points

/// A moment to kill a run at: a delay after it starts, or the first moment a condition on
/// the destination holds.
struct KillPoint {
    /// Says where the kill lands, for messages.
    let label: String
    /// Seconds after the start.
    let delay: TimeInterval?
    /// What the destination must show.
    let condition: ((DestinationState) -> Bool)?

    /// A kill `delay` seconds after the start.
    init(label: String, delay: TimeInterval) {
        self.label = label
        self.delay = delay
        self.condition = nil
    }

    /// A kill as soon as `condition` holds.
    init(label: String, condition: @escaping (DestinationState) -> Bool) {
        self.label = label
        self.delay = nil
        self.condition = condition
    }
}

/// How far a killed backup had come, judged from what it left in the destination.
enum BackupPhase: String, CaseIterable {
    case beforeLock = "before the lock"
    case locked = "locked, no archive yet"
    case writingArchive = "writing the archive"
    case archiveRenamed = "archive renamed, no manifest"
    case writingManifest = "writing the manifest"
    case committed = "committed"

    /// The phase shown by `state` for the backup `killedID` (nil when it left no named file).
    init(after state: DestinationState, killedID: String?) {
        guard let killedID else {
            self = state.locked ? .locked : .beforeLock
            return
        }
        if state.manifestIDs.contains(killedID) {
            self = .committed
        } else if state.temporaryManifests.contains(where: { DestinationState.id(of: $0) == killedID }) {
            self = .writingManifest
        } else if state.archiveIDs.contains(killedID) {
            self = .archiveRenamed
        } else if state.temporaryArchives.contains(where: { DestinationState.id(of: $0) == killedID }) {
            self = .writingArchive
        } else {
            self = state.locked ? .locked : .beforeLock
        }
    }
}
