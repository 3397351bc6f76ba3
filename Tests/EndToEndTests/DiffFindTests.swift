import Foundation
import XCTest

/// `keepsake diff` and `keepsake find` on real trees changed between real backups.
final class DiffFindTests: EndToEndTestCase {
    // MARK: State

    private var source = ""
    private var dest = ""

    /// The archive path of `relative` inside the source (absolute path without the leading `/`).
    private func archived(_ relative: String) -> String {
        String(source.dropFirst()) + "/" + relative
    }

    override func setUpWithError() throws {
        try super.setUpWithError()
        source = path("src")
        dest = path("dest")
    }

    // MARK: Reading JSON

    /// The paths of a JSON list of entries (decoding `path_b64`), as display-free byte arrays.
    private func paths(_ value: Any?) -> [[UInt8]] {
        ((value as? [[String: Any]]) ?? []).compactMap { entry in
            if let text = entry["path"] as? String { return Array(text.utf8) }
            if let encoded = entry["path_b64"] as? String, let data = Data(base64Encoded: encoded) { return Array(data) }
            return nil
        }
    }

    private func entry(_ list: Any?, _ relative: String) -> [String: Any]? {
        ((list as? [[String: Any]]) ?? []).first { ($0["path"] as? String) == archived(relative) }
    }

    // MARK: diff

