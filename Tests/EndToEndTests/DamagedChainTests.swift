import Foundation
import XCTest

/// One damaged full backup must not poison its chain: once a backup of the chain is known
/// to be damaged (found by verify, cut short, or met while reading its manifest), the next
/// backup starts a new chain by itself and says so, and every message about the damaged
/// chain names the command that fixes it.
final class DamagedChainTests: EndToEndTestCase {
    // MARK: Tests

    /// The nightly `run` of the issue: night 1 builds on a full backup that has rotted and
    /// its verify finds it (exit 4, the remedy named); night 2 starts a new chain and is
    /// intact (exit 0); repairing the archive and verifying again takes the record back.
    func testRunStartsANewChainAfterVerifyFoundTheFullBackupDamaged() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": String(repeating: "a", count: 40_000), "b.txt": "b\n"])
        let dest = path("dest")
        let environment = try profile(source: source, dest: dest)
        let first = try run(["run", "home"], environment: environment)
        assertExit(first, 0)
        let full = try XCTUnwrap(try ids(in: dest).first)
        let archive = try onlyArchive(in: dest)
        let pristine = try Data(contentsOf: URL(fileURLWithPath: archive))
        try Fixtures.flipByte(in: archive)

        try Fixtures.makeTree(at: source, files: ["c.txt": "new\n"])
        let night1 = try run(["run", "home"], environment: environment)
        assertExit(night1, 4, "the damage is found the night it is met")
        XCTAssertTrue(night1.combinedText.contains("it relies on backup \(full)"), "\(night1)")
        XCTAssertTrue(night1.combinedText.contains("keepsake backup --full"), "the remedy is named:\n\(night1)")
        let record = try XCTUnwrap(try names(in: dest).first { $0.hasSuffix(".damaged") }, "verify records the damage")
        XCTAssertTrue(record.contains(full), record)

        try Fixtures.makeTree(at: source, files: ["d.txt": "newer\n"])
        let night2 = try run(["run", "home", "--json"], environment: environment)
        assertExit(night2, 0, "the new chain is intact")
        XCTAssertTrue(night2.stderrText.contains("starting a new chain: backup \(full)"), "it says so:\n\(night2)")
        XCTAssertTrue(night2.stderrText.contains("found damaged by verify"), "\(night2)")
        let newest = try newestSummary(dest)
        XCTAssertEqual(newest["kind"] as? String, "full", "\(newest)")
        let restored = try run(["restore", "latest", "--dest", dest, "--target", path("target")])
        assertExit(restored, 0)
        try assertTreesEqual(expected: source, actual: self.restored(source, into: path("target")))

        // The third night builds on the new chain again.
        let night3 = try run(["run", "home"], environment: environment)
        assertExit(night3, 0)
        XCTAssertEqual(try newestSummary(dest)["kind"] as? String, "incremental")

