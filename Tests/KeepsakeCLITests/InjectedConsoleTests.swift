import Foundation
@testable import KeepsakeCLI
import KeepsakeTestSupport
@testable import TerminalUI
import XCTest

/// `KeepsakeCLI.run` writes only to the console it is given: results on its output,
/// messages, progress and prompts on its errors and prompt source, styled as its terminal
/// allows.
final class InjectedConsoleTests: InProcessTestCase {
    // MARK: Streams

    func testResultsGoToOutputAndMessagesToErrors() {
        let version = keepsake(["--version"], expecting: .success)
        XCTAssertEqual(version.stdout, "keepsake \(KeepsakeCLI.version)\n")
        XCTAssertEqual(version.stderr, "")

        let usage = keepsake(["list", "--bogus"], expecting: .usage)
        XCTAssertEqual(usage.stdout, "")
        XCTAssertTrue(usage.stderr.hasPrefix("Error: Unknown option '--bogus'."), usage.description)
    }

    /// The terminal is the one given: escape sequences on a styled terminal only, and the
    /// layout at its width.
    func testStylingAndWidthFollowTheGivenTerminal() {
        let styled = keepsake(["help", "list"], on: .tty(50), expecting: .success)
        XCTAssertTrue(styled.stdout.contains("\u{1B}["), styled.description)
        let piped = keepsake(["help", "list"], on: .pipe(50), expecting: .success)
        XCTAssertFalse(piped.stdout.contains("\u{1B}"), piped.description)
        XCTAssertEqual(DisplayWidth.stripANSI(styled.stdout), piped.stdout, "the same text, styled or not")
        XCTAssertEqual(piped.stdout.split(separator: "\n").map { DisplayWidth.width(of: String($0)) }.max(), 50)
        let never = keepsake(["help", "list", "--color", "never"], on: .tty(50), expecting: .success)
        XCTAssertEqual(never.stdout, piped.stdout, "--color never drops the styling on a terminal")
    }

    // MARK: Progress and prompts

    /// Progress is drawn on the given errors when they are a terminal, never on the output.
    func testProgressIsDrawnOnTheGivenErrors() throws {
        try makeTree(path("src"), ["a.txt": "a\n", "b/c.txt": "c\n"])
        let run = keepsake(["backup", path("src"), "--dest", path("dest")], on: .tty(80), expecting: .success)
        XCTAssertTrue(run.stderr.contains(ProgressRenderer.eraseLine), run.description)
        XCTAssertFalse(run.stdout.contains(ProgressRenderer.eraseLine), run.description)
        XCTAssertTrue(run.stdout.contains("Backup committed"), run.description)
    }

    /// Without a BACKUP on a terminal, the picker asks through the given prompt source.
    func testThePickerAsksThroughTheGivenPrompts() throws {
        try makeTree(path("src"), ["a.txt": "a\n"])
        keepsake(["backup", path("src"), "--dest", path("dest"), "-q"], expecting: .success)
        let enter: [UInt8] = [0x0D]
        let prompts = ScriptedPromptIO(keys: [enter], isInteractive: true)
        let run = keepsake(["restore", "--dest", path("dest"), "--target", path("out")], on: .tty(80), prompts: prompts)
        XCTAssertEqual(run.code, .success, run.description)
        XCTAssertTrue(prompts.output.contains("Backup"), prompts.output)
        XCTAssertEqual(try String(contentsOfFile: path("out") + path("src") + "/a.txt", encoding: .utf8), "a\n")
    }
}
