import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `keepsake run PROFILE` and `keepsake schedule PROFILE` with a configuration file in a
/// private XDG_CONFIG_HOME, run through the real binary.
// test-tag(threads): the crontab edit's reader thread
final class RunScheduleTests: EndToEndTestCase {
    // MARK: Setup

    /// `XDG_CONFIG_HOME` for every run of this test.
    private var configHome: String { path("home/xdg-config") }
    /// The default configuration file under `configHome`.
    private var configFile: String { configHome + "/keepsake/config.toml" }

    /// Writes the default configuration file.
    private func writeConfig(_ text: String) throws {
        try FileManager.default.createDirectory(atPath: configHome + "/keepsake", withIntermediateDirectories: true)
        try text.write(toFile: configFile, atomically: true, encoding: .utf8)
    }

    /// Runs keepsake with `XDG_CONFIG_HOME` pointing at `configHome`.
    @discardableResult
    private func keepsakeRun(_ arguments: [String], environment: [String: String?] = [:]) throws -> ProcessRunner.Outcome {
        var changes = environment
        changes["XDG_CONFIG_HOME"] = configHome
        return try run(arguments, environment: changes)
    }

    /// The ids of the backups in `dest`, oldest first.
    private func backupIDs(in dest: String) throws -> [String] {
        let listing = try json(try run(["list", "--dest", dest, "--json"]))
        let backups = try XCTUnwrap(listing["backups"] as? [[String: Any]])
        return backups.compactMap { $0["id"] as? String }
    }

    private func read(_ file: String) -> String {
        (try? String(contentsOfFile: file, encoding: .utf8)) ?? "<missing \(file)>"
    }

    /// A profile `home` backing up `src` into `dest`, with hooks and retention as given.
    private func homeProfile(before: String? = nil, after: String? = nil, extra: String = "") -> String {
        var text = """
            [profiles.home]
            sources = ["\(path("src"))"]
            destination = "\(path("dest"))"
            full-every = 1

            """
        if let before { text += "before = '\(before)'\n" }
        if let after { text += "after = '\(after)'\n" }
        return text + extra
    }

    // MARK: run

