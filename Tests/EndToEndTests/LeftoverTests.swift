import Foundation
import XCTest

/// What an interrupted run leaves in a destination is never listed and is cleaned up by
/// the next backup.
final class LeftoverTests: EndToEndTestCase {
    // MARK: Tests

    func testLeftoversAreHiddenAndRemovedByTheNextBackup() throws {
        let source = path("src")
        let dest = path("dest")
        try Fixtures.makeTree(at: source, files: ["a.txt": "a\n"])
        let first = try backup([source], dest: dest)

        // Written by a pid no process has (pids stay below pid_max): a live writer's is spared.
        let deadPID = try String(contentsOfFile: "/proc/sys/kernel/pid_max", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let temporary = ".tmp-host_20250101T000000Z-deadbeef.tar.zst-\(deadPID)-abcdef"
        let orphan = "host_20250101T000000Z-0badf00d.tar.zst"
        try Data(Fixtures.pseudoRandomBytes(count: 1000, seed: 21)).write(to: URL(fileURLWithPath: dest + "/" + temporary))
        try Data(Fixtures.pseudoRandomBytes(count: 1000, seed: 22)).write(to: URL(fileURLWithPath: dest + "/" + orphan))

        let table = try run(["list", "--dest", dest])
        assertExit(table, 0)
        XCTAssertTrue(table.stdoutText.contains(first))
        XCTAssertFalse(table.stdoutText.contains("deadbeef") || table.stdoutText.contains("0badf00d"),
                       "leftovers must not be listed:\n\(table)")
        let listing = try json(try run(["list", "--dest", dest, "--json"]))
        XCTAssertEqual((listing["backups"] as? [[String: Any]])?.compactMap { $0["id"] as? String }, [first])
        assertExit(try run(["verify", "--dest", dest]), 0, "leftovers are not backups to verify")

        let second = try run(["backup", source, "--dest", dest])
        assertExit(second, 0)
        let remaining = try names(in: dest)
        XCTAssertFalse(remaining.contains(temporary), "the temporary file was not cleaned up: \(remaining)")
        XCTAssertFalse(remaining.contains(orphan), "the unreadable archive without a manifest was not set aside: \(remaining)")
        // Never deleted: it is not a Keepsake archive anyone can read, but it is not ours to destroy.
        XCTAssertTrue(remaining.contains(orphan + ".unrecoverable"), "\(remaining)")
        XCTAssertTrue(second.stderrText.contains(orphan), "the warning names it:\n\(second)")
        XCTAssertFalse(remaining.contains { $0.hasPrefix(".tmp-") }, "\(remaining)")
        XCTAssertEqual(remaining.filter { $0.hasSuffix(".manifest.jsonl.zst") }.count, 2)
        XCTAssertEqual(remaining.filter { $0.hasSuffix(".tar.zst") }.count, 2)
    }

    func testCommittedBackupLeavesNoTemporaryFiles() throws {
        let source = path("src")
        let dest = path("dest")
        try Fixtures.makeTree(at: source, files: ["a.txt": "a\n"])
        let id = try backup([source], dest: dest)
        let remaining = try names(in: dest)
        XCTAssertEqual(remaining.count, 2, "an archive and its manifest only: \(remaining)")
        XCTAssertTrue(remaining.allSatisfy { $0.contains(id) }, "both are named by the id: \(remaining)")
        XCTAssertTrue(remaining.contains { $0.hasSuffix(".manifest.jsonl.zst") })
        XCTAssertTrue(remaining.contains { $0.hasSuffix(".tar.zst") })
    }
}
