import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

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

    /// 100,000 empty entries (20,000 under a sanitizer, which makes each several times slower).
    func testAFloodOfEmptyEntriesTakesBoundedTimeAndMemory() throws {
        let count = Self.runsUnderSanitizer ? 20_000 : 100_000
        let archive = try craft("flood.tar", """
        for i in range(\(count)):
            add("f/%06d" % i)
        """)
        // Onto a tmpfs where this machine allows one: the question is Keepsake's time and
        // memory, and ext4 takes three times as long as tmpfs to make 100,000 files.
        let mount = path("tmpfs")
        let onTmpfs = (try? mountTmpfs(at: mount, size: "64m")) != nil
        let target = (onTmpfs ? mount : work) + "/target"
        let started = Date()
        let timed = try tool("/usr/bin/time", ["-f", "%M", keepsake.executable, "restore", archive, "--target", target, "--quiet"])
        let seconds = Date().timeIntervalSince(started)
        XCTAssertEqual(timed.exitCode, 0, "\(timed)")
        let peakKiB = Int(timed.stderrText.split(separator: "\n").last.map(String.init) ?? "") ?? 0
        print("flood of \(count) empty entries: restored in \(String(format: "%.1f", seconds)) s\(onTmpfs ? " onto a tmpfs" : ""), "
            + "peak RSS \(peakKiB / 1024) MiB")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: target + "/f").count, count)
        // AddressSanitizer (CI's second run) keeps shadow memory and a quarantine of freed
        // blocks, which multiplies resident memory several times over.
        let limitMiB = Self.runsUnderSanitizer ? 2048 : 512
        XCTAssertLessThan(peakKiB, limitMiB * 1024, "memory stays bounded (under \(limitMiB) MiB for \(count) entries)")
    }

    // MARK: A terabyte of holes

    /// A manifest line describing `huge` as a 1 TiB file with a SHA-256 (one no content has:
    /// checking it means hashing a terabyte of zeros).
    private static let terabyteManifest = """
        {"keepsake":"manifest","format":1,"id":"20260101T000000Z-0a08cb0d","created":"2026-01-01T00:00:00Z","host":"vm","user":"root","sources":["/src"],"tags":[],"compression":"none","files":1,"directories":0,"symlinks":0,"hardlinks":0,"other":0,"bytes":1099511627776,"warnings":0,"kind":"full","chain":1,"chain_started":"2026-01-01T00:00:00Z","new_files":1,"new_bytes":1099511627776,"relies_on":[],"tool":"keepsake 0.2.0"}
        {"path":"huge","type":"file","size":1099511627776,"mode":"0644","uid":0,"gid":0,"mtime_ns":1700000000000000000,"ctime_ns":1700000000000000000,"inode":2,"dev":1,"sha256":"\(String(repeating: "ab", count: 32))"}

        """

    /// A 10 KiB pax archive (GNU tar's sparse format) holding a 1 TiB file that is one hole;
    /// with `manifest`, it is a Keepsake archive (marker first, manifest last).
    private func terabyteArchive(_ name: String, manifest: Bool) throws -> String {
        let source = path(name + "-src")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(source))
        try toolSucceeds("truncate", ["-s", "1T", source + "/huge"])
        var members = ["huge"]
        if manifest {
            try RawFileSystem.makeDirectory(RawFileSystem.bytes(source + "/.keepsake"))
            try Data(HostileArchiveTests.terabyteManifest.utf8).write(to: URL(fileURLWithPath: source + "/.keepsake/manifest.jsonl"))
            members = [".keepsake", "huge", ".keepsake/manifest.jsonl"]
        }
        let archive = path(name + ".tar")
        try toolSucceeds("tar", ["--sparse", "--format=pax", "--no-recursion", "-cf", archive, "-C", source] + members)
        return archive
    }

    /// Waits for `running` to end on its own within `limit` seconds (a hang detector, not a
    /// timing); kills it and fails otherwise.
    private func waitForExit(_ running: ProcessRunner.Running, limit: TimeInterval, _ what: String,
                             file: StaticString = #filePath, line: UInt = #line) throws -> ProcessRunner.Outcome? {
        let deadline = Date().addingTimeInterval(limit)
        while running.isRunning && Date() < deadline { usleep(10_000) }
        if running.isRunning {
            Glibc.kill(running.processIdentifier, SIGKILL)
            _ = try? running.finish(timeout: 30)
            XCTFail("\(what): still running after \(Int(limit)) s", file: file, line: line)
            return nil
        }
        return try running.finish(timeout: 30)
    }

    /// Starts `arguments`, lets it work for a second, sends SIGTERM and expects exit 130
    /// soon after, with no temporary left in `target`.
    private func assertTerminates(_ arguments: [String], target: String?, _ what: String,
                                  file: StaticString = #filePath, line: UInt = #line) throws {
        let running = try keepsake.start(arguments)
        defer { running.kill() }
        sleep(1)
        XCTAssertTrue(running.isRunning, "\(what) ended before the signal", file: file, line: line)
        XCTAssertEqual(Glibc.kill(running.processIdentifier, SIGTERM), 0, file: file, line: line)
        guard let outcome = try waitForExit(running, limit: 20, "\(what) after SIGTERM", file: file, line: line) else { return }
        assertExit(outcome, 130, what, file: file, line: line)
        if let target {
            let leftovers = (try? FileManager.default.contentsOfDirectory(atPath: target)) ?? []
            XCTAssertEqual(leftovers.filter { $0.hasPrefix(".keepsake-") || $0 == "huge" }, [], "\(what): nothing left",
                           file: file, line: line)
        }
    }

    func testSIGTERMStopsRestoreWhileItHashesATerabyteOfHoles() throws {
        let archive = try terabyteArchive("lone", manifest: true)
        try assertTerminates(["restore", archive, "--target", path("inner")], target: path("inner"),
                             "restore checking against the archive's own manifest")
        // The same archive with the manifest beside it: each file is checked as it is written.
        try Data(HostileArchiveTests.terabyteManifest.utf8).write(to: URL(fileURLWithPath: path("lone.manifest.jsonl")))
        try assertTerminates(["restore", archive, "--target", path("beside")], target: path("beside"),
                             "restore checking against the manifest beside the archive")
        try assertTerminates(["verify", archive], target: nil, "verify")
    }

    func testAPlainTarballWithATerabyteOfHolesRestoresWithoutHashing() throws {
        let archive = try terabyteArchive("plain", manifest: false)
        let target = path("target")
        let running = try keepsake.start(["restore", archive, "--target", target])
        defer { running.kill() }
        // Nothing to check it against: the file is made (a hole costs nothing), not hashed.
        guard let outcome = try waitForExit(running, limit: 60, "restore of a plain tarball") else { return }
        assertExit(outcome, 0)
        let info = try XCTUnwrap(RawFileSystem.lstat(RawFileSystem.bytes(target + "/huge")))
        XCTAssertEqual(Int64(info.st_size), 1 << 40)
        XCTAssertLessThan(Int64(info.st_blocks), 1024, "the hole stays a hole")
    }
}