    /// run takes the lock twice (backup, then prune): a destination others can write to is
    /// warned about once, and the run still exits 0.
    func testRunWarnsOnceAboutADestinationOthersCanWrite() throws {
        try Fixtures.makeTree(at: path("src"), files: ["notes.txt": "notes\n"])
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(path("dest")), mode: 0o700)
        try RawFileSystem.setMode(RawFileSystem.bytes(path("dest")), 0o777)
        try writeConfig(homeProfile(extra: "[profiles.home.retention]\nkeep-last = 1\n"))
        for round in 1...2 {
            let outcome = try keepsakeRun(["run", "home"])
            assertExit(outcome, 0, "round \(round)")
            let warnings = outcome.stderrText.split(separator: "\n").filter { $0.contains("chmod go-w \(path("dest"))") }
            XCTAssertEqual(warnings.count, 1, "round \(round): one warning naming the fix:\n\(outcome)")
        }
    }

    func testRunRunsHooksBacksUpPrunesVerifiesAndPrintsNothing() throws {
        try Fixtures.makeTree(at: path("src"), files: ["notes.txt": "notes\n"])
        let status = path("after.txt")
        try writeConfig(homeProfile(
            before: "echo dumping; echo run >> \(path("before-runs")); date +%N > \(path("src"))/dump.sql",
            after: "echo \"$KEEPSAKE_STATUS $KEEPSAKE_EXIT_CODE $KEEPSAKE_BACKUP_ID $KEEPSAKE_PROFILE\" > \(status)",
            extra: "[profiles.home.retention]\nkeep-last = 2\n"))

        var made: [String] = []
        for round in 1...3 {
            let outcome = try keepsakeRun(["run", "home"])
            assertExit(outcome, 0, "round \(round)")
            XCTAssertEqual(outcome.stdoutText, "", "run prints nothing on stdout on success:\n\(outcome)")
            XCTAssertTrue(outcome.stderrText.contains("dumping"), "the before hook's output goes to stderr:\n\(outcome)")
            let recorded = read(status).split(separator: " ").map(String.init)
            XCTAssertEqual(recorded.count, 4, read(status))
            XCTAssertEqual(recorded.first, "success")
            XCTAssertEqual(recorded.dropFirst().first, "0")
            XCTAssertEqual(recorded.last, "home\n")
            made.append(recorded.count == 4 ? recorded[2] : "")
        }
        XCTAssertEqual(read(path("before-runs")), "run\nrun\nrun\n", "the before hook ran once per run")
        XCTAssertEqual(try backupIDs(in: path("dest")), Array(made.suffix(2)), "keep-last = 2 pruned the oldest backup")
        let paths = try listedPaths("latest", dest: path("dest")).map { String(decoding: $0, as: UTF8.self) }
        XCTAssertTrue(paths.contains { $0.hasSuffix("src/dump.sql") }, "the before hook's file is in the backup: \(paths)")
    }

    func testFailingBeforeHookStopsTheRunWithExit1AndNoBackup() throws {
        try Fixtures.makeTree(at: path("src"), files: ["a.txt": "a\n"])
        try writeConfig(homeProfile(before: "echo cannot dump >&2; exit 3", after: "touch \(path("after-ran"))"))
        let outcome = try keepsakeRun(["run", "home"])
        assertExit(outcome, 1)
        XCTAssertEqual(outcome.stdoutText, "")
        XCTAssertTrue(outcome.stderrText.contains("cannot dump"), outcome.description)
        XCTAssertTrue(outcome.stderrText.contains("Error: The before command of profile 'home' failed with exit status 3"),
                      outcome.description)
        XCTAssertFalse(RawFileSystem.exists(path("dest")), "no backup was made")
        XCTAssertFalse(RawFileSystem.exists(path("after-ran")), "the after hook runs only once the before hook passed")
    }

    func testAfterHookSeesFailureAndItsOwnFailureIsExit1() throws {
        let status = path("after.txt")
        let record = "echo \"$KEEPSAKE_STATUS $KEEPSAKE_EXIT_CODE [$KEEPSAKE_BACKUP_ID]\" > \(status)"
        // The source does not exist: the backup fails, the after hook still runs.
        try writeConfig(homeProfile(after: record))
        let failed = try keepsakeRun(["run", "home"])
        assertExit(failed, 1)
        XCTAssertTrue(failed.stderrText.contains("Error: The backup of profile 'home' failed"), failed.description)
        XCTAssertEqual(read(status), "failure 1 []\n")

        // A failing after hook turns a good run into exit 1.
        try Fixtures.makeTree(at: path("src"), files: ["a.txt": "a\n"])
        try writeConfig(homeProfile(after: record + "; exit 9"))
        let afterFailed = try keepsakeRun(["run", "home"])
        assertExit(afterFailed, 1)
        XCTAssertTrue(afterFailed.stderrText.contains("Error: The after command of profile 'home' failed with exit status 9"),
                      afterFailed.description)
        XCTAssertTrue(read(status).hasPrefix("success 0 ["), read(status))
        XCTAssertEqual(try backupIDs(in: path("dest")).count, 1, "the backup itself was committed")
    }

    func testLockedDestinationIsExit5AndTheAfterHookSeesIt() throws {
        try Fixtures.makeTree(at: path("src"), files: ["a.txt": "a\n"])
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(path("dest")), mode: 0o700)
        var buffer = [CChar](repeating: 0, count: 256)
        gethostname(&buffer, buffer.count - 1)
        let host = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // This test process is alive on this host, so the lock is not stale.
        try "{\"pid\": \(getpid()), \"host\": \"\(host)\", \"started\": \"2026-01-01T00:00:00Z\", \"operation\": \"backup\"}\n"
            .write(toFile: path("dest/keepsake.lock"), atomically: false, encoding: .utf8)
        try writeConfig(homeProfile(after: "echo \"$KEEPSAKE_STATUS $KEEPSAKE_EXIT_CODE\" > \(path("after.txt"))"))
        let outcome = try keepsakeRun(["run", "home"])
        assertExit(outcome, 5)
        XCTAssertEqual(read(path("after.txt")), "failure 5\n")
    }

    func testVerboseAndJSONOutput() throws {
        try Fixtures.makeTree(at: path("src"), files: ["a.txt": "a\n", "b.txt": "bb\n"])
        try writeConfig(homeProfile(extra: "tags = [\"nightly\"]\n[profiles.home.retention]\nkeep-last = 1\n"))
        let verbose = try keepsakeRun(["run", "home", "--verbose"])
        assertExit(verbose, 0)
        for label in ["Profile:", "Backup:", "Pruned:", "Verified:", "intact (2 files"] {
            XCTAssertTrue(verbose.stdoutText.contains(label), "--verbose shows \(label):\n\(verbose)")
        }

        let outcome = try keepsakeRun(["run", "home", "--json"])
        assertExit(outcome, 0)
        let document = try json(outcome)
        XCTAssertEqual(document["profile"] as? String, "home")
        XCTAssertEqual(document["config"] as? String, configFile)
        XCTAssertEqual(document["exit_code"] as? Int, 0)
        XCTAssertEqual(document["status"] as? String, "success")
        let backup = try XCTUnwrap(document["backup"] as? [String: Any])
        let id = try XCTUnwrap(backup["id"] as? String)
        XCTAssertEqual(backup["tags"] as? [String], ["nightly"])
        // The same object `backup --json` prints, but for its exit_code.
        for key in ["kind", "chain", "host", "destination", "archive_sha256", "new_files", "encryption"] {
            XCTAssertTrue(backup.keys.contains(key), "run's backup object lacks '\(key)': \(backup.keys.sorted())")
        }
        let prune = try XCTUnwrap(document["prune"] as? [String: Any])
        for key in ["policy", "destination", "dry_run", "freed_bytes"] {
            XCTAssertTrue(prune.keys.contains(key), "run's prune object lacks '\(key)': \(prune.keys.sorted())")
        }
        XCTAssertEqual(prune["kept"] as? [String], [id])
        XCTAssertEqual((prune["removed"] as? [String])?.count, 1)
        let verify = try XCTUnwrap(document["verify"] as? [String: Any])
        XCTAssertEqual(verify["intact"] as? Bool, true)
        XCTAssertEqual(verify["id"] as? String, id)
        XCTAssertEqual(try backupIDs(in: path("dest")), [id])
    }

    func testConfigurationErrorsNameFileLineAndColumn() throws {
        try writeConfig("""
            [profiles.home]
            sources = ["/srv"]
            exlude = ["*.tmp"]
            level = "high"
            """)
        let outcome = try keepsakeRun(["run", "home"])
        assertExit(outcome, 1)
        XCTAssertEqual(outcome.stdoutText, "")
        XCTAssertEqual(outcome.stderrText, """
            Error: \(configFile):3:1: unknown key 'exlude' in profile 'home'; did you mean 'exclude'?
            Error: \(configFile):4:1: 'level' must be a whole number, not a string

            """)

        try writeConfig("[profiles.home]\nsources = [\"/srv\"]\n[profiles.db]\nsources = [\"/var\"]\n")
        let missing = try keepsakeRun(["run", "hme"])
        assertExit(missing, 1)
        XCTAssertEqual(missing.stderrText, "Error: no profile 'hme' in \(configFile); profiles: home, db; did you mean 'home'?\n")

        let noFile = try keepsakeRun(["run", "home", "--config", path("nothing.toml")])
        assertExit(noFile, 1)
        XCTAssertTrue(noFile.stderrText.hasPrefix("Error: No configuration file at \(path("nothing.toml")); create it"),
                      noFile.description)
        XCTAssertTrue(noFile.stderrText.contains("[profiles.home]\nsources = ["), noFile.description)
    }

    // MARK: schedule

    /// The binary's path as /proc/self/exe reports it (symlinks resolved).
    private func resolvedBinary() throws -> String {
        let resolved = try XCTUnwrap(realpath(keepsake.executable, nil))
        defer { free(resolved) }
        return String(cString: resolved)
    }

    func testSchedulePrintsCrontabLineAndSystemdUnitsForEachForm() throws {
        try writeConfig("[profiles.home]\nsources = [\"/srv\"]\n")
        let binary = try resolvedBinary()
        let command = "\(binary) run home --config \(configFile) --quiet"
        let forms: [([String], String, String)] = [
            (["--daily", "02:30"], "30 2 * * *", "*-*-* 02:30:00"),
            (["--daily", "7:05"], "5 7 * * *", "*-*-* 07:05:00"),
            (["--hourly"], "0 * * * *", "*-*-* *:00:00"),
            (["--hourly", "15"], "15 * * * *", "*-*-* *:15:00"),
            (["--weekly", "sun", "02:30"], "30 2 * * 0", "Sun *-*-* 02:30:00"),
            (["--weekly", "Monday", "23:59"], "59 23 * * 1", "Mon *-*-* 23:59:00"),
        ]
        for (options, cron, calendar) in forms {
            let outcome = try keepsakeRun(["schedule", "home"] + options)
            assertExit(outcome, 0, "\(options)")
            let text = outcome.stdoutText
            let lines = text.split(separator: "\n").map(String.init)
            XCTAssertTrue(lines.contains("\(cron) \(command) # keepsake:home"), "crontab line for \(options):\n\(text)")
            XCTAssertTrue(lines.contains("ExecStart=\(command)"), text)
            XCTAssertTrue(lines.contains("OnCalendar=\(calendar)"), "OnCalendar for \(options):\n\(text)")
            XCTAssertTrue(lines.contains("Persistent=true"), text)
            XCTAssertTrue(lines.contains("# ~/.config/systemd/user/keepsake-home.service"), text)
            XCTAssertTrue(lines.contains("# ~/.config/systemd/user/keepsake-home.timer"), text)
            XCTAssertTrue(text.contains("systemctl --user daemon-reload && systemctl --user enable --now keepsake-home.timer"), text)
            XCTAssertTrue(lines.contains("WantedBy=timers.target"), text)
        }

        for bad in [["--daily", "24:00"], ["--hourly", "60"], ["--weekly", "someday", "02:30"], ["--weekly", "sun"], []] {
            assertExit(try keepsakeRun(["schedule", "home"] + bad), 2, "\(bad) is a usage error")
        }
        assertExit(try keepsakeRun(["schedule", "nope", "--daily", "02:30"]), 1, "an unknown profile")
    }

    func testInstallReplacesTheProfileLineAndKeepsOthers() throws {
        try writeConfig("[profiles.home]\nsources = [\"/srv\"]\n")
        // A stand-in for crontab(1), first in PATH: Debian's cron package is not installed on
        // the test machine, so this script keeps "the crontab" in a file instead. It answers
        // -l like the real one (including "no crontab for USER" and exit 1 when there is none)
        // and stores what `crontab -` reads.
        let bin = path("bin")
        let store = path("crontab.txt")
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        try """
            #!/bin/sh
            case "$1" in
              -l) if [ -f "\(store)" ]; then cat "\(store)"; else echo "no crontab for $(id -un)" >&2; exit 1; fi ;;
              -) cat > "\(store)" ;;
              *) echo "unexpected arguments: $*" >&2; exit 2 ;;
            esac
            """.write(toFile: bin + "/crontab", atomically: true, encoding: .utf8)
        chmod(bin + "/crontab", 0o755)
        let environment: [String: String?] = ["PATH": bin + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")]
        let command = "\(try resolvedBinary()) run home --config \(configFile) --quiet # keepsake:home"

        assertExit(try keepsakeRun(["schedule", "home", "--daily", "02:30", "--install"], environment: environment), 0)
        XCTAssertEqual(read(store), "30 2 * * * \(command)\n")
        assertExit(try keepsakeRun(["schedule", "home", "--daily", "02:30", "--install"], environment: environment), 0)
        XCTAssertEqual(read(store), "30 2 * * * \(command)\n", "installing twice leaves one line")

        try "MAILTO=ana\n0 5 * * * /usr/bin/other # mine\n30 2 * * * /old/keepsake run home # keepsake:home\n"
            .write(toFile: store, atomically: true, encoding: .utf8)
        let outcome = try keepsakeRun(["schedule", "home", "--weekly", "sat", "04:00", "--install"], environment: environment)
        assertExit(outcome, 0)
        XCTAssertEqual(read(store), "MAILTO=ana\n0 5 * * * /usr/bin/other # mine\n0 4 * * 6 \(command)\n")
        XCTAssertTrue(outcome.stderrText.contains("Replaced the crontab line of profile 'home'"), outcome.description)
    }

    func testInstallWithoutCrontabFailsAndPointsAtSystemd() throws {
        try writeConfig("[profiles.home]\nsources = [\"/srv\"]\n")
        let empty = path("empty-bin")
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        let outcome = try keepsakeRun(["schedule", "home", "--daily", "02:30", "--install"], environment: ["PATH": empty])
        assertExit(outcome, 1)
        XCTAssertTrue(outcome.stderrText.contains("The crontab program is not installed"), outcome.description)
        XCTAssertTrue(outcome.stderrText.contains("the systemd user units above work without cron"), outcome.description)
        XCTAssertTrue(outcome.stdoutText.contains("OnCalendar=*-*-* 02:30:00"), "the units are still printed:\n\(outcome)")
    }
}
