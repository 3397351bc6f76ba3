import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Runs that overlap on one destination: two backups, a backup during a prune, a restore
/// during a prune. The lock makes writers exclude each other at once (exit 5, naming the
/// holder; nobody waits); a restore takes no lock and never produces wrong files.
final class FaultConcurrencyTests: FaultTestCase {
    // MARK: Two backups

    /// Starts two backups of different sources into one destination at the same moment, 12
    /// times, then once while a 200 MiB backup is known to hold the lock. Each run exits 0
    /// or 5; a refused one says so at once and names the holder's pid; every committed
    /// backup is listed and verifies; nothing is left behind.
    // test-tag(plain-only): twelve rounds of racing backups; the lock's code runs in the other FaultConcurrencyTests and LocalFolderConformanceTests
    func testTwoBackupsAtOnceExcludeEachOther() throws {
        let first = path("first")
        let second = path("second")
        try Fixtures.makeMixedTree(at: first)
        try Fixtures.makeMixedTree(at: second)
        let dest = path("dest")
        _ = try backup([first], dest: dest)

        var consistent = 0
        var refusals = 0
        let rounds = 12
        for round in 0..<rounds {
            let failuresBefore = testRun?.failureCount ?? 0
            try Fixtures.makeTree(at: first, files: ["round.txt": "\(round)\n"])
            try Fixtures.makeTree(at: second, files: ["round.txt": "\(round)\n"])
            let listedBefore = try listedIDs(dest).count
            let one = try keepsake.start(["backup", first, "--dest", dest])
            let two = try keepsake.start(["backup", second, "--dest", dest])
            defer { one.kill(); two.kill() }
            let outcomes = [(try one.finish(), two.processIdentifier), (try two.finish(), one.processIdentifier)]
            var committed = 0
            for (outcome, other) in outcomes {
                XCTAssertTrue([0, 5].contains(outcome.exitCode), "round \(round)\n\(outcome)")
                if outcome.exitCode == 0 { committed += 1 }
                if outcome.exitCode == 5 {
                    refusals += 1
                    XCTAssertTrue(outcome.stderrText.contains("pid \(other)"), "round \(round): the holder is named:\n\(outcome)")
                }
            }
            XCTAssertGreaterThanOrEqual(committed, 1, "round \(round): one of the two must run")
            XCTAssertEqual(try listedIDs(dest).count, listedBefore + committed, "round \(round)")
            try assertClean(dest, "round \(round)")
            if (testRun?.failureCount ?? 0) == failuresBefore { consistent += 1 }
        }
        try assertVerifies(dest)

        // A backup while a long one holds the lock is refused at once.
        let big = try bigSource()
        let holder = try keepsake.start(["backup", big, "--dest", dest])
        defer { holder.kill() }
        XCTAssertTrue(waitUntil(interval: 100) { RawFileSystem.exists(dest + "/keepsake.lock") || !holder.isRunning })
        var refused = ProcessRunner.Outcome(command: [], exitCode: -1, stdout: Data(), stderr: Data())
        let waited = try seconds { refused = try run(["backup", first, "--dest", dest]) }
        XCTAssertTrue(holder.isRunning, "the long backup should still run")
        assertExit(refused, 5, "a backup while another holds the lock")
        XCTAssertTrue(refused.stderrText.contains("pid \(holder.processIdentifier)"), "\(refused)")
        XCTAssertLessThan(waited, 5, "the second backup does not wait for the first")
        assertExit(try holder.finish(), 0, "the long backup commits")
        try assertClean(dest)
        print("two backups at once: \(consistent)/\(rounds) consistent (\(refusals) refused with exit 5 naming the holder, "
            + "the rest ran one after the other); during a running backup: exit \(refused.exitCode) after "
            + String(format: "%.2f", waited) + " s, no waiting")
        XCTAssertEqual(consistent, rounds)
    }

    // MARK: Stale lock taken over by many

