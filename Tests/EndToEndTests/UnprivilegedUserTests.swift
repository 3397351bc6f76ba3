import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// keepsake run as an unprivileged user (`nobody`, through `setpriv`; CI runs as root,
/// and root reads and writes everything): an unreadable file gives exit 3 with the backup
/// committed; a restore without ownership rights still rebuilds read-only folders.
final class UnprivilegedUserTests: EndToEndTestCase {
    // MARK: State

    /// A folder open to everyone inside the work folder.
    private var shared = ""
    /// A copy of the binary that nobody can execute.
    private var binary = ""
    /// HOME and XDG_DATA_HOME for nobody.
    private var environment: [String: String?] = [:]

    override func setUpWithError() throws {
        try super.setUpWithError()
        guard geteuid() == 0 else {
            throw XCTSkip("needs root to run keepsake as the unprivileged user nobody")
        }
        try RawFileSystem.setMode(RawFileSystem.bytes(work), 0o755)
        shared = path("shared")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(shared), mode: 0o777)
        let home = shared + "/home"
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(home), mode: 0o777)
        environment = ["HOME": home, "XDG_DATA_HOME": home + "/xdg"]
        // The build folder may be out of nobody's reach: run a copy.
        binary = shared + "/keepsake"
        try FileManager.default.copyItem(atPath: keepsake.executable, toPath: binary)
        try RawFileSystem.setMode(RawFileSystem.bytes(binary), 0o755)
    }

    // MARK: Tests

    /// Issue 26 §11: a process that holds a secret (here a passphrase) is not dumpable: no
    /// core file, no ptrace or /proc/PID/mem for other processes of its user. The kernel
    /// shows it in the owner of the files in /proc/PID, which become root's instead of the
    /// process's user's.
    /// A backup holding no secret stays as it was.
    func testAProcessHoldingASecretCannotBeDumped() throws {
        let source = shared + "/src"
        try Fixtures.makeTree(at: source, files: Dictionary(uniqueKeysWithValues: (0..<4).map { ("f\($0).txt", "file \($0)\n") }))
        let passphrase = shared + "/passphrase"
        try "correct horse\n".write(toFile: passphrase, atomically: true, encoding: .utf8)
        XCTAssertEqual(chown(passphrase, 65534, 65534), 0)
        XCTAssertEqual(chmod(passphrase, 0o600), 0)
        for (name, options, dumpable) in [("plain", [String](), true), ("secret", ["--passphrase-file", passphrase], false)] {
            var slow = environment
            slow["KEEPSAKE_TEST_READ_PAUSE_MS"] = "200"
            let running = try ProcessRunner.start("setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", binary, "backup",
                                                              source, "--dest", shared + "/dest-" + name, "--readers", "1"] + options,
                                                  environment: keepsake.environment(slow))
            defer { running.kill() }
            // Once it reads the source, it has read its secret (options are read first).
            let pid = running.processIdentifier
            let deadline = Date().addingTimeInterval(30)
            var reading = false
            while !reading, running.isRunning, Date() < deadline {
                let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
                reading = open.contains { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)"))?
                    .hasPrefix(source + "/f") == true }
                if !reading { usleep(20_000) }
            }
            XCTAssertTrue(reading, "\(name): the backup never read its source")
            var info = stat()
            XCTAssertEqual(stat("/proc/\(pid)/environ", &info), 0)
            XCTAssertEqual(info.st_uid, dumpable ? 65534 : 0, "\(name): /proc/\(pid)/environ belongs to uid \(info.st_uid)")
            XCTAssertEqual(try running.finish().exitCode, 0, name)
        }
    }

    func testUnreadableFileGivesExit3AndTheBackupIsCommitted() throws {
        let source = shared + "/src"
        try Fixtures.makeTree(at: source, files: ["readable.txt": "fine\n", "sub/also.txt": "also fine\n", "secret.txt": "hidden\n"])
        try RawFileSystem.setMode(RawFileSystem.bytes(source + "/secret.txt"), 0o000)
        let dest = shared + "/dest"

        let probe = try run(["--version"], environment: environment, asNobody: true, executable: binary)
        assertExit(probe, 0, "nobody cannot run the copied binary")

        let outcome = try run(["backup", source, "--dest", dest], environment: environment, asNobody: true, executable: binary)
        assertExit(outcome, 3, "an unreadable file gives exit 3")
        XCTAssertTrue(outcome.stderrText.contains("secret.txt"), "the warning names the unreadable file:\n\(outcome)")
        XCTAssertTrue(outcome.stdoutText.contains("Backup") || outcome.stdoutText.contains("Warnings"),
                      "the summary is still printed:\n\(outcome)")

        let listing = try json(try run(["list", "--dest", dest, "--json"]))
        let backups = listing["backups"] as? [[String: Any]] ?? []
        XCTAssertEqual(backups.count, 1, "the backup is committed despite the unreadable file: \(listing)")

        let listed = Set(try listedPaths("latest", dest: dest).map(RawFileSystem.display))
        let prefix = String(source.dropFirst())
        XCTAssertTrue(listed.contains(prefix + "/readable.txt"), "\(listed)")
        XCTAssertTrue(listed.contains(prefix + "/sub/also.txt"), "\(listed)")

        let json = try self.json(try run(["backup", source, "--dest", dest, "--json"], environment: environment,
                                         asNobody: true, executable: binary))
        XCTAssertEqual(json["exit_code"] as? Int, 3)
        let warnings = json["warnings"] as? [[String: Any]] ?? []
        XCTAssertEqual(warnings.count, 1, "one warning, for secret.txt: \(warnings)")

        let target = path("target")
        assertExit(try run(["restore", "latest", "--dest", dest, "--target", target]), 0)
        XCTAssertEqual(try String(contentsOfFile: restored(source, into: target) + "/readable.txt", encoding: .utf8), "fine\n")
    }

    func testRestoreWithoutOwnershipRebuildsReadOnlyFoldersAndDropsSetuid() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["ro/a.txt": "read only\n", "tool": "#!/bin/sh\n"])
        try RawFileSystem.setMode(RawFileSystem.bytes(source + "/ro/a.txt"), 0o444)
        try RawFileSystem.setMode(RawFileSystem.bytes(source + "/ro"), 0o555)
        try RawFileSystem.setMode(RawFileSystem.bytes(source + "/tool"), 0o4755)
        let dest = shared + "/dest"
        try backup([source], dest: dest)
        try toolSucceeds("chmod", ["-R", "a+rwX", dest])
        let target = shared + "/target"
        let outcome = try run(["restore", "latest", "--dest", dest, "--target", target],
                              environment: environment, asNobody: true, executable: binary)
        assertExit(outcome, 0)
        let root = restored(source, into: target)
        XCTAssertEqual(try String(contentsOfFile: root + "/ro/a.txt", encoding: .utf8), "read only\n")
        XCTAssertEqual(RawFileSystem.lstat(root + "/ro").map { $0.st_mode & 0o7777 }, 0o555, "the folder's mode is restored last")
        XCTAssertEqual(RawFileSystem.lstat(root + "/ro/a.txt").map { $0.st_mode & 0o7777 }, 0o444)
        XCTAssertEqual(RawFileSystem.lstat(root + "/tool").map { $0.st_mode & 0o7777 }, 0o755,
                       "without ownership the setuid bit must not be restored")
        XCTAssertEqual(RawFileSystem.lstat(root + "/tool")?.st_uid, 65534, "files belong to the restoring user")
    }

    /// As GNU tar: users other than root get the recorded modes less their umask, unless
    /// `--same-permissions` asks for them exactly (a 0777 entry must not land 0777 for a
    /// user whose umask says 027).
    func testNonRootRestoresApplyTheUmaskUnlessSamePermissions() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["open/all.txt": "everyone\n"])
        try RawFileSystem.setMode(RawFileSystem.bytes(source + "/open/all.txt"), 0o777)
        try RawFileSystem.setMode(RawFileSystem.bytes(source + "/open"), 0o777)
        try RawFileSystem.makeFifo(RawFileSystem.bytes(source + "/open/pipe"), mode: 0o666)
        try RawFileSystem.setMode(RawFileSystem.bytes(source + "/open/pipe"), 0o666)
        let dest = shared + "/dest"
        try backup([source], dest: dest)
        try toolSucceeds("chmod", ["-R", "a+rwX", dest])

        let previous = umask(0o027)
        defer { umask(previous) }
        func modes(_ target: String) -> [mode_t?] {
            let root = restored(source, into: target)
            return [root + "/open", root + "/open/all.txt", root + "/open/pipe"].map { RawFileSystem.lstat($0).map { $0.st_mode & 0o7777 } }
        }
        let masked = shared + "/masked"
        assertExit(try run(["restore", "latest", "--dest", dest, "--target", masked],
                           environment: environment, asNobody: true, executable: binary), 0)
        XCTAssertEqual(modes(masked), [0o750, 0o750, 0o640], "the umask 027 applies to folders, files and FIFOs")

        let exact = shared + "/exact"
        assertExit(try run(["restore", "latest", "--dest", dest, "--target", exact, "--same-permissions"],
                           environment: environment, asNobody: true, executable: binary), 0)
        XCTAssertEqual(modes(exact), [0o777, 0o777, 0o666], "--same-permissions keeps the recorded modes")

        // Root keeps exact modes by default, as tar does.
        let asRoot = shared + "/root"
        assertExit(try run(["restore", "latest", "--dest", dest, "--target", asRoot]), 0)
        XCTAssertEqual(modes(asRoot), [0o777, 0o777, 0o666])
    }

    /// A restore that cannot write some paths (a folder in the target that the restoring
    /// user may not write to) restores everything else, names each path it could not
    /// write, and exits 3 — not 0, so a script notices the restore is incomplete.
    func testPathsTheTargetRefusesGiveExit3AndAreNamed() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["open/a.txt": "a\n", "locked/b.txt": "b\n", "locked/c.txt": "c\n"])
        let dest = shared + "/dest"
        try backup([source], dest: dest)
        try toolSucceeds("chmod", ["-R", "a+rwX", dest])
        // The target already holds the restored tree's folders, open to everyone but one.
        let target = shared + "/target"
        let root = restored(source, into: target)
        try FileManager.default.createDirectory(atPath: root + "/open", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/locked", withIntermediateDirectories: true)
        try toolSucceeds("chmod", ["-R", "a+rwx", target])
        try RawFileSystem.setMode(RawFileSystem.bytes(root + "/locked"), 0o555)

        let outcome = try run(["restore", "latest", "--dest", dest, "--target", target, "--json"],
                              environment: environment, asNobody: true, executable: binary)
        assertExit(outcome, 3, "paths the target refused make the restore partial")
        let object = try json(outcome)
        XCTAssertEqual(object["exit_code"] as? Int, 3)
        let unwritable = (object["warnings"] as? [[String: Any]] ?? []).filter { $0["kind"] as? String == "unwritable" }
        XCTAssertEqual(Set(unwritable.compactMap { $0["path"] as? String }),
                       [String(source.dropFirst()) + "/locked/b.txt", String(source.dropFirst()) + "/locked/c.txt"],
                       "each refused path is named: \(object)")
        XCTAssertEqual(try String(contentsOfFile: root + "/open/a.txt", encoding: .utf8), "a\n", "the rest is restored")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: root + "/locked"), [], "nothing half-written is left")

        let text = try run(["restore", "latest", "--dest", dest, "--target", target, "--overwrite", "always"],
                           environment: environment, asNobody: true, executable: binary)
        assertExit(text, 3)
        XCTAssertTrue(text.stderrText.contains("locked/b.txt") && text.stderrText.lowercased().contains("permission denied"),
                      "the warning names the path and the reason:\n\(text)")
        XCTAssertTrue(text.stdoutText.contains("2 paths the target refused"), "the summary says what is missing:\n\(text)")
    }
}
