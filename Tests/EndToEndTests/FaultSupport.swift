import BackupCore
import Foundation
import KeepsakeSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The base of the fault tests (crash, disk full, signals, concurrency): a big source made
/// once per test class, a look into destinations, process control and tmpfs mounts.
class FaultTestCase: EndToEndTestCase {
    /// Ten full backups of a small tree in a template destination (copied per scenario):
    /// the source, the template's path, the ids oldest first, and its object names.
    func tenBackupTemplate() throws -> (source: String, template: String, ids: [String], names: Set<String>) {
        let small = path("small")
        try Fixtures.makeMixedTree(at: small)
        let template = path("template")
        var ids: [String] = []
        for round in 0..<10 {
            try Fixtures.makeTree(at: small, files: ["rounds/round-\(round).txt": "\(round)\n"])
            ids.append(try backup([small], dest: template, options: ["--full"]))
        }
        return (small, template, ids, Set(try DestinationState(template).names))
    }

    // MARK: Big source

    /// The big source, made once per test process by the first test that asks for it.
    private static let sharedBigSource = LockedValue<String?>(nil)

    /// Bytes of incompressible content in the big source: 200 MiB, or 100 MiB under a
    /// sanitizer, whose slower binary takes about as long over half as much.
    static let bigSourceBytes = KeepsakeTestCase.runsUnderSanitizer ? 100 << 20 : 200 << 20

    /// A source big enough that a backup takes a second or two: eight incompressible files
    /// of an eighth of `bigSourceBytes` each (25 MiB plain) and 2,000 small files in 20
    /// folders. Made once per test process (the fault classes share it) and removed when the
    /// process exits.
    func bigSource() throws -> String {
        try Self.sharedBigSource.withLock { made -> String in
            if let made { return made }
            let root = "/tmp/keepsake-fault-big-\(getpid())"
            _ = try? ProcessRunner.run("rm", ["-rf", "--one-file-system", root])
            try FaultFixtures.makeBigSource(at: root)
            made = root
            atexit { FaultTestCase.removeBigSource() }
            return root
        }
    }

    /// Removes the big source (at process exit).
    private static func removeBigSource() {
        guard let root = sharedBigSource.withLock({ $0 }), root.hasPrefix("/tmp/keepsake-fault-big-") else { return }
        try? FileManager.default.removeItem(atPath: root)
    }

