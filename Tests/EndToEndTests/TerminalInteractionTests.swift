import Foundation
import XCTest

/// The picker and prompts on a real pseudo-terminal: tmux runs `keepsake`, send-keys
/// types, capture-pane reads the screen.
final class TerminalInteractionTests: EndToEndTestCase {
    // MARK: tmux

    /// Which tmux server a test talks to (a test may start a second one).
    private var session = 1
    private var socket: String { path("tmux\(session).sock") }

    override func tearDownWithError() throws {
        for number in 1...session { _ = try? ProcessRunner.run("tmux", ["-S", path("tmux\(number).sock"), "kill-server"]) }
        try super.tearDownWithError()
    }

    /// Starts `keepsake ARGUMENTS` in a detached 100×30 tmux session; its exit code is
    /// written to `status` when it ends.
    private func startInTerminal(_ arguments: [String], status: String, term: String = "xterm-256color",
                                 extra: [String: String] = [:], directory: String? = nil) throws {
        var environment = keepsake.baseEnvironment.filter { ["HOME", "XDG_DATA_HOME", "NO_COLOR", "LC_ALL", "PATH"].contains($0.key) }
        environment.merge(extra) { $1 }
        let assignments = environment.map { "\($0.key)=\(shellQuoted($0.value))" }.sorted().joined(separator: " ")
        let command = (directory.map { "cd \(shellQuoted($0)) && " } ?? "") + "env -i \(assignments) TERM=\(term) \(shellQuoted(keepsake.executable)) "
            + arguments.map(shellQuoted).joined(separator: " ") + "; echo $? > \(shellQuoted(status)); sleep 30"
        // tmux forks its server off the client; Foundation's Process does not notice such a
        // client end here, so it is spawned and reaped directly.
        XCTAssertEqual(try spawnAndWait(["tmux", "-S", socket, "new-session", "-d", "-x", "100", "-y", "30", "sh", "-c", command]), 0)
    }

    /// Runs a program from PATH with stdio on /dev/null and returns its exit status.
    private func spawnAndWait(_ arguments: [String]) throws -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for fd: Int32 in [0, 1, 2] {
            posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
        }
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        guard posix_spawnp(&pid, arguments[0], &actions, nil, &argv, environ) == 0 else {
            throw ProcessRunner.Failure(description: "cannot start \(arguments[0])")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return (status >> 8) & 0xff
    }

    private func shellQuoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    private func screen() throws -> String {
        String(decoding: try tool("tmux", ["-S", socket, "capture-pane", "-p"]).stdout, as: UTF8.self)
    }

    /// Whether the shell wrote keepsake's exit status whole (the file exists a moment before its line does).
    private func statusWritten(_ status: String) -> Bool {
        guard let text = try? String(contentsOfFile: status, encoding: .utf8) else { return false }
        return text.hasSuffix("\n")
    }

