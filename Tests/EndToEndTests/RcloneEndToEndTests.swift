import Foundation
import KeepsakeTestSupport
import XCTest

/// `keepsake` against an rclone remote: rclone's sftp backend on OpenSSH's sshd (loopback),
/// the whole workflow, copying between a local folder, the remote and back, and what a
/// user sees when rclone or the remote is missing.
// test-tag(plain-only): rclone does the work; Keepsake's side of it, lsjson answers included, is RcloneConformanceTests
final class RcloneEndToEndTests: EndToEndTestCase {
    // MARK: Setup

    private var server: SSHServer?

    override func tearDownWithError() throws {
        server?.stop()
        server = nil
        try super.tearDownWithError()
    }

    private func remote() throws -> (config: SSHServer.RcloneConfig, environment: [String: String?], base: String) {
        let started = try SSHServer()
        server = started
        let config = try started.rcloneConfig(remoteName: "nas")
        return (config, ["RCLONE_CONFIG": config.file.path], started.folder.path)
    }

    // MARK: Tests

    func testTheWholeWorkflowOverSFTP() throws {
        let (_, environment, base) = try remote()
        try RemoteWorkflow(test: self, dest: "rclone:nas:\(base)/keepsake", environment: environment).runAll()
        let left = try FileManager.default.contentsOfDirectory(atPath: base + "/keepsake")
        XCTAssertEqual(left.filter { $0.hasPrefix(".tmp-") || $0.hasSuffix(".lock") }, [], "no temporary and no lock is left: \(left)")
    }

