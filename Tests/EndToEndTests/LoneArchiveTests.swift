import Foundation
import XCTest

/// An archive copied out of its destination restores and lists on its own, checked
/// against the manifest inside it (or the copy beside it).
final class LoneArchiveTests: EndToEndTestCase {
    // MARK: Tests

    func testLoneArchiveRestoresWithoutDestinationVerifiedByInnerManifest() throws {
        let (source, id, archive) = try makeBackup()
        let lone = path("elsewhere")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(lone))
        let copy = lone + "/" + (archive as NSString).lastPathComponent
        try FileManager.default.copyItem(atPath: archive, toPath: copy)
        XCTAssertEqual(try names(in: lone).count, 1, "only the archive, no manifest beside it")

        let target = path("target")
        let restore = try run(["restore", copy, "--target", target, "--json"], environment: noDestination)
        assertExit(restore, 0)
        let object = try json(restore)
        XCTAssertEqual(object["backup_id"] as? String, id, "the id comes from the manifest inside the archive")
        XCTAssertEqual(object["verified"] as? Bool, true, "files must be verified against the inner manifest:\n\(restore)")
        XCTAssertEqual(object["plain_tarball"] as? Bool, false)
        XCTAssertEqual(object["unverified_files"] as? Int, 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: target))
        XCTAssertFalse(RawFileSystem.exists(path("no-destination")), "a file restore must not create a destination")
        XCTAssertFalse(RawFileSystem.exists(path("no-xdg")), "a file restore must not touch the default destination")

        let text = try run(["restore", copy, "--target", path("target-text")], environment: noDestination)
        assertExit(text, 0)
        XCTAssertTrue(text.stdoutText.contains("SHA-256"), "the summary should say every file was checked:\n\(text)")
    }

    func testLoneArchiveWithSidecarManifest() throws {
        let (source, id, archive) = try makeBackup()
        let lone = path("usb")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(lone))
        let sidecar = archive.replacingOccurrences(of: ".tar.zst", with: ".manifest.jsonl.zst")
        XCTAssertTrue(RawFileSystem.exists(sidecar), "no manifest beside the archive at \(sidecar)")
        for file in [archive, sidecar] {
            try FileManager.default.copyItem(atPath: file, toPath: lone + "/" + (file as NSString).lastPathComponent)
        }
        let copy = lone + "/" + (archive as NSString).lastPathComponent
        let target = path("target")
        let restore = try run(["restore", copy, "--target", target, "--json"], environment: noDestination)
        assertExit(restore, 0)
        let object = try json(restore)
        XCTAssertEqual(object["backup_id"] as? String, id)
        XCTAssertEqual(object["verified"] as? Bool, true)
        try assertTreesEqual(expected: source, actual: restored(source, into: target))
    }

    func testListAndVerifyLoneArchive() throws {
        let (source, _, archive) = try makeBackup()
        let lone = path("elsewhere")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(lone))
        let copy = lone + "/copy.tar.zst"
        try FileManager.default.copyItem(atPath: archive, toPath: copy)

        let listed = Set(try listedPaths(copy, dest: nil).map(RawFileSystem.display))
        let prefix = String(source.dropFirst())
        for relative in ["", "/readme.txt", "/docs/report final.txt", "/docs/사진_백업.txt", "/empty", "/data-copy.bin"] {
            XCTAssertTrue(listed.contains(prefix + relative), "list FILE misses \(prefix + relative): \(listed.sorted())")
        }
        XCTAssertFalse(listed.contains { $0.hasPrefix(".keepsake") }, "Keepsake's own entries are not user files")

        let verify = try run(["verify", copy], environment: noDestination)
        assertExit(verify, 0)
    }

    /// A lone incremental archive without its parent's archive beside it is not damaged:
    /// the files it holds itself are restored, and the one it needs is named by file name,
    /// with the count of the files that live there (exit 3). With the parent beside it, the
    /// same restore is whole. A full backup's archive needs nothing else.
    func testLoneIncrementalWithoutItsParentNamesTheArchiveItNeeds() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["changed.txt": "first\n", "same/one.txt": "one\n", "same/two.txt": "two\n"])
        let dest = path("dest")
        let parent = try backup([source], dest: dest)
        try Fixtures.makeTree(at: source, files: ["changed.txt": "second\n"])
        let child = try backup([source], dest: dest)
        let parentArchive = try XCTUnwrap(try names(in: dest).first { $0.contains(parent) && $0.hasSuffix(".tar.zst") })
        let childArchive = try XCTUnwrap(try names(in: dest).first { $0.contains(child) && $0.hasSuffix(".tar.zst") })
        let lone = path("usb")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(lone))
        try FileManager.default.copyItem(atPath: dest + "/" + childArchive, toPath: lone + "/" + childArchive)
        let stem = String(parentArchive.dropLast(".tar.zst".count))

        let target = path("target")
        let outcome = try run(["restore", lone + "/" + childArchive, "--target", target], environment: noDestination)
        assertExit(outcome, 3, "a missing parent is a file to bring, not damage")
        XCTAssertTrue(outcome.stderrText.contains("needs \(stem)'s archive (\(parentArchive)) next to this file"), "\(outcome)")
        XCTAssertTrue(outcome.stderrText.contains("2 files of this backup live in it"), "the count of what is missing:\n\(outcome)")
        XCTAssertFalse(outcome.combinedText.lowercased().contains("damaged"), "the archive is fine:\n\(outcome)")
        XCTAssertTrue(outcome.stdoutText.contains("Missing:"), "\(outcome)")
        let root = restored(source, into: target)
        XCTAssertEqual(try String(contentsOfFile: root + "/changed.txt", encoding: .utf8), "second\n", "its own files are restored")
        XCTAssertFalse(RawFileSystem.exists(root + "/same/one.txt"), "the parent's files are not there to restore")

        let object = try json(try run(["restore", lone + "/" + childArchive, "--target", path("target-json"), "--json"],
                                      environment: noDestination))
        XCTAssertEqual(object["exit_code"] as? Int, 3)
        XCTAssertTrue((object["damaged"] as? [Any] ?? [0]).isEmpty, "\(object)")
        XCTAssertNil(object["archive_problem"] as? String, "\(object)")
        let missing = object["missing_archives"] as? [[String: Any]] ?? []
        XCTAssertEqual(missing.count, 1, "\(object)")
        XCTAssertEqual(missing.first?["backup_id"] as? String, parent)
        XCTAssertEqual(missing.first?["file"] as? String, parentArchive)
        XCTAssertEqual((missing.first?["paths"] as? [String])?.count, 2)

        // The parent's archive brought beside it: whole.
        try FileManager.default.copyItem(atPath: dest + "/" + parentArchive, toPath: lone + "/" + parentArchive)
        let whole = try run(["restore", lone + "/" + childArchive, "--target", path("target-whole")], environment: noDestination)
        assertExit(whole, 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: path("target-whole")))

        // In a destination, a parent archive that is gone is damage there (exit 4).
        try FileManager.default.removeItem(atPath: dest + "/" + parentArchive)
        let broken = try run(["restore", child, "--dest", dest, "--target", path("target-dest")])
        assertExit(broken, 4)
        XCTAssertTrue(broken.stderrText.contains("is missing from the destination"), "\(broken)")
    }

    /// A lone archive whose compression has no checksum (here none at all; gzip's trailer
    /// CRC is never checked by libarchive) can carry a flipped digit that still parses. The
    /// tar header and the manifest inside record the same mode and time, so when they
    /// disagree the entry is damaged: not restored as if intact (exit 4), whichever copy was hit.
    func testLoneArchiveWhoseHeaderAndManifestDisagreeNamesTheEntryDamaged() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["keep.txt": "intact\n", "stamp.txt": "time in the manifest\n",
                                                  "head.txt": "time in the header\n", "docs/mode.txt": "folder mode\n"])
        let dest = path("dest")
        _ = try backup([source], dest: dest, options: ["--compression", "none"])
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: try onlyArchive(in: dest))))
        let prefix = String(source.dropFirst())

        // The manifest's line for stamp.txt: one digit of its time changed.
        let stampLine = try XCTUnwrap(Self.find(Array("{\"path\":\"\(prefix)/stamp.txt\"".utf8), in: bytes))
        let stampTime = try XCTUnwrap(Self.find(Array("\"mtime_ns\":".utf8), in: bytes, from: stampLine))
        Self.changeDigit(at: stampTime + "\"mtime_ns\":".utf8.count + 3, in: &bytes)
        // The manifest's line for the folder docs: its mode changed.
        let docsLine = try XCTUnwrap(Self.find(Array("{\"path\":\"\(prefix)/docs\"".utf8), in: bytes))
        let docsMode = try XCTUnwrap(Self.find(Array("\"mode\":\"0".utf8), in: bytes, from: docsLine))
        Self.changeDigit(at: docsMode + "\"mode\":\"0".utf8.count + 1, in: &bytes)
        // The pax header of head.txt (the block before its ustar header): its time changed.
        let headName = try XCTUnwrap(Self.find(Array("\(prefix)/head.txt".utf8) + [0], in: bytes))
        let headTime = try XCTUnwrap(Self.find(Array(" mtime=".utf8), in: bytes, from: headName - 1024))
        XCTAssertLessThan(headTime, headName, "the pax header comes before the entry's own header")
        Self.changeDigit(at: headTime + " mtime=".utf8.count + 3, in: &bytes)

        let lone = path("usb")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(lone))
        let copy = lone + "/lone.tar"
        try Data(bytes).write(to: URL(fileURLWithPath: copy))
        let target = path("target")
        let outcome = try run(["restore", copy, "--target", target, "--json"], environment: noDestination)
        assertExit(outcome, 4, "a header and a manifest that disagree are damage")
        let object = try json(outcome)
        let damaged = object["damaged"] as? [[String: Any]] ?? []
        let reasons = Dictionary(damaged.compactMap { item in
            (item["path"] as? String).map { ($0, item["reason"] as? String ?? "") }
        }, uniquingKeysWith: { first, _ in first })
        XCTAssertEqual(Set(reasons.keys), ["\(prefix)/stamp.txt", "\(prefix)/head.txt", "\(prefix)/docs"], "\(object)")
        XCTAssertTrue(reasons["\(prefix)/stamp.txt"]?.contains("disagree (modified time)") == true, "\(reasons)")
        XCTAssertTrue(reasons["\(prefix)/head.txt"]?.contains("disagree (modified time)") == true, "\(reasons)")
        XCTAssertTrue(reasons["\(prefix)/docs"]?.contains("disagree (mode)") == true, "\(reasons)")
        let root = restored(source, into: target)
        XCTAssertFalse(RawFileSystem.exists(root + "/stamp.txt"), "a damaged file never lands under its final name")
        XCTAssertFalse(RawFileSystem.exists(root + "/head.txt"), "a damaged file never lands under its final name")
        XCTAssertEqual(try String(contentsOfFile: root + "/keep.txt", encoding: .utf8), "intact\n")
        XCTAssertEqual(try String(contentsOfFile: root + "/docs/mode.txt", encoding: .utf8), "folder mode\n",
                       "a folder with content is left in place, named")
        XCTAssertTrue(try names(in: root).allSatisfy { !$0.hasPrefix(".keepsake-") }, "no temporary is left")

        let verify = try run(["verify", copy], environment: noDestination)
        assertExit(verify, 4, "verify finds the same three")
        for name in ["stamp.txt", "head.txt", "docs"] {
            XCTAssertTrue(verify.combinedText.contains("\(prefix)/\(name)"), "verify names \(name):\n\(verify)")
        }
        XCTAssertTrue(verify.combinedText.contains("disagree"), "\(verify)")
    }

    // MARK: Helpers

    /// Environment with a destination that does not exist.
    private var noDestination: [String: String?] {
        ["KEEPSAKE_DEST": path("no-destination"), "XDG_DATA_HOME": path("no-xdg")]
    }

    /// A mixed tree backed up with zstd: (source, id, archive path).
    private func makeBackup() throws -> (String, String, String) {
        let source = path("src")
        try Fixtures.makeMixedTree(at: source)
        let dest = path("dest")
        let id = try backup([source], dest: dest)
        return (source, id, try onlyArchive(in: dest))
    }

    /// Where `needle` first occurs in `bytes` at or after `start`.
    private static func find(_ needle: [UInt8], in bytes: [UInt8], from start: Int = 0) -> Int? {
        guard !needle.isEmpty, bytes.count >= needle.count else { return nil }
        var index = max(0, start)
        while index <= bytes.count - needle.count {
            if bytes[index] == needle[0], Array(bytes[index..<(index + needle.count)]) == needle { return index }
            index += 1
        }
        return nil
    }

    /// Changes the decimal digit at `offset` to another one (same length, still parses).
    private static func changeDigit(at offset: Int, in bytes: inout [UInt8]) {
        XCTAssertTrue((UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[offset]), "not a digit at \(offset)")
        bytes[offset] = bytes[offset] == UInt8(ascii: "1") ? UInt8(ascii: "2") : UInt8(ascii: "1")
    }
}
