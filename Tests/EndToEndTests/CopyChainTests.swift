import Foundation
import XCTest

/// `keepsake copy` and `run`'s copy step on chains that prune has thinned: a copy brings
/// exactly what a restore of each backup needs, in an order where nothing arrives before
/// what it needs, and a backup that needs a vanished one is reported, not the whole copy.
final class CopyChainTests: EndToEndTestCase {
    // MARK: Helpers

    /// `KEEPSAKE_NOW` for night `night` at 02:00 UTC (a debug build's test clock).
    private func night(_ night: Int, hour: Int = 2) -> [String: String?] {
        let date = Date(timeIntervalSince1970: 1_798_761_600 + Double(night) * 86_400 + Double(hour) * 3_600)
        return ["KEEPSAKE_NOW": ISO8601DateFormatter().string(from: date), "TZ": "UTC"]
    }

    /// A backup of `source` into `dest` on `night`; its id.
    private func backup(_ source: String, dest: String, night number: Int, hour: Int = 2) throws -> String {
        let outcome = try run(["backup", source, "--dest", dest, "--json"], environment: night(number, hour: hour))
        assertExit(outcome, 0)
        return try XCTUnwrap(try json(outcome)["id"] as? String, "\(outcome)")
    }

    /// The ids `keepsake list --json` shows in `dest`.
    private func listedIDs(_ dest: String) throws -> [String] {
        let listing = try json(try run(["list", "--dest", dest, "--json"]))
        return try XCTUnwrap(listing["backups"] as? [[String: Any]]).compactMap { $0["id"] as? String }
    }

    /// A configuration file with the profile `nightly` backing up `source` to `dest` and
    /// copying to `offsite`, with `retention` (TOML lines) when given; its path.
    private func profile(source: String, dest: String, offsite: String, retention: String? = nil) throws -> String {
        let config = path("config.toml")
        var text = """
            [profiles.nightly]
            sources = ["\(source)"]
            destination = "\(dest)"
            copy-to = ["\(offsite)"]

            """
        if let retention { text += "[profiles.nightly.retention]\n" + retention + "\n" }
        try Data(text.utf8).write(to: URL(fileURLWithPath: config))
        return config
    }

    /// Three nights: a full backup, an incremental that adds `b`, and one where `b` is gone
    /// again (so the third relies on the first only); returns the three ids.
    private func thinnedChain(source: String, dest: String) throws -> [String] {
        try Fixtures.makeTree(at: source, files: ["a.txt": "alpha\n"])
        try RawFileSystem.writeFile(RawFileSystem.bytes(source + "/big.bin"), contents: Fixtures.pseudoRandomBytes(count: 100_000, seed: 3))
        let full = try backup(source, dest: dest, night: 0)
        try Fixtures.makeTree(at: source, files: ["b.txt": "beta\n"])
        let middle = try backup(source, dest: dest, night: 1)
        XCTAssertEqual(unlink(source + "/b.txt"), 0)
        try Fixtures.makeTree(at: source, files: ["c.txt": "gamma\n"])
        let last = try backup(source, dest: dest, night: 2)
        return [full, middle, last]
    }

    // MARK: Tests

