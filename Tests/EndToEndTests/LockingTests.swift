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
        let first = try keepsake.start(["backup", "--stdin", "--stdin-name", "stream.bin", "--dest", dest])
        defer { first.kill() }
        var streamed = Data(Fixtures.pseudoRandomBytes(count: 1 << 20, seed: 11))
        first.write(streamed)

        // Wait until the first backup holds the lock.
        let lock = dest + "/keepsake.lock"
        let deadline = Date().addingTimeInterval(30)
        while !RawFileSystem.exists(lock) && first.isRunning && Date() < deadline {
            usleep(5000)
        }
        XCTAssertTrue(RawFileSystem.exists(lock), "the first backup never took the lock")

        let second = try run(["backup", source, "--dest", dest])
        assertExit(second, 5, "a backup while another holds the lock")
        XCTAssertTrue(second.stderrText.contains("pid \(first.processIdentifier)"), "stderr must name the holder's pid:\n\(second)")
        XCTAssertTrue(second.stderrText.contains(hostName()), "stderr must name the holder's host:\n\(second)")
        XCTAssertTrue(second.stderrText.contains("started"), "stderr must say when the holder started:\n\(second)")

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
        XCTAssertTrue(RawFileSystem.exists(dest + "/keepsake.lock"), "someone else's lock is left alone")
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
