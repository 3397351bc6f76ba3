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

    // MARK: Damaged names in a gzip stream

    /// Damage in a lone gzip archive (whose trailer CRC libarchive never checks) garbles the
    /// two header blocks of one entry, its pax header and its own: neither matches its
    /// checksum. Asked for the next header after such a block, libarchive takes the following
    /// 512-byte blocks for headers until one passes by chance: here the tar file stored in
    /// the backup, whose entries would land as if they were the backup's (after a real flip,
    /// decoded garbage), and the archive ends before its manifest, so nothing takes them
    /// back. The first damaged header ends the archive instead.
    func testADamagedTarHeaderEndsALoneArchiveAndNothingBeyondItLands() throws {
        let source = path("small")
        try Fixtures.makeTree(at: source, files: ["a.txt": "before\n", "z.txt": "after\n"])
        try CraftedArchive.write([.directory("planted"), .file("planted/evil.txt", contents: "not in the backup\n")],
                                 to: source, name: "inner")
        let dest = path("dest")
        _ = try backup([source], dest: dest, options: ["--compression", "gzip"])
        var tar = try gunzip(try onlyArchive(in: dest))
        let header = try XCTUnwrap(Self.header(named: String(source.dropFirst()) + "/inner.tar", in: tar))
        let paxHeader = try XCTUnwrap(stride(from: header - 512, through: 0, by: -512).first {
            tar[$0 + 156] == UInt8(ascii: "x")
        })
        // A byte of each name: neither checksum matches any more.
        for block in [paxHeader, header] { tar[block + 10] ^= 0x08 }

        let target = path("target")
        let outcome = try run(["restore", try lone(gzip(tar), name: "flipped.tar.gz"), "--target", target, "--json"],
                              environment: noDestination)
        assertExit(outcome, 4)
        let object = try json(outcome)
        XCTAssertTrue((object["archive_problem"] as? String)?.contains("checksum") == true, "\(object)")
        XCTAssertFalse(RawFileSystem.exists(target + "/planted"), "the stored tar's entries are not the backup's")
        XCTAssertEqual(try strayNames(in: target, source: source), [], "\(outcome)")
    }

    /// A damaged name that still matches its header's checksum (damage in a deflate stream
    /// can change several bytes at once): small/folder-01/note.txt read as
    /// small8/folder-01/note.txt. The archive's own manifest, read at its end, refuses the
    /// file; the folders made on the way to it go too, and the file it was is named missing.
    func testFoldersMadeOnTheWayToADamagedNameAreTakenBack() throws {
        let source = path("small")
        try Fixtures.makeTree(at: source, files: ["keep.txt": "kept\n", "folder-01/note.txt": "renamed by damage\n"])
        let dest = path("dest")
        _ = try backup([source], dest: dest, options: ["--compression", "gzip"])
        var tar = try gunzip(try onlyArchive(in: dest))
        let prefix = String(source.dropFirst())
        let header = try XCTUnwrap(Self.header(named: prefix + "/folder-01/note.txt", in: tar))
        Self.rename(header: header, to: prefix + "8/folder-01/note.txt", in: &tar)

        let target = path("target")
        let outcome = try run(["restore", try lone(gzip(tar), name: "renamed.tar.gz"), "--target", target, "--json"],
                              environment: noDestination)
        assertExit(outcome, 4)
        let object = try json(outcome)
        let reasons = Dictionary((object["damaged"] as? [[String: Any]] ?? []).compactMap { item in
            (item["path"] as? String).map { ($0, item["reason"] as? String ?? "") }
        }, uniquingKeysWith: { first, _ in first })
        XCTAssertEqual(reasons[prefix + "8/folder-01/note.txt"]?.contains("not in the backup's manifest"), true, "\(object)")
        XCTAssertEqual(reasons[prefix + "/folder-01/note.txt"], "missing from the archive", "\(object)")
        XCTAssertFalse(RawFileSystem.exists(target + source + "8"), "no folder made for a damaged name is left")
        XCTAssertEqual(try String(contentsOfFile: restored(source, into: target) + "/keep.txt", encoding: .utf8), "kept\n")
        XCTAssertTrue(RawFileSystem.exists(restored(source, into: target) + "/folder-01"), "a folder the manifest lists stays")
        XCTAssertEqual(try strayNames(in: target, source: source), [], "\(outcome)")
    }

    // MARK: Helpers

    /// The tar stream inside a gzip archive.
    private func gunzip(_ archive: String) throws -> [UInt8] {
        Array(try toolSucceeds("gzip", ["-dc", archive]).stdout)
    }

    /// `tar` compressed with gzip.
    private func gzip(_ tar: [UInt8]) throws -> [UInt8] {
        let outcome = try tool("gzip", ["-c", "-n"], stdin: Data(tar))
        XCTAssertEqual(outcome.exitCode, 0, "gzip failed:\n\(outcome)")
        return Array(outcome.stdout)
    }

    /// Writes `bytes` as `name` in a folder of its own (no manifest beside it); its path.
    private func lone(_ bytes: [UInt8], name: String) throws -> String {
        let folder = path("usb")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(folder))
        try RawFileSystem.writeFile(RawFileSystem.bytes(folder + "/" + name), contents: bytes)
        return folder + "/" + name
    }

    /// Names below `target` that are neither `source`'s own (at their place in the target),
    /// folders on the way to it, nor one of its files' `NAME.unverified`.
    private func strayNames(in target: String, source: String) throws -> [String] {
        let prefix = String(source.dropFirst())
        var allowed = Set(try TreeComparison.snapshot(of: source, xattrName: nil).keys.map { relative in
            relative.isEmpty ? prefix : prefix + "/" + RawFileSystem.display(relative)
        })
        var ancestor = ""
        for component in prefix.split(separator: "/") {
            ancestor += ancestor.isEmpty ? String(component) : "/" + component
            allowed.insert(ancestor)
        }
        allowed.insert("")
        return try TreeComparison.snapshot(of: target, xattrName: nil).keys.map(RawFileSystem.display)
            .filter { !allowed.contains($0) && !($0.hasSuffix(".unverified") && allowed.contains(String($0.dropLast(11)))) }
            .sorted()
    }

    /// Where the ustar header block whose name field holds `name` begins in `tar`.
    private static func header(named name: String, in tar: [UInt8]) -> Int? {
        let field = Array(name.utf8) + [0]
        return stride(from: 0, to: tar.count - 511, by: 512).first { Array(tar[$0..<($0 + field.count)]) == field }
    }

    /// Gives the header block at `offset` the name `name` (shorter than 100 bytes) and a
    /// checksum that matches it again.
    private static func rename(header offset: Int, to name: String, in tar: inout [UInt8]) {
        let bytes = Array(name.utf8)
        guard bytes.count < 100 else { return XCTFail("'\(name)' does not fit the ustar name field") }
        tar.replaceSubrange(offset..<(offset + 100), with: bytes + [UInt8](repeating: 0, count: 100 - bytes.count))
        // The checksum is the sum of the block's bytes with its own field read as spaces.
        tar.replaceSubrange((offset + 148)..<(offset + 156), with: [UInt8](repeating: 0x20, count: 8))
        let octal = String(tar[offset..<(offset + 512)].reduce(0) { $0 + Int($1) }, radix: 8)
        let field = String(repeating: "0", count: max(0, 6 - octal.count)) + octal
        tar.replaceSubrange((offset + 148)..<(offset + 156), with: Array(field.utf8) + [0, 0x20])
    }

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