    /// Waits up to `seconds` (a bound against hanging, generous for a loaded machine) for `condition`.
    private func waitFor(_ condition: () throws -> Bool, what: String, seconds: TimeInterval = 20) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return }
            usleep(50_000)
        }
        XCTFail("timed out waiting for \(what); screen:\n\(try screen())")
    }

    /// Runs `keepsake ARGUMENTS` in a terminal to its end and returns the screen with its
    /// escape sequences (and `scrollback` lines above it).
    private func finishedScreen(_ arguments: [String], status: String, term: String = "xterm-256color",
                                extra: [String: String] = [:], scrollback: Int = 0) throws -> String {
        try startInTerminal(arguments, status: status, term: term, extra: extra)
        try waitFor({ statusWritten(status) }, what: "keepsake \(arguments.first ?? "") to finish",
                    seconds: 90)
        usleep(100_000)
        let range = scrollback > 0 ? ["-S", "-\(scrollback)"] : []
        return String(decoding: try tool("tmux", ["-S", socket, "capture-pane", "-p", "-e"] + range).stdout, as: UTF8.self)
    }

    private func keys(_ keys: String...) throws {
        try toolSucceeds("tmux", ["-S", socket, "send-keys"] + keys)
    }

    // MARK: Tests

    func testRestoreWithoutAnIDLetsThePersonPickABackup() throws {
        let source = path("src")
        let dest = path("dest")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(source))
        for round in ["first", "second", "third"] {
            try Data(round.utf8).write(to: URL(fileURLWithPath: source + "/note.txt"))
            try backup([source], dest: dest, options: ["--quiet"])
        }
        let status = path("status")
        let target = path("target")
        try startInTerminal(["restore", "--dest", dest, "--target", target], status: status)
        try waitFor({ try screen().contains("Choose a backup") }, what: "the picker")
        let shown = try screen()
        XCTAssertTrue(shown.contains("Restore"), shown)
        // Newest first: one step down is the second backup.
        try keys("Down")
        try keys("Enter")
        try waitFor({ statusWritten(status) }, what: "keepsake to finish")
        usleep(100_000)
        XCTAssertEqual(try String(contentsOfFile: status, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines), "0")
        XCTAssertEqual(try String(contentsOfFile: restored(source, into: target) + "/note.txt", encoding: .utf8), "second")
    }

    func testEscapeCancelsThePickerAndRestoresNothing() throws {
        let source = path("src")
        let dest = path("dest")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(source))
        try Data("x".utf8).write(to: URL(fileURLWithPath: source + "/note.txt"))
        try backup([source], dest: dest, options: ["--quiet"])
        let status = path("status")
        let target = path("target")
        try startInTerminal(["restore", "--dest", dest, "--target", target], status: status)
        try waitFor({ try screen().contains("Choose a backup") }, what: "the picker")
        try keys("Escape")
        try waitFor({ statusWritten(status) }, what: "keepsake to finish")
        usleep(100_000)
        XCTAssertEqual(try String(contentsOfFile: status, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines), "1")
        let shown = try screen()
        XCTAssertTrue(shown.contains("cancelled"), shown)
        XCTAssertFalse(FileManager.default.fileExists(atPath: restored(source, into: target) + "/note.txt"))
    }

    /// A whole backup without --target asks before it lands in the current folder: no
    /// restores nothing (exit 1), yes restores there.
    func testAWholeRestoreIntoTheCurrentFolderIsAskedFirst() throws {
        let source = path("src")
        let dest = path("dest")
        let here = path("here")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(source))
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(here))
        try Data("x".utf8).write(to: URL(fileURLWithPath: source + "/note.txt"))
        let id = try backup([source], dest: dest, options: ["--quiet"])
        for (answer, code) in [("no", "1"), ("yes", "0")] {
            let status = path("status-\(answer)")
            try startInTerminal(["restore", id, "--dest", dest], status: status, directory: here)
            try waitFor({ try screen().contains("into the current folder") }, what: "the question")
            XCTAssertEqual(try names(in: here), [], "nothing is written before the answer")
            try keys("-l", answer)
            try keys("Enter")
            try waitFor({ statusWritten(status) }, what: "keepsake to finish")
            XCTAssertEqual(try String(contentsOfFile: status, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines), code)
            let shown = try screen()
            XCTAssertEqual(FileManager.default.fileExists(atPath: restored(source, into: here) + "/note.txt"), answer == "yes", shown)
            session += 1
        }
    }

    func testWithoutATerminalTheBackupMustBeNamed() throws {
        let outcome = try run(["restore", "--dest", path("dest")])
        assertExit(outcome, 2)
        XCTAssertTrue(outcome.stderrText.contains("Missing expected argument 'BACKUP'"), outcome.stderrText)
    }

    func testNoInputForbidsThePickerEvenOnATerminal() throws {
        let source = path("src")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(source))
        try backup([source], dest: path("dest"), options: ["--quiet"])
        let status = path("status")
        try startInTerminal(["restore", "--dest", path("dest"), "--no-input"], status: status)
        try waitFor({ statusWritten(status) }, what: "keepsake to finish")
        usleep(100_000)
        XCTAssertEqual(try String(contentsOfFile: status, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines), "2")
    }

    func testThePassphraseIsAskedTwiceWithoutEchoAndOnceToRestore() throws {
        let source = path("src")
        let dest = path("dest")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(source))
        try Data("secret notes".utf8).write(to: URL(fileURLWithPath: source + "/note.txt"))
        let status = path("status")
        try startInTerminal(["backup", source, "--dest", dest, "--passphrase"], status: status)
        try waitFor({ try screen().contains("Passphrase:") }, what: "the passphrase prompt")
        try keys("-l", "sesame seed")
        try keys("Enter")
        try waitFor({ try screen().contains("Repeat passphrase:") }, what: "the confirmation prompt")
        try keys("-l", "sesame seed")
        try keys("Enter")
        try waitFor({ statusWritten(status) }, what: "keepsake to finish")
        usleep(100_000)
        let shown = try screen()
        XCTAssertEqual(try String(contentsOfFile: status, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines), "0", shown)
        XCTAssertFalse(shown.contains("sesame"), "the passphrase was echoed:\n\(shown)")
        XCTAssertTrue(try FileManager.default.contentsOfDirectory(atPath: dest).contains { $0.hasSuffix(".tar.zst.age") })

        // A server of its own for the restore (the first one may still be going away).
        session = 2
        try? FileManager.default.removeItem(atPath: status)
        let target = path("target")
        try startInTerminal(["restore", "latest", "--dest", dest, "--target", target], status: status)
        try waitFor({ try screen().contains("Passphrase:") }, what: "the passphrase prompt of restore")
        try keys("-l", "sesame seed")
        try keys("Enter")
        try waitFor({ statusWritten(status) }, what: "the restore to finish")
        usleep(100_000)
        let shownAfterRestore = try screen()
        XCTAssertEqual(try String(contentsOfFile: status, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines), "0",
                       shownAfterRestore)
        XCTAssertEqual(try String(contentsOfFile: restored(source, into: target) + "/note.txt", encoding: .utf8), "secret notes")
    }

    /// On a terminal the backup's summary is a card with the seed's shadow; NO_COLOR keeps
    /// bold but no colour (no-color.org); `--color never` is a plain box with no escapes.
    func testTheSummaryCardHasAShadowAndNoColorKeepsOnlyBold() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "a\n"])
        let styled = try finishedScreen(["backup", source, "--dest", path("dest")], status: path("status"))
        XCTAssertTrue(styled.contains("Backup committed"), styled)
        XCTAssertTrue(styled.contains("░"), "the card casts a shadow:\n\(styled)")
        XCTAssertTrue(styled.contains("\u{1B}[1m"), "bold stays with NO_COLOR:\n\(styled)")
        let colour = try NSRegularExpression(pattern: "\u{1B}\\[[0-9;]*(3[0-7]|9[0-7]|38;5;[0-9]+)m")
        XCTAssertEqual(colour.numberOfMatches(in: styled, range: NSRange(styled.startIndex..., in: styled)), 0,
                       "no colour with NO_COLOR:\n\(styled)")

        session += 1
        let plain = try finishedScreen(["backup", source, "--dest", path("dest"), "--color", "never"], status: path("status-plain"))
        XCTAssertTrue(plain.contains("Backup committed"), plain)
        XCTAssertFalse(plain.contains("░"), "no shadow without styling:\n\(plain)")
        XCTAssertFalse(plain.contains("\u{1B}["), "no escape sequences with --color never:\n\(plain)")
    }

    /// A terminal that cannot redraw (TERM=dumb) gets a plain progress line every few
    /// seconds, as `--progress` gives, and no escape sequence at all.
    func testADumbTerminalGetsPlainProgressLines() throws {
        let source = path("src")
        var files: [String: String] = [:]
        for index in 0..<24 { files["f\(index).txt"] = "file \(index)\n" }
        try Fixtures.makeTree(at: source, files: files)
        let status = path("status")
        // One reader, so the test's pauses (one per read, two for a small file) add up to
        // about ten seconds on any machine: long enough for two plain lines three seconds apart.
        let shown = try finishedScreen(["backup", source, "--dest", path("dest"), "--readers", "1"], status: status, term: "dumb",
                                       extra: ["KEEPSAKE_TEST_READ_PAUSE_MS": "200"], scrollback: 100)
        XCTAssertEqual(try String(contentsOfFile: status, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines), "0")
        let progressLines = shown.split(separator: "\n").filter { $0.contains(" files") && $0.contains("B/s") }
        XCTAssertGreaterThanOrEqual(progressLines.count, 2, "plain progress lines every few seconds:\n\(shown)")
        XCTAssertFalse(shown.contains("\u{1B}["), "no escape sequences on a dumb terminal:\n\(shown)")
    }

    /// On a terminal an error wraps at word boundaries to its width, the later lines
    /// under the message; piped, it stays on one line (for grep).
    func testErrorsWrapAtWordBoundariesOnATerminal() throws {
        let status = path("status")
        let dest = path("no such destination")
        try startInTerminal(["restore", "latest", "--dest", dest, "--target", path("t")], status: status,
                            extra: ["COLUMNS": "50"])
        try waitFor({ statusWritten(status) }, what: "keepsake to fail")
        usleep(100_000)
        let lines = try screen().split(separator: "\n").map(String.init).filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
        let start = try XCTUnwrap(lines.firstIndex { $0.hasPrefix("Error: ") }, "\(lines)")
        let error = Array(lines[start...])
        XCTAssertGreaterThan(error.count, 1, "a long error wraps at 50 columns:\n\(error.joined(separator: "\n"))")
        // The command it names stands whole on a line of its own, to be pasted; only that
        // line may be wider than the terminal.
        let command = "`keepsake list --dest '\(dest)'`"
        XCTAssertTrue(error.contains { $0.trimmingCharacters(in: .whitespaces) == command }, "\(error.joined(separator: "\n"))")
        XCTAssertTrue(error.allSatisfy { $0.count <= 50 || $0.hasSuffix(command) }, "\(error.joined(separator: "\n"))")
        XCTAssertTrue(error.dropFirst().allSatisfy { $0.hasPrefix("       ") }, "hanging indent:\n\(error.joined(separator: "\n"))")

        let piped = try run(["restore", "latest", "--dest", dest, "--target", path("t")], environment: ["COLUMNS": "50"])
        XCTAssertEqual(piped.stderrText.split(separator: "\n").filter { $0.hasPrefix("Error:") }.count, 1)
        XCTAssertEqual(piped.stderrText.split(separator: "\n").count, 1, "one line when piped:\n\(piped)")
    }
}
