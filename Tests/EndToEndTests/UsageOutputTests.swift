import Foundation
import XCTest

/// What `keepsake` says before any command runs: a short usage without arguments, the
/// version as JSON, and usage errors as JSON on stdout when `--json` was asked for.
final class UsageOutputTests: EndToEndTestCase {
    // MARK: Tests

    /// The screen itself is pinned in process (MainScreenTests); here, the real process:
    /// exit 0, and no escape sequences without a terminal.
    func testNoArgumentsPrintsAShortUsageWithThreeExamples() throws {
        let outcome = try run([], environment: ["COLUMNS": "80"])
        assertExit(outcome, 0)
        XCTAssertTrue(outcome.stdoutText.hasPrefix("Usage: keepsake <command> [options]\n"), outcome.stdoutText)
        XCTAssertEqual(outcome.stdoutText.components(separatedBy: "\n  keepsake ").count, 4, "three examples:\n\(outcome)")
        XCTAssertFalse(outcome.stdoutText.contains("\u{1B}"), "no escape sequences without a terminal")
    }

    func testVersionAsJSON() throws {
        let outcome = try run(["--version", "--json"])
        assertExit(outcome, 0)
        let object = try json(outcome)
        XCTAssertEqual(object["name"] as? String, "keepsake")
        XCTAssertNotNil(object["version"] as? String)
    }

    func testUsageErrorsWithJSONPrintAnObjectOnStdout() throws {
        for arguments in [["backup", "--bogus", "--json"], ["restore", "x", "--overwrite", "maybe", "--json"],
                          ["restore", "--json"], ["nonsense", "--json"]] {
            let outcome = try run(arguments)
            assertExit(outcome, 2, arguments.joined(separator: " "))
            let object = try json(outcome)
            XCTAssertEqual(object["exit_code"] as? Int, 2, "\(outcome)")
            XCTAssertFalse((object["error"] as? String ?? "").isEmpty, "\(outcome)")
            XCTAssertTrue(outcome.stderrText.contains("Error:"), "stderr still says it:\n\(outcome)")
        }
        let plain = try run(["backup", "--bogus"])
        XCTAssertTrue(plain.stdoutText.isEmpty, "without --json, nothing on stdout:\n\(plain)")
    }

    /// Every command with `--json` prints exactly one JSON document on stdout whose
    /// `exit_code` is the process's exit status: in success and in failure, streamed listings
    /// too; help gives its specs as data, and completions (a shell script) a usage error.
    func testEveryCommandWithJSONPrintsOneDocumentWithItsExitCode() throws {
        let source = path("src")
        let dest = path("dest")
        try Fixtures.makeTree(at: source, files: ["a.txt": "alpha\n", "b/c.txt": "gamma\n"])
        let first = try backup([source], dest: dest)
        try Data("alpha 2\n".utf8).write(to: URL(fileURLWithPath: source + "/a.txt"))
        let second = try backup([source], dest: dest)
        let config = path("keepsake.toml")
        try "[profiles.home]\nsources = [\"\(source)\"]\ndestination = \"\(dest)\"\n".write(toFile: config, atomically: true, encoding: .utf8)
        let at = ["--dest", dest]
        let commands: [[String]] = [
            ["backup", source] + at, ["backup", source, "--dry-run", "--list"] + at,
            ["list"] + at, ["list", "--ids"] + at, ["list", "latest"] + at, ["list", "latest", "--long"] + at, ["list", "nosuch"] + at,
            ["restore", "latest", "--target", path("r")] + at, ["restore", "latest"] + at,
            ["verify"] + at, ["prune", "--keep-last", "5", "--dry-run"] + at, ["prune"] + at,
            ["copy", "--from", dest, "--to", path("copy")], ["repair"] + at,
            ["diff", first, second] + at, ["find", "c.txt"] + at, ["find", "nothing-matches"] + at,
            ["run", "home", "--config", config], ["schedule", "home", "--daily", "02:30", "--config", config],
            ["keygen", "--output", path("key.txt")], ["keygen"],
            ["help"], ["help", "restore"], ["restore", "--help"], ["--help"], ["--version"], ["completions", "bash"],
        ]
        for command in commands {
            let outcome = try run(command + ["--json"])
            let label = (command + ["--json"]).joined(separator: " ")
            let object = try json(outcome)
            XCTAssertEqual(object["exit_code"] as? Int, Int(outcome.exitCode), "\(label)\n\(outcome)")
            XCTAssertEqual(outcome.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "\n").count, 1,
                           "one compact document: \(label)")
        }
        XCTAssertEqual(try json(try run(["help", "restore", "--json"]))["name"] as? String, "restore")
        XCTAssertTrue(((try json(try run(["help", "--json"]))["commands"] as? [[String: Any]]) ?? []).contains { $0["name"] as? String == "find" })
        assertExit(try run(["completions", "bash", "--json"]), 2)
    }

    /// `keepsake help --man` is a manual page groff reads without a warning, with every
    /// command, the exit codes and the environment.
    func testManualPageRendersCleanly() throws {
        let page = try run(["help", "--man"])
        assertExit(page, 0)
        XCTAssertTrue(page.stdoutText.hasPrefix(".TH KEEPSAKE 1 "), page.stdoutText.prefix(200).description)
        for command in ["backup", "list", "restore", "verify", "prune", "copy", "repair", "diff", "find", "run", "keygen"] {
            XCTAssertTrue(page.stdoutText.contains(".SS \"keepsake \(command) "), "the page lacks \(command)")
        }
        for section in [".SH \"EXIT STATUS\"", ".SH ENVIRONMENT", ".B 130"] {
            XCTAssertTrue(page.stdoutText.contains(section), "the page lacks \(section)")
        }
        let pageFile = path("keepsake.1")
        try page.stdout.write(to: URL(fileURLWithPath: pageFile))
        let groff = try tool("/bin/sh", ["-c", "groff -man -Tutf8 -ww -z < '\(pageFile)' 2>&1"])
        XCTAssertEqual(groff.stdoutText, "", "groff warns about the page")
        let rendered = try tool("/bin/sh", ["-c", "groff -man -Tutf8 < '\(pageFile)' | col -b"])
        XCTAssertTrue(rendered.stdoutText.contains("--strip-components"), "\(rendered.stdoutText.prefix(300))")
    }
}
