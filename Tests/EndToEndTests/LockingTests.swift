import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Backups to one destination exclude each other; a stale lock is taken over.
final class LockingTests: EndToEndTestCase {
    // MARK: Tests

    func testSecondBackupWhileFirstRunsIsRefused() throws {
        let dest = path("dest")
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "a\n"])
        var streamed = Data(Fixtures.pseudoRandomBytes(count: 1 << 20, seed: 11))
        let first = try startRunHoldingTheLock(dest: dest, bytes: streamed)
        defer { first.kill() }
        let lock = dest + "/keepsake.lock"

        let second = try run(["backup", source, "--dest", dest])
        assertExit(second, 5, "a backup while another holds the lock")
        XCTAssertTrue(second.stderrText.contains("pid \(first.processIdentifier)"), "stderr must name the holder's pid:\n\(second)")
        XCTAssertTrue(second.stderrText.contains(hostName()), "stderr must name the holder's host:\n\(second)")
        XCTAssertTrue(second.stderrText.contains("started"), "stderr must say when the holder started:\n\(second)")
        XCTAssertFalse(second.stderrText.contains("takes the lock over"),
                       "a holder on this host is alive (checked), so no word of stale locks:\n\(second)")

        let tail = Data(Fixtures.pseudoRandomBytes(count: 4096, seed: 12))
        first.write(tail)
        streamed.append(tail)
        let finished = try first.finish()
        assertExit(finished, 0, "the first backup commits fine")
        XCTAssertFalse(RawFileSystem.exists(lock), "the lock is released")

        let listing = try json(try run(["list", "--dest", dest, "--json"]))
        XCTAssertEqual((listing["backups"] as? [Any])?.count, 1, "only the first backup was made")
        let target = path("target")
        assertExit(try run(["restore", "latest", "--dest", dest, "--target", target]), 0)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: target + "/stream.bin")), streamed)

        let afterwards = try run(["backup", source, "--dest", dest])
        assertExit(afterwards, 0, "once the lock is free, backups work again")
    }

    /// With --lock-wait, a run that finds the destination locked waits its turn (hosts
    /// sharing a destination at the same cron minute) instead of exiting 5.
    func testLockWaitTakesTurns() throws {
        let dest = path("dest")
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "a\n"])
        let first = try startRunHoldingTheLock(dest: dest, bytes: Data(Fixtures.pseudoRandomBytes(count: 1 << 16, seed: 3)))
        defer { first.kill() }
        let waiting = try keepsake.start(["backup", source, "--dest", dest, "--lock-wait", "60s"])
        defer { waiting.kill() }
        sleep(3)
        XCTAssertTrue(waiting.isRunning, "the second backup waits for the lock")
        assertExit(try first.finish(), 0)
        let second = try waiting.finish()
        assertExit(second, 0, "it goes on once the lock is free")
        XCTAssertTrue(second.stderrText.contains("waiting for it"), "it says it waited:\n\(second)")
        XCTAssertEqual((try json(try run(["list", "--dest", dest, "--json"]))["backups"] as? [Any])?.count, 2)

        let bad = try run(["backup", source, "--dest", dest, "--lock-wait", "soon"])
        assertExit(bad, 2)
        XCTAssertTrue(bad.stderrText.contains("'soon'") && bad.stderrText.contains("15min"), "\(bad)")
    }

    func testStaleLockIsTakenOver() throws {
        let dest = path("dest")
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "a\n"])
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(dest), mode: 0o700)
        let dead = try deadProcessID()
        try writeLock(in: dest, pid: dead, host: hostName())

        let outcome = try run(["backup", source, "--dest", dest])
        assertExit(outcome, 0, "a stale lock (dead pid, this host) is taken over")
        XCTAssertTrue(outcome.stderrText.contains("\(dead)"), "the take-over is reported with the old pid:\n\(outcome)")
        XCTAssertTrue(outcome.stderrText.lowercased().contains("stale"), "the warning says the lock was stale:\n\(outcome)")
        XCTAssertFalse(RawFileSystem.exists(dest + "/keepsake.lock"), "the lock is released afterwards")
        XCTAssertEqual((try json(try run(["list", "--dest", dest, "--json"]))["backups"] as? [Any])?.count, 1)
    }

    func testLockFromAnotherHostIsRespected() throws {
        let dest = path("dest")
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "a\n"])
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(dest), mode: 0o700)
        try writeLock(in: dest, pid: try deadProcessID(), host: "some-other-host.example")
        let outcome = try run(["backup", source, "--dest", dest])
        assertExit(outcome, 5, "a lock held on another host cannot be judged stale")
        XCTAssertTrue(outcome.stderrText.contains("some-other-host.example"), "\(outcome)")
        // Its pid cannot be checked from here: the message says how a dead holder's lock goes.
        XCTAssertTrue(outcome.stderrText.contains("the next keepsake run on some-other-host.example takes the lock over"),
                      "\(outcome)")
        XCTAssertTrue(RawFileSystem.exists(dest + "/keepsake.lock"), "someone else's lock is left alone")
    }

    /// A run killed with `kill -9` leaves its lock (recorded with its machine, boot and pid
    /// namespace). Another machine sharing the folder cannot look that pid up: it is refused
    /// and leaves the lock alone. The next run here can, finds it dead and takes it over.
    /// (The year of nights meets this only when a killed night falls before the laptop's.)
    func testAKilledRunsLockRefusesAnotherMachineAndIsTakenOverHere() throws {
        guard geteuid() == 0 else { throw XCTSkip("needs root for the other machine's namespaces") }
        let dest = path("dest")
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "a\n"])
        let killed = try startRunHoldingTheLock(dest: dest, bytes: Data(Fixtures.pseudoRandomBytes(count: 1 << 16, seed: 5)))
        defer { killed.kill() }
        let lock = dest + "/keepsake.lock"
        let pid = killed.processIdentifier
        XCTAssertEqual(Glibc.kill(pid, SIGKILL), 0)
        let deadline = Date().addingTimeInterval(30)
        while killed.isRunning && Date() < deadline { usleep(5000) }
        XCTAssertFalse(killed.isRunning, "pid \(pid) outlived SIGKILL")

        let laptop = try run(["backup", source, "--dest", dest], hostName: "laptop")
        assertExit(laptop, 5, "another machine cannot tell whether pid \(pid) still runs")
        XCTAssertTrue(laptop.stderrText.contains("pid \(pid) on \(hostName())"), "the holder is named:\n\(laptop)")
        XCTAssertTrue(laptop.stderrText.contains("takes the lock over"), "the way out is said:\n\(laptop)")
        XCTAssertTrue(RawFileSystem.exists(lock), "the other machine leaves the lock alone")

        let here = try run(["backup", source, "--dest", dest])
        assertExit(here, 0, "this machine sees pid \(pid) gone and takes its lock over")
        XCTAssertTrue(here.stderrText.contains("stale lock left by pid \(pid)"), "\(here)")
        XCTAssertFalse(RawFileSystem.exists(lock), "the lock is released afterwards")
    }

    // MARK: Hostile destinations

    /// In a destination everyone may write to, symbolic links are planted at every name a
    /// run could predict from its pid (lock attempts and stale-lock names, for the next
    /// 2,000 pids), all pointing at a file outside, and a stale lock waits to be taken
    /// over. A backup run by root must leave the outside file as it was.
    func testSymlinksAtPredictableNamesAreNotFollowed() throws {
        guard geteuid() == 0 else { throw XCTSkip("needs root: the attack is on root writing through a planted link") }
        let dest = path("dest")
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "a\n"])
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(dest), mode: 0o700)
        try RawFileSystem.setMode(RawFileSystem.bytes(dest), 0o777)
        let outside = path("outside.txt")
        try "precious\n".write(toFile: outside, atomically: false, encoding: .utf8)
        try writeLock(in: dest, pid: try deadProcessID(), host: hostName())
        let last = Int32((try String(contentsOfFile: "/proc/sys/kernel/ns_last_pid", encoding: .utf8))
            .trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        for pid in (last + 1)...(last + 2000) {
            for prefix in [".tmp-lock-", ".tmp-stale-lock-"] {
                XCTAssertEqual(symlink(outside, dest + "/" + prefix + String(pid)), 0)
            }
        }

        let outcome = try run(["backup", source, "--dest", dest])
        XCTAssertEqual(try String(contentsOfFile: outside, encoding: .utf8), "precious\n",
                       "the file outside the destination was written through a planted link:\n\(outcome)")
        assertExit(outcome, 0, "the planted links are stepped around")
        XCTAssertTrue(outcome.stderrText.contains("chmod go-w \(dest)"), "the open destination is warned about:\n\(outcome)")
        assertExit(try run(["verify", "--dest", dest]), 0)
    }

    // MARK: Destination warnings

    /// A destination other users can write to (world- or group-writable without the sticky
    /// bit), or one owned by another user, gets a warning naming the folder and the fix from
    /// every command that takes the lock; the run still exits 0. A private folder, a sticky
    /// group-writable one, and commands that only read get none.
    func testWarnsWhenOthersCanWriteTheDestination() throws {
        guard geteuid() == 0 else { throw XCTSkip("needs root to give the destination to nobody") }
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "a\n"])
        let cases: [(label: String, mode: mode_t, owner: String?, expected: [String])] = [
            ("world", 0o777, nil, ["writable by other users", "chmod go-w"]),
            ("world-sticky", 0o1777, nil, ["writable by other users", "chmod go-w"]),
            ("group", 0o770, nil, ["writable by other users", "chmod go-w"]),
            ("nobody", 0o700, "nobody", ["owned by nobody", "chown root"]),
            ("private", 0o700, nil, []),
            ("group-sticky", 0o1770, nil, []),
        ]
        for item in cases {
            let dest = path("dest-" + item.label)
            try RawFileSystem.makeDirectory(RawFileSystem.bytes(dest), mode: 0o700)
            try RawFileSystem.setMode(RawFileSystem.bytes(dest), item.mode)
            if let owner = item.owner { try toolSucceeds("chown", [owner, dest]) }
            let commands: [(String, [String])] = [
                ("backup", ["backup", source, "--dest", dest]),
                ("backup --json", ["backup", source, "--dest", dest, "--json"]),
                ("prune", ["prune", "--dest", dest, "--keep-last", "1"]),
                ("repair", ["repair", "--dest", dest]),
            ]
            for (name, arguments) in commands {
                let outcome = try run(arguments)
                assertExit(outcome, 0, "\(item.label): \(name) still succeeds")
                if item.expected.isEmpty {
                    XCTAssertFalse(outcome.stderrText.contains("warning:"), "\(item.label): \(name) warns:\n\(outcome)")
                } else {
                    for text in item.expected + [dest, "warning:"] {
                        XCTAssertTrue(outcome.stderrText.contains(text), "\(item.label): \(name) should say '\(text)':\n\(outcome)")
                    }
                    let lines = outcome.stderrText.split(separator: "\n").filter { $0.contains(dest) && $0.contains("warning:") }
                    XCTAssertEqual(lines.count, 1, "\(item.label): \(name) warns once:\n\(outcome)")
                }
            }
            for arguments in [["list", "--dest", dest], ["verify", "--dest", dest]] {
                let outcome = try run(arguments)
                assertExit(outcome, 0)
                XCTAssertFalse(outcome.stderrText.contains("warning:"), "\(item.label): \(arguments[0]) only reads:\n\(outcome)")
            }
        }
    }

    // MARK: Helpers

    /// This machine's host name as `gethostname` reports it.
    private func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        gethostname(&buffer, buffer.count - 1)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The pid of a process that has exited (and been reaped).
    private func deadProcessID() throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try ProcessRunner.locate("true"))
        try process.run()
        process.waitUntilExit()
        let pid = process.processIdentifier
        XCTAssertNotEqual(kill(pid, 0), 0, "pid \(pid) should be gone")
        return pid
    }

    /// Writes a lock file as another run would have left it.
    private func writeLock(in dest: String, pid: Int32, host: String) throws {
        let text = "{\"pid\": \(pid), \"host\": \"\(host)\", \"started\": \"2026-01-01T00:00:00Z\", \"operation\": \"backup\"}\n"
        try text.write(toFile: dest + "/keepsake.lock", atomically: false, encoding: .utf8)
    }
}