    /// The bytes an unprivileged writer can still put on the file system holding `path`.
    func freeBytes(_ path: String) -> Int {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return 0 }
        return Int(info.f_bavail) * Int(info.f_frsize)
    }

    // MARK: Destinations

    /// The ids `keepsake list --json` shows for `dest` (failing unless it exits 0).
    func listedIDs(_ dest: String, file: StaticString = #filePath, line: UInt = #line) throws -> [String] {
        let outcome = try run(["list", "--dest", dest, "--json"])
        assertExit(outcome, 0, "list", file: file, line: line)
        let backups = try XCTUnwrap(try json(outcome, file: file, line: line)["backups"] as? [[String: Any]],
                                    "no backups array:\n\(outcome)", file: file, line: line)
        return backups.compactMap { $0["id"] as? String }
    }

    /// Runs `keepsake verify` on `ids` (every backup when empty) and fails unless it exits 0.
    @discardableResult
    func assertVerifies(_ dest: String, _ ids: [String] = [], _ message: @autoclosure () -> String = "",
                        file: StaticString = #filePath, line: UInt = #line) throws -> ProcessRunner.Outcome {
        let outcome = try run(["verify", "--dest", dest] + ids)
        assertExit(outcome, 0, "verify: \(message())", file: file, line: line)
        return outcome
    }

    /// Fails unless `dest` holds only committed pairs: no temporary file, no lock, no prune
    /// marker, every archive beside its manifest and every manifest beside its archive.
    func assertClean(_ dest: String, _ message: @autoclosure () -> String = "",
                     file: StaticString = #filePath, line: UInt = #line) throws {
        let state = try DestinationState(dest)
        XCTAssertEqual(state.temporaries, [], "temporary files left: \(message())", file: file, line: line)
        XCTAssertFalse(state.locked, "the lock was left: \(message())", file: file, line: line)
        XCTAssertEqual(state.markers, [], "prune markers left: \(message())", file: file, line: line)
        XCTAssertEqual(state.orphanArchives, [], "archives without a manifest: \(message())", file: file, line: line)
        XCTAssertEqual(state.manifestsWithoutArchive, [], "manifests without an archive: \(message())", file: file, line: line)
        XCTAssertEqual(state.others, [], "unexpected files: \(message())", file: file, line: line)
    }

    /// Fails unless the folder at `path` is empty (or missing): for a private TMPDIR, where
    /// a run stages unlinked files only.
    func assertEmptyFolder(_ path: String, _ message: @autoclosure () -> String = "",
                           file: StaticString = #filePath, line: UInt = #line) throws {
        let left = RawFileSystem.exists(path) ? try RawFileSystem.listDirectory(RawFileSystem.bytes(path)) : []
        XCTAssertEqual(left.map(RawFileSystem.display), [], "\(path) is not empty: \(message())", file: file, line: line)
    }

    // MARK: Restored trees

    /// Checks a restore that may have stopped early: no `.keepsake-` temporary anywhere
    /// below `target`, no file outside `restoredRoot`, and every regular file under it
    /// complete and equal to its counterpart under `source`. Returns the number of files
    /// found (all correct).
    @discardableResult
    func assertOnlyCorrectFiles(target: String, restoredRoot: String, source: String, _ message: @autoclosure () -> String = "",
                                file: StaticString = #filePath, line: UInt = #line) throws -> Int {
        var correct = 0
        var problems: [String] = []
        func walk(_ path: [UInt8], relative: [UInt8]) throws {
            guard let info = RawFileSystem.lstat(path) else { return }
            let name = relative.split(separator: UInt8(ascii: "/")).last.map(Array.init) ?? []
            if name.starts(with: Array(".keepsake-".utf8)) {
                problems.append("temporary left: \(RawFileSystem.display(path))")
                return
            }
            switch info.st_mode & S_IFMT {
            case S_IFDIR:
                for child in try RawFileSystem.listDirectory(path) {
                    try walk(RawFileSystem.join(path, child), relative: relative.isEmpty ? child : RawFileSystem.join(relative, child))
                }
            case S_IFREG:
                let root = RawFileSystem.bytes(restoredRoot)
                guard path.starts(with: root + [UInt8(ascii: "/")]) else {
                    problems.append("\(RawFileSystem.display(path)): outside the restored tree")
                    return
                }
                let original = RawFileSystem.bytes(source) + Array(path[root.count...])
                if RawFileSystem.lstat(original) == nil {
                    problems.append("\(RawFileSystem.display(path)): not in the source")
                } else if try !RawFileSystem.filesEqual(original, path) {
                    problems.append("\(RawFileSystem.display(path)): differs from the source (partial or wrong content)")
                } else {
                    correct += 1
                }
            default:
                break
            }
        }
        if RawFileSystem.exists(target) { try walk(RawFileSystem.bytes(target), relative: []) }
        XCTAssertEqual(problems, [], "\(message())", file: file, line: line)
        return correct
    }

    // MARK: Processes

    /// Polls `condition` about every `interval` microseconds until it holds or `timeout`
    /// seconds pass; returns whether it held.
    @discardableResult
    func waitUntil(timeout: TimeInterval = 30, interval: useconds_t = 200, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try condition() { return true }
            usleep(interval)
        }
        return try condition()
    }

    /// Waits until `placed` of the big source's large files (`blob-…`) have their names in
    /// `root`, where a restore puts them, or until that restore (`running`) has ended.
    func waitForLargeFiles(_ placed: Int, in root: String, restoredBy running: ProcessRunner.Running) throws {
        try waitUntil(interval: 100) {
            try !running.isRunning || (RawFileSystem.exists(root)
                && RawFileSystem.listDirectory(RawFileSystem.bytes(root)).filter { $0.starts(with: Array("blob-".utf8)) }
                    .count >= placed)
        }
    }

    /// Restores backup `id` of `dest` again over a restore that was stopped in `target`, with
    /// `--overwrite always` (folders are given their modes and times last, so a stopped
    /// restore leaves them 0700, and only that fixes folders that exist), and checks that
    /// `source` came back whole at `root`.
    func assertRestoresAgain(_ id: String, dest: String, target: String, root: String, source: String,
                             _ context: String) throws {
        assertExit(try run(["restore", id, "--dest", dest, "--target", target, "--overwrite", "always"]), 0,
                   "\(context): restoring again")
        try assertTreesEqual(expected: source, actual: root)
    }

    /// Sends `signal` to a running child and waits for it to end.
    func signalAndWait(_ running: ProcessRunner.Running, _ signal: Int32, timeout: TimeInterval = 60) throws -> ProcessRunner.Outcome {
        _ = Glibc.kill(running.processIdentifier, signal)
        return try running.finish(timeout: timeout)
    }

    /// The seconds `body` took.
    func seconds(_ body: () throws -> Void) rethrows -> TimeInterval {
        let started = Date()
        try body()
        return Date().timeIntervalSince(started)
    }

    // MARK: Snapshots

    /// Copies `source` (modes, times, links) to `snapshot` with `cp -a`.
    func snapshot(_ source: String, to snapshot: String) throws {
        try toolSucceeds("cp", ["-a", source, snapshot])
    }

    /// Recreates `dest` as a copy of `template`.
    func copyDestination(_ template: String, to dest: String) throws {
        _ = try tool("rm", ["-rf", "--one-file-system", dest])
        try toolSucceeds("cp", ["-a", template, dest])
    }

    /// Restores `id` from `dest` into a fresh `target` and fails unless what lands there
    /// equals `expected` (a snapshot of the backed-up `source`).
    func assertRestoresEqual(_ id: String, dest: String, source: String, expected: String, target: String,
                             file: StaticString = #filePath, line: UInt = #line) throws {
        _ = try tool("rm", ["-rf", "--one-file-system", target])
        let outcome = try run(["restore", id, "--dest", dest, "--target", target])
        assertExit(outcome, 0, "restore \(id)", file: file, line: line)
        try assertTreesEqual(expected: expected, actual: restored(source, into: target), file: file, line: line)
    }
}