    /// Issue 25 §2.1: prune with `--keep-chains` keeps what `relies_on` names, so the middle
    /// backup goes; copy used to follow parent links to it and failed with "No backup '…'"
    /// every night.
    func testCopyAfterPruneBringsWhatARestoreNeedsAndRestoresExactly() throws {
        let source = path("src"), dest = path("dest"), offsite = path("offsite")
        let ids = try thinnedChain(source: source, dest: dest)
        assertExit(try run(["prune", "--dest", dest, "--keep-last", "1", "--keep-chains"], environment: night(2)), 0)
        XCTAssertEqual(try listedIDs(dest), [ids[0], ids[2]], "the middle backup holds nothing the last one needs")

        let copied = try run(["copy", "--from", dest, "--to", offsite])
        assertExit(copied, 0)
        XCTAssertEqual(try listedIDs(offsite), [ids[0], ids[2]])
        // On the test clock: 'latest' passes over backups dated after the command's clock.
        let latest = try run(["copy", "latest", "--from", dest, "--to", path("second")], environment: night(2))
        assertExit(latest, 0)
        XCTAssertEqual(try listedIDs(path("second")), [ids[0], ids[2]], "'latest' brings the full backup it relies on")

        assertExit(try run(["verify", "--dest", offsite]), 0)
        assertExit(try run(["restore", ids[2], "--dest", offsite, "--target", path("restored")]), 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: path("restored")))
    }

    /// The same through `keepsake run` with a retention policy and `copy-to`: the run's copy
    /// step works on every night, also after the first prune (which keeps the newest alone,
    /// what it takes from the full backup copied into its supplement).
    func testRunWithRetentionAndCopyToCopiesEveryNightAfterPrunes() throws {
        let source = path("src"), dest = path("dest"), offsite = path("offsite")
        let config = try profile(source: source, dest: dest, offsite: offsite, retention: "keep-last = 1")
        try Fixtures.makeTree(at: source, files: ["a.txt": "alpha\n"])
        for number in 0..<4 {
            // Each night's new file is gone the next night: every incremental relies on the
            // full backup only, and prune removes the one before.
            if number > 0 { XCTAssertEqual(unlink(source + "/night-\(number - 1).txt"), 0) }
            try Fixtures.makeTree(at: source, files: ["night-\(number).txt": "night \(number)\n"])
            // As `keepsake schedule` writes it for cron.
            let outcome = try run(["run", "nightly", "--config", config, "--quiet"], environment: night(number))
            assertExit(outcome, 0, "night \(number)")
            XCTAssertEqual(outcome.stderrText + outcome.stdoutText, "", "a quiet night \(number)")
        }
        let kept = try listedIDs(dest)
        XCTAssertEqual(kept.count, 1, "the newest alone: \(kept)")
        XCTAssertEqual(try names(in: dest).filter { $0.hasSuffix(".supplement.jsonl.zst") }.count, 1)
        XCTAssertTrue(Set(kept).isSubset(of: Set(try listedIDs(offsite))), "the copy holds every kept backup")
        assertExit(try run(["restore", "latest", "--dest", offsite, "--target", path("restored")], environment: night(3)), 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: path("restored")))
    }

    /// A clock set back an hour: the new backup still lists after its parent (its id sorts
    /// after the newest), and a copy of it brings the parent first and restores exactly.
    func testABackupMadeWithTheClockSetBackIsCopiedAfterItsParent() throws {
        let source = path("src"), dest = path("dest")
        try Fixtures.makeTree(at: source, files: ["a.txt": "alpha\n"])
        let parent = try backup(source, dest: dest, night: 5, hour: 2)
        try Fixtures.makeTree(at: source, files: ["b.txt": "beta\n"])
        let child = try backup(source, dest: dest, night: 5, hour: 1)
        XCTAssertGreaterThan(child, parent, "a backup made after another lists after it, whatever the clock says")
        XCTAssertEqual(try listedIDs(dest), [parent, child])

        let outcome = try run(["copy", child, "--from", dest, "--to", path("offsite")])
        assertExit(outcome, 0)
        let order = outcome.stderrText.split(separator: "\n").filter { $0.hasPrefix("copied ") }
        XCTAssertEqual(order.count, 2, "\(outcome)")
        XCTAssertTrue(order.first?.contains(parent) == true, "the parent goes first:\n\(outcome)")
        assertExit(try run(["restore", child, "--dest", path("offsite"), "--target", path("restored")]), 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: path("restored")))
    }

    /// Backups that rely on one the source no longer holds are each reported (exit 4, naming
    /// both), not copied, and the copy does not stop at "No backup".
    func testBackupsThatNeedAVanishedOneAreReportedNotCopied() throws {
        let source = path("src"), dest = path("dest"), offsite = path("offsite")
        let ids = try thinnedChain(source: source, dest: dest)
        // Lose the full backup the last one relies on (as a hand-made deletion would).
        for name in try names(in: dest) where name.contains(ids[0]) {
            XCTAssertEqual(unlink(dest + "/" + name), 0)
        }
        let outcome = try run(["copy", "--from", dest, "--to", offsite])
        assertExit(outcome, 4)
        XCTAssertTrue(outcome.stderrText.contains("Backup \(ids[2]) was not copied: it relies on backup \(ids[0]), which is not in \(dest)"),
                      "\(outcome)")
        XCTAssertTrue(outcome.stderrText.contains("Backup \(ids[1]) was not copied: it relies on backup \(ids[0])"), "\(outcome)")
        XCTAssertFalse(outcome.stderrText.contains("No backup"), "\(outcome)")
        let stored = (try? names(in: offsite)) ?? []
        XCTAssertFalse(stored.contains { $0.hasSuffix(".manifest.jsonl.zst") }, "nothing that cannot be restored is copied: \(stored)")
    }

    /// Found by the simulated year: a run killed after its backup committed but before its
    /// copy step left that backup off the copy for good (the next run copied only its own
    /// backup). The copy step now brings every earlier backup of the same sources the copy
    /// destination lacks, but not another host's.
    func testRunCopiesEarlierBackupsTheCopyDestinationLacks() throws {
        let source = path("src"), dest = path("dest"), offsite = path("offsite")
        let config = try profile(source: source, dest: dest, offsite: offsite)
        try Fixtures.makeTree(at: source, files: ["a.txt": "alpha\n"])
        // As if the run of night 0 was killed once its backup was committed.
        let missed = try backup(source, dest: dest, night: 0)
        if geteuid() == 0 {
            assertExit(try run(["backup", source, "--dest", dest, "-q"], environment: night(0, hour: 3), hostName: "laptop"), 0)
        }
        // Every file changes: the new backup relies on nothing earlier.
        try Fixtures.makeTree(at: source, files: ["a.txt": "alpha, edited\n", "b.txt": "beta\n"])
        let outcome = try run(["run", "nightly", "--config", config, "--quiet"], environment: night(1))
        assertExit(outcome, 0)
        let copied = try listedIDs(offsite)
        XCTAssertEqual(copied.count, 2, "this host's two backups, not the laptop's: \(copied)")
        XCTAssertTrue(copied.contains(missed), "\(copied)")
        assertExit(try run(["restore", missed, "--dest", offsite, "--target", path("restored")]), 0)
    }

    /// A copy killed mid-way leaves temporaries in the copy destination, which no backup
    /// ever cleans: the next copy removes those whose writer is gone.
    func testCopyRemovesWhatAnInterruptedCopyLeft() throws {
        let source = path("src"), dest = path("dest"), offsite = path("offsite")
        try Fixtures.makeTree(at: source, files: ["a.txt": "alpha\n"])
        _ = try backup(source, dest: dest, night: 0)
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(offsite), mode: 0o700)
        // A pid that is surely not running: a child that has exited.
        let gone = try tool("sh", ["-c", "echo $$"]).stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        for name in [".tmp-lock-\(gone)-1a2b", ".tmp-vm_20270101T020000Z-12345678.tar.zst-\(gone)-9f"] {
            try RawFileSystem.writeFile(RawFileSystem.bytes(offsite + "/" + name), contents: Array("left\n".utf8))
        }
        assertExit(try run(["copy", "--from", dest, "--to", offsite]), 0)
        XCTAssertEqual(try names(in: offsite).filter { $0.hasPrefix(".") }, [], "the leftovers are gone")
    }
}
