import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Ctrl-C or SIGTERM during a backup: exit 130, nothing half-done left, lock released.
// test-tag(threads): signals while threads work
final class InterruptTests: EndToEndTestCase {
    // MARK: Tests

    func testInterruptLeavesNothingBehind() throws {
        try assertSignalLeavesNothing(SIGINT)
    }

    func testTerminateLeavesNothingBehind() throws {
        try assertSignalLeavesNothing(SIGTERM)
    }

    // MARK: Helpers

    /// Starts a stdin backup, waits until it holds the lock, sends `signal`, and checks the
    /// exit code and that the destination holds no archive, manifest, temporary file or lock.
    private func assertSignalLeavesNothing(_ signal: Int32, file: StaticString = #filePath, line: UInt = #line) throws {
        let dest = path("dest")
        let running = try keepsake.start(["backup", "--stdin", "--stdin-name", "stream.bin", "--dest", dest])
        defer { running.kill() }
        running.write(Data(Fixtures.pseudoRandomBytes(count: 1 << 20, seed: 31)))
        let deadline = Date().addingTimeInterval(30)
        while !RawFileSystem.exists(dest + "/keepsake.lock") && running.isRunning && Date() < deadline {
            usleep(5000)
        }
        XCTAssertTrue(RawFileSystem.exists(dest + "/keepsake.lock"), "the backup never took the lock", file: file, line: line)
        XCTAssertEqual(kill(running.processIdentifier, signal), 0, file: file, line: line)
        let outcome = try running.finish(timeout: 30)
        assertExit(outcome, 130, "signal \(signal)", file: file, line: line)
        XCTAssertEqual(try names(in: dest), [], "an interrupted backup must leave nothing in the destination",
                       file: file, line: line)
        let listing = try json(try run(["list", "--dest", dest, "--json"]), file: file, line: line)
        XCTAssertEqual((listing["backups"] as? [Any])?.count, 0, file: file, line: line)
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "a\n"])
        assertExit(try run(["backup", source, "--dest", dest]), 0, "the next backup works", file: file, line: line)
    }
}
