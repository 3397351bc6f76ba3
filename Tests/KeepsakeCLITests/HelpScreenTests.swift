import Foundation
@testable import KeepsakeCLI
import XCTest

/// Every command's `--help`, and `keepsake --help`, at 80 and 50 columns, compared with the
/// screens recorded in `Screens/help/` (`keepsake-80.txt`, `backup-50.txt`, …): rendered in
/// process, plain (standard output is not a terminal). A change to an option, its wording or
/// the layout shows here first, and then as a diff of the recorded file.
///
/// After a deliberate change, `KEEPSAKE_UPDATE_SCREENS=1 swift test --filter HelpScreenTests`
/// rewrites the recordings that differ (never under `CI=true`); read `git diff` before
/// committing them.
final class HelpScreenTests: InProcessTestCase {
    // MARK: Recordings

    /// The widths every screen is recorded at: a usual terminal and a narrow one.
    private static let widths = [80, 50]

    /// `Screens/help/` beside this file, in the checkout the tests were built from.
    private static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Screens/help", isDirectory: true)

    /// The recording of `keepsake COMMAND --help` (nil: `keepsake --help`) at `width` columns.
    private static func recording(of command: String?, width: Int) -> URL {
        folder.appendingPathComponent("\(command ?? "keepsake")-\(width).txt")
    }

    /// Whether differing recordings are rewritten instead of failing.
    private static var updating: Bool {
        let environment = ProcessInfo.processInfo.environment
        return environment["KEEPSAKE_UPDATE_SCREENS"] == "1" && environment["CI"] != "true"
    }

    // MARK: Helper

    /// Fails unless `keepsake [COMMAND] --help` prints its recorded screen at every width.
    private func assertHelp(_ command: String?, file: StaticString = #filePath, line: UInt = #line) {
        for width in Self.widths {
            let arguments = (command.map { [$0] } ?? []) + ["--help"]
            let run = keepsake(arguments, on: .pipe(width), expecting: .success, file: file, line: line)
            XCTAssertEqual(run.stderr, "", file: file, line: line)
            let url = Self.recording(of: command, width: width)
            let recorded = try? String(contentsOf: url, encoding: .utf8)
            if Self.updating, recorded != run.stdout {
                XCTAssertNoThrow(try run.stdout.write(to: url, atomically: true, encoding: .utf8), file: file, line: line)
                continue
            }
            guard let recorded else {
                XCTFail("no recorded screen at \(url.path); record it with KEEPSAKE_UPDATE_SCREENS=1", file: file, line: line)
                continue
            }
            assertScreen("\(url.lastPathComponent) (after a deliberate change: KEEPSAKE_UPDATE_SCREENS=1)", run.stdout, recorded,
                         normalizer: .verbatim, file: file, line: line)
        }
    }

    // MARK: The set of screens

    /// One recording per command and width, and none for a command that is gone.
    func testEveryCommandHasItsScreensAndEveryScreenACommand() throws {
        let expected = Set(([nil] + CommandRegistry.all.map { $0.spec.name }).flatMap { command in
            Self.widths.map { Self.recording(of: command, width: $0).lastPathComponent }
        })
        let present = Set(try FileManager.default.contentsOfDirectory(atPath: Self.folder.path))
        XCTAssertEqual(present.subtracting(expected).sorted(), [], "recordings of no command (remove them)")
        if !Self.updating { // else testEveryCommandsHelp records them
            XCTAssertEqual(expected.subtracting(present).sorted(), [], "commands without recordings (KEEPSAKE_UPDATE_SCREENS=1)")
        }
    }

    // MARK: keepsake --help

    func testTopLevelHelp() { assertHelp(nil) }

    // MARK: Commands

    /// Every command the registry knows, so a new one is covered (and, without recordings,
    /// fails) from the start.
    func testEveryCommandsHelp() {
        for command in CommandRegistry.all { assertHelp(command.spec.name) }
    }
}
