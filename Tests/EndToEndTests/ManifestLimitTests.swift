import Foundation
import XCTest

/// Manifests no honest backup writes: one far bigger than what it describes, numbers at
/// the edge of their range, and entries whose content is "in" the backup itself or in a
/// newer one (a cycle). Each ends in a clear message and a documented exit code: no crash,
/// no hang, no memory out of proportion.
final class ManifestLimitTests: EndToEndTestCase {
    // MARK: Helpers

    /// A real backup of a small tree in `dest`; returns its id.
    private func smallBackup(_ dest: String, source: String = "src") throws -> String {
        try Fixtures.makeTree(at: path(source), files: ["a.txt": "alpha\n", "b.txt": "beta\n"])
        return try backup([path(source)], dest: dest)
    }

    /// The peak resident memory (KiB) and the outcome of `keepsake ARGUMENTS`.
    private func measured(_ arguments: [String]) throws -> (peakKiB: Int, outcome: ProcessRunner.Outcome) {
        let outcome = try tool("/usr/bin/time", ["-f", "peak-kib=%M", keepsake.executable] + arguments)
        let line = outcome.stderrText.split(separator: "\n").last { $0.hasPrefix("peak-kib=") }
        return (Int(line?.dropFirst("peak-kib=".count) ?? "") ?? -1, outcome)
    }

    /// Fails when `outcome` is a crash (a signal, or Swift's trap message).
    private func assertNoCrash(_ outcome: ProcessRunner.Outcome, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertLessThan(outcome.exitCode, 128, "\(what) crashed:\n\(outcome)", file: file, line: line)
        XCTAssertFalse(outcome.stderrText.contains("Fatal error") || outcome.stderrText.contains("Stack dump"),
                       "\(what) crashed:\n\(outcome)", file: file, line: line)
    }

    // MARK: Size

    func testAHugeManifestInsideATinyArchiveIsRefusedWithBoundedMemory() throws {
        let dest = path("dest")
        _ = try smallBackup(dest)
        let tar = path("plain.tar")
        let decompressed = try tool("zstd", ["-dc", try onlyArchive(in: dest)])
        try decompressed.stdout.write(to: URL(fileURLWithPath: tar))
        // The real manifest followed by 256 MiB of one byte: a few KB once compressed.
        let lone = path("lone/hostile.tar")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(path("lone")))
        try toolSucceeds("python3", ["-c", """
        import io, sys, tarfile
        source = tarfile.open(sys.argv[1])
        out = tarfile.open(sys.argv[2], "w", format=tarfile.PAX_FORMAT)
        for member in source.getmembers():
            data = source.extractfile(member).read() if member.isfile() else None
            if member.name == ".keepsake/manifest.jsonl":
                data += b"x" * (256 << 20)
                member.size = len(data)
            out.addfile(member, io.BytesIO(data) if data is not None else None)
        out.close()
        """, tar, lone + ".raw"])
        try toolSucceeds("zstd", ["-q", "-19", "--rm", lone + ".raw", "-o", lone + ".zst"])
        let archive = lone + ".zst"
        let size = try XCTUnwrap(RawFileSystem.lstat(archive)).st_size
        print("hostile archive: \(size) bytes, inner manifest over 256 MiB")

