import Foundation
import XCTest

/// The seekable zstd archive: independent frames plus a seek table, read unchanged by
/// `zstd` and GNU tar; manifest offsets that point at each entry; and partial restores
/// that decompress only the frames they need, also from the parent of an incremental.
// test-tag(threads): the parallel frame decoder, in the binary
final class SeekableArchiveTests: EndToEndTestCase {
    // MARK: State

    private var source = ""
    private var dest = ""

    /// Three incompressible 6 MiB files (several 4 MiB frames) around two small text files.
    override func setUpWithError() throws {
        try super.setUpWithError()
        source = path("src")
        dest = path("dest")
        try Fixtures.makeIncompressibleTree(at: source + "/big", count: 3, size: 6 << 20)
        try Fixtures.makeTree(at: source + "/small", files: ["a.txt": "first small file\n", "b.txt": "second small file\n"])
    }

    // MARK: Format

    func testStandardToolsReadTheFramedArchive() throws {
        try backup([source], dest: dest)
        let archive = try onlyArchive(in: dest)
        let listing = try toolSucceeds("zstd", ["-lv", archive])
        XCTAssertTrue(listing.stdoutText.contains("Skippable Frames: 1"), "the seek table is a skippable frame:\n\(listing)")
        let frames = listing.stdoutText.split(separator: "\n").first { $0.contains("# Zstandard Frames:") }
        let frameCount = Int(frames?.split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "") ?? 0
        XCTAssertGreaterThanOrEqual(frameCount, 4, "18 MiB must take several 4 MiB frames:\n\(listing)")
        try toolSucceeds("zstd", ["-t", "-q", archive])

        let extracted = path("tar-out")
        try FileManager.default.createDirectory(atPath: extracted, withIntermediateDirectories: true)
        try toolSucceeds("tar", ["--zstd", "-xf", archive, "-C", extracted])
        try assertTreesEqual(expected: source, actual: restored(source, into: extracted))
    }

    func testManifestOffsetsPointAtEachEntry() throws {
        try backup([source], dest: dest)
        let archive = try onlyArchive(in: dest)
        let tarPath = path("plain.tar")
        try toolSucceeds("sh", ["-c", "zstd -dc \"$1\" > \"$2\"", "sh", archive, tarPath])
        let tar = try Data(contentsOf: URL(fileURLWithPath: tarPath))
        let lines = try sidecarText(try sidecarPath(in: dest)).split(separator: "\n").dropFirst()
        var checked = 0
        for line in lines {
            let entry = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let at = try XCTUnwrap(entry["at"] as? Int, "every entry of a full backup has 'at': \(line)")
            let length = try XCTUnwrap(entry["len"] as? Int, "every entry of a full backup has 'len': \(line)")
            XCTAssertEqual(at % 512, 0, "entries start on tar blocks")
            XCTAssertLessThanOrEqual(at + length, tar.count)
            // Cut the entry out alone: GNU tar must list exactly that path.
            let piece = path("piece.tar")
            var slice = tar.subdata(in: at..<(at + length))
            slice.append(Data(count: 1024))
            try slice.write(to: URL(fileURLWithPath: piece))
            let listed = try toolSucceeds("tar", ["-tf", piece])
            let name = try XCTUnwrap(entry["path"] as? String)
            XCTAssertEqual(listed.stdoutText.trimmingCharacters(in: .newlines).trimmingCharacters(in: CharacterSet(charactersIn: "/")),
                           name, "the bytes at \(at) hold \(name)")
            checked += 1
        }
        XCTAssertGreaterThanOrEqual(checked, 7)
    }

    // MARK: Partial restores

