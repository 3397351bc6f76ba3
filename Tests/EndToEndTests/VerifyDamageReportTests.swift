import Foundation
import XCTest

/// What `verify` says about an archive that cannot be read to its end: the reader's phrase
/// once, where reading stopped ("unreadable from frame N") with the count of entries that
/// could not be checked, and no "missing from the archive" line per entry after that
/// point. A damaged frame in an archive that can be read in parts costs only its entries,
/// each named (issue 25 §2.3). An archive that reads to its end still names each entry it lacks.
final class VerifyDamageReportTests: EndToEndTestCase {
    // MARK: Fixtures

    /// A backup of six incompressible 1 MB files: about 6 MB of tar stream, so two zstd
    /// frames (4 MiB each); files 0 to 3 lie wholly in frame 0. Returns the destination.
    private func twoFrameBackup() throws -> String {
        let source = path("src")
        try Fixtures.makeIncompressibleTree(at: source, count: 6, size: 1_000_000)
        let dest = path("dest")
        try backup([source], dest: dest)
        return dest
    }

    private func occurrences(_ phrase: String, in text: String) -> Int {
        text.components(separatedBy: phrase).count - 1
    }

    // MARK: Tests

    func testTruncatedArchiveSaysOnceWhereItBecameUnreadable() throws {
        let dest = try twoFrameBackup()
        // Three quarters of the stored bytes: the cut lies inside frame 1.
        try Fixtures.truncate(try onlyArchive(in: dest), toFraction: 0.75)

        let text = try run(["verify", "--dest", dest])
        assertExit(text, 4)
        XCTAssertEqual(occurrences("is damaged or not an archive", in: text.combinedText), 1,
                       "the reader's phrase is not repeated:\n\(text)")
        XCTAssertTrue(text.stdoutText.contains("it ends inside frame 1 (truncated)"), "\(text)")
        XCTAssertTrue(text.stdoutText.contains("unreadable from frame 1: 2 of 7 entries could not be checked"), "\(text)")
        XCTAssertEqual(occurrences("missing from the archive", in: text.combinedText), 0,
                       "no line per entry after the point where reading stopped:\n\(text)")
        XCTAssertTrue(text.stdoutText.contains("Verified 1 backup: 0 intact, 1 damaged."), "\(text)")

        let outcome = try run(["verify", "--dest", dest, "--json"])
        assertExit(outcome, 4)
        let report = try XCTUnwrap((try json(outcome))["backups"] as? [[String: Any]]).first
        XCTAssertEqual(report?["unreadable_from"] as? String, "frame 1")
        XCTAssertEqual(report?["entries_unchecked"] as? Int, 2)
        XCTAssertEqual(report?["files_checked"] as? Int, 4, "the files in the intact frame before the cut were checked")
        XCTAssertEqual((report?["damaged_files"] as? [Any])?.count, 0)
        XCTAssertEqual(report?["intact"] as? Bool, false)
    }

