import BackupCore
import Foundation
@testable import KeepsakeCLI
@testable import TerminalUI
import XCTest

/// The commands messages name carry the destination options the user gave, and stay whole
/// on one line, so that pasting one runs what it says.
final class PasteableCommandsTests: InProcessTestCase {
    // MARK: Completing

    /// Each command in a message gets the options its verb accepts, quoted for the shell;
    /// prose, other quotes and commands naming their own destination are left alone.
    func testCommandsGetTheDestinationOptionsTheirVerbAccepts() {
        let pasteable = PasteableCommands(carrying: [(.profile, "home"), (.config, "/etc/keep sake.toml"), (.identity, "/k/id.txt")])
        XCTAssertEqual(pasteable.complete("No backup 'x' in /srv; run 'keepsake list' to see the backups"),
                       "No backup 'x' in /srv; run `keepsake list --profile home --config '/etc/keep sake.toml' --identity /k/id.txt` "
                        + "to see the backups")
        // repair opens no encrypted backup: no --identity; backquotes stay backquotes.
        XCTAssertEqual(pasteable.complete("(`keepsake repair` rebuilds it)"), "(`keepsake repair --profile home --config "
                        + "'/etc/keep sake.toml'` rebuilds it)")
        XCTAssertEqual(pasteable.complete("see 'keepsake list --dest /mnt/usb' there"), "see 'keepsake list --dest /mnt/usb' there")
        XCTAssertEqual(pasteable.complete("'--lock-wait <time>' and 'pg_dump shop | keepsake backup --stdin'"),
                       "'--lock-wait <time>' and 'pg_dump shop | keepsake backup --stdin'")
        XCTAssertEqual(pasteable.complete("the next keepsake run on vm takes it over"), "the next keepsake run on vm takes it over")
        // backup has no --profile or --identity; run has --config but no --profile option.
        let destination = PasteableCommands(carrying: [(.dest, "/srv/b"), (.profile, "home"), (.config, "c.toml")])
        XCTAssertEqual(destination.complete(command: "keepsake backup --full"), "keepsake backup --full --dest /srv/b")
        XCTAssertEqual(destination.complete(command: "keepsake run home --config /x.toml"), "keepsake run home --config /x.toml")
        XCTAssertEqual(PasteableCommands().complete("run 'keepsake verify'"), "run 'keepsake verify'")
    }

    /// The options read from a command line: copy's `--from` becomes `--dest`, and `run
    /// PROFILE` carries `--profile PROFILE`.
    func testTheCarriedOptionsComeFromTheCommandLine() throws {
        let copy = try ArgumentParser.parse(["latest", "--from", "/a b", "--to", "/c", "--s3-endpoint", "http://127.0.0.1:1"],
                                            for: CopyCommand.spec)
        XCTAssertEqual(PasteableCommands(copy).complete("run 'keepsake verify 2026'"),
                       "run `keepsake verify 2026 --dest '/a b' --s3-endpoint http://127.0.0.1:1`")
        let run = try ArgumentParser.parse(["home", "--config", "/c.toml"], for: RunCommand.spec)
        XCTAssertEqual(PasteableCommands(run).complete(command: "keepsake verify ID"), "keepsake verify ID --profile home --config /c.toml")
    }

    // MARK: Wrapping

    /// At 50 columns the error's command stands whole on a line of its own, with the
    /// options given; on a pipe the error stays one line.
    func testAnErrorsCommandIsNeverBrokenAcrossLines() throws {
        let dest = path("a folder with a long name/backups")
        try FileManager.default.createDirectory(atPath: dest, withIntermediateDirectories: true)
        let run = keepsake(["restore", "nosuch", "--dest", dest, "--target", path("t")], on: .tty(50), expecting: .failure)
        let expected = "`keepsake list --dest '\(dest)'`"
        let lines = DisplayWidth.stripANSI(run.stderr).split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        XCTAssertTrue(lines.contains(expected), "no line holds the whole command \(expected):\n\(run.stderr)")
        let piped = keepsake(["restore", "nosuch", "--dest", dest, "--target", path("t")], on: .pipe(50), expecting: .failure)
        XCTAssertEqual(piped.stderr.split(separator: "\n").count, 1, piped.stderr)
        XCTAssertTrue(piped.stderr.contains(expected), piped.stderr)
    }
}
