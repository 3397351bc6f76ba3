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
