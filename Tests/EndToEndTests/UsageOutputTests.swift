import Foundation
import XCTest

/// What `keepsake` says before any command runs: a short usage without arguments, the
/// version as JSON, and usage errors as JSON on stdout when `--json` was asked for.
final class UsageOutputTests: EndToEndTestCase {
    // MARK: Tests

    func testNoArgumentsPrintsAShortUsageWithThreeExamples() throws {
        let outcome = try run([], environment: ["COLUMNS": "80"])
        assertExit(outcome, 0)
        XCTAssertEqual(outcome.stdoutText, """
            Usage: keepsake <command> [options]

            Back up and restore directories as compressed, self-describing tar archives.

              keepsake backup ~/Documents                    back up a folder
              keepsake list                                  show the backups
              keepsake restore latest --target /tmp/restore  restore the newest one

            Every command and exit code: keepsake help. One command: keepsake help COMMAND.

            """)
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
}