    /// Twelve backups of one source start together against a destination whose lock names
    /// a dead pid on this host, 16 rounds. Exactly one may take the stale lock over: each
    /// run exits 0 or 5 (never 1 because another run deleted its temporary archive), the
    /// committed backups are all listed and verify, and no two share a parent — two runs
    /// holding the lock at once would both build on the same newest backup.
    // test-tag(plain-only): twelve racing runs; the lock's code runs in the other FaultConcurrencyTests and LocalFolderConformanceTests
    func testManyRunsTakingOverOneStaleLock() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "a\n", "sub/b.txt": "b\n"])
        let dest = path("dest")
        _ = try backup([source], dest: dest)
        let deadPID = try String(contentsOfFile: "/proc/sys/kernel/pid_max", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        var host = [CChar](repeating: 0, count: 256)
        gethostname(&host, host.count - 1)
        let hostName = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // Padded with 30,000 numbers (60 KB, under the 64 KiB a lock may have): parsing it takes
        // a while, so runs are likely to be between reading the stale lock and replacing it at
        // the same time.
        let padding = Array(repeating: "0", count: 30_000).joined(separator: ",")
        let stale = "{\"pid\": \(deadPID), \"host\": \"\(hostName)\", \"started\": \"2026-01-01T00:00:00Z\", "
            + "\"operation\": \"backup\", \"padding\": [\(padding)]}\n"

        let rounds = 16
        let runners = 12
        var consistent = 0
        var committedPerRound: [Int] = []
        for round in 0..<rounds {
            let failuresBefore = testRun?.failureCount ?? 0
            try Fixtures.makeTree(at: source, files: ["round.txt": "\(round)\n"])
            try stale.write(toFile: dest + "/keepsake.lock", atomically: false, encoding: .utf8)
            let listedBefore = try listedIDs(dest).count
            // Each run is stopped as soon as it starts and all are continued together, so they
            // reach the lock at about the same moment instead of one process start apart.
            let started = try (0..<runners).map { _ in
                let running = try keepsake.start(["backup", source, "--dest", dest])
                _ = Glibc.kill(running.processIdentifier, SIGSTOP)
                return running
            }
            defer { started.forEach { $0.kill() } }
            for running in started { _ = Glibc.kill(running.processIdentifier, SIGCONT) }
            var committed = 0
            for running in started {
                let outcome = try running.finish()
                XCTAssertTrue([0, 5].contains(outcome.exitCode), "round \(round): exit 0 or 5 only\n\(outcome)")
                if outcome.exitCode == 0 { committed += 1 }
                if outcome.exitCode == 5 {
                    XCTAssertTrue(outcome.stderrText.contains("locked"), "round \(round): says it is locked:\n\(outcome)")
                }
            }
            committedPerRound.append(committed)
            XCTAssertGreaterThanOrEqual(committed, 1, "round \(round): one run takes the stale lock over")
            XCTAssertEqual(try listedIDs(dest).count, listedBefore + committed, "round \(round): every success is listed")
            try assertClean(dest, "round \(round)")
            if (testRun?.failureCount ?? 0) == failuresBefore { consistent += 1 }
        }
        let backups = try XCTUnwrap(try json(try run(["list", "--dest", dest, "--json"]))["backups"] as? [[String: Any]])
        let parents = backups.compactMap { $0["parent"] as? String }
        let shared = Dictionary(grouping: parents, by: { $0 }).filter { $0.value.count > 1 }.keys.sorted()
        XCTAssertEqual(shared, [], "backups made while another run held the lock (same parent)")
        try assertVerifies(dest)
        print("stale lock taken over by \(runners) runs at once: \(consistent)/\(rounds) rounds consistent; "
            + "backups committed per round: \(committedPerRound.map(String.init).joined(separator: ", ")); "
            + "\(shared.count) forks in the chain")
        XCTAssertEqual(consistent, rounds)
    }

    // MARK: Backup during prune

    /// Freezes `prune --keep-last 2` of ten backups (SIGSTOP) once it holds the lock, after
    /// 0, 3, 7 and 12 objects are removed, runs a backup (refused at once: exit 5 naming the
    /// prune's pid), lets the prune finish (exit 0), and backs up again (exit 0). Then six
    /// free races of prune and backup started together. Every listed backup verifies and
    /// the destination holds only complete pairs.
    func testBackupDuringPruneIsRefusedWithExit5() throws {
        let (_, template, ids, templateNames) = try tenBackupTemplate()
        let other = path("other")
        try Fixtures.makeMixedTree(at: other)
        let dest = path("dest")

        var consistent = 0
        var refusedDuringPrune = 0
        let points = [0, 3, 7, 12]
        for removed in points {
            let failuresBefore = testRun?.failureCount ?? 0
            let context = "backup while prune is frozen after \(removed) removals"
            try copyDestination(template, to: dest)
            let prune = try keepsake.start(["prune", "--dest", dest, "--keep-last", "2"])
            defer { prune.kill() }
            try waitUntil(interval: 20) {
                try !prune.isRunning || (RawFileSystem.exists(dest + "/keepsake.lock")
                    && templateNames.subtracting(DestinationState(dest).names).count >= removed)
            }
            _ = Glibc.kill(prune.processIdentifier, SIGSTOP)
            let frozen = prune.isRunning && RawFileSystem.exists(dest + "/keepsake.lock")
            let during = try run(["backup", other, "--dest", dest])
            _ = Glibc.kill(prune.processIdentifier, SIGCONT)
            if frozen {
                assertExit(during, 5, context)
                XCTAssertTrue(during.stderrText.contains("pid \(prune.processIdentifier)"), "\(context): names the prune:\n\(during)")
                refusedDuringPrune += 1
            } else {
                assertExit(during, 0, "\(context): the prune had already finished")
            }
            assertExit(try prune.finish(), 0, "\(context): the prune finishes")
            let after = try run(["backup", other, "--dest", dest])
            assertExit(after, 0, "\(context): a backup after the prune")
            try assertClean(dest, context)
            XCTAssertTrue(Set(ids.suffix(2)).isSubset(of: try listedIDs(dest)), context)
            try assertVerifies(dest, [], context)
            if (testRun?.failureCount ?? 0) == failuresBefore { consistent += 1 }
        }

        var races = 0
        var raceCodes: [String] = []
        for round in 0..<6 {
            let failuresBefore = testRun?.failureCount ?? 0
            try copyDestination(template, to: dest)
            let prune = try keepsake.start(["prune", "--dest", dest, "--keep-last", "2"])
            let backup = try keepsake.start(["backup", other, "--dest", dest])
            defer { prune.kill(); backup.kill() }
            let pruned = try prune.finish()
            let backedUp = try backup.finish()
            raceCodes.append("\(pruned.exitCode)/\(backedUp.exitCode)")
            XCTAssertTrue([0, 5].contains(pruned.exitCode), "race \(round)\n\(pruned)")
            XCTAssertTrue([0, 5].contains(backedUp.exitCode), "race \(round)\n\(backedUp)")
            XCTAssertTrue(pruned.exitCode == 0 || backedUp.exitCode == 0, "race \(round): one of the two runs")
            try assertClean(dest, "race \(round)")
            try assertVerifies(dest, [], "race \(round)")
            if (testRun?.failureCount ?? 0) == failuresBefore { races += 1 }
        }
        print("backup during prune: \(consistent)/\(points.count) consistent (\(refusedDuringPrune) refused at once with exit 5 "
            + "naming the prune; nobody waits); free races: \(races)/6 consistent (prune/backup exit codes: "
            + raceCodes.joined(separator: ", ") + ")")
        XCTAssertEqual(consistent, points.count)
        XCTAssertEqual(races, 6)
    }

    // MARK: Restore during prune

    /// Restores the older of two full backups of a 60 MiB source while `prune --keep-last 1`
    /// removes it: the prune runs before the restore, at 0–60 % of it, and once while the
    /// restore is frozen (SIGSTOP) after placing its first large file. A restore either succeeds
    /// with the whole tree, or fails cleanly — exit 1 when the manifest was already gone,
    /// exit 4 when the archive vanished after the manifest was read — naming the backup; it
    /// never leaves a wrong or partial file under a final name, nor a temporary.
    func testRestoreDuringPruneNeverProducesWrongFiles() throws {
        let source = path("medium")
        for index in 0..<2 {
            try FaultFixtures.writeIncompressible(source + "/blob-\(index).bin", size: 30 << 20, seed: UInt64(900 + index))
        }
        for index in 0..<500 {
            try Fixtures.makeTree(at: source, files: ["small/folder-\(index % 10)/note-\(index).txt": "note \(index)\n"])
        }
        let template = path("template")
        let older = try backup([source], dest: template, options: ["--full"])
        let newer = try backup([source], dest: template, options: ["--full"])
        let dest = path("dest")
        let duration = try seconds {
            assertExit(try run(["restore", older, "--dest", template, "--target", path("measure")]), 0, "the measuring restore")
        }
        _ = try tool("rm", ["-rf", path("measure")])

        var safe = 0
        var complete = 0
        var refused: [String] = []
        let delays: [Double?] = [nil, 0, 0.1, 0.3, 0.6]
        for (index, fraction) in delays.enumerated() {
            let failuresBefore = testRun?.failureCount ?? 0
            let context = fraction.map { "prune at \(Int($0 * 100)) % of the restore" } ?? "prune before the restore"
            // Hard links: the prune unlinks names in `dest`, the template keeps its own.
            _ = try tool("rm", ["-rf", dest])
            try toolSucceeds("cp", ["-al", template, dest])
            let target = path("target-\(index)")
            let outcome: ProcessRunner.Outcome
            if let fraction {
                let restore = try keepsake.start(["restore", older, "--dest", dest, "--target", target])
                defer { restore.kill() }
                usleep(useconds_t(duration * fraction * 1_000_000))
                assertExit(try run(["prune", "--dest", dest, "--keep-last", "1"]), 0, "\(context): the prune")
                outcome = try restore.finish()
            } else {
                assertExit(try run(["prune", "--dest", dest, "--keep-last", "1"]), 0, "\(context): the prune")
                outcome = try run(["restore", older, "--dest", dest, "--target", target])
            }
            try assertRestoreSafe(outcome, id: older, target: target, source: source, context)
            if outcome.exitCode == 0 { complete += 1 } else { refused.append("\(context): exit \(outcome.exitCode)") }
            XCTAssertEqual(try listedIDs(dest), [newer], context)
            _ = try tool("rm", ["-rf", target])
            if (testRun?.failureCount ?? 0) == failuresBefore { safe += 1 }
        }

        // The restore frozen (SIGSTOP) once its first large file is in place, while the prune
        // removes its backup completely; it goes on reading the archive it has open.
        let failuresBefore = testRun?.failureCount ?? 0
        _ = try tool("rm", ["-rf", dest])
        try toolSucceeds("cp", ["-al", template, dest])
        let target = path("target-frozen")
        let restore = try keepsake.start(["restore", older, "--dest", dest, "--target", target])
        defer { restore.kill() }
        waitUntil(interval: 100) {
            !restore.isRunning || RawFileSystem.exists(restored(source, into: target) + "/blob-0.bin")
        }
        _ = Glibc.kill(restore.processIdentifier, SIGSTOP)
        let frozen = restore.isRunning
        assertExit(try run(["prune", "--dest", dest, "--keep-last", "1"]), 0, "the prune while the restore is frozen")
        let gone = try !DestinationState(dest).names.contains { $0.contains(older) }
        _ = Glibc.kill(restore.processIdentifier, SIGCONT)
        let midway = try restore.finish()
        XCTAssertTrue(frozen && gone, "the restore should be frozen midway while its backup is removed completely")
        try assertRestoreSafe(midway, id: older, target: target, source: source, "restore frozen while its backup is pruned")
        if midway.exitCode == 0 { complete += 1 } else { refused.append("restore frozen midway: exit \(midway.exitCode)") }
        if (testRun?.failureCount ?? 0) == failuresBefore { safe += 1 }

        print("restore during prune: \(safe)/\(delays.count + 1) safe (\(complete) restored the whole tree, "
            + "\(refused.count) refused cleanly: \(refused.joined(separator: "; ")); a restore frozen midway while its "
            + "backup was removed completely exited \(midway.exitCode))")
        XCTAssertEqual(safe, delays.count + 1)
    }

    // MARK: Helpers

    /// A restore that raced a prune either succeeded with the whole tree or failed with
    /// exit 1 or 4 naming the backup; either way no temporary and no wrong file is left.
    private func assertRestoreSafe(_ outcome: ProcessRunner.Outcome, id: String, target: String, source: String,
                                   _ context: String, file: StaticString = #filePath, line: UInt = #line) throws {
        if outcome.exitCode == 0 {
            try assertTreesEqual(expected: source, actual: restored(source, into: target), file: file, line: line)
        } else {
            XCTAssertTrue([1, 4].contains(outcome.exitCode), "\(context): a restore whose backup is gone fails with exit 1 "
                + "(no manifest) or 4 (archive missing):\n\(outcome)", file: file, line: line)
            XCTAssertTrue(outcome.stderrText.contains(id), "\(context): the message names the backup:\n\(outcome)",
                          file: file, line: line)
        }
        try assertOnlyCorrectFiles(target: target, restoredRoot: restored(source, into: target), source: source, context,
                                   file: file, line: line)
    }
}
