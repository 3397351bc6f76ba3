import Foundation
import XCTest

/// Several hosts backing up to one destination: each keeps its own chains, `latest` and
/// prune mean this host's backups unless `--host` or `--all-hosts` says otherwise, and
/// `list` shows whose each backup is.
final class HostSelectionTests: EndToEndTestCase {
    // MARK: Tests

    func testHostsShareADestinationAndKeepTheirOwnBackups() throws {
        guard geteuid() == 0 else { throw XCTSkip("needs root for a UTS namespace with another host name") }
        let dest = path("dest")
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "from every host\n"])
        let other = "keepsake-test-alpha"
        for round in 1...2 {
            try "alpha \(round)\n".write(toFile: source + "/who.txt", atomically: true, encoding: .utf8)
            assertExit(try run(["backup", source, "--dest", dest, "-q"], hostName: other), 0, "backup on \(other)")
            try "here \(round)\n".write(toFile: source + "/who.txt", atomically: true, encoding: .utf8)
            assertExit(try run(["backup", source, "--dest", dest, "-q"]), 0, "backup here")
        }
        let listing = try json(try run(["list", "--dest", dest, "--json"]))
        let backups = try XCTUnwrap(listing["backups"] as? [[String: Any]])
        XCTAssertEqual(backups.count, 4)
        let alpha = backups.filter { $0["host"] as? String == other }
        XCTAssertEqual(alpha.count, 2)
        XCTAssertEqual(alpha.last?["parent"] as? String, alpha.first?["id"] as? String, "each host keeps its own chain")

        let table = try run(["list", "--dest", dest], environment: ["COLUMNS": "160"])
        XCTAssertTrue(table.stdoutText.contains("HOST") && table.stdoutText.contains(other), "list shows whose:\n\(table)")
        let onlyAlpha = try run(["list", "--dest", dest, "--host", other, "--ids"])
        XCTAssertEqual(onlyAlpha.stdoutText.split(separator: "\n").map(String.init), alpha.compactMap { $0["id"] as? String })

        // latest: this host's, unless told otherwise.
        for (options, expected) in [([String](), "here 2\n"), (["--host", other], "alpha 2\n"), (["--all-hosts"], "here 2\n")] {
            let target = path("restored-\(options.joined())")
            assertExit(try run(["restore", "latest", "--dest", dest, "--target", target] + options), 0, "\(options)")
            XCTAssertEqual(try String(contentsOfFile: restored(source, into: target) + "/who.txt", encoding: .utf8), expected,
                           "restore latest \(options.joined(separator: " "))")
        }
        let nobody = try run(["restore", "latest", "--dest", dest, "--host", "no-such-host", "--target", path("none")])
        assertExit(nobody, 1)
        XCTAssertTrue(nobody.stderrText.contains("'no-such-host'") && nobody.stderrText.contains(other), "\(nobody)")

        // prune: this host's backups only; the other host's chain is left alone.
        let pruned = try json(try run(["prune", "--dest", dest, "--keep-last", "1", "--json"]))
        let decisions = try XCTUnwrap(pruned["decisions"] as? [[String: Any]])
        XCTAssertEqual(Set(decisions.compactMap { $0["host"] as? String }).count, 1, "only this host's backups are judged: \(decisions)")
        XCTAssertFalse(decisions.contains { $0["host"] as? String == other })
        let all = try json(try run(["prune", "--dest", dest, "--keep-last", "1", "--all-hosts", "--dry-run", "--json"]))
        XCTAssertTrue((all["decisions"] as? [[String: Any]])?.contains { $0["host"] as? String == other } == true)
        assertExit(try run(["prune", "--dest", dest, "--keep-last", "1", "--host", other, "--all-hosts"]), 2)
    }

    /// Found by the simulated year: once another host's incremental relied on its full
    /// backup, this host's prune warned every night that the full backup "is not in" the
    /// destination (it was, but not among the backups this prune judges), and `run` no
    /// longer exited quietly.
    func testPruneDoesNotCallAnotherHostsChainMissing() throws {
        guard geteuid() == 0 else { throw XCTSkip("needs root for a UTS namespace with another host name") }
        let dest = path("dest")
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "unchanged\n", "who.txt": "one\n"])
        let other = "keepsake-test-laptop"
        for round in 1...2 {
            try "round \(round)\n".write(toFile: source + "/who.txt", atomically: true, encoding: .utf8)
            assertExit(try run(["backup", source, "--dest", dest, "-q"], hostName: other), 0, "backup on \(other)")
            assertExit(try run(["backup", source, "--dest", dest, "-q"]), 0, "backup here")
        }
        let theirs = try run(["list", "--dest", dest, "--host", other, "--ids"]).stdoutText.split(separator: "\n").map(String.init)
        XCTAssertEqual(theirs.count, 2)

        let pruned = try run(["prune", "--dest", dest, "--keep-last", "1"])
        assertExit(pruned, 0)
        XCTAssertFalse(pruned.stderrText.replacingOccurrences(of: "\n", with: " ").contains("is not in"), "\(pruned)")
        XCTAssertFalse(pruned.stderrText.lowercased().contains("warning"), "\(pruned)")
        XCTAssertEqual(try run(["list", "--dest", dest, "--host", other, "--ids"]).stdoutText.split(separator: "\n").map(String.init),
                       theirs, "the other host's chain is left alone")
    }
}
