import Foundation
@testable import KeepsakeCLI
import XCTest

/// Every error says what to do next: with no home folder, where to give the destination;
/// with no backups, which destination was searched.
final class DestinationMessageTests: InProcessTestCase {
    // MARK: No home folder

    /// HOME unset and no account home: the default destination cannot be found, and the
    /// message names --dest and KEEPSAKE_DEST (exit 2, as for a missing argument).
    func testNoHomeNamesDestAndKeepsakeDest() throws {
        XCTAssertThrowsError(try DestinationResolver.defaultDestination(environment: [:], accountHome: { nil })) { error in
            XCTAssertEqual(ExitCode(for: error), .usage)
            let text = "\(error)"
            XCTAssertTrue(text.contains("--dest") && text.contains("KEEPSAKE_DEST") && text.contains("HOME is not set"), text)
        }
        XCTAssertThrowsError(try DestinationResolver.defaultDestination(environment: ["HOME": ""], accountHome: { nil }))
    }

    /// Without HOME the account's home folder serves (cron and systemd may not set HOME);
    /// XDG_DATA_HOME needs no home at all.
    func testTheAccountHomeOrXDGDataHomeServeWithoutHOME() throws {
        XCTAssertEqual(try DestinationResolver.defaultDestination(environment: [:], accountHome: { "/home/ana" }),
                       "/home/ana/.local/share/keepsake/backups")
        XCTAssertEqual(try DestinationResolver.defaultDestination(environment: ["XDG_DATA_HOME": "/data"], accountHome: { nil }),
                       "/data/keepsake/backups")
        XCTAssertEqual(try DestinationResolver.defaultDestination(environment: ["HOME": "/h"], accountHome: { nil }),
                       "/h/.local/share/keepsake/backups")
    }

    // MARK: No backups

    /// Each command that looks for backups in an empty destination names it.
    func testAnEmptyDestinationIsNamed() throws {
        let dest = path("empty")
        try FileManager.default.createDirectory(atPath: dest, withIntermediateDirectories: true)
        let cases: [([String], ExitCode)] = [
            (["list"], .success), (["restore", "latest", "--target", path("out")], .failure), (["verify"], .success),
            (["diff", "latest", "latest"], .failure), (["find", "notes.txt"], .failure),
        ]
        for (arguments, code) in cases {
            let run = keepsake(arguments + ["--dest", dest], expecting: code)
            XCTAssertTrue(run.stderr.contains(dest), "\(arguments[0]) does not name the destination:\n\(run)")
        }
    }
}