    /// A flipped byte in a stored block of the last frame: zstd still decodes the frame,
    /// with that byte wrong, so the one file holding it is named and every other is checked.
    func testFlippedByteNamesTheFileItSpoils() throws {
        let dest = try twoFrameBackup()
        let archive = try onlyArchive(in: dest)
        let size = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: archive)[.size] as? Int)
        try Fixtures.flipByte(in: archive, at: size * 3 / 4)

        let outcome = try run(["verify", "--dest", dest, "--json"])
        assertExit(outcome, 4)
        let report = try XCTUnwrap((try json(outcome))["backups"] as? [[String: Any]]).first
        let problems = (report?["damaged_files"] as? [[String: Any]]) ?? []
        XCTAssertEqual(problems.count, 1, "\(outcome)")
        XCTAssertEqual(problems.first?["reason"] as? String, "content does not match its SHA-256 in the manifest", "\(outcome)")
        XCTAssertEqual(report?["files_checked"] as? Int, 6, "every file was read: \(outcome)")
        XCTAssertEqual(report?["entries_unchecked"] as? Int, 0)
        XCTAssertEqual(report?["unreadable_from"] as? String, "frame 1")

        let text = try run(["verify", "--dest", dest])
        XCTAssertEqual(occurrences("is damaged or not an archive", in: text.combinedText), 1, "\(text)")
        XCTAssertFalse(text.stdoutText.contains("could not be checked"), "\(text)")
        XCTAssertEqual(occurrences("missing from the archive", in: text.combinedText), 0, "\(text)")
    }

    /// The first frame's magic number destroyed: no decoder reads that frame, nor can the
    /// reader open the archive. The entries of the frame (file 4 begins in it) are named,
    /// and file 5, wholly in the second frame, is still checked.
    func testUndecodableFirstFrameCostsOnlyItsEntries() throws {
        let dest = try twoFrameBackup()
        let archive = try onlyArchive(in: dest)
        try Fixtures.flipByte(in: archive, at: 0)

        let outcome = try run(["verify", "--dest", dest, "--json"])
        assertExit(outcome, 4)
        let report = try XCTUnwrap((try json(outcome))["backups"] as? [[String: Any]]).first
        let named = ((report?["damaged_files"] as? [[String: Any]]) ?? []).compactMap { ($0["path"] as? String)?.split(separator: "/").last }
        XCTAssertEqual(named.sorted(), ["file-0.bin", "file-1.bin", "file-2.bin", "file-3.bin", "file-4.bin", "src"], "\(outcome)")
        XCTAssertEqual(report?["files_checked"] as? Int, 1, "file 5 lies wholly in the intact frame: \(outcome)")
        XCTAssertEqual(report?["entries_unchecked"] as? Int, 0)
    }

    /// A lone archive file cut short, without the manifest beside it: its own manifest, at
    /// the end, is gone, so the entries cannot be counted; still one phrase, one place.
    func testTruncatedLoneArchiveSaysOnceWhereItBecameUnreadable() throws {
        let dest = try twoFrameBackup()
        let archive = path("alone/" + URL(fileURLWithPath: try onlyArchive(in: dest)).lastPathComponent)
        try FileManager.default.createDirectory(atPath: path("alone"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: try onlyArchive(in: dest), toPath: archive)
        try Fixtures.truncate(archive, toFraction: 0.75)
        let outcome = try run(["verify", archive], environment: ["KEEPSAKE_DEST": path("no-destination")])
        assertExit(outcome, 4)
        XCTAssertEqual(occurrences("is damaged or not an archive", in: outcome.combinedText), 1, "\(outcome)")
        XCTAssertTrue(outcome.stdoutText.contains("unreadable from frame 1: the entries from there on, and the manifest at the end, "
            + "could not be checked"), "\(outcome)")
    }

    /// An archive that reads to its end but lacks an entry its manifest lists names it.
    func testEntryMissingFromAnArchiveReadToItsEndIsStillNamed() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "a\n", "b.txt": "b\n"])
        let dest = path("dest")
        try backup([source], dest: dest)
        let sidecar = try sidecarPath(in: dest)
        var lines = try sidecarText(sidecar).split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
        let folderLine = try XCTUnwrap(lines.first { $0.contains("\"type\":\"dir\"") })
        let root = String(source.dropFirst())
        lines.append(folderLine.replacingOccurrences(of: "\"path\":\"\(root)\"", with: "\"path\":\"\(root)/ghost\""))
        try writeSidecar(sidecar, lines.joined(separator: "\n") + "\n")

        let outcome = try run(["verify", "--dest", dest])
        assertExit(outcome, 4)
        XCTAssertTrue(outcome.stdoutText.contains("\(root)/ghost: missing from the archive"), "\(outcome)")
        XCTAssertFalse(outcome.stdoutText.contains("unreadable from"), "\(outcome)")
    }
}
