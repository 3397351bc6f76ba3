import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// A restore target that refuses writes (a read-only mount, a folder the user may not
/// write) is the target's problem, never the archive's: one error naming the folder and
/// what to do, exit 1; when only some paths are refused, each is named as "could not be
/// written" and the restore exits 3. Exit 4 (damaged) never appears: the archive is fine.
final class UnwritableTargetTests: EndToEndTestCase {
    // MARK: State

    /// A folder open to everyone inside the work folder (nobody works there).
    private var shared = ""
    /// A copy of the binary that nobody can execute.
    private var binary = ""
    /// HOME and XDG_DATA_HOME for nobody.
    private var environment: [String: String?] = [:]
    /// The source backed up, and the destination holding its one backup.
    private var source = ""
    private var dest = ""
    /// Mounts made by the test, undone in tearDown (before the work folder goes).
    private var mounts: [String] = []

    override func setUpWithError() throws {
        try super.setUpWithError()
        guard geteuid() == 0 else {
            throw XCTSkip("needs root to mount read-only folders and to run keepsake as the unprivileged user nobody")
        }
        try RawFileSystem.setMode(RawFileSystem.bytes(work), 0o755)
        shared = path("shared")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(shared), mode: 0o777)
        let home = shared + "/home"
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(home), mode: 0o777)
        environment = ["HOME": home, "XDG_DATA_HOME": home + "/xdg"]
        binary = shared + "/keepsake"
        try FileManager.default.copyItem(atPath: keepsake.executable, toPath: binary)
        try RawFileSystem.setMode(RawFileSystem.bytes(binary), 0o755)

        source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "a\n", "docs/b.txt": "b\n", "docs/deep/c.txt": "c\n"])
        dest = shared + "/dest"
        try backup([source], dest: dest)
        try toolSucceeds("chmod", ["-R", "a+rwX", dest])
    }

    override func tearDownWithError() throws {
        for mount in mounts.reversed() {
            let outcome = try? ProcessRunner.run("umount", [mount])
            if outcome?.exitCode != 0 { _ = try? ProcessRunner.run("umount", ["-l", mount]) }
        }
        mounts = []
        try super.tearDownWithError()
    }

    // MARK: Read-only mounts

    func testReadOnlyMountIsOneClearErrorWithExit1() throws {
        let target = path("readonly")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(target))
        try mount(["-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", target])

        let outcome = try run(["restore", "latest", "--dest", dest, "--target", target])
        assertExit(outcome, 1, "a read-only target is a failure, not damage")
        assertOneTargetError(outcome, naming: target, saying: "read-only")
        XCTAssertTrue(outcome.stderrText.contains("--target"), "the error says what to do:\n\(outcome)")

        // Below a read-only mount, the target cannot even be made: the same kind of error.
        let below = try run(["restore", "latest", "--dest", dest, "--target", target + "/new"])
        assertExit(below, 1)
        assertOneTargetError(below, naming: target + "/new", saying: "cannot be created (Read-only file system)")

        let json = try self.json(try run(["restore", "latest", "--dest", dest, "--target", target, "--json"]))
        XCTAssertEqual(json["exit_code"] as? Int, 1, "\(json)")
        XCTAssertTrue((json["error"] as? String ?? "").contains("read-only"), "\(json)")
    }

    func testReadOnlyMountInsideTheTargetRefusesOnlyThePathsBelowIt() throws {
        let target = path("target")
        let root = restored(source, into: target)
        // The restored tree's docs folder is a read-only bind mount of an empty folder.
        let empty = path("empty")
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/docs", withIntermediateDirectories: true)
        try mount(["--bind", empty, root + "/docs"])
        try mount(["-o", "remount,bind,ro", root + "/docs"])

        let outcome = try run(["restore", "latest", "--dest", dest, "--target", target, "--json"])
        assertExit(outcome, 3, "only some paths were refused: the restore is partial")
        let object = try json(outcome)
        XCTAssertTrue((object["damaged"] as? [Any] ?? [0]).isEmpty, "nothing is damaged: \(object)")
        let refused = (object["warnings"] as? [[String: Any]] ?? []).filter { $0["kind"] as? String == "unwritable" }
        let prefix = String(source.dropFirst())
        XCTAssertEqual(Set(refused.compactMap { $0["path"] as? String }),
                       [prefix + "/docs/b.txt", prefix + "/docs/deep", prefix + "/docs/deep/c.txt"],
                       "each refused path is named: \(object)")
        XCTAssertTrue(refused.allSatisfy { ($0["reason"] as? String ?? "").hasPrefix("could not be written") }, "\(refused)")
        XCTAssertEqual(try String(contentsOfFile: root + "/a.txt", encoding: .utf8), "a\n", "the rest is restored")

        let text = try run(["restore", "latest", "--dest", dest, "--target", target])
        assertExit(text, 3)
        XCTAssertFalse(text.combinedText.lowercased().contains("damaged"), "the archive is fine:\n\(text)")
        XCTAssertTrue(text.stderrText.contains("docs/b.txt: could not be written (Read-only file system)"), "\(text)")
    }

    // MARK: Folders the user may not write

    func testAFolderNobodyMayWriteIsOneClearErrorWithExit1() throws {
        let target = path("rootowned")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(target), mode: 0o755)
        let outcome = try run(["restore", "latest", "--dest", dest, "--target", target],
                              environment: environment, asNobody: true, executable: binary)
        assertExit(outcome, 1, "a target the user may not write is a failure, not damage")
        assertOneTargetError(outcome, naming: target, saying: "Permission denied")

        let missing = try run(["restore", "latest", "--dest", dest, "--target", target + "/new"],
                              environment: environment, asNobody: true, executable: binary)
        assertExit(missing, 1)
        assertOneTargetError(missing, naming: target + "/new", saying: "cannot be created (Permission denied)")
    }

    /// The target is writable, but the folders on the way to every entry are not: nothing
    /// can be written, which is the target's failure (exit 1), said once.
    func testEveryPathRefusedIsOneErrorWithExit1() throws {
        let target = shared + "/target"
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(target), mode: 0o777)
        // The restored tree's first folder exists and belongs to root.
        let first = target + "/" + (source.split(separator: "/").first.map(String.init) ?? "")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(first), mode: 0o755)
        let outcome = try run(["restore", "latest", "--dest", dest, "--target", target],
                              environment: environment, asNobody: true, executable: binary)
        assertExit(outcome, 1)
        assertOneTargetError(outcome, naming: target, saying: "nothing could be written")
        XCTAssertTrue(outcome.stderrText.contains("Permission denied"), "\(outcome)")
    }

    /// A folder that must be made inside a folder the user may not write: that branch is
    /// named as "could not be written" (exit 3), the rest restored; not "unsafe", not damage.
    func testAFolderThatCannotBeMadeIsNotWrittenNotDamaged() throws {
        let target = shared + "/target"
        let root = restored(source, into: target)
        try FileManager.default.createDirectory(atPath: root + "/docs", withIntermediateDirectories: true)
        try toolSucceeds("chmod", ["-R", "a+rwx", target])
        try RawFileSystem.setMode(RawFileSystem.bytes(root + "/docs"), 0o555)

        let outcome = try run(["restore", "latest", "--dest", dest, "--target", target, "--json"],
                              environment: environment, asNobody: true, executable: binary)
        assertExit(outcome, 3)
        let object = try json(outcome)
        XCTAssertTrue((object["damaged"] as? [Any] ?? [0]).isEmpty, "nothing is damaged: \(object)")
        let refused = (object["warnings"] as? [[String: Any]] ?? []).filter { $0["kind"] as? String == "unwritable" }
        let prefix = String(source.dropFirst())
        XCTAssertEqual(Set(refused.compactMap { $0["path"] as? String }),
                       [prefix + "/docs/b.txt", prefix + "/docs/deep", prefix + "/docs/deep/c.txt"], "\(object)")

        let text = try run(["restore", "latest", "--dest", dest, "--target", target],
                           environment: environment, asNobody: true, executable: binary)
        assertExit(text, 3)
        XCTAssertFalse(text.combinedText.lowercased().contains("damaged"), "the archive is fine:\n\(text)")
        XCTAssertFalse(text.combinedText.contains("unsafe"), "\(text)")
        XCTAssertTrue(text.stderrText.contains("docs/deep/c.txt: could not be written (Permission denied)"), "\(text)")
        XCTAssertEqual(try String(contentsOfFile: root + "/a.txt", encoding: .utf8), "a\n")
    }

    // MARK: Helpers

    /// Runs mount(8), skipping the test when the machine does not allow it.
    private func mount(_ arguments: [String]) throws {
        let outcome = try ProcessRunner.run("mount", arguments)
        guard outcome.exitCode == 0 else {
            throw XCTSkip("cannot mount (\(arguments.joined(separator: " "))): \(outcome.stderrText)")
        }
        if let point = arguments.last, !mounts.contains(point) { mounts.append(point) }
    }

    /// One error line on stderr naming `target` and containing `phrase`; no summary, no
    /// per-entry lines, and no word of damage.
    private func assertOneTargetError(_ outcome: ProcessRunner.Outcome, naming target: String, saying phrase: String,
                                      file: StaticString = #filePath, line: UInt = #line) {
        let lines = outcome.stderrText.split(separator: "\n")
        XCTAssertEqual(lines.count, 1, "one error, not one per entry:\n\(outcome)", file: file, line: line)
        XCTAssertTrue(outcome.stderrText.hasPrefix("Error: Cannot restore into '\(target)'"), "\(outcome)", file: file, line: line)
        XCTAssertTrue(outcome.stderrText.contains(phrase), "the error says why ('\(phrase)'):\n\(outcome)", file: file, line: line)
        XCTAssertFalse(outcome.combinedText.lowercased().contains("damaged"), "the archive is fine:\n\(outcome)", file: file, line: line)
        XCTAssertEqual(outcome.stdoutText, "", "no summary for a restore that could not start:\n\(outcome)", file: file, line: line)
    }
}
