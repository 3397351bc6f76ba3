import BackupCore
import Foundation
import KeepsakeConfig

@testable import KeepsakeCLI
import KeepsakeEncryption
import KeepsakeModel
@testable import TerminalUI
import KeepsakeSigning
import XCTest
import KeepsakeSupport

/// One mapping from errors to exit codes and one `Error:` renderer, for every command.
final class ErrorReportTests: InProcessTestCase {
    // MARK: Exit codes

    func testEachKindOfErrorHasItsExitCode() {
        let cases: [(Error, ExitCode)] = [
            (UsageError(.missingArgument("PATH"), command: nil), .usage),
            (Interruption(), .interrupted),
            (EngineError.archiveMissing(name: "a", backup: "b", destination: "d"), .integrity),
            (EngineError.manifestUnreadable(name: "m", reason: "r"), .integrity),
            (EngineError.misnamed(name: "m", reason: "r"), .integrity),
            (CopyError.reliesOnDamaged(backup: BackupID(date: Date(timeIntervalSince1970: 0)),
                                       on: BackupID(date: Date(timeIntervalSince1970: 1))), .integrity),
            (SupplementDamage(reason: "r"), .integrity),
            (EncryptionError.unusableKey("no key"), .key),
            (SigningError.unsigned(backup: "b", destination: "/d", signature: "s"), .signature),
            (SigningError.otherKey(backup: "b", signedBy: "ed25519:x", expected: "ed25519:y"), .signature),
            (SigningError.forged(backup: "b", reason: "r"), .signature),
            (SigningError.altered(backup: "b", object: "o", reason: "r"), .signature),
            (SigningError.unusablePublicKey(text: "x", reason: "r"), .usage),
            (SigningError.unusableSigningKey(path: "/k", reason: "r"), .failure),
            (EngineError.backupNotFound(reference: "latest", destination: "/d"), .failure),
            (ConfigError(file: "/c.toml", kind: .syntax, line: 1, column: 2, message: "bad"), .failure),
        ]
        for (error, code) in cases {
            XCTAssertEqual(ExitCode(for: error), code, "\(error)")
            XCTAssertEqual(ErrorReport(error).code, code, "\(error)")
        }
    }

    // MARK: Rendering

    /// On a terminal a problem wraps at word boundaries under its text; piped it stays one
    /// line; details (the usage block) are shown as they are.
    func testProblemsWrapOnATerminalAndStayWholeInALog() {
        let error = UsageError.custom("The value 'zz' is invalid for '--compression <codec>'. Use one of: zstd, gzip, xz, lz4, none.",
                                      command: BackupCommand.spec)
        let report = ErrorReport(error)
        XCTAssertEqual(report.lines(in: .plain(width: 50), wraps: true), [
            "Error: The value 'zz' is invalid for",
            "       '--compression <codec>'. Use one of: zstd,",
            "       gzip, xz, lz4, none.",
            "",
            "Usage: keepsake backup [options] [PATH...]",
            "See 'keepsake backup --help'.",
        ])
        XCTAssertEqual(report.lines(in: .plain(width: 50), wraps: false).first,
                       "Error: The value 'zz' is invalid for '--compression <codec>'. Use one of: zstd, gzip, xz, lz4, none.")
        let styled = report.lines(in: RenderContext(width: 50, colorEnabled: true), wraps: true)
        XCTAssertTrue(styled[0].hasPrefix("\u{1B}["), "the label is styled: \(styled[0])")
        XCTAssertEqual(styled.map(DisplayWidth.stripANSI), report.lines(in: .plain(width: 50), wraps: true))
    }

    /// Several problems of one command line: one `Error:` line each, then the usage once.
    func testEveryProblemOfACommandLineIsOneErrorLine() {
        let run = keepsake(["backup", "--stdin-name", "x", "--level", "99"], expecting: .usage)
        XCTAssertEqual(run.stderr, """
            Error: Missing expected argument 'PATH...'. Give the files or folders to back up (or '--stdin').
            Error: The option '--stdin-name' only applies with '--stdin'.
            Error: The value '99' is invalid for '--level <n>'. Use a whole number from 1 to 19 for zstd.

            Usage: keepsake backup [options] [PATH...]
            See 'keepsake backup --help'.

            """)
    }

    /// With `--json` the same failure is also `{"error": …, "exit_code": N}` on stdout,
    /// whether the command line or the run failed.
    func testJSONErrorsCarryTheExitCode() throws {
        for (arguments, code) in [(["list", "--bogus", "--json"], ExitCode.usage),
                                  (["restore", "latest", "--dest", path("none"), "--target", path("t"), "--json"], .failure),
                                  (["run", "home", "--config", path("missing.toml"), "--json"], .failure)] {
            let run = keepsake(arguments, expecting: code)
            let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], run.description)
            XCTAssertEqual(object["exit_code"] as? Int, Int(code.rawValue), run.description)
            XCTAssertTrue(run.stderr.hasPrefix("Error: "), run.description)
            XCTAssertEqual((object["error"] as? String)?.isEmpty, false, run.description)
        }
    }

    /// A missing configuration file: its one problem, then the example to copy, unlabelled.
    func testAMissingConfigurationFileShowsAnExampleUnderTheError() {
        let file = path("missing.toml")
        let run = keepsake(["run", "home", "--config", file], expecting: .failure)
        let lines = run.stderr.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        XCTAssertTrue(lines[0].hasPrefix("Error: No configuration file at \(file)"), run.description)
        XCTAssertEqual(lines.filter { $0.hasPrefix("Error:") }.count, 1, run.description)
        XCTAssertTrue(lines.contains("[profiles.home]"), run.description)
    }
}
