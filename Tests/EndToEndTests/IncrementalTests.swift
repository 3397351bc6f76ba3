import Foundation
import XCTest

/// Incremental backups over several runs of a changing tree: every point in time restores
/// exactly, from the destination and from lone archive files.
final class IncrementalTests: EndToEndTestCase {
    // MARK: Helpers

    private func write(_ relative: String, _ text: String, in root: String) throws {
        let url = URL(fileURLWithPath: root + "/" + relative)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
    }

    /// A copy of the tree as it is now (cp -a keeps modes, times and hard links).
    private func snapshot(_ source: String, as name: String) throws -> String {
        let copy = path("snapshots/" + name)
        try toolSucceeds("mkdir", ["-p", path("snapshots")])
        try toolSucceeds("cp", ["-a", source, copy])
        return copy
    }

    private func backupJSON(_ source: String, dest: String, options: [String] = []) throws -> [String: Any] {
        let outcome = try run(["backup", source, "--dest", dest, "--json"] + options)
        assertExit(outcome, 0)
        return try json(outcome)
    }

    // MARK: Tests

    func testEveryPointInTimeOfAChangingTreeRestoresExactly() throws {
        let source = path("src")
        let dest = path("dest")
        try write("keep.txt", "unchanged all along", in: source)
        try write("edit.txt", "version 1", in: source)
        try write("doomed.txt", "deleted in run 2", in: source)
        try write("old-name.txt", "renamed in run 2", in: source)
        try write("dir/nested.txt", "in a folder", in: source)
        try write("shape", "a file that becomes a folder", in: source)
        try toolSucceeds("ln", [source + "/keep.txt", source + "/keep-link.txt"])
        var points: [(id: String, copy: String, json: [String: Any])] = []
        var first = try backupJSON(source, dest: dest)
        points.append((first["id"] as? String ?? "", try snapshot(source, as: "1"), first))

        // Run 2: modify, delete, rename, chmod, file → folder.
        try write("edit.txt", "version 2, longer", in: source)
        try FileManager.default.removeItem(atPath: source + "/doomed.txt")
        try FileManager.default.moveItem(atPath: source + "/old-name.txt", toPath: source + "/new-name.txt")
        try toolSucceeds("chmod", ["600", source + "/dir/nested.txt"])
        try FileManager.default.removeItem(atPath: source + "/shape")
        try write("shape/inside.txt", "now a folder", in: source)
        first = try backupJSON(source, dest: dest)
        points.append((first["id"] as? String ?? "", try snapshot(source, as: "2"), first))

        // Run 3: nothing changes.
        first = try backupJSON(source, dest: dest)
        points.append((first["id"] as? String ?? "", try snapshot(source, as: "3"), first))

        // Run 4: folder → file again, a new file, an edit.
        try FileManager.default.removeItem(atPath: source + "/shape")
        try write("shape", "a file once more", in: source)
        try write("added.txt", "new in run 4", in: source)
        try write("edit.txt", "version 4", in: source)
        first = try backupJSON(source, dest: dest)
        points.append((first["id"] as? String ?? "", try snapshot(source, as: "4"), first))

        XCTAssertEqual(points.map { $0.json["kind"] as? String }, ["full", "incremental", "incremental", "incremental"])
        XCTAssertEqual(points[2].json["new_files"] as? Int, 0, "a no-change run stores no file")
        XCTAssertEqual(points[2].json["files"] as? Int, points[1].json["files"] as? Int, "yet lists every file")
        XCTAssertEqual(points[1].json["parent"] as? String, points[0].id)

        for (index, point) in points.enumerated() {
            let target = path("restore-\(index + 1)")
            let outcome = try run(["restore", point.id, "--dest", dest, "--target", target])
            assertExit(outcome, 0, "restore of point \(index + 1)")
            try assertTreesEqual(expected: point.copy, actual: restored(source, into: target))
            let listed = try listedPaths(point.id, dest: dest).map { String(decoding: $0, as: UTF8.self) }
            XCTAssertTrue(listed.contains(String(source.dropFirst()) + "/keep.txt"), "list shows the whole tree at point \(index + 1)")
        }
        let verify = try run(["verify", "--dest", dest])
        assertExit(verify, 0)
    }