    /// A 3-2-1 round: local folder → the remote → another local folder, each copy verified.
    func testCopyToTheRemoteAndBack() throws {
        let (_, environment, base) = try remote()
        let source = path("src")
        try Fixtures.makeMixedTree(at: source)
        let local = path("local")
        assertExit(try run(["backup", source, "--dest", local, "-q"]), 0)
        try "changed\n".write(toFile: source + "/readme.txt", atomically: true, encoding: .utf8)
        assertExit(try run(["backup", source, "--dest", local, "-q"]), 0)
        let remote = "rclone:nas:\(base)/copies"

        // Only the newest asked for: its chain comes along.
        let first = try json(try run(["copy", "latest", "--from", local, "--to", remote, "--json"], environment: environment))
        XCTAssertEqual((first["copied"] as? [String])?.count, 2, "the incremental and the full it relies on: \(first)")
        let again = try json(try run(["copy", "--from", local, "--to", remote, "--json"], environment: environment))
        XCTAssertEqual((again["copied"] as? [String]) ?? ["?"], [], "nothing new")
        XCTAssertEqual((again["skipped"] as? [String])?.count, 2)
        assertExit(try run(["verify", "--dest", remote], environment: environment), 0)

        let back = path("back")
        assertExit(try run(["copy", "--from", remote, "--to", back], environment: environment), 0)
        let target = path("restored")
        assertExit(try run(["restore", "latest", "--dest", back, "--target", target]), 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: target))
    }

    /// A copy refuses a source archive whose bytes are not what its manifest says, and the
    /// incremental that relies on it: exit 4, nothing of them at the destination, and the
    /// other backups copied all the same.
    func testADamagedArchiveIsNotCopiedAndTheOthersAre() throws {
        let source = path("src")
        try Fixtures.makeMixedTree(at: source)
        let local = path("local")
        let first = try backup([source], dest: local)
        try "changed\n".write(toFile: source + "/readme.txt", atomically: true, encoding: .utf8)
        let child = try backup([source], dest: local)
        let separate = try backup([source], dest: local, options: ["--full"])
        let archive = try XCTUnwrap(try names(in: local).first { $0.contains(first) && $0.hasSuffix(".tar.zst") })
        try Fixtures.flipByte(in: local + "/" + archive)
        let other = path("other")
        let copied = try run(["copy", "--from", local, "--to", other, "--json"])
        assertExit(copied, 4)
        let report = try json(copied)
        XCTAssertEqual(report["copied"] as? [String], [separate])
        XCTAssertEqual((report["damaged"] as? [String])?.count, 2, "the damaged one and the one relying on it: \(report)")
        XCTAssertTrue((report["damaged"] as? [String])?.contains { $0.contains(child) && $0.contains("relies on") } == true)
        let stored = try names(in: other).filter { !$0.hasPrefix(".") && $0 != "keepsake.lock" }
        XCTAssertFalse(stored.contains { $0.contains(first) || $0.contains(child) }, "nothing of them was stored: \(stored)")
        XCTAssertEqual(stored.count, 2, "the intact backup's archive and manifest")
        let text = try run(["copy", "--from", local, "--to", path("third")])
        XCTAssertTrue(text.stderrText.contains("damaged") && text.stderrText.contains("keepsake verify"), "\(text)")
    }

    /// Every rclone run costs a process start and, over sftp, an SSH connection: a backup
    /// and a restore take no more runs than they need (counted by a script that names each
    /// run and hands over to rclone). A change that needs more says so here.
    func testABackupAndARestoreTakeFewRcloneRuns() throws {
        let (_, environment, base) = try remote()
        let log = path("rclone-runs")
        let program = path("counting-rclone")
        try "#!/bin/sh\necho \"$1\" >> '\(log)'\nexec rclone \"$@\"\n".write(toFile: program, atomically: true, encoding: .utf8)
        XCTAssertEqual(chmod(program, 0o755), 0)
        let counted = environment.merging(["KEEPSAKE_RCLONE": program]) { $1 }
        func runs(_ arguments: [String]) throws -> [String] {
            try? FileManager.default.removeItem(atPath: log)
            assertExit(try run(arguments, environment: counted), 0, arguments.joined(separator: " "))
            return try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map(String.init)
        }
        let source = path("src")
        try Fixtures.makeMixedTree(at: source)
        let dest = "rclone:nas:\(base)/counted"
        // The folder made; the lock looked at, written, read back; one listing; archive and
        // manifest each streamed, their size checked and renamed; the lock read and removed.
        let first = try runs(["backup", source, "--dest", dest, "-q"])
        XCTAssertEqual(first, ["mkdir", "cat", "rcat", "cat", "lsjson", "rcat", "lsjson", "moveto", "rcat", "lsjson", "moveto",
                               "cat", "deletefile"])
        try "changed\n".write(toFile: source + "/readme.txt", atomically: true, encoding: .utf8)
        // An incremental reads its parent's manifest as well (twice today: a ceiling, not a goal).
        let second = try runs(["backup", source, "--dest", dest, "-q"])
        XCTAssertLessThanOrEqual(second.count, first.count + 2, "\(second)")
        // One listing, then the manifests and archives of the chain of two (7 reads today).
        let restore = try runs(["restore", "latest", "--dest", dest, "--target", path("restored"), "-q"])
        XCTAssertLessThanOrEqual(restore.count, 8, "\(restore)")
        XCTAssertEqual(restore.filter { $0 == "lsjson" }.count, 1, "\(restore)")
        try assertTreesEqual(expected: source, actual: restored(source, into: path("restored")))
    }

    func testAMissingRemoteOrProgramIsNamed() throws {
        let (_, environment, _) = try remote()
        let unknown = try run(["list", "--dest", "rclone:no-such-remote:x"], environment: environment)
        assertExit(unknown, 1)
        XCTAssertTrue(unknown.stderrText.contains("no-such-remote"), "\(unknown)")
        let missing = try run(["list", "--dest", "rclone:nas:x"], environment: environment.merging(["KEEPSAKE_RCLONE": "/nonexistent/rclone"]) { $1 })
        assertExit(missing, 1)
        XCTAssertTrue(missing.stderrText.contains("rclone"), "\(missing)")
    }

    /// Issue 26 §5: a listing larger than any destination (here 70,000 files with the
    /// longest names a file system allows, 37 MiB of `rclone lsjson`) is refused with a clear
    /// error instead of parsed whole (a 250 MiB one took 1.7 GB). A local remote stands in
    /// for a remote that answers so much.
    func testAListingLargerThanAnyDestinationIsRefused() throws {
        let folder = path("huge")
        let script = """
            import os, sys
            folder = sys.argv[1]
            os.makedirs(folder)
            for number in range(70000):
                open(os.path.join(folder, ("%06d" % number) + "x" * 249), "wb").close()
            """
        try toolSucceeds("python3", ["-c", script, folder])
        let environment: [String: String?] = ["RCLONE_CONFIG_HERE_TYPE": "local", "RCLONE_CONFIG": "/dev/null"]
        let listed = try run(["list", "--dest", "rclone:here:\(folder)"], environment: environment)
        assertExit(listed, 1)
        XCTAssertTrue(listed.stderrText.contains("larger than 32 MiB"), "\(listed)")
    }
}
