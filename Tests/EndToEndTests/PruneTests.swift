import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `keepsake prune` with the real binary: removal, dry run, JSON, chain protection, the lock
/// and usage errors.
final class PruneTests: EndToEndTestCase {
    // MARK: Helpers

    /// Makes `count` full backups of one folder (its file changes every time), oldest first.
    private func makeBackups(_ count: Int, dest: String, options: [String] = ["--full"]) throws -> [String] {
        let source = path("src")
        var ids: [String] = []
        for index in 0..<count {
            try Fixtures.makeTree(at: source, files: ["notes.txt": "version \(index)\n" + String(repeating: "x", count: index)])
            ids.append(try backup([source], dest: dest, options: options))
        }
        return ids
    }

    /// The ids `keepsake list --json` shows.
    private func listedIDs(_ dest: String) throws -> [String] {
        let listing = try json(try run(["list", "--dest", dest, "--json"]))
        let backups = try XCTUnwrap(listing["backups"] as? [[String: Any]])
        return backups.compactMap { $0["id"] as? String }
    }

    /// The data lines of a table (after the header and its rule).
    private func tableRows(_ text: String) -> [String] {
        let lines = text.split(separator: "\n").map(String.init)
        guard let rule = lines.firstIndex(where: { $0.hasPrefix("──") }) else { return [] }
        return Array(lines[(rule + 1)...]).filter { $0.range(of: #"^\d{8}T\d{6}Z-"#, options: .regularExpression) != nil }
    }

    // MARK: Tests

    func testKeepLastTwoOfFourRemovesTheTwoOldest() throws {
        let dest = path("dest")
        let ids = try makeBackups(4, dest: dest)

        let outcome = try run(["prune", "--dest", dest, "--keep-last", "2"])

        assertExit(outcome, 0)
        XCTAssertEqual(try listedIDs(dest), [ids[2], ids[3]])
        let rows = tableRows(outcome.stdoutText)
        XCTAssertEqual(rows.count, 4, "every backup is in the table:\n\(outcome)")
        XCTAssertTrue(rows[0].hasPrefix(ids[3]) && rows[0].contains("keep") && rows[0].contains("last backup #1"),
                      "newest first, with its reason:\n\(outcome)")
        XCTAssertTrue(rows[3].hasPrefix(ids[0]) && rows[3].contains("remove"), "\(outcome)")
        XCTAssertTrue(outcome.stdoutText.contains("Removed 2 backups, freeing "), "\(outcome)")
        let left = try names(in: dest).filter { !$0.hasPrefix(".") }
        XCTAssertEqual(left.count, 4, "an archive and a manifest for each kept backup: \(left)")
        XCTAssertFalse(left.contains { $0.contains(ids[0]) || $0.contains(ids[1]) }, "\(left)")
        assertExit(try run(["verify", "--dest", dest]), 0, "what is left verifies")
    }

    func testDryRunShowsEveryBackupWithReasonsAndRemovesNothing() throws {
        let dest = path("dest")
        let ids = try makeBackups(4, dest: dest)
        let before = try names(in: dest)

        let outcome = try run(["prune", "--dest", dest, "--keep-last", "1", "--keep-tag", "nothing-has-this",
                               "--dry-run"])

        assertExit(outcome, 0)
        XCTAssertEqual(try names(in: dest), before, "a dry run removes nothing")
        let text = outcome.stdoutText
        for column in ["ID", "CREATED", "KIND", "ACTION", "REASON"] {
            XCTAssertTrue(text.contains(column), "the table has \(column):\n\(outcome)")
        }
        let rows = tableRows(text)
        XCTAssertEqual(rows.map { String($0.prefix(25)) }, ids.reversed(), "every backup, newest first:\n\(outcome)")
        XCTAssertTrue(rows[0].contains("FULL") && rows[0].contains("keep") && rows[0].contains("last backup #1"))
        for row in rows.dropFirst() {
            XCTAssertTrue(row.contains("remove"), "\(row)")
        }
        XCTAssertTrue(text.contains("Would remove 3 backups, freeing "), "\(outcome)")
    }

    func testJSONReportParses() throws {
        let dest = path("dest")
        let ids = try makeBackups(3, dest: dest)

        let outcome = try run(["prune", "--dest", dest, "--keep-last", "1", "--json"])

        assertExit(outcome, 0)
        let object = try json(outcome)
        XCTAssertEqual(object["dry_run"] as? Bool, false)
        XCTAssertEqual(object["kept"] as? [String], [ids[2]])
        XCTAssertEqual(object["removed"] as? [String], [ids[1], ids[0]])
        XCTAssertEqual(object["exit_code"] as? Int, 0)
        XCTAssertGreaterThan(object["freed_bytes"] as? Int ?? 0, 0)
        let decisions = try XCTUnwrap(object["decisions"] as? [[String: Any]])
        XCTAssertEqual(decisions.compactMap { $0["id"] as? String }, ids.reversed())
        XCTAssertEqual(decisions[0]["keep"] as? Bool, true)
        XCTAssertEqual(decisions[0]["kind"] as? String, "full")
        XCTAssertEqual(decisions[0]["reasons"] as? [String], ["last backup #1"])
        XCTAssertNotNil(decisions[0]["created"] as? String)
        XCTAssertEqual(decisions[2]["keep"] as? Bool, false)
        XCTAssertEqual(decisions[2]["reasons"] as? [String], [])
        XCTAssertEqual(try listedIDs(dest), [ids[2]])

        let dry = try json(try run(["prune", "--dest", dest, "--keep-last", "1", "--json", "--dry-run"]))
        XCTAssertEqual(dry["dry_run"] as? Bool, true)
        XCTAssertEqual(dry["removed"] as? [String], [])
        XCTAssertEqual(dry["freed_bytes"] as? Int, 0)
    }

    /// With `--keep-chains`, every backup a kept incremental takes files from is kept
    /// (`needed by ID`); without it (the default), those files are copied into a supplement
    /// and the backups go, and the kept one still restores whole.
    func testIncrementalChainIsKeptWithNeededByReasonsOrConsolidated() throws {
        let dest = path("dest")
        let source = path("chain")
        try Fixtures.makeTree(at: source, files: ["stable.txt": "never changes\n"])
        var ids: [String] = []
        for index in 0..<3 {
            try Data("step \(index)\n".utf8).write(to: URL(fileURLWithPath: source + "/new-\(index).txt"))
            ids.append(try backup([source], dest: dest))
        }
        let outcome = try run(["prune", "--dest", dest, "--keep-last", "1", "--keep-chains", "--json"])
        assertExit(outcome, 0)
        let object = try json(outcome)
        let decisions = try XCTUnwrap(object["decisions"] as? [[String: Any]])
        XCTAssertEqual(decisions.first?["kind"] as? String, "incremental", "the backups were not incremental: \(outcome)")
        XCTAssertEqual(object["removed"] as? [String], [], "every older backup holds content the newest needs")
        let oldest = try XCTUnwrap(decisions.last)
        XCTAssertEqual(oldest["id"] as? String, ids[0])
        XCTAssertTrue((oldest["reasons"] as? [String] ?? []).contains("needed by \(ids[2])"), "\(outcome)")
        assertExit(try run(["verify", "--dest", dest]), 0)

        let consolidated = try json(try run(["prune", "--dest", dest, "--keep-last", "1", "--json"]))
        XCTAssertEqual(consolidated["removed"] as? [String], [ids[1], ids[0]])
        XCTAssertEqual((consolidated["supplements"] as? [String: Any])?["written"] as? Int, 1, "\(consolidated)")
        XCTAssertEqual(try listedIDs(dest), [ids[2]])
        assertExit(try run(["verify", "--dest", dest]), 0)
        let target = path("target")
        assertExit(try run(["restore", ids[2], "--dest", dest, "--target", target, "--quiet"]), 0)
        XCTAssertEqual(Set(try FileManager.default.contentsOfDirectory(atPath: restored(source, into: target))),
                       ["stable.txt", "new-0.txt", "new-1.txt", "new-2.txt"])
    }

    func testHeldLockExitsFive() throws {
        let dest = path("dest")
        let ids = try makeBackups(2, dest: dest)
        var buffer = [CChar](repeating: 0, count: 256)
        gethostname(&buffer, buffer.count - 1)
        let host = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // This test process is alive: its lock is not stale.
        let lock = "{\"pid\": \(getpid()), \"host\": \"\(host)\", \"started\": \"2026-01-01T00:00:00Z\", \"operation\": \"backup\"}\n"
        try lock.write(toFile: dest + "/keepsake.lock", atomically: false, encoding: .utf8)

        let outcome = try run(["prune", "--dest", dest, "--keep-last", "1"])

        assertExit(outcome, 5, "prune while another run holds the lock")
        XCTAssertTrue(outcome.stderrText.contains("locked"), "\(outcome)")
        XCTAssertEqual(try listedIDs(dest), ids, "nothing was removed")
        XCTAssertTrue(RawFileSystem.exists(dest + "/keepsake.lock"), "someone else's lock is left alone")
        assertExit(try run(["prune", "--dest", dest, "--keep-last", "1", "--dry-run"]), 0, "a dry run needs no lock")
    }

    func testUsageErrorsAreReportedTogether() throws {
        let dest = path("dest")
        let ids = try makeBackups(2, dest: dest)

        let none = try run(["prune", "--dest", dest])
        assertExit(none, 2, "no rule")
        XCTAssertTrue(none.stderrText.contains("--keep-last") && none.stderrText.contains("--keep-within"), "\(none)")

        let bad = try run(["prune", "--dest", dest, "--keep-daily", "-5", "--keep-weekly", "x", "--keep-within", "7x"])
        assertExit(bad, 2)
        XCTAssertTrue(bad.stderrText.contains("'--keep-daily <n>'"), "\(bad)")
        XCTAssertTrue(bad.stderrText.contains("'--keep-weekly <n>'"), "\(bad)")
        XCTAssertTrue(bad.stderrText.contains("unknown unit 'x'"), "the duration's own error text:\n\(bad)")

        let refused = try run(["prune", "--dest", dest, "--keep-tag", "absent"])
        assertExit(refused, 1, "a policy that keeps nothing is refused")
        XCTAssertTrue(refused.stderrText.contains("Refusing to remove every backup"), "\(refused)")
        XCTAssertEqual(try listedIDs(dest), ids)

        assertExit(try run(["prune", "--dest", dest, "--keep-last", "-1", "--keep-hourly", "unlimited"]), 0)
        XCTAssertEqual(try listedIDs(dest), ids)
    }

    /// `--keep-daily 0` and a profile's `keep-daily = 0` mean the same: the rule is unused.
    /// Beside another rule it changes nothing; alone, both are refused as no policy at all.
    func testAZeroCountIsAnUnusedRuleOnTheCommandLineAsInAProfile() throws {
        let dest = path("dest")
        let ids = try makeBackups(3, dest: dest)
        func removed(_ arguments: [String]) throws -> [String] {
            let outcome = try run(["prune", "--dry-run", "--json"] + arguments)
            assertExit(outcome, 0, arguments.joined(separator: " "))
            return try json(outcome)["removed"] as? [String] ?? []
        }
        let plain = try removed(["--dest", dest, "--keep-last", "1"])
        XCTAssertEqual(try removed(["--dest", dest, "--keep-last", "1", "--keep-daily", "0"]), plain)
        let config = path("keepsake.toml")
        try """
            [profiles.zero]
            sources = ["/"]
            destination = "\(dest)"
            retention = { keep-last = 1, keep-daily = 0 }

            [profiles.only-zero]
            sources = ["/"]
            destination = "\(dest)"
            retention = { keep-daily = 0 }

            """.write(toFile: config, atomically: true, encoding: .utf8)
        let fromFile = path("zero.toml")
        try String(try String(contentsOfFile: config, encoding: .utf8).split(separator: "\n\n")[0]).write(toFile: fromFile, atomically: true,
                                                                                                           encoding: .utf8)
        XCTAssertEqual(try removed(["--profile", "zero", "--config", fromFile]), plain)

        let alone = try run(["prune", "--dest", dest, "--keep-daily", "0"])
        assertExit(alone, 2)
        XCTAssertTrue(alone.stderrText.contains("a count of 0 leaves its rule unused"), "\(alone)")
        let profileAlone = try run(["prune", "--profile", "only-zero", "--config", config])
        assertExit(profileAlone, 1)
        XCTAssertTrue(profileAlone.stderrText.contains("has no rule"), "\(profileAlone)")
        XCTAssertEqual(try listedIDs(dest), ids, "nothing was removed")
    }
}