    func testALoneIncrementalArchiveFindsItsParentsBesideItOrNamesThem() throws {
        let source = path("src")
        let dest = path("dest")
        try write("a.txt", "first", in: source)
        try write("b.txt", "stays", in: source)
        try backup([source], dest: dest)
        try write("a.txt", "second", in: source)
        let latest = try backup([source], dest: dest)
        let expected = try snapshot(source, as: "latest")

        // Only the archives, no manifests beside them.
        let loose = path("loose")
        try toolSucceeds("mkdir", [loose])
        for name in try names(in: dest) where name.contains(".tar") {
            try toolSucceeds("cp", [dest + "/" + name, loose + "/" + name])
        }
        let archive = try XCTUnwrap(try names(in: loose).first { $0.contains(latest) })
        let target = path("target")
        let outcome = try run(["restore", loose + "/" + archive, "--target", target], environment: ["KEEPSAKE_DEST": path("nowhere")])
        assertExit(outcome, 0)
        try assertTreesEqual(expected: expected, actual: restored(source, into: target))

        // Without the parent beside it: exit 3 (not damage), naming the archive it needs.
        for name in try names(in: loose) where !name.contains(latest) {
            try FileManager.default.removeItem(atPath: loose + "/" + name)
        }
        let missing = try run(["restore", loose + "/" + archive, "--target", path("target2")])
        assertExit(missing, 3)
        XCTAssertTrue(missing.combinedText.contains("'s archive (") && missing.combinedText.contains("next to this file"),
                      missing.combinedText)
        XCTAssertFalse(RawFileSystem.exists(path("target2") + source + "/b.txt"), "b.txt's content was not available")
        XCTAssertEqual(try String(contentsOfFile: path("target2") + source + "/a.txt", encoding: .utf8), "second",
                       "what the archive itself holds is restored")
    }

    func testFullEveryStartsNewChains() throws {
        let source = path("src")
        let dest = path("dest")
        try write("a.txt", "x", in: source)
        var kinds: [String] = []
        for _ in 0..<5 {
            kinds.append(try backupJSON(source, dest: dest, options: ["--full-every", "2"])["kind"] as? String ?? "")
        }
        XCTAssertEqual(kinds, ["full", "incremental", "full", "incremental", "full"])
        XCTAssertEqual(try backupJSON(source, dest: dest, options: ["--full"])["kind"] as? String, "full")
    }

    func testOtherSourcesDoNotShareAChain() throws {
        let dest = path("dest")
        try write("a.txt", "x", in: path("one"))
        try write("b.txt", "y", in: path("two"))
        XCTAssertEqual(try backupJSON(path("one"), dest: dest)["kind"] as? String, "full")
        XCTAssertEqual(try backupJSON(path("two"), dest: dest)["kind"] as? String, "full")
        XCTAssertEqual(try backupJSON(path("one"), dest: dest)["kind"] as? String, "incremental")
    }

    func testAMissingParentArchiveMakesTheNextBackupFullAndVerifyNamesIt() throws {
        let source = path("src")
        let dest = path("dest")
        try write("a.txt", "x", in: source)
        let full = try backup([source], dest: dest)
        let incremental = try backup([source], dest: dest)
        let fullArchive = try XCTUnwrap(try names(in: dest).first { $0.contains(full) && $0.contains(".tar") })
        try FileManager.default.removeItem(atPath: dest + "/" + fullArchive)
        let verify = try run(["verify", incremental, "--dest", dest])
        assertExit(verify, 4)
        XCTAssertTrue(verify.combinedText.contains(full), verify.combinedText)
        let next = try run(["backup", source, "--dest", dest, "--json"])
        assertExit(next, 0)
        XCTAssertEqual(try json(next)["kind"] as? String, "full")
        XCTAssertTrue(next.stderrText.contains("starting a new chain"), next.stderrText)
    }

