import Foundation
import XCTest

/// The numbers people read in `backup`, `list`, `verify` and `run`: an incremental's ratio,
/// what verifying an incremental checked, files counted as files, and singular nouns for 1.
final class NumbersOutputTests: EndToEndTestCase {
    // MARK: Helpers

    /// Wide enough that `list` keeps its optional RATIO column.
    private let wide: [String: String?] = ["COLUMNS": "200"]

    private func line(_ label: String, in text: String) -> String {
        text.split(separator: "\n").first { $0.hasPrefix(label) }.map(String.init) ?? "<no \(label) line>"
    }

    /// The RATIO cell of `id`'s row in `list`.
    private func listedRatio(_ id: String, dest: String) throws -> String {
        let outcome = try run(["list", "--dest", dest], environment: wide)
        assertExit(outcome, 0)
        let lines = outcome.stdoutText.split(separator: "\n").map(String.init)
        let header = try XCTUnwrap(lines.first)
        let row = try XCTUnwrap(lines.first { $0.hasPrefix(id) }, outcome.stdoutText)
        let end = try XCTUnwrap(header.range(of: "RATIO")).upperBound
        let start = header.index(end, offsetBy: -7)
        // Cells are aligned by display width; this row is ASCII up to RATIO but for "×".
        let characters = Array(row)
        let offset = header.distance(from: header.startIndex, to: start)
        let length = header.distance(from: start, to: end)
        return String(characters[offset..<min(characters.count, offset + length)]).trimmingCharacters(in: .whitespaces)
    }

    // MARK: Ratio

    func testIncrementalRatioAgreesInBackupAndList() throws {
        let source = path("src")
        try Fixtures.makeIncompressibleTree(at: source, count: 4, size: 100_000)
        let dest = path("dest")
        let full = try run(["backup", source, "--dest", dest])
        assertExit(full, 0)

        // Nothing new: no content in the archive, no ratio.
        let unchanged = try run(["backup", source, "--dest", dest])
        assertExit(unchanged, 0)
        let size = line("Size:", in: unchanged.stdoutText)
        XCTAssertTrue(size.hasSuffix("ratio -)"), size)
        XCTAssertTrue(size.contains("in all, 0 B new →"), "the incremental says the ratio is of its new content: \(size)")
        XCTAssertFalse(unchanged.stdoutText.contains("0.0×"), "\(unchanged)")
        let unchangedID = try XCTUnwrap(line("Backup:", in: unchanged.stdoutText).split(separator: " ").last.map(String.init))
        XCTAssertEqual(try listedRatio(unchangedID, dest: dest), "-")

        // A few new bytes next to the manifest: small, but never "0.0×".
        try "tiny\n".write(toFile: source + "/new.txt", atomically: true, encoding: .utf8)
        let small = try run(["backup", source, "--dest", dest])
        assertExit(small, 0)
        XCTAssertTrue(line("Size:", in: small.stdoutText).hasSuffix("ratio <0.1×)"), "\(small)")
        XCTAssertTrue(line("Kind:", in: small.stdoutText).hasSuffix("1 new or changed file, 5 B"), "\(small)")
        let smallID = try XCTUnwrap(line("Backup:", in: small.stdoutText).split(separator: " ").last.map(String.init))
        XCTAssertEqual(try listedRatio(smallID, dest: dest), "<0.1×")

        let list = try run(["list", "--dest", dest], environment: wide)
        XCTAssertFalse(list.stdoutText.contains("0.0×"), "\(list)")
    }

    // MARK: Verify of an incremental

