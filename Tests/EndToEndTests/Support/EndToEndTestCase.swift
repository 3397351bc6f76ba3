import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// The base of every end-to-end test: a private temporary folder (removed in tearDown),
/// a `keepsake` runner whose HOME lives inside it, and assertion helpers.
class EndToEndTestCase: KeepsakeTestCase {
    // MARK: State

    /// This test's temporary folder (absolute, symlinks resolved).
    private(set) var work = ""
    /// Runs the built binary with a private HOME inside `work`.
    private(set) var keepsake = KeepsakeProcess(executable: "/nonexistent", home: "/nonexistent")

    // MARK: Life cycle

    override func setUpWithError() throws {
        try super.setUpWithError()
        var template = Array("/tmp/keepsake-e2e-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw RawFileSystem.Failure("mkdtemp", Array("/tmp/keepsake-e2e-XXXXXX".utf8))
        }
        guard let resolved = realpath(made, nil) else { throw RawFileSystem.Failure("realpath", []) }
        work = String(cString: resolved)
        free(resolved)
        let home = work + "/home"
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(home))
        keepsake = KeepsakeProcess(executable: try KeepsakeProcess.locateBinary(), home: home)
    }

    override func tearDownWithError() throws {
        // The mounts first: the work folder holds them.
        for mount in mounts.reversed() {
            let outcome = try? ProcessRunner.run("umount", [mount])
            if outcome?.exitCode != 0 { _ = try? ProcessRunner.run("umount", ["-l", mount]) }
        }
        mounts = []
        if !work.isEmpty, work.hasPrefix("/tmp/keepsake-e2e-") {
            // rm copes with names Foundation cannot represent and with modes like 000.
            _ = try? ProcessRunner.run("rm", ["-rf", "--one-file-system", work])
        }
        try super.tearDownWithError()
    }

    // MARK: Paths

    /// `work/relative`.
    func path(_ relative: String) -> String { work + "/" + relative }

    /// Where a source's files land under a restore target: the target plus the source's
    /// absolute path (archive entries are absolute paths without the leading `/`).
    func restored(_ source: String, into target: String) -> String { target + source }

    // MARK: Mounts

    /// The tmpfs mounts this test made, unmounted in tearDown (before the work folder goes).
    private var mounts: [String] = []

    /// Mounts a tmpfs of `size` (e.g. `"4m"`, `"512k"`) at `directory` (created), or skips
    /// the test with the reason when the machine does not allow it.
    func mountTmpfs(at directory: String, size: String) throws {
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(directory), mode: 0o700)
        let outcome = try ProcessRunner.run("mount", ["-t", "tmpfs", "-o", "size=\(size),mode=0700", "tmpfs", directory])
        guard outcome.exitCode == 0 else {
            throw XCTSkip("cannot mount a \(size) tmpfs at \(directory) (needs root and permission to mount): \(outcome.stderrText)")
        }
        mounts.append(directory)
    }

    /// Unmounts a tmpfs made by `mountTmpfs` before tearDown.
    func unmountTmpfs(_ directory: String) {
        guard let index = mounts.firstIndex(of: directory) else { return }
        if (try? ProcessRunner.run("umount", [directory]))?.exitCode == 0 { mounts.remove(at: index) }
    }

    // MARK: Running

    /// Runs `keepsake ARGUMENTS` (see `KeepsakeProcess.run`).
    @discardableResult
    func run(_ arguments: [String], stdin: Data? = nil, environment: [String: String?] = [:],
             asNobody: Bool = false, executable: String? = nil, currentDirectory: String? = nil,
             hostName: String? = nil) throws -> ProcessRunner.Outcome {
        try keepsake.run(arguments, stdin: stdin, environment: environment, asNobody: asNobody, executable: executable,
                         currentDirectory: currentDirectory, hostName: hostName)
    }

    /// Runs another program (tar, zstd, sha256sum, …) with the test process's environment.
    @discardableResult
    func tool(_ program: String, _ arguments: [String], stdin: Data? = nil,
              currentDirectory: String? = nil) throws -> ProcessRunner.Outcome {
        try ProcessRunner.run(program, arguments, stdin: stdin, currentDirectory: currentDirectory)
    }

    /// Runs a program and fails the test (with its output) unless it exits 0.
    @discardableResult
    func toolSucceeds(_ program: String, _ arguments: [String], currentDirectory: String? = nil,
                      file: StaticString = #filePath, line: UInt = #line) throws -> ProcessRunner.Outcome {
        let outcome = try tool(program, arguments, currentDirectory: currentDirectory)
        XCTAssertEqual(outcome.exitCode, 0, "\(program) failed:\n\(outcome)", file: file, line: line)
        return outcome
    }

    /// Makes a backup of `sources` into `dest` and returns its id (failing unless exit 0).
    @discardableResult
    func backup(_ sources: [String], dest: String, options: [String] = [],
                file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let outcome = try run(["backup"] + sources + ["--dest", dest, "--json"] + options)
        assertExit(outcome, 0, file: file, line: line)
        let object = try json(outcome, file: file, line: line)
        return try XCTUnwrap(object["id"] as? String, "backup --json has no id:\n\(outcome)", file: file, line: line)
    }

    /// Starts `keepsake backup --stdin` into `dest`, feeds it `bytes` and returns once it
    /// holds the destination's lock (failing if it never takes it within 30 s): a live run
    /// that keeps the lock until its input is closed (`finish()`) or it is killed.
    func startRunHoldingTheLock(dest: String, bytes: Data,
                                file: StaticString = #filePath, line: UInt = #line) throws -> ProcessRunner.Running {
        let running = try keepsake.start(["backup", "--stdin", "--stdin-name", "stream.bin", "--dest", dest])
        running.write(bytes)
        let lock = dest + "/keepsake.lock"
        let deadline = Date().addingTimeInterval(30)
        while !RawFileSystem.exists(lock) && running.isRunning && Date() < deadline { usleep(5000) }
        XCTAssertTrue(RawFileSystem.exists(lock), "the backup from stdin never took the lock", file: file, line: line)
        return running
    }

    // MARK: Destinations

    /// The names in `dest`, sorted (hidden ones too).
    func names(in dest: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: dest).sorted()
    }

    /// The path of the only archive in `dest` (fails unless there is exactly one).
    func onlyArchive(in dest: String, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let archives = try names(in: dest).filter { !$0.hasPrefix(".") && $0.contains(".tar") }
        XCTAssertEqual(archives.count, 1, "expected one archive in \(dest), found \(archives)", file: file, line: line)
        return dest + "/" + (try XCTUnwrap(archives.first, file: file, line: line))
    }

    /// The path of the manifest beside the archive of backup `id` in `dest` (fails unless
    /// there is exactly one; with no id, the only manifest there).
    func sidecarPath(in dest: String, id: String? = nil, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let manifests = try names(in: dest).filter { $0.hasSuffix(".manifest.jsonl.zst") && (id.map($0.contains) ?? true) }
        XCTAssertEqual(manifests.count, 1, "expected one manifest in \(dest), found \(manifests)", file: file, line: line)
        return dest + "/" + (try XCTUnwrap(manifests.first, file: file, line: line))
    }

    /// The text of the (zstd-compressed) manifest at `path`, decompressed by `zstd -dc`.
    func sidecarText(_ path: String, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let outcome = try toolSucceeds("zstd", ["-dc", path], file: file, line: line)
        return outcome.stdoutText
    }

    /// Replaces the manifest at `path` with `text`, compressed by `zstd` (as after a hand edit).
    func writeSidecar(_ path: String, _ text: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let outcome = try tool("zstd", ["-q", "-f", "-o", path], stdin: Data(text.utf8))
        XCTAssertEqual(outcome.exitCode, 0, "zstd failed:\n\(outcome)", file: file, line: line)
    }

    // MARK: Assertions

    /// Fails unless `outcome` ended with `code`; the message holds the whole run.
    func assertExit(_ outcome: ProcessRunner.Outcome, _ code: Int32, _ message: String = "",
                    file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(outcome.exitCode, code, "\(message)\n\(outcome)", file: file, line: line)
    }

    /// Parses stdout as one JSON object (failing with the output when it is not).
    func json(_ outcome: ProcessRunner.Outcome, file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        do {
            let value = try JSONSerialization.jsonObject(with: outcome.stdout)
            return try XCTUnwrap(value as? [String: Any], "stdout is JSON but not an object:\n\(outcome)", file: file, line: line)
        } catch {
            XCTFail("stdout is not one JSON document (\(error)):\n\(outcome)", file: file, line: line)
            throw error
        }
    }

    /// Fails with every difference unless the tree at `actual` equals the one at `expected`.
    func assertTreesEqual(expected: String, actual: String, options: TreeComparison.Options = TreeComparison.Options(),
                          file: StaticString = #filePath, line: UInt = #line) throws {
        let want = try TreeComparison.snapshot(of: expected, xattrName: options.xattrName)
        XCTAssertTrue(RawFileSystem.exists(actual), "nothing at \(actual)", file: file, line: line)
        guard RawFileSystem.exists(actual) else { return }
        let have = try TreeComparison.snapshot(of: actual, xattrName: options.xattrName)
        let problems = try TreeComparison.differences(expected: want, actual: have, options: options)
        XCTAssertTrue(problems.isEmpty, "\(actual) differs from \(expected):\n" + problems.joined(separator: "\n"),
                      file: file, line: line)
    }

    /// The archive paths (bytes) listed by `keepsake list REF --json`, decoding `path_b64`.
    func listedPaths(_ reference: String, dest: String?, file: StaticString = #filePath, line: UInt = #line) throws -> [[UInt8]] {
        let outcome = try run(["list", reference, "--json"] + (dest.map { ["--dest", $0] } ?? []))
        assertExit(outcome, 0, file: file, line: line)
        let object = try json(outcome, file: file, line: line)
        let entries = try XCTUnwrap(object["entries"] as? [[String: Any]], "no entries:\n\(outcome)", file: file, line: line)
        return entries.compactMap { entry in
            if let text = entry["path"] as? String { return Array(text.utf8) }
            if let encoded = entry["path_b64"] as? String, let data = Data(base64Encoded: encoded) { return Array(data) }
            return nil
        }
    }
}