    /// Two backups of a tree changed in every way between them; each change lands in its category.
    func testDiffSortsEveryKindOfChange() throws {
        let badName = Array("bad".utf8) + [0xff] + Array(".txt".utf8)
        let base = RawFileSystem.bytes(source)
        try Fixtures.makeTree(at: source, files: [
            "keep.txt": "unchanged\n",
            "edit.txt": "before\n",
            "grow.txt": "short\n",
            "gone.txt": "deleted later\n",
            "mode.txt": "chmod me\n",
            "old-name.txt": "renamed later\n",
            "swap": "a file, then a folder\n",
            "sub/deep.txt": "deep\n",
        ])
        try RawFileSystem.makeSymlink(RawFileSystem.join(base, "link"), target: Array("keep.txt".utf8))
        try RawFileSystem.makeHardLink(RawFileSystem.join(base, "sub/hard.txt"), to: RawFileSystem.join(base, "keep.txt"))
        try RawFileSystem.writeFile(RawFileSystem.join(base, badName), contents: Array("invalid name\n".utf8))
        let first = try backup([source], dest: dest)

        try RawFileSystem.writeFile(RawFileSystem.join(base, "edit.txt"), contents: Array("after!\n".utf8))
        try RawFileSystem.writeFile(RawFileSystem.join(base, "grow.txt"), contents: Array("much longer now\n".utf8))
        XCTAssertEqual(unlink(source + "/gone.txt"), 0)
        try RawFileSystem.setMode(RawFileSystem.join(base, "mode.txt"), 0o600)
        XCTAssertEqual(rename(source + "/old-name.txt", source + "/sub/new-name.txt"), 0)
        try RawFileSystem.writeFile(RawFileSystem.join(base, "added.txt"), contents: Array("brand new\n".utf8))
        XCTAssertEqual(unlink(source + "/link"), 0)
        try RawFileSystem.makeSymlink(RawFileSystem.join(base, "link"), target: Array("sub/deep.txt".utf8))
        XCTAssertEqual(unlink(source + "/swap"), 0)
        try RawFileSystem.makeDirectory(RawFileSystem.join(base, "swap"))
        try RawFileSystem.writeFile(RawFileSystem.join(base, badName), contents: Array("other content\n".utf8))
        let second = try backup([source], dest: dest)

        // JSON: every category.
        let outcome = try run(["diff", first, "latest", "--dest", dest, "--json"])
        assertExit(outcome, 0)
        let object = try json(outcome)
        XCTAssertEqual(object["from"] as? String, first)
        XCTAssertEqual(object["to"] as? String, second)
        let added = Set(paths(object["added"]))
        let removed = Set(paths(object["removed"]))
        let modified = Set(paths(object["modified"]))
        let metadata = Set(paths(object["metadata"]))
        func bytes(_ relative: String) -> [UInt8] { Array(archived(relative).utf8) }
        XCTAssertEqual(added, [bytes("added.txt"), bytes("sub/new-name.txt")], "\(outcome)")
        XCTAssertEqual(removed, [bytes("gone.txt"), bytes("old-name.txt")], "\(outcome)")
        XCTAssertEqual(modified, [bytes("edit.txt"), bytes("grow.txt"), bytes("swap"), Array(archived("").utf8) + badName],
                       "\(outcome)")
        XCTAssertTrue(metadata.contains(bytes("mode.txt")), "\(outcome)")
        XCTAssertTrue(metadata.contains(bytes("link")), "\(outcome)")
        for unchanged in ["keep.txt", "sub/hard.txt", "sub/deep.txt"] {
            XCTAssertFalse(added.union(removed).union(modified).union(metadata).contains(bytes(unchanged)), unchanged)
        }

        let grow = try XCTUnwrap(entry(object["modified"], "grow.txt"))
        XCTAssertEqual(grow["size_before"] as? Int, 6)
        XCTAssertEqual(grow["size_after"] as? Int, 16)
        XCTAssertEqual(Set((grow["changes"] as? [String]) ?? []), ["size", "content", "mtime"])
        let edit = try XCTUnwrap(entry(object["modified"], "edit.txt"))
        XCTAssertTrue(((edit["changes"] as? [String]) ?? []).contains("content"))
        XCTAssertFalse(((edit["changes"] as? [String]) ?? []).contains("size"), "same length, new bytes")
        XCTAssertEqual(entry(object["modified"], "swap")?["changes"] as? [String], ["type"])
        XCTAssertEqual(entry(object["modified"], "swap")?["type_after"] as? String, "dir")
        XCTAssertEqual(entry(object["metadata"], "mode.txt")?["changes"] as? [String], ["mode"])
        XCTAssertTrue(((entry(object["metadata"], "link")?["changes"] as? [String]) ?? []).contains("target"))
        XCTAssertEqual(entry(object["added"], "sub/new-name.txt")?["same_content_as"] as? String, archived("old-name.txt"))
        let gone = try XCTUnwrap(entry(object["removed"], "gone.txt"))
        XCTAssertEqual(gone["size_before"] as? Int, 14)
        XCTAssertTrue(gone["size_after"] is NSNull)

        // Text: a table sorted by path, a summary line, no escape sequences when piped.
        let text = try run(["diff", first, second, "--dest", dest])
        assertExit(text, 0)
        XCTAssertFalse(text.stdoutText.contains("\u{1b}"), "piped output must be plain:\n\(text)")
        let lines = text.stdoutText.split(separator: "\n").map(String.init)
        XCTAssertTrue(lines.first?.hasPrefix("STATUS") ?? false, "\(text)")
        for title in ["PATH", "SIZE", "WHAT CHANGED"] { XCTAssertTrue(lines.first?.contains(title) ?? false, title) }
        let rows = lines.dropFirst(2).dropLast()
        let rowPaths = rows.compactMap { $0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.map(String.init) }
        XCTAssertEqual(rowPaths, rowPaths.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }, "\(text)")
        let growLine = try XCTUnwrap(rows.first { $0.contains(archived("grow.txt")) }, "\(text)")
        XCTAssertTrue(growLine.hasPrefix("modified"), growLine)
        XCTAssertTrue(growLine.contains("6 B → 16 B"), growLine)
        let modeLine = try XCTUnwrap(rows.first { $0.contains(archived("mode.txt")) }, "\(text)")
        XCTAssertTrue(modeLine.hasPrefix("metadata") && modeLine.contains("mode 0644 → 0600"), modeLine)
        XCTAssertTrue(rows.contains { $0.contains("bad\\xff.txt") }, "the invalid byte is shown escaped:\n\(text)")
        let summary = try XCTUnwrap(lines.last)
        XCTAssertTrue(summary.hasPrefix("2 added, 2 removed, 4 modified, "), summary)
        XCTAssertTrue(summary.contains("metadata only"), summary)

        // Reversed, added and removed swap places.
        let reversed = try json(try run(["diff", second, first, "--dest", dest, "--json"]))
        XCTAssertEqual(Set(paths(reversed["removed"])), added)
        XCTAssertEqual(Set(paths(reversed["added"])), removed)

