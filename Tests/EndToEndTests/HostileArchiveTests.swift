import Foundation
import XCTest

/// Archives no honest tool writes, beyond the path tricks of SafetyTests: device nodes,
/// absurd sizes, 64 KiB names, and a flood of empty entries. Each has an expected outcome
/// and message; nothing escapes the target, nothing hangs or grows without bound.
final class HostileArchiveTests: EndToEndTestCase {
    // MARK: Crafting

    /// Writes a tar with Python's tarfile; `body` is Python code using `tar` and `add`.
    private func craft(_ name: String, _ body: String) throws -> String {
        let archive = path(name)
        let script = """
        import io, sys, tarfile
        tar = tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT)
        def add(name, data=b"", kind=tarfile.REGTYPE, **extra):
            info = tarfile.TarInfo(name)
            info.type = kind
            info.size = len(data)
            info.mtime = 1700000000
            for key, value in extra.items():
                setattr(info, key, value)
            tar.addfile(info, io.BytesIO(data) if data else None)
        \(body.split(separator: "\n").joined(separator: "\n"))
        tar.close()
        """
        try toolSucceeds("python3", ["-c", script, archive])
        return archive
    }

    // MARK: Tests

    func testDeviceNodesAreNotCreatedUnlessRootAsksForThem() throws {
        let archive = try craft("devices.tar", """
        add("disk", kind=tarfile.BLKTYPE, devmajor=8, devminor=0, mode=0o666)
        add("null", kind=tarfile.CHRTYPE, devmajor=1, devminor=3, mode=0o666)
        add("ok.txt", b"fine")
        """)
        let target = path("target")
        let outcome = try run(["restore", archive, "--target", target])
        assertExit(outcome, 0)
        XCTAssertTrue(outcome.stderrText.contains("device files are restored only with --same-owner"), outcome.stderrText)
        XCTAssertNil(RawFileSystem.lstat(RawFileSystem.bytes(target + "/disk")), "no raw disk node was made")
        XCTAssertNil(RawFileSystem.lstat(RawFileSystem.bytes(target + "/null")))
        XCTAssertEqual(try String(contentsOfFile: target + "/ok.txt", encoding: .utf8), "fine")
    }

    func testAnAbsurdSizeEndsAsADamagedArchiveWithoutAPartialFile() throws {
        let archive = path("absurd.tar")
        // A header claiming a terabyte, followed by a few bytes and the end of the file.
        try toolSucceeds("python3", ["-c", """
        import sys, tarfile
        info = tarfile.TarInfo("huge.bin"); info.size = 1 << 40; info.mtime = 1700000000
        with open(sys.argv[1], "wb") as out:
            out.write(info.tobuf(tarfile.PAX_FORMAT)); out.write(b"x" * 4096)
        """, archive])
        let target = path("target")
        let outcome = try run(["restore", archive, "--target", target])
        assertExit(outcome, 4)
        XCTAssertTrue(outcome.combinedText.lowercased().contains("truncated") || outcome.combinedText.contains("damaged"),
                      outcome.combinedText)
        XCTAssertNil(RawFileSystem.lstat(RawFileSystem.bytes(target + "/huge.bin")), "no partial file under its name")
        let leftovers = (try? FileManager.default.contentsOfDirectory(atPath: target)) ?? []
        XCTAssertTrue(leftovers.allSatisfy { !$0.hasPrefix(".keepsake-") }, "no temporary left: \(leftovers)")
    }

    func testANameOf64KiBIsRefusedWithAMessage() throws {
        let archive = try craft("longname.tar", """
        add("d/" + "n" * 65536, b"long")
        add("ok.txt", b"fine")
        """)
        let target = path("target")
        let outcome = try run(["restore", archive, "--target", target])
        // The file system refuses the name: a path not written (exit 3), or refused on the way (exit 4).
        XCTAssertTrue([3, 4].contains(outcome.exitCode), "\(outcome)")
        XCTAssertTrue(outcome.stderrText.contains("File name too long") || outcome.stderrText.contains("refused"), outcome.stderrText)
        XCTAssertEqual(try String(contentsOfFile: target + "/ok.txt", encoding: .utf8), "fine", "the rest is restored")
        let listing = try run(["list", archive])
        assertExit(listing, 0)
    }

    func testAFloodOfEmptyEntriesTakesBoundedTimeAndMemory() throws {
        let count = 100_000
        let archive = try craft("flood.tar", """
        for i in range(\(count)):
            add("f/%06d" % i)
        """)
        let target = path("target")
        let started = Date()
        let timed = try tool("/usr/bin/time", ["-f", "%M", keepsake.executable, "restore", archive, "--target", target, "--quiet"])
        let seconds = Date().timeIntervalSince(started)
        XCTAssertEqual(timed.exitCode, 0, "\(timed)")
        let peakKiB = Int(timed.stderrText.split(separator: "\n").last.map(String.init) ?? "") ?? 0
        print("flood of \(count) empty entries: restored in \(String(format: "%.1f", seconds)) s, peak RSS \(peakKiB / 1024) MiB")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: target + "/f").count, count)
        // AddressSanitizer (CI's second run) keeps shadow memory and a quarantine of freed
        // blocks, which multiplies resident memory several times over.
        let sanitized = ProcessInfo.processInfo.environment["ASAN_OPTIONS"] != nil
        let limitMiB = sanitized ? 2048 : 512
        XCTAssertLessThan(peakKiB, limitMiB * 1024, "memory stays bounded (under \(limitMiB) MiB for \(count) entries)")
    }
}