        let limitKiB = (Self.runsUnderSanitizer ? 800 : 200) * 1024
        for arguments in [["restore", archive, "--target", path("target")], ["verify", archive]] {
            let (peak, outcome) = try measured(arguments)
            print("\(arguments[0]) of it: exit \(outcome.exitCode), peak RSS \(peak / 1024) MiB")
            assertNoCrash(outcome, arguments[0])
            assertExit(outcome, 4, arguments[0])
            XCTAssertTrue(outcome.combinedText.contains("the manifest inside \(archive)")
                          && outcome.combinedText.contains("exhaust memory"), outcome.combinedText)
            XCTAssertGreaterThan(peak, 0, outcome.stderrText)
            XCTAssertLessThan(peak, limitKiB, "\(arguments[0]): memory stays far below the manifest's size")
        }
        let (peak, listing) = try measured(["list", archive])
        assertNoCrash(listing, "list")
        XCTAssertNotEqual(listing.exitCode, 0, "\(listing)")
        XCTAssertTrue(listing.stderrText.contains("exhaust memory"), listing.stderrText)
        XCTAssertLessThan(peak, limitKiB, "list: memory stays far below the manifest's size")
    }

    // MARK: Numbers

    func testNumbersAtTheEdgeOfTheirRangeDoNotCrash() throws {
        let dest = path("dest")
        let id = try smallBackup(dest)
        let sidecar = try sidecarPath(in: dest)
        var lines = try sidecarText(sidecar).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        // mtime_ns -2^63 made restore trap (integer overflow splitting it into seconds);
        // the other numbers go to their extremes too.
        for index in lines.indices where lines[index].contains("a.txt") || lines[index].contains("b.txt") {
            let extreme = lines[index].contains("a.txt") ? "-9223372036854775808" : "9223372036854775807"
            lines[index] = lines[index]
                .replacingOccurrences(of: #""mtime_ns":[0-9-]+"#, with: "\"mtime_ns\":\(extreme)", options: .regularExpression)
                .replacingOccurrences(of: #""ctime_ns":[0-9-]+"#, with: "\"ctime_ns\":\(extreme)", options: .regularExpression)
                .replacingOccurrences(of: #""at":[0-9]+"#, with: "\"at\":9223372036854775807", options: .regularExpression)
                .replacingOccurrences(of: #""inode":[0-9]+"#, with: "\"inode\":18446744073709551615", options: .regularExpression)
        }
        try writeSidecar(sidecar, lines.joined(separator: "\n"))
        let runs: [[String]] = [
            ["restore", id, "--dest", dest, "--target", path("all")],
            ["restore", id, "--dest", dest, "--target", path("part"), path("src") + "/b.txt"],
            ["verify", id, "--dest", dest], ["list", id, "--dest", dest], ["diff", id, id, "--dest", dest],
        ]
        for arguments in runs {
            let outcome = try run(arguments)
            assertNoCrash(outcome, arguments.joined(separator: " "))
            XCTAssertTrue([0, 1, 3, 4].contains(outcome.exitCode), "\(outcome)")
        }
        XCTAssertEqual(try String(contentsOfFile: path("all") + path("src") + "/a.txt", encoding: .utf8), "alpha\n")
        assertExit(try run(["verify", id, "--dest", dest]), 4, "the manifest no longer matches the archive's own")
    }

    // MARK: Cycles

    /// A full backup A and an incremental B taking a.txt from A; returns (A, B).
    private func chain(_ dest: String) throws -> (String, String) {
        let first = try smallBackup(dest)
        try Data("beta, changed\n".utf8).write(to: URL(fileURLWithPath: path("src/b.txt")))
        let second = try backup([path("src")], dest: dest)
        XCTAssertTrue(try sidecarText(try sidecarPath(in: dest, id: second)).contains("\"in\":\"\(first)\""))
        return (first, second)
    }

    /// Runs every command that follows `in` on `id` and checks none crashes; verify says 4.
    private func assertRefused(_ id: String, dest: String, _ what: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let verify = try run(["verify", id, "--dest", dest])
        assertNoCrash(verify, "verify (\(what))", file: file, line: line)
        assertExit(verify, 4, what, file: file, line: line)
        XCTAssertTrue(verify.combinedText.contains("not older than"), "\(what): \(verify.combinedText)", file: file, line: line)
        let runs: [[String]] = [
            ["restore", id, "--dest", dest, "--target", path("target-" + UUID().uuidString)],
            ["list", id, "--dest", dest], ["diff", id, "--dest", dest], ["verify", "--dest", dest],
            ["prune", "--keep-last", "1", "--dry-run", "--dest", dest],
        ]
        for arguments in runs {
            let outcome = try run(arguments)
            assertNoCrash(outcome, "\(arguments.joined(separator: " ")) (\(what))", file: file, line: line)
        }
    }

    func testAnEntryStoredInItsOwnBackupIsRefused() throws {
        let dest = path("dest")
        let (first, second) = try chain(dest)
        let sidecar = try sidecarPath(in: dest, id: second)
        try writeSidecar(sidecar, try sidecarText(sidecar).replacingOccurrences(of: "\"in\":\"\(first)\"", with: "\"in\":\"\(second)\""))
        try assertRefused(second, dest: dest, "an entry 'in' its own backup")
        try assertRepairDoesNotCrash(dest)
    }

    /// Repair rebuilds the forged manifests from the archives' own copies, without a crash.
    private func assertRepairDoesNotCrash(_ dest: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let repair = try run(["repair", "--dest", dest])
        assertNoCrash(repair, "repair", file: file, line: line)
        assertExit(try run(["verify", "--dest", dest]), 0, "repaired", file: file, line: line)
    }

    func testBackupsRelyingOnEachOtherAreRefused() throws {
        let dest = path("dest")
        let (first, second) = try chain(dest)
        // A (full) now says its a.txt is in B, which says its a.txt is in A: A → B → A.
        let sidecar = try sidecarPath(in: dest, id: first)
        let text = try sidecarText(sidecar).split(separator: "\n").map { line -> String in
            guard line.contains("a.txt") else { return String(line) }
            return String(line.dropLast()) + ",\"in\":\"\(second)\"}"
        }.joined(separator: "\n") + "\n"
        try writeSidecar(sidecar, text)
        try assertRefused(first, dest: dest, "an entry 'in' a newer backup")
        let verify = try run(["verify", second, "--dest", dest])
        assertNoCrash(verify, "verify of the backup relying on it")
        assertExit(verify, 4, "B relies on the forged A")
        XCTAssertTrue(verify.combinedText.contains("that backup is damaged"), verify.combinedText)
        try assertRepairDoesNotCrash(dest)
    }
}
