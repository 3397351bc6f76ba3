import Foundation
import XCTest

/// `--profile NAME` (and `KEEPSAKE_PROFILE`) on every command that reads or writes a
/// destination, hints that run when pasted, and a whole restore that needs `--target`: the
/// built binary, a real configuration file, encrypted backups and a real shell.
final class ProfileOptionTests: EndToEndTestCase {
    // MARK: State

    private var source = ""
    private var dest = ""
    private var offsite = ""
    private var config = ""
    private var identity = ""
    /// A folder no test writes to: commands run from here, so nothing lands by accident.
    private var elsewhere = ""

    override func setUpWithError() throws {
        try super.setUpWithError()
        source = path("src")
        dest = path("backups here")
        offsite = path("offsite")
        config = path("keepsake.toml")
        identity = path("identity.txt")
        elsewhere = path("elsewhere")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(elsewhere))
        try Fixtures.makeTree(at: source, files: ["notes.txt": "first\n", "sub/plan.md": "plan\n"])
        let keygen = try run(["keygen", "--output", identity])
        assertExit(keygen, 0)
        let recipient = keygen.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        try """
            [profiles.home]
            sources = ["\(source)"]
            destination = "\(dest)"
            copy-to = ["\(offsite)"]
            recipients = ["\(recipient)"]
            identity-file = "\(identity)"

            [profiles.home.retention]
            keep-last = 2

            [profiles.bare]
            sources = ["\(source)"]
            destination = "\(dest)"

            """.write(toFile: config, atomically: true, encoding: .utf8)
    }

    /// `keepsake ARGUMENTS` run from `elsewhere`.
    private func runElsewhere(_ arguments: [String], environment: [String: String?] = [:]) throws -> ProcessRunner.Outcome {
        try run(arguments, environment: environment, currentDirectory: elsewhere)
    }

    /// Two nightly runs of profile 'home' (encrypted, copied off-site); returns their ids.
    private func twoNights() throws -> [String] {
        assertExit(try run(["run", "home", "--config", config]), 0)
        try Data("second\n".utf8).write(to: URL(fileURLWithPath: source + "/notes.txt"))
        assertExit(try run(["run", "home", "--config", config]), 0)
        let listed = try runElsewhere(["list", "--ids", "--profile", "home", "--config", config])
        assertExit(listed, 0)
        return listed.stdoutText.split(separator: "\n").map(String.init)
    }

    // MARK: Every command

    /// Every command finds the profile's destination and opens its encrypted backups with the
    /// profile's identity, with no --dest and no --identity; options given win.
    func testEveryDestinationCommandTakesTheProfile() throws {
        let ids = try twoNights()
        guard ids.count == 2 else { return XCTFail("keep-last 2 keeps both nights, listed: \(ids)") }
        let profile = ["--profile", "home", "--config", config]

        let found = try runElsewhere(["find", "notes.txt", "--json"] + profile)
        assertExit(found, 0)
        XCTAssertEqual((try json(found)["matches"] as? [Any])?.count, 2, found.stdoutText)

        let diff = try runElsewhere(["diff", ids[0], ids[1], "--json"] + profile)
        assertExit(diff, 0)
        XCTAssertEqual((try json(diff)["modified"] as? [[String: Any]])?.count, 1, diff.stdoutText)

        let target = path("restored")
        assertExit(try runElsewhere(["restore", "latest", "--target", target] + profile), 0)
        XCTAssertEqual(try String(contentsOfFile: restored(source, into: target) + "/notes.txt", encoding: .utf8), "second\n")

        let verified = try runElsewhere(["verify", "--json"] + profile)
        assertExit(verified, 0)
        XCTAssertEqual(try json(verified)["intact"] as? Int, 2, verified.stdoutText)

        assertExit(try runElsewhere(["repair"] + profile), 0)

        // prune applies the profile's policy when no rule is given.
        let pruned = try runElsewhere(["prune", "--dry-run", "--json"] + profile)
        assertExit(pruned, 0)
        XCTAssertEqual((try json(pruned)["removed"] as? [Any])?.count, 0, pruned.stdoutText)

        // copy goes from the profile's destination to its copy-to.
        _ = try tool("rm", ["-rf", offsite])
        let copied = try runElsewhere(["copy", "--json"] + profile)
        assertExit(copied, 0)
        XCTAssertEqual((try json(copied)["copied"] as? [Any])?.count, 2, copied.stdoutText)
        XCTAssertEqual(try runElsewhere(["list", "--ids", "--dest", offsite]).stdoutText.split(separator: "\n").map(String.init), ids)

        // The environment names the profile as well; --dest given wins over the profile's.
        let environment = ["KEEPSAKE_PROFILE": "home", "KEEPSAKE_CONFIG": config]
        XCTAssertEqual(try runElsewhere(["list", "--ids"], environment: environment).stdoutText.split(separator: "\n").map(String.init), ids)
        let other = try runElsewhere(["list", "--dest", path("empty"), "--json"], environment: environment)
        assertExit(other, 0)
        XCTAssertEqual((try json(other)["backups"] as? [Any])?.count, 0, other.stdoutText)

        // Without the profile there is no key: the encrypted backup does not open.
        let keyless = try runElsewhere(["restore", "latest", "--dest", dest, "--target", path("keyless"), "--no-input"])
        XCTAssertEqual(keyless.exitCode, 6, "\(keyless)")
        // What to give, and never a new key: one made now cannot open what was encrypted before.
        XCTAssertTrue(keyless.stderrText.contains("--identity FILE") && keyless.stderrText.contains("--profile NAME"), "\(keyless)")
        XCTAssertFalse(keyless.stderrText.contains("keygen"), "\(keyless)")
        XCTAssertTrue(keyless.stderrText.contains("keepsake list --json --dest"), "\(keyless)")
    }

    /// A profile the environment names wrongly says so; prune with a profile that has no
    /// policy and copy with no copy-to are usage errors that say what to give.
    func testAProfileThatCannotServeSaysWhatToDo() throws {
        let misnamed = try runElsewhere(["list"], environment: ["KEEPSAKE_PROFILE": "hme", "KEEPSAKE_CONFIG": config])
        assertExit(misnamed, 1)
        XCTAssertTrue(misnamed.stderrText.contains("no profile 'hme'") && misnamed.stderrText.contains("KEEPSAKE_PROFILE")
                      && misnamed.stderrText.contains("did you mean 'home'"), misnamed.stderrText)

        let prune = try runElsewhere(["prune", "--profile", "bare", "--config", config])
        assertExit(prune, 2)
        XCTAssertTrue(prune.stderrText.contains("Profile 'bare' has no retention policy"), prune.stderrText)

        let copy = try runElsewhere(["copy", "--profile", "bare", "--config", config])
        assertExit(copy, 2)
        XCTAssertTrue(copy.stderrText.contains("--to <where>"), copy.stderrText)
    }

    /// A hook of `keepsake run` that calls keepsake reaches the profile's destination and
    /// keys by itself (KEEPSAKE_PROFILE and KEEPSAKE_CONFIG), though the file is not the
    /// default one.
    func testAHookFindsItsProfilesBackups() throws {
        let out = path("hook-list.txt")
        try """
            [profiles.hooked]
            sources = ["\(source)"]
            destination = "\(dest)"
            after = "'\(keepsake.executable)' list --ids > '\(out)'"

            """.write(toFile: config, atomically: true, encoding: .utf8)
        let night = try run(["run", "hooked", "--config", config, "--json"])
        assertExit(night, 0)
        let id = try XCTUnwrap((try json(night)["backup"] as? [String: Any])?["id"] as? String)
        XCTAssertEqual(try String(contentsOfFile: out, encoding: .utf8), id + "\n")
    }

    // MARK: Hosts

    /// `backup --host NAME` records the backup, its file names and its chain under NAME; a
    /// profile's `host` does the same for `run`, whose prune keeps to that host's backups,
    /// and brings the host to the other commands' `latest`.
    func testAHostNameGivenIsTheBackupsHost() throws {
        let first = try json(try run(["backup", source, "--dest", dest, "--host", "web-1", "--json"]))
        XCTAssertEqual(first["host"] as? String, "web-1")
        XCTAssertTrue((first["archive"] as? String)?.hasPrefix("web-1_") == true, "\(first)")
        let second = try json(try run(["backup", source, "--dest", dest, "--host", "web-1", "--json"]))
        XCTAssertEqual(second["kind"] as? String, "incremental", "web-1's chain goes on")
        XCTAssertEqual(second["parent"] as? String, first["id"] as? String)
        let own = try json(try run(["backup", source, "--dest", dest, "--json"]))
        XCTAssertEqual(own["kind"] as? String, "full", "this machine's own chain is another")

        let target = path("web-1")
        let restoredWeb = try json(try runElsewhere(["restore", "latest", "--dest", dest, "--host", "web-1", "--target", target,
                                                     "--json"]))
        XCTAssertEqual(restoredWeb["source"] as? String, second["id"] as? String, "\(restoredWeb)")

        try """
            [profiles.web]
            sources = ["\(source)"]
            destination = "\(dest)"
            host = "web-1"

            [profiles.web.retention]
            keep-last = 1

            """.write(toFile: config, atomically: true, encoding: .utf8)
        let night = try json(try run(["run", "web", "--config", config, "--json"]))
        let newest = try XCTUnwrap((night["backup"] as? [String: Any])?["id"] as? String, "\(night)")
        XCTAssertEqual((night["backup"] as? [String: Any])?["host"] as? String, "web-1")
        let pruned = try XCTUnwrap(night["prune"] as? [String: Any])
        let decisions = try XCTUnwrap(pruned["decisions"] as? [[String: Any]])
        XCTAssertEqual(Set(decisions.compactMap { $0["host"] as? String }), ["web-1"], "the run prunes web-1's backups only")
        XCTAssertEqual(decisions.count, 3)
        XCTAssertTrue(try runElsewhere(["list", "--ids", "--dest", dest]).stdoutText.contains(own["id"] as? String ?? "?"),
                      "this machine's backup is not web-1's to prune")
        let listed = try runElsewhere(["list", "--long", "--dest", dest, "--host", "web-1"])
        XCTAssertTrue(listed.stdoutText.contains("HOST") && listed.stdoutText.contains("web-1"), listed.stdoutText)
        let fromProfile = try json(try runElsewhere(["restore", "latest", "--profile", "web", "--config", config, "--target",
                                                     path("from-profile"), "--dry-run", "--json"]))
        XCTAssertEqual(fromProfile["source"] as? String, newest, "\(fromProfile)")

        assertExit(try run(["backup", source, "--dest", dest, "--host", "web 1"]), 2)
        let badConfig = path("bad.toml")
        try "[profiles.bad]\nsources = [\"\(source)\"]\nhost = \"web 1\"\n".write(toFile: badConfig, atomically: true, encoding: .utf8)
        let bad = try run(["run", "bad", "--config", badConfig])
        assertExit(bad, 1)
        XCTAssertTrue(bad.stderrText.contains("'host'"), bad.stderrText)
    }

    /// `run` prunes as `prune` does: what the kept backup takes from the one let go is
    /// copied into a supplement, and that backup removed; with `keep-chains = true` in the
    /// retention table it is kept (`needed by ID`), by `run` and by `prune --profile` alike.
    func testAProfilesKeepChainsKeepsWhatKeptBackupsTakeFilesFrom() throws {
        try """
            [profiles.lean]
            sources = ["\(source)"]
            destination = "\(path("lean"))"
            [profiles.lean.retention]
            keep-last = 1

            [profiles.chains]
            sources = ["\(source)"]
            destination = "\(path("chains"))"
            [profiles.chains.retention]
            keep-last = 1
            keep-chains = true

            """.write(toFile: config, atomically: true, encoding: .utf8)
        var ids: [String: [String]] = [:]
        for night in 0..<2 {
            try Data("night \(night)\n".utf8).write(to: URL(fileURLWithPath: source + "/notes.txt"))
            for profile in ["lean", "chains"] {
                let outcome = try run(["run", profile, "--config", config, "--json"])
                assertExit(outcome, 0)
                ids[profile, default: []].append(try XCTUnwrap((try json(outcome)["backup"] as? [String: Any])?["id"] as? String))
            }
        }
        func listed(_ profile: String) throws -> [String] {
            try runElsewhere(["list", "--ids", "--profile", profile, "--config", config]).stdoutText.split(separator: "\n").map(String.init)
        }
        XCTAssertEqual(try listed("lean"), [ids["lean"]?[1] ?? "?"], "the first night's backup goes, its files in a supplement")
        XCTAssertEqual(try names(in: path("lean")).filter { $0.hasSuffix(".supplement.jsonl.zst") }.count, 1)
        XCTAssertEqual(try listed("chains"), ids["chains"] ?? [], "keep-chains keeps what the kept backup takes files from")
        let dry = try json(try runElsewhere(["prune", "--profile", "chains", "--config", config, "--dry-run", "--json"]))
        let decisions = try XCTUnwrap(dry["decisions"] as? [[String: Any]])
        XCTAssertEqual(decisions.last?["reasons"] as? [String], ["needed by \(ids["chains"]?[1] ?? "?")"], "\(dry)")
        let target = path("restored")
        assertExit(try runElsewhere(["restore", "latest", "--profile", "lean", "--config", config, "--target", target, "--quiet"]), 0)
        XCTAssertEqual(try String(contentsOfFile: restored(source, into: target) + "/sub/plan.md", encoding: .utf8), "plan\n")
    }

    // MARK: Pasting

    /// The command a hint names is run as pasted, by a shell, from another folder: it
    /// carries the --dest (quoted: the path has a space) or the --profile given, and works.
    func testHintsWorkWhenPasted() throws {
        let id = try backup([source], dest: dest)
        for given in [["--dest", dest], ["--profile", "bare", "--config", config]] {
            let failed = try runElsewhere(["restore", "nosuch", "--target", path("t")] + given)
            assertExit(failed, 1)
            let command = try XCTUnwrap(quotedCommand(in: failed.stderrText), failed.stderrText)
            let pasted = try paste(command)
            XCTAssertEqual(pasted.exitCode, 0, "\(command)\n\(pasted)")
            XCTAssertTrue(pasted.stdoutText.contains(id), "\(command)\n\(pasted)")
        }

        // find's hint restores the one file it found, into the folder the shell is in.
        let found = try runElsewhere(["find", "plan.md", "--dest", dest])
        assertExit(found, 0)
        let lines = found.stderrText.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let restore = try XCTUnwrap(lines.first { $0.hasPrefix("keepsake restore") }, found.stderrText)
        let into = path("into")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(into))
        let pasted = try paste(restore, in: into)
        XCTAssertEqual(pasted.exitCode, 0, "\(restore)\n\(pasted)")
        XCTAssertEqual(try String(contentsOfFile: restored(source, into: into) + "/sub/plan.md", encoding: .utf8), "plan\n")
        XCTAssertFalse(FileManager.default.fileExists(atPath: restored(source, into: into) + "/notes.txt"), "only the file found")
    }

    /// `restore latest PATH` for a path deleted before the latest backup names the backups
    /// that still hold it, and the command it gives, pasted, restores it from the newest.
    func testAPathDeletedBeforeLatestNamesTheBackupsThatHoldIt() throws {
        let first = try backup([source], dest: dest)
        XCTAssertEqual(unlink(source + "/sub/plan.md"), 0)
        let second = try backup([source], dest: dest)
        for given in ["plan.md", source + "/sub/plan.md"] {
            let failed = try runElsewhere(["restore", "latest", given, "--dest", dest])
            assertExit(failed, 1)
            XCTAssertTrue(failed.stderrText.contains("Nothing in backup \(second) matches") && failed.stderrText.contains(first),
                          failed.stderrText)
            let command = try XCTUnwrap(quotedCommand(in: failed.stderrText.components(separatedBy: "backups that hold it").last ?? ""),
                                        failed.stderrText)
            XCTAssertTrue(command.hasPrefix("keepsake restore \(first) "), command)
            let into = path("into-\(given.count)")
            try RawFileSystem.makeDirectory(RawFileSystem.bytes(into))
            let pasted = try paste(command, in: into)
            XCTAssertEqual(pasted.exitCode, 0, "\(command)\n\(pasted)")
            XCTAssertEqual(try String(contentsOfFile: restored(source, into: into) + "/sub/plan.md", encoding: .utf8), "plan\n")
        }
        let nowhere = try runElsewhere(["restore", "latest", "never-was.txt", "--dest", dest])
        assertExit(nowhere, 1)
        XCTAssertFalse(nowhere.stderrText.contains("backups that hold it"), nowhere.stderrText)
    }

    /// The first command quoted in `text` ('…' or `…`), without its quotes.
    private func quotedCommand(in text: String) -> String? {
        for quote in ["`", "'"] {
            guard let start = text.range(of: quote + "keepsake ") else { continue }
            let rest = text[start.upperBound...]
            guard let end = rest.range(of: quote) else { continue }
            return "keepsake " + rest[..<end.lowerBound]
        }
        return nil
    }

    /// Runs `command` as a shell would when it is pasted, with this test's keepsake first
    /// on PATH and its HOME.
    private func paste(_ command: String, in folder: String? = nil) throws -> ProcessRunner.Outcome {
        let bin = path("bin")
        if !FileManager.default.fileExists(atPath: bin + "/keepsake") {
            try RawFileSystem.makeDirectory(RawFileSystem.bytes(bin))
            try FileManager.default.createSymbolicLink(atPath: bin + "/keepsake", withDestinationPath: keepsake.executable)
        }
        let environment = keepsake.baseEnvironment.filter { $0.key != "PATH" }.map { "\($0.key)=\($0.value)" }.sorted()
        return try tool("env", ["-i"] + environment + ["PATH=\(bin):/usr/bin:/bin", "sh", "-c", command],
                        currentDirectory: folder ?? elsewhere)
    }

    // MARK: Whole restores

    /// A whole backup restores only where --target says (off a terminal, without it: a usage
    /// error that writes nothing); chosen paths still land in the current folder.
    func testAWholeRestoreNeedsATarget() throws {
        let id = try backup([source], dest: dest)
        let refused = try runElsewhere(["restore", id, "--dest", dest])
        assertExit(refused, 2)
        XCTAssertTrue(refused.stderrText.contains("--target <dir>"), refused.stderrText)
        XCTAssertEqual(try names(in: elsewhere), [], "nothing was written")
        let lone = try onlyArchive(in: dest)
        assertExit(try runElsewhere(["restore", lone]), 2)
        assertExit(try runElsewhere(["restore", id, "--dest", dest, "--dry-run"]), 0)

        assertExit(try runElsewhere(["restore", id, "--dest", dest, "--target", "."]), 0)
        XCTAssertEqual(try String(contentsOfFile: restored(source, into: elsewhere) + "/notes.txt", encoding: .utf8), "first\n")
        let chosen = path("chosen")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(chosen))
        assertExit(try run(["restore", id, String(source.dropFirst()) + "/sub/plan.md", "--dest", dest], currentDirectory: chosen), 0)
        XCTAssertTrue(FileManager.default.fileExists(atPath: restored(source, into: chosen) + "/sub/plan.md"))
    }
}