    func testRereadNoticesAChangeThatKeepsSizeAndTimes() throws {
        let source = path("src")
        let dest = path("dest")
        try write("a.txt", "AAAA", in: source)
        try toolSucceeds("touch", ["-d", "2020-01-01 00:00:00", source + "/a.txt"])
        try backup([source], dest: dest)
        try write("a.txt", "BBBB", in: source)
        try toolSucceeds("touch", ["-d", "2020-01-01 00:00:00", source + "/a.txt"])
        // ctime changed, so a plain incremental stores it; with --ignore-ctime it would be missed…
        let missed = try backupJSON(source, dest: dest, options: ["--ignore-ctime"])
        XCTAssertEqual(missed["new_files"] as? Int, 0)
        // …and --reread compares contents.
        let caught = try backupJSON(source, dest: dest, options: ["--ignore-ctime", "--reread"])
        XCTAssertEqual(caught["new_files"] as? Int, 1)
        let target = path("target")
        assertExit(try run(["restore", caught["id"] as? String ?? "", "--dest", dest, "--target", target]), 0)
        XCTAssertEqual(try String(contentsOfFile: restored(source, into: target) + "/a.txt", encoding: .utf8), "BBBB")
    }

    /// The parent's manifest is read in step with the scan: names that sort differently as
    /// whole paths (`a-c` against `a/b`), several sources, and folders in between must all
    /// still find their previous entries.
    func testNoChangeBackupFindsEveryFileWhateverTheNames() throws {
        let base = path("tree")
        for name in ["a/b.txt", "a-c/d.txt", "a.txt", "a/x/y.txt", "a0/z.txt", "b/\u{00e9}t\u{00e9}.txt", "b/ete.txt"] {
            try write(name, name, in: base)
        }
        let dest = path("dest")
        let sources = [base + "/a-c", base + "/a", base + "/b", base + "/a.txt"]
        let first = try run(["backup"] + sources + ["--dest", dest, "--json"])
        assertExit(first, 0)
        let second = try run(["backup"] + sources + ["--dest", dest, "--json"])
        assertExit(second, 0)
        let report = try json(second)
        XCTAssertEqual(report["kind"] as? String, "incremental")
        XCTAssertEqual(report["new_files"] as? Int, 0, "every unchanged file must be found in the parent")
        XCTAssertEqual(report["files"] as? Int, 6)
    }

    /// A parent manifest that breaks part-way: the files after the break are stored again,
    /// with a caution, and the backup restores whole.
    func testAParentManifestDamagedPartWayMakesLaterFilesStoredAgain() throws {
        let source = path("src")
        for index in 0..<20 { try write(String(format: "f%02d.txt", index), "content \(index)\n", in: source) }
        let dest = path("dest")
        try backup([source], dest: dest)
        let manifest = try sidecarPath(in: dest)
        var lines = try sidecarText(manifest).components(separatedBy: "\n")
        lines[12] = "{not json"
        try writeSidecar(manifest, lines.joined(separator: "\n"))
        let outcome = try run(["backup", source, "--dest", dest, "--json"])
        assertExit(outcome, 0)
        let report = try json(outcome)
        XCTAssertEqual(report["kind"] as? String, "incremental")
        let stored = try XCTUnwrap(report["new_files"] as? Int)
        XCTAssertGreaterThan(stored, 0, "files after the damage are stored again")
        XCTAssertLessThan(stored, 20, "files before the damage are still found")
        XCTAssertTrue(outcome.stderrText.contains("could not be read to its end"), outcome.stderrText)
        let target = path("target")
        assertExit(try run(["restore", "latest", "--dest", dest, "--target", target]), 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: target))
    }
}
