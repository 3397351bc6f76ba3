import Foundation
import XCTest

/// `restore ID PATH` takes a path however the user is likely to write it: as `list ID` and
/// `find` print it, as the original absolute path, relative to a source folder or its
/// parent, relative to the current folder, or by its last components (a bare name is found
/// at any depth, as `find` finds it). A path that means nothing is an error naming it with
/// the closest paths. `--strip-components` drops leading folders, and the summary names
/// where a single file landed.
final class RestorePathTests: EndToEndTestCase {
    // MARK: Tests

    func testEveryWayOfWritingAPathRestoresTheFile() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["사진/가족.jpg": "family\n", "docs/notes.txt": "notes\n", "docs/old/notes.txt": "old\n"])
        let dest = path("dest")
        let id = try backup([source], dest: dest)
        let archivePath = String(source.dropFirst())
        let family = archivePath + "/사진/가족.jpg"

        let forms: [(given: String, directory: String?)] = [
            (family, nil),                   // as list and find print it
            ("/" + family, nil),             // the original absolute path
            ("사진/가족.jpg", nil),            // relative to the source folder
            ("src/사진/가족.jpg", nil),        // relative to the source folder's parent
            ("가족.jpg", nil),                // a bare name, found at any depth
            ("가족.jpg", source + "/사진"),     // relative to the current folder
        ]
        for (number, form) in forms.enumerated() {
            let target = path("target-\(number)")
            let outcome = try run(["restore", id, form.given, "--dest", dest, "--target", target],
                                  currentDirectory: form.directory)
            assertExit(outcome, 0, "restore \(form.given)")
            XCTAssertEqual(try String(contentsOfFile: target + "/" + family, encoding: .utf8), "family\n", "\(outcome)")
            XCTAssertEqual(try names(in: target + "/" + archivePath), ["사진"], "only the file asked for: \(form.given)")
            XCTAssertTrue(outcome.stdoutText.contains("Restored to: \(target)/\(family)"), "where it landed:\n\(outcome)")
        }

        // A name found in several places brings each; the notice says which.
        let both = try run(["restore", id, "notes.txt", "--dest", dest, "--target", path("both")])
        assertExit(both, 0)
        XCTAssertTrue(both.stderrText.contains("'notes.txt' is \(archivePath)/docs/notes.txt, \(archivePath)/docs/old/notes.txt"),
                      "\(both)")
        XCTAssertEqual(try String(contentsOfFile: path("both") + "/" + archivePath + "/docs/old/notes.txt", encoding: .utf8), "old\n")
    }

    func testAPathThatMeansNothingNamesTheClosestPaths() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["사진/가족.jpg": "family\n", "report.pdf": "pdf\n"])
        let dest = path("dest")
        let id = try backup([source], dest: dest)
        let outcome = try run(["restore", id, "가족.jpeg", "--dest", dest, "--target", path("target")])
        assertExit(outcome, 1)
        XCTAssertTrue(outcome.stderrText.contains("Nothing in backup \(id) matches '가족.jpeg'"), "\(outcome)")
        XCTAssertTrue(outcome.stderrText.contains("closest: '\(String(source.dropFirst()))/사진/가족.jpg'"), "\(outcome)")
        XCTAssertTrue(outcome.stderrText.contains("keepsake list \(id)"), "says what to do:\n\(outcome)")
        XCTAssertFalse(RawFileSystem.exists(path("target") + source), "nothing restored")
    }

    func testStripComponentsAndATargetGivenAsDot() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a/one.txt": "one\n", "b/two.txt": "two\n"])
        try FileManager.default.linkItem(atPath: source + "/a/one.txt", toPath: source + "/b/link.txt")
        let dest = path("dest")
        let id = try backup([source], dest: dest)
        let depth = source.split(separator: "/").count

        let target = path("flat")
        let outcome = try run(["restore", id, "--dest", dest, "--target", target, "--strip-components", "\(depth)"])
        assertExit(outcome, 0)
        XCTAssertEqual(try names(in: target).sorted(), ["a", "b"], "the source's own folders at the top")
        // The tree below the stripped folders is whole (the target itself is not the source's folder).
        for folder in ["a", "b"] { try assertTreesEqual(expected: source + "/" + folder, actual: target + "/" + folder) }
        var first = stat(), second = stat()
        XCTAssertEqual(lstat(target + "/a/one.txt", &first), 0)
        XCTAssertEqual(lstat(target + "/b/link.txt", &second), 0)
        XCTAssertEqual(first.st_ino, second.st_ino, "a hard link stays one inside the stripped tree")

        // One file, stripped to its name, into the current folder given as '.'.
        let here = path("here")
        try FileManager.default.createDirectory(atPath: here, withIntermediateDirectories: true)
        let single = try run(["restore", id, "two.txt", "--dest", dest, "--target", ".", "--strip-components", "\(depth + 1)"],
                             currentDirectory: here)
        assertExit(single, 0)
        XCTAssertEqual(try String(contentsOfFile: here + "/two.txt", encoding: .utf8), "two\n")
        XCTAssertTrue(single.stdoutText.contains("Into:        \(here)\n"), "no stray /.:\n\(single)")
        XCTAssertTrue(single.stdoutText.contains("Restored to: \(here)/two.txt"), "\(single)")

        let bad = try run(["restore", id, "--dest", dest, "--strip-components", "-1"])
        assertExit(bad, 2)
        XCTAssertTrue(bad.stderrText.contains("--strip-components"), "\(bad)")
    }

    /// `latest` in a destination holding several source sets says which it picked, and
    /// `--source PATH` picks the newest backup holding that path, on restore, list, find and diff.
    func testLatestWithSeveralSourceSetsAndTheSourceFilter() throws {
        let first = path("a"), second = path("b")
        try Fixtures.makeTree(at: first, files: ["x.txt": "x\n"])
        try Fixtures.makeTree(at: second, files: ["y.txt": "y\n"])
        let dest = path("dest")
        let ofFirst = try backup([first], dest: dest)
        let ofSecond = try backup([second], dest: dest)

        let plain = try run(["restore", "latest", "--dest", dest, "--target", path("t1")])
        assertExit(plain, 0)
        XCTAssertTrue(plain.stderrText.contains("'latest' is \(ofSecond), the newest backup of \(second)"), "\(plain)")
        XCTAssertTrue(plain.stderrText.contains("also holds backups of \(first): give --source PATH"), "\(plain)")

        let picked = try run(["restore", "latest", "--dest", dest, "--target", path("t2"), "--source", first + "/x.txt"])
        assertExit(picked, 0)
        XCTAssertEqual(try String(contentsOfFile: path("t2") + first + "/x.txt", encoding: .utf8), "x\n")
        XCTAssertFalse(picked.stderrText.contains("'latest' is"), "no note once the source is given:\n\(picked)")

        let none = try run(["restore", "latest", "--dest", dest, "--source", path("elsewhere"), "--target", path("t")])
        assertExit(none, 1)
        XCTAssertTrue(none.stderrText.contains("No backup in \(dest) holds \(path("elsewhere"))"), "\(none)")

        let list = try run(["list", "--dest", dest, "--source", first, "--ids"])
        assertExit(list, 0)
        XCTAssertEqual(list.stdoutText.split(separator: "\n").map(String.init), [ofFirst])
        let found = try run(["find", "x.txt", "--dest", dest, "--source", second])
        assertExit(found, 1, "x.txt is not in the backups of the other source")
        let diff = try run(["diff", ofFirst, "latest", "--dest", dest, "--source", first, "--json"])
        assertExit(diff, 0)
        XCTAssertEqual(try json(diff)["to"] as? String, ofFirst, "latest with --source is the first source's backup:\n\(diff)")
    }
}