    func testRunVerboseSaysWhatVerifyingAnIncrementalChecked() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "a\n", "b.txt": "bb\n", "c.txt": "ccc\n"])
        let configHome = path("xdg")
        try FileManager.default.createDirectory(atPath: configHome + "/keepsake", withIntermediateDirectories: true)
        try """
            [profiles.home]
            sources = ["\(source)"]
            destination = "\(path("dest"))"

            """.write(toFile: configHome + "/keepsake/config.toml", atomically: true, encoding: .utf8)
        let environment: [String: String?] = ["XDG_CONFIG_HOME": configHome]
        let first = try run(["run", "home", "--verbose"], environment: environment)
        assertExit(first, 0)
        XCTAssertEqual(line("Verified:", in: first.stdoutText), "Verified:    intact (3 files, 9 B)", "\(first)")

        let second = try run(["run", "home", "--verbose"], environment: environment)
        assertExit(second, 0)
        XCTAssertTrue(line("Backup:", in: second.stdoutText).hasSuffix("(incremental)"), "\(second)")
        XCTAssertEqual(line("Verified:", in: second.stdoutText),
                       "Verified:    intact (no new files; 3 files in 1 earlier backup, checked)", "\(second)")

        let verify = try run(["verify", "--dest", path("dest")])
        assertExit(verify, 0)
        XCTAssertTrue(verify.stdoutText.contains("no new files; 3 files in 1 earlier backup, checked"), "\(verify)")
        XCTAssertTrue(verify.stdoutText.contains("Verified 2 backups: 2 intact, 0 damaged."), "\(verify)")
    }

    // MARK: Counting

    /// Progress counts folders as entries, not as files.
    func testProgressCountsFilesAsFiles() throws {
        let source = path("src")
        try FileManager.default.createDirectory(atPath: source + "/a/b/c/d", withIntermediateDirectories: true)
        let outcome = try run(["backup", source, "--dest", path("dest"), "--json", "--progress"])
        assertExit(outcome, 0)
        let events = outcome.stdoutText.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }.filter { $0["event"] as? String == "progress" }
        XCTAssertFalse(events.isEmpty, "\(outcome)")
        for event in events {
            XCTAssertEqual(event["files"] as? Int, 0, "folders are not files: \(event)")
            XCTAssertGreaterThanOrEqual(event["entries"] as? Int ?? 0, 1, "\(event)")
        }
    }

    /// Once a backup of the same sources exists, progress has a total (its size): a bar
    /// with a percentage and an ETA, and `total_bytes` in the JSON lines.
    func testProgressIsDeterminateOnceTheSourcesWereBackedUp() throws {
        let source = path("src")
        var files: [String: String] = [:]
        for index in 0..<12 { files["f\(index).txt"] = String(repeating: "x", count: 1000) }
        try Fixtures.makeTree(at: source, files: files)
        let dest = path("dest")
        // Each file pauses twice (before it is opened and after its one piece): the backups
        // last 2.4 s and 4.8 s, past the JSON lines' second and the plain lines' two seconds.
        let first = try run(["backup", source, "--dest", dest, "--json", "--progress", "--readers", "1"],
                            environment: ["KEEPSAKE_TEST_READ_PAUSE_MS": "100"])
        assertExit(first, 0)
        let before = first.stdoutText.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }.filter { $0["event"] as? String == "progress" }
        XCTAssertFalse(before.isEmpty, "\(first)")
        XCTAssertTrue(before.allSatisfy { $0["total_bytes"] is NSNull }, "nothing to go by the first time: \(before)")

        let second = try run(["backup", source, "--dest", dest, "--full", "--progress", "--readers", "1"],
                             environment: ["KEEPSAKE_TEST_READ_PAUSE_MS": "200"])
        assertExit(second, 0)
        let lines = second.stderrText.split(separator: "\n").filter { $0.contains("%") }
        XCTAssertFalse(lines.isEmpty, "a percentage once the total is known:\n\(second)")
        XCTAssertTrue(lines.contains { $0.contains("/ 11.7 KiB") && $0.contains("ETA") }, "total and ETA:\n\(second)")
    }

    /// A restore's progress has a total from the manifest: the files it brings back, all of
    /// them or the ones chosen.
    func testRestoreProgressHasATotal() throws {
        let source = path("src")
        var files: [String: String] = [:]
        for index in 0..<12 { files["f\(index).txt"] = String(repeating: "x", count: 1000 + index) }
        try Fixtures.makeTree(at: source, files: files)
        let dest = path("dest")
        try backup([source], dest: dest)
        func totals(_ arguments: [String]) throws -> [Int] {
            let outcome = try run(["restore", "latest", "--dest", dest, "--json", "--progress"] + arguments)
            assertExit(outcome, 0)
            let events = outcome.stdoutText.split(separator: "\n").compactMap {
                (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
            }.filter { $0["event"] as? String == "progress" }
            XCTAssertFalse(events.isEmpty, "\(outcome)")
            return events.compactMap { $0["total_bytes"] as? Int }
        }
        let whole = try totals(["--target", path("all")])
        XCTAssertEqual(Set(whole), [(0..<12).reduce(0) { $0 + 1000 + $1 }], "the sizes of every file")
        let chosen = try totals(["--target", path("one"), String(source.dropFirst()) + "/f3.txt"])
        XCTAssertEqual(Set(chosen), [1003], "the size of the one file chosen")
    }

    func testOneOfAThingIsSingular() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "a\n"])
        try toolSucceeds("ln", ["-s", "a.txt", source + "/link"])
        let dest = path("dest")
        let outcome = try run(["backup", source, "--dest", dest])
        assertExit(outcome, 0)
        XCTAssertEqual(line("Contents:", in: outcome.stdoutText), "Contents:    1 file, 1 folder, 1 symlink", "\(outcome)")
        let verify = try run(["verify", "--dest", dest])
        assertExit(verify, 0)
        XCTAssertTrue(verify.stdoutText.contains("Verified 1 backup: 1 intact, 0 damaged."), "\(verify)")
        for text in [outcome.combinedText, verify.combinedText] {
            XCTAssertFalse(text.contains("(s)"), text)
            XCTAssertFalse(text.contains("1 symlinks"), text)
        }
    }
}