        // The archive brought back whole: verify finds it intact and takes the record back.
        try pristine.write(to: URL(fileURLWithPath: archive))
        let verify = try run(["verify", full, "--dest", dest])
        assertExit(verify, 0)
        XCTAssertFalse(try names(in: dest).contains { $0.hasSuffix(".damaged") }, "an intact backup loses its record")
    }

    /// Verify notes damage under the destination's lock, never beside another run: while a
    /// backup holds the lock, the damage is reported (exit 4) and a caution says it could not
    /// be noted; the next verify, with the lock free, notes it.
    func testDamageFoundWhileAnotherRunHoldsTheLockIsNotedByTheNextVerify() throws {
        let source = path("src")
        let dest = path("dest")
        try Fixtures.makeTree(at: source, files: ["a.txt": String(repeating: "a", count: 40_000)])
        let id = try backup([source], dest: dest)
        try Fixtures.flipByte(in: try onlyArchive(in: dest))

        let holder = try startRunHoldingTheLock(dest: dest, bytes: Data(Fixtures.pseudoRandomBytes(count: 1 << 16, seed: 3)))
        defer { holder.kill() }

        let locked = try run(["verify", id, "--dest", dest])
        assertExit(locked, 4, "the damage is found all the same")
        XCTAssertTrue(locked.stderrText.contains("could not be noted"), "a caution says the note is missing:\n\(locked)")
        XCTAssertFalse(try names(in: dest).contains { $0.hasSuffix(".damaged") }, "nothing is written under another run's lock")

        assertExit(try holder.finish(), 0, "the other run is undisturbed")
        let free = try run(["verify", id, "--dest", dest])
        assertExit(free, 4)
        XCTAssertFalse(free.stderrText.contains("could not be noted"), "\(free)")
        XCTAssertTrue(try names(in: dest).contains { $0.hasSuffix(".damaged") && $0.contains(id) }, "the next verify notes it")
    }

    /// A parent whose archive is shorter than it was stored is seen from its size alone:
    /// the next backup is full, says why, and names `keepsake verify`.
    func testABackupOnACutArchiveStartsANewChain() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": String(repeating: "x", count: 100_000)])
        let dest = path("dest")
        let full = try backup([source], dest: dest)
        try Fixtures.truncate(try onlyArchive(in: dest), toFraction: 0.5)

        let next = try run(["backup", source, "--dest", dest])
        assertExit(next, 0, "the new backup is whole")
        XCTAssertTrue(next.stderrText.contains("starting a new chain: backup \(full) has an archive of"), "\(next)")
        XCTAssertTrue(next.stderrText.contains("keepsake verify \(full)"), "\(next)")
        XCTAssertEqual(try newestSummary(dest)["kind"] as? String, "full")
        XCTAssertTrue(try names(in: dest).contains { $0.hasSuffix(".damaged") && $0.contains(full) }, "the damage is recorded")

        // Pruning the damaged backup takes its record with it.
        let prune = try run(["prune", "--dest", dest, "--keep-last", "1"])
        assertExit(prune, 0)
        let left = try names(in: dest)
        XCTAssertFalse(left.contains { $0.contains(full) }, "\(left)")
    }

    /// A parent whose manifest breaks off while it is read: the backup stores the files from
    /// there on again (it is whole), records the damage, and no later backup relies on the
    /// damaged one (here every file was stored again, so the next builds on the whole one).
    func testAParentManifestThatBreaksOffIsRecordedAndNothingBuildsOnIt() throws {
        let source = path("src")
        var files: [String: String] = [:]
        for index in 0..<3_000 { files["f/\(index).txt"] = "file \(index)\n" }
        try Fixtures.makeTree(at: source, files: files)
        let dest = path("dest")
        let full = try backup([source], dest: dest)
        let manifest = try XCTUnwrap(try names(in: dest).first { $0.hasSuffix(".manifest.jsonl.zst") })
        // The summary line is a frame of its own; the entry lines follow: cut them short.
        try Fixtures.truncate(dest + "/" + manifest, toFraction: 0.6)

        let second = try run(["backup", source, "--dest", dest])
        assertExit(second, 0)
        XCTAssertTrue(second.stderrText.contains("could not be read to its end"), "\(second)")
        XCTAssertTrue(second.stderrText.contains("keepsake backup --full"), "\(second)")
        XCTAssertTrue(try names(in: dest).contains { $0.hasSuffix(".damaged") && $0.contains(full) })

        let third = try run(["backup", source, "--dest", dest])
        assertExit(third, 0)
        let verify = try run(["verify", "latest", "--dest", dest])
        assertExit(verify, 0, "the newest backup relies on nothing damaged")
        let restore = try run(["restore", "latest", "--dest", dest, "--target", path("target")])
        assertExit(restore, 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: path("target")))
    }

    // MARK: Helpers

    /// A profile `home` backing up `source` to `dest`, in a config of the test's own.
    private func profile(source: String, dest: String) throws -> [String: String?] {
        let configHome = path("xdg")
        try FileManager.default.createDirectory(atPath: configHome + "/keepsake", withIntermediateDirectories: true)
        try """
            [profiles.home]
            sources = ["\(source)"]
            destination = "\(dest)"

            """.write(toFile: configHome + "/keepsake/config.toml", atomically: true, encoding: .utf8)
        return ["XDG_CONFIG_HOME": configHome]
    }

    /// The ids of the backups in `dest`, oldest first.
    private func ids(in dest: String) throws -> [String] {
        let list = try json(try run(["list", "--dest", dest, "--json"]))
        return (list["backups"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
    }

    /// The newest backup's entry in `list --json`.
    private func newestSummary(_ dest: String) throws -> [String: Any] {
        let list = try json(try run(["list", "--dest", dest, "--json"]))
        return try XCTUnwrap((list["backups"] as? [[String: Any]])?.last, "\(list)")
    }
}