// MARK: - Destination state

/// What a destination folder holds, sorted into Keepsake's kinds of names.
struct DestinationState {
    /// Every name, sorted.
    let names: [String]
    /// Sizes of the temporary files (`.tmp-…`), by name.
    let temporarySizes: [String: Int]

    /// Reads `dest` (an empty state when it does not exist).
    init(_ dest: String) throws {
        let bytes = RawFileSystem.bytes(dest)
        guard RawFileSystem.exists(dest) else {
            names = []
            temporarySizes = [:]
            return
        }
        names = try RawFileSystem.listDirectory(bytes).map { String(decoding: $0, as: UTF8.self) }.sorted()
        var sizes: [String: Int] = [:]
        for name in names where name.hasPrefix(".tmp-") {
            sizes[name] = RawFileSystem.lstat(dest + "/" + name).map { Int($0.st_size) } ?? 0
        }
        temporarySizes = sizes
    }

    /// `.tmp-…` names (archives and manifests being written, lock attempts).
    var temporaries: [String] { names.filter { $0.hasPrefix(".tmp-") } }
    /// Temporary archives (`.tmp-HOST_ID.tar.zst-…`).
    var temporaryArchives: [String] { temporaries.filter { $0.contains(".tar") } }
    /// Temporary manifests (`.tmp-HOST_ID.manifest.jsonl.zst-…`).
    var temporaryManifests: [String] { temporaries.filter { $0.contains(".manifest.jsonl") } }
    /// True when `keepsake.lock` exists.
    var locked: Bool { names.contains("keepsake.lock") }
    /// Committed manifests.
    var manifests: [String] { names.filter { !$0.hasPrefix(".") && $0.hasSuffix(".manifest.jsonl.zst") } }
    /// Archives under their final names.
    var archives: [String] { names.filter { !$0.hasPrefix(".") && !$0.hasSuffix(".manifest.jsonl.zst") && $0.contains(".tar") } }
    /// Prune markers (`HOST_ID.pruning`).
    var markers: [String] { names.filter { !$0.hasPrefix(".") && $0.hasSuffix(".pruning") } }
    /// Anything else.
    var others: [String] {
        names.filter { !$0.hasPrefix(".tmp-") && $0 != "keepsake.lock" && !manifests.contains($0) && !archives.contains($0)
            && !markers.contains($0) }
    }
    /// The ids of the committed manifests.
    var manifestIDs: Set<String> { Set(manifests.compactMap(DestinationState.id(of:))) }
    /// The ids of the archives under their final names.
    var archiveIDs: Set<String> { Set(archives.compactMap(DestinationState.id(of:))) }
    /// Archives whose manifest is missing.
    var orphanArchives: [String] { archives.filter { DestinationState.id(of: $0).map { !manifestIDs.contains($0) } ?? true } }
    /// Manifests whose archive is missing.
    var manifestsWithoutArchive: [String] {
        manifests.filter { DestinationState.id(of: $0).map { !archiveIDs.contains($0) } ?? true }
    }
    /// The largest temporary archive's size (0 when there is none).
    var temporaryArchiveBytes: Int { temporaryArchives.compactMap { temporarySizes[$0] }.max() ?? 0 }