    func testOneSmallFileDecompressesOnlyItsFrame() throws {
        try backup([source], dest: dest)
        let archive = try onlyArchive(in: dest)
        let archiveSize = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: archive)[.size] as? Int)
        let target = path("target")
        let outcome = try run(["restore", "latest", source + "/small/b.txt", "--dest", dest, "--target", target, "--json"])
        assertExit(outcome, 0)
        let report = try json(outcome)
        XCTAssertEqual(report["archives_read_in_part"] as? Int, 1)
        let read = try XCTUnwrap(report["archive_bytes_read"] as? Int)
        XCTAssertLessThan(read, archiveSize / 3, "one small file must not decompress the whole \(archiveSize)-byte archive")
        XCTAssertEqual(try String(contentsOfFile: restored(source, into: target) + "/small/b.txt", encoding: .utf8),
                       "second small file\n")

        // The whole tree still reads the whole archive.
        let everything = path("everything")
        let full = try json(try run(["restore", "latest", "--dest", dest, "--target", everything, "--json"]))
        XCTAssertEqual(full["archives_read_in_part"] as? Int, 0)
        XCTAssertEqual(full["archive_bytes_read"] as? Int, archiveSize)
        try assertTreesEqual(expected: source, actual: restored(source, into: everything))
    }

    func testDamageOutsideTheSelectionDoesNotStopAPartialRestore() throws {
        try backup([source], dest: dest)
        let archive = try onlyArchive(in: dest)
        // The small files come last in the archive (after big/): damage the first frame.
        try Fixtures.flipByte(in: archive, at: 100_000)
        let target = path("target")
        let partial = try run(["restore", "latest", source + "/small", "--dest", dest, "--target", target])
        assertExit(partial, 0, "the damaged frame is not one the selection needs")
        XCTAssertEqual(try String(contentsOfFile: restored(source, into: target) + "/small/a.txt", encoding: .utf8),
                       "first small file\n")

        let whole = try run(["restore", "latest", "--dest", dest, "--target", path("whole")])
        assertExit(whole, 4, "a whole restore reads the damaged frame")
        XCTAssertTrue(whole.stderrText.contains("zstd frame 0"), "the message names the frame:\n\(whole)")
    }

    func testDamageInsideTheSelectionIsReported() throws {
        try backup([source], dest: dest)
        let archive = try onlyArchive(in: dest)
        try Fixtures.flipByte(in: archive, at: 100_000)
        let outcome = try run(["restore", "latest", source + "/big/file-0.bin", "--dest", dest, "--target", path("target")])
        assertExit(outcome, 4)
        XCTAssertFalse(FileManager.default.fileExists(atPath: restored(source, into: path("target")) + "/big/file-0.bin"))
    }

    func testUnchangedFileOfAnIncrementalComesFromTheParentsFrames() throws {
        try backup([source], dest: dest)
        try "changed\n".write(toFile: source + "/small/a.txt", atomically: false, encoding: .utf8)
        try backup([source], dest: dest)
        let target = path("target")
        let outcome = try run(["restore", "latest", source + "/big/file-2.bin", "--dest", dest, "--target", target, "--json"])
        assertExit(outcome, 0)
        let report = try json(outcome)
        XCTAssertEqual(report["archives_read_in_part"] as? Int, 2, "the new archive (nothing needed from it) and the parent's")
        let read = try XCTUnwrap(report["archive_bytes_read"] as? Int)
        XCTAssertLessThan(read, 10 << 20, "a 6 MiB file spans at most three 4 MiB frames")
        let original = try Data(contentsOf: URL(fileURLWithPath: source + "/big/file-2.bin"))
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: restored(source, into: target) + "/big/file-2.bin")), original)
    }

    func testLoneArchiveStillRestoresWhole() throws {
        try backup([source], dest: dest)
        let archive = try onlyArchive(in: dest)
        let target = path("target")
        let outcome = try run(["restore", archive, "--target", target])
        assertExit(outcome, 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: target))
    }

    func testAnUnbelievableSeekTableIsNotUsed() throws {
        try backup([source], dest: dest)
        let archive = try onlyArchive(in: dest)
        var bytes = try Data(contentsOf: URL(fileURLWithPath: archive))
        // Replace the real table with one that claims a single 100 MiB frame.
        let footer = bytes.suffix(9)
        let frames = Int(footer[footer.startIndex]) | Int(footer[footer.startIndex + 1]) << 8
        bytes.removeLast(8 + frames * 8 + 9)
        func le(_ value: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
        let forged = le(0x184D_2A5E) + le(8 + 9) + le(bytes.count) + le(100 << 20) + le(1) + [0] + le(0x8F92_EAB1)
        bytes.append(contentsOf: forged)
        try bytes.write(to: URL(fileURLWithPath: archive))
        let outcome = try run(["restore", "latest", source + "/small/a.txt", "--dest", dest, "--target", path("target"), "--json"])
        assertExit(outcome, 0, "the forged table is ignored and the archive read whole")
        XCTAssertEqual(try json(outcome)["archives_read_in_part"] as? Int, 0)
        XCTAssertEqual(try String(contentsOfFile: restored(source, into: path("target")) + "/small/a.txt", encoding: .utf8),
                       "first small file\n")
    }

    func testVerifyOfALoneArchiveFindsADamagedSeekTable() throws {
        try backup([source], dest: dest)
        let archive = try onlyArchive(in: dest)
        let lone = path("lone.tar.zst")
        try FileManager.default.copyItem(atPath: archive, toPath: lone)
        let size = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: lone)[.size] as? Int)
        assertExit(try run(["verify", lone]), 0)
        try Fixtures.flipByte(in: lone, at: size - 12) // inside the last table entry
        let outcome = try run(["verify", lone])
        assertExit(outcome, 4, "nothing else covers the seek table of a lone archive")
        XCTAssertTrue(outcome.combinedText.contains("seek table"), outcome.combinedText)
    }
}