        // An archive file works in place of an id.
        let archive = try XCTUnwrap(try names(in: dest).first { $0.contains(first) && $0.contains(".tar") })
        let fromFile = try run(["diff", dest + "/" + archive, second, "--dest", dest, "--json"])
        assertExit(fromFile, 0)
        let fileObject = try json(fromFile)
        XCTAssertEqual(fileObject["from"] as? String, first)
        XCTAssertEqual(Set(paths(fileObject["added"])), added)
    }

    func testDiffOfUnchangedTreeIsEmpty() throws {
        try Fixtures.makeMixedTree(at: source)
        let first = try backup([source], dest: dest)
        let second = try backup([source], dest: dest)
        let text = try run(["diff", String(first.prefix(24)), second, "--dest", dest])
        assertExit(text, 0)
        XCTAssertEqual(text.stdoutText, "No differences between \(first) and \(second).\n", "\(text)")
        let object = try json(try run(["diff", first, second, "--dest", dest, "--json"]))
        for key in ["added", "removed", "modified", "metadata"] {
            XCTAssertEqual((object[key] as? [Any])?.count, 0, "\(key): \(object)")
        }
        let quiet = try run(["diff", first, second, "--dest", dest, "--quiet"])
        assertExit(quiet, 0)
        XCTAssertEqual(quiet.stdoutText, "")
    }

    func testDiffErrors() throws {
        try Fixtures.makeTree(at: source, files: ["a.txt": "a\n"])
        let only = try backup([source], dest: dest)
        assertExit(try run(["diff", only, "--dest", dest]), 2, "one backup is not enough")
        assertExit(try run(["diff", only, only, only, "--dest", dest]), 2)
        let missing = try run(["diff", only, "19990101", "--dest", dest])
        assertExit(missing, 1)
        XCTAssertTrue(missing.stderrText.contains("19990101"), "\(missing)")
        let missingJSON = try run(["diff", only, "19990101", "--dest", dest, "--json"])
        assertExit(missingJSON, 1)
        XCTAssertEqual(try json(missingJSON)["exit_code"] as? Int, 1)
        let help = try run(["diff", "--help"])
        assertExit(help, 0)
        XCTAssertTrue(help.stdoutText.contains("keepsake diff"), "\(help)")
    }

    // MARK: find

    /// Three backups: notes.txt in two versions, then deleted; a deeper notes.txt throughout.
    private func makeThreeBackups() throws -> [String] {
        try Fixtures.makeTree(at: source, files: [
            "notes.txt": "version 1\n",
            "docs/deeper/notes.txt": "deeper notes\n",
            "docs/report.pdf": "pdf one\n",
        ])
        var ids = [try backup([source], dest: dest)]
        try Fixtures.makeTree(at: source, files: ["notes.txt": "version 2, longer\n", "docs/other.pdf": "pdf two\n"])
        ids.append(try backup([source], dest: dest))
        XCTAssertEqual(unlink(source + "/notes.txt"), 0)
        ids.append(try backup([source], dest: dest))
        return ids
    }

    func testFindAcrossThreeBackups() throws {
        let ids = try makeThreeBackups()

        let outcome = try run(["find", "notes.txt", "--dest", dest, "--json"])
        assertExit(outcome, 0)
        let object = try json(outcome)
        let matches = try XCTUnwrap(object["matches"] as? [[String: Any]], "\(outcome)")
        let found = matches.map { "\(ids.firstIndex(of: $0["backup"] as? String ?? "") ?? -1):\($0["path"] as? String ?? "?")" }
        XCTAssertEqual(found, ["0:\(archived("docs/deeper/notes.txt"))", "0:\(archived("notes.txt"))",
                               "1:\(archived("docs/deeper/notes.txt"))", "1:\(archived("notes.txt"))",
                               "2:\(archived("docs/deeper/notes.txt"))"])
        let top = matches.filter { ($0["path"] as? String) == archived("notes.txt") }
        XCTAssertEqual(top.map { $0["size"] as? Int }, [10, 18])
        for match in matches {
            XCTAssertEqual((match["sha256"] as? String)?.count, 64, "the full hash in JSON: \(match)")
            XCTAssertNotNil(match["mtime_ns"] as? Int)
            XCTAssertNotNil(match["created"] as? String)
        }
        XCTAssertEqual(object["backups_searched"] as? Int, 3)
        XCTAssertFalse(outcome.stderrText.contains("keepsake restore"), "no hint in JSON mode:\n\(outcome)")

        // The table: one row per version, a 12-digit hash, the hint on stderr only.
        let text = try run(["find", "notes.txt", "--dest", dest])
        assertExit(text, 0)
        XCTAssertFalse(text.stdoutText.contains("\u{1b}"), "\(text)")
        let lines = text.stdoutText.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 2 + 5, "\(text)")
        for title in ["BACKUP", "CREATED", "PATH", "SIZE", "MODIFIED", "SHA256"] {
            XCTAssertTrue(lines.first?.contains(title) ?? false, "\(title) missing:\n\(text)")
        }
        let firstHash = try XCTUnwrap(top.first?["sha256"] as? String)
        let firstRow = try XCTUnwrap(lines.first { $0.hasPrefix(ids[0]) && $0.contains(archived("notes.txt")) && !$0.contains("deeper") })
        XCTAssertTrue(firstRow.hasSuffix(String(firstHash.prefix(12))), firstRow)
        XCTAssertFalse(firstRow.contains(firstHash), "the table shows 12 hex digits only")
        XCTAssertFalse(text.stdoutText.contains("keepsake restore"))
        XCTAssertTrue(text.stderrText.contains("Restore one with"), "\(text)")
        XCTAssertTrue(text.stderrText.contains("keepsake restore"), "\(text)")

        // The user picks the first version and restores it.
        let target = path("restored")
        assertExit(try run(["restore", ids[0], "/" + archived("notes.txt"), "--dest", dest, "--target", target]), 0)
        XCTAssertEqual(try String(contentsOfFile: target + source + "/notes.txt", encoding: .utf8), "version 1\n")
    }

    func testFindPatterns() throws {
        _ = try makeThreeBackups()
        func count(_ pattern: String) throws -> Int {
            let outcome = try run(["find", pattern, "--dest", dest, "--json"])
            return ((try json(outcome)["matches"] as? [Any]) ?? []).count
        }
        XCTAssertEqual(try count("*.pdf"), 5)
        XCTAssertEqual(try count(source + "/notes.txt"), 2, "anchored with the leading slash")
        XCTAssertEqual(try count(archived("notes.txt")), 2, "anchored without it")
        XCTAssertEqual(try count("**/deeper/*.txt"), 3)
        XCTAssertEqual(try count("deeper/"), 3, "folders only")
        XCTAssertEqual(try count("deeper/notes.txt"), 0, "a slash anchors the pattern at the root")
    }

    func testFindWithoutMatch() throws {
        _ = try makeThreeBackups()
        let outcome = try run(["find", "missing.txt", "--dest", dest])
        assertExit(outcome, 1)
        XCTAssertEqual(outcome.stdoutText, "")
        XCTAssertTrue(outcome.stderrText.contains("missing.txt"), "\(outcome)")
        let jsonOutcome = try run(["find", "missing.txt", "--dest", dest, "--json"])
        assertExit(jsonOutcome, 1)
        let object = try json(jsonOutcome)
        XCTAssertEqual((object["matches"] as? [Any])?.count, 0)
        XCTAssertEqual(object["exit_code"] as? Int, 1)

        let invalid = try run(["find", "[a", "--dest", dest])
        assertExit(invalid, 2)
        XCTAssertTrue(invalid.stderrText.contains("[a"), "\(invalid)")
        assertExit(try run(["find", "--dest", dest]), 2, "PATTERN is required")
        assertExit(try run(["find", "x", "--dest", path("empty")]), 1)
    }

    func testFindSkipsUnreadableManifest() throws {
        let ids = try makeThreeBackups()
        try writeSidecar(try sidecarPath(in: dest, id: ids[1]), "garbage\n")
        let outcome = try run(["find", "notes.txt", "--dest", dest, "--json"])
        assertExit(outcome, 0)
        XCTAssertTrue(outcome.stderrText.contains("warning:") && outcome.stderrText.contains(ids[1]), "\(outcome)")
        let object = try json(outcome)
        XCTAssertEqual((object["matches"] as? [Any])?.count, 3)
        XCTAssertEqual((object["skipped"] as? [[String: Any]])?.first?["id"] as? String, ids[1])
    }
}