    /// The backup id inside a destination name (`[.tmp-]HOST_ID.tar.zst…`, `HOST_ID.manifest.jsonl.zst`):
    /// the 25 characters before the first `.tar`, `.manifest` or `.pruning`.
    static func id(of name: String) -> String? {
        for marker in [".manifest.jsonl", ".tar", ".pruning"] {
            if let range = name.range(of: marker) {
                let stem = name[..<range.lowerBound]
                guard stem.count >= 25 else { return nil }
                return String(stem.suffix(25))
            }
        }
        return nil
    }
}

// MARK: - Fixtures

/// The sources the fault tests back up.
enum FaultFixtures {
    /// Writes the big source (see `FaultTestCase.bigSource`) at `root`.
    static func makeBigSource(at root: String) throws {
        let base = RawFileSystem.bytes(root)
        try RawFileSystem.makeDirectory(base)
        let blob = FaultTestCase.bigSourceBytes / 8
        for index in 0..<8 {
            try RawFileSystem.writeFile(RawFileSystem.join(base, "blob-\(index).bin"),
                                        contents: Fixtures.pseudoRandomBytes(count: blob, seed: UInt64(1_000 + index)))
        }
        for folder in 0..<20 {
            let directory = RawFileSystem.join(base, "small/folder-\(folder)")
            try RawFileSystem.makeDirectory(RawFileSystem.join(base, "small"))
            try RawFileSystem.makeDirectory(directory)
            for index in 0..<100 {
                try RawFileSystem.writeFile(RawFileSystem.join(directory, "note-\(index).txt"),
                                            contents: Array("folder \(folder), note \(index)\n".utf8))
            }
        }
    }

    /// Writes one incompressible file of `size` bytes at `path` (folders made on the way).
    static func writeIncompressible(_ path: String, size: Int, seed: UInt64) throws {
        let bytes = RawFileSystem.bytes(path)
        if let slash = bytes.lastIndex(of: UInt8(ascii: "/")) { try RawFileSystem.makeDirectory(Array(bytes[..<slash])) }
        try RawFileSystem.writeFile(bytes, contents: Fixtures.pseudoRandomBytes(count: size, seed: seed))
    }
}
