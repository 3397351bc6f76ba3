import Foundation
import XCTest

/// What the README promises about itself: short (under 12 KB), the two set-up commands that
/// CI runs, and near the top that a full backup's archive restores alone.
final class ReadmeTests: KeepsakeTestCase {
    // MARK: Fixtures

    /// The project's root, found from this source file's path.
    private var root: URL {
        var folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while folder.path != "/" && folder.lastPathComponent != "Tests" { folder.deleteLastPathComponent() }
        return folder.deletingLastPathComponent()
    }

    // MARK: Tests

    func testTheReadmeIsUnder12KBAndKeepsItsTwoSetUpCommands() throws {
        let bytes = try Data(contentsOf: root.appendingPathComponent("README.md"))
        XCTAssertLessThan(bytes.count, 12 * 1024, "README.md is for users and stays short: move reference to docs/")
        let text = String(decoding: bytes, as: UTF8.self)
        XCTAssertTrue(text.contains("\nScripts/run backup ."), "the main job's set-up command")
        XCTAssertTrue(text.contains("\nScripts/test "), "the test command")
        let ci = try String(contentsOf: root.appendingPathComponent(".ci/run"), encoding: .utf8)
        // Run as it is (alone, or as the command of a timed phase), with no group or filter:
        // every test, as the README says.
        let callsTheTestCommand = ci.split(separator: "\n").contains { line in
            line == "Scripts/test" || (line.hasPrefix("phase ") && line.hasSuffix(" Scripts/test"))
        }
        XCTAssertTrue(callsTheTestCommand, ".ci/run calls the README's test command, with no arguments")
    }

    func testTheOpeningSaysAFullBackupsArchiveRestoresAlone() throws {
        let text = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let opening = (text.components(separatedBy: "\n## ").first ?? "").split(whereSeparator: \.isWhitespace).joined(separator: " ")
        XCTAssertTrue(opening.contains("a full backup's archive is a plain `.tar.zst` that restores alone"), opening)
    }
}
