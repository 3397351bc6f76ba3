import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Issue 26 §1, §2 and §4: a destination many hosts write to, or a copy source someone else filled.
/// Whoever can write objects there plants ones whose names and summaries disagree, reuse
/// another backup's id, name another backup's archive, or date themselves in the future.
/// Each test plants them with the built binary and plain file moves, as an attacker with
/// write access would, and checks the victim's backups from outside: the bytes of their
/// objects, what a restore gives, what stays listed.
final class SharedDestinationForgeryTests: EndToEndTestCase {
    // MARK: State

    private var source = ""
    private var attacker = ""
    private var dest = ""

    override func setUpWithError() throws {
        try super.setUpWithError()
        source = path("src")
        try Fixtures.makeTree(at: source, files: ["mine.txt": "the victim's own file\n"])
        attacker = path("attacker")
        try Fixtures.makeTree(at: attacker, files: ["mine.txt": "planted by someone else\n"])
        dest = path("dest")
    }

    // MARK: §1 copy never writes over another backup's objects

    /// A hostile copy source: a manifest of host `evil` whose summary names the victim's
    /// archive (and holds its own bytes under that name). Copying used to replace the
    /// victim's archive, exit 0, leaving its backup damaged.
    func testCopyFromAHostileSourceNeverReplacesAnotherBackupsArchive() throws {
        let victim = try backup([source], dest: dest, options: ["--host", "web1"])
        let hostile = path("hostile")
        let evil = try backup([attacker], dest: hostile, options: ["--host", "evil"])
        let victimArchive = "web1_\(victim).tar.zst"
        XCTAssertEqual(rename(hostile + "/evil_\(evil).tar.zst", hostile + "/" + victimArchive), 0)
        let manifest = hostile + "/evil_\(evil).manifest.jsonl.zst"
        try writeSidecar(manifest, try sidecarText(manifest).replacingOccurrences(of: "evil_\(evil).tar.zst", with: victimArchive))
        let before = try digest(dest + "/" + victimArchive)

        let copied = try run(["copy", "--from", hostile, "--to", dest])
        assertExit(copied, 4, "the hostile backup is reported, not copied")
        XCTAssertTrue(copied.stderrText.contains(victimArchive) && copied.stderrText.contains("was not copied"), copied.stderrText)
        XCTAssertEqual(try digest(dest + "/" + victimArchive), before, "the victim's archive was replaced")
        XCTAssertEqual(try names(in: dest).filter { $0.hasPrefix("evil_") }, [], "nothing of the hostile backup landed")
        assertExit(try run(["verify", "--dest", dest]), 0)
        assertRestores(victim, "the victim's own file\n")
    }

    /// An archive an interrupted copy committed (its manifest never written) is kept when its
    /// bytes are the backup's, and the copy completes without sending it again; any other
    /// object of that name stops the backup's copy and is left as it was.
    func testCopyKeepsAWholeArchiveLeftBehindAndReplacesNoOtherObject() throws {
        let first = try backup([source], dest: dest)
        let offsite = path("offsite")
        XCTAssertEqual(mkdir(offsite, 0o700), 0)
        let firstArchive = try XCTUnwrap(try names(in: dest).first { $0.hasSuffix("_\(first).tar.zst") })
        try toolSucceeds("cp", [dest + "/" + firstArchive, offsite + "/" + firstArchive])
        let inode = RawFileSystem.lstat(offsite + "/" + firstArchive)?.st_ino

        let resumed = try run(["copy", "--from", dest, "--to", offsite])
        assertExit(resumed, 0)
        XCTAssertEqual(RawFileSystem.lstat(offsite + "/" + firstArchive)?.st_ino, inode, "the whole archive was written again")
        XCTAssertEqual(try listedIDs(offsite), [first])

        try Fixtures.makeTree(at: source, files: ["more.txt": "more\n"])
        let second = try backup([source], dest: dest, options: ["--full"])
        let secondArchive = try XCTUnwrap(try names(in: dest).first { $0.hasSuffix("_\(second).tar.zst") })
        try Data("someone else's bytes\n".utf8).write(to: URL(fileURLWithPath: offsite + "/" + secondArchive))
        let refused = try run(["copy", "--from", dest, "--to", offsite])
        assertExit(refused, 4)
        XCTAssertTrue(refused.stderrText.contains("already holds another object named \(secondArchive)"), refused.stderrText)
        XCTAssertEqual(try String(contentsOfFile: offsite + "/" + secondArchive, encoding: .utf8), "someone else's bytes\n")
        XCTAssertEqual(try listedIDs(offsite), [first], "the second backup is not listed where its archive is not its own")
    }

    // MARK: §2 a backup is what its name says

    /// Objects named `evil_…` whose summaries say host `web1`, newer than web1's own: they
    /// used to be web1's `latest` (a restore gave the planted file) and web1's
    /// `prune --keep-last 2` kept them and removed both of web1's real backups.
    func testBackupsPlantedUnderAnotherNameAreNeverLatestNorCountedByPrune() throws {
        let real = try twoBackups(host: "web1")
        let forge = path("forge")
        // A minute and two after web1's own, so that their ids sort after them.
        let forged = try [60.0, 120.0].map { later in
            try backup([attacker], dest: forge, options: ["--host", "web1", "--full"], environment: ["KEEPSAKE_NOW": secondsAhead(later)])
        }
        for name in try names(in: forge) where name.hasPrefix("web1_") {
            XCTAssertEqual(rename(forge + "/" + name, dest + "/evil_" + name.dropFirst("web1_".count)), 0)
        }

        let restore = try run(["restore", "latest", "--host", "web1", "--dest", dest, "--target", path("restored")])
        assertExit(restore, 0)
        XCTAssertEqual(try String(contentsOfFile: restored(source, into: path("restored")) + "/mine.txt", encoding: .utf8),
                       "the victim's own file\n")
        XCTAssertTrue(restore.stderrText.contains("'latest' is not backup \(forged[1])"), restore.stderrText)
        XCTAssertTrue(restore.stderrText.contains("its name says host 'evil' but its summary says 'web1'"), restore.stderrText)

        let pruned = try run(["prune", "--dest", dest, "--host", "web1", "--keep-last", "2"])
        assertExit(pruned, 0)
        XCTAssertTrue(pruned.stderrText.contains("counts for no rule"), pruned.stderrText)
        XCTAssertEqual(try listedIDs(dest, host: "web1"), real, "web1's own backups are the two newest it made")
        XCTAssertEqual(try names(in: dest).filter { $0.hasPrefix("evil_") }.count, 4, "prune removes nothing it cannot vouch for")
        let listed = try json(try run(["list", "--dest", dest, "--json"]))
        let errors = (listed["backups"] as? [[String: Any]] ?? []).compactMap { $0["error"] as? String }
        XCTAssertEqual(errors.count, 2, "the planted backups are listed as damaged: \(listed)")
        assertExit(try run(["verify", "--dest", dest]), 4, "verify reports the planted backups")
    }

    /// Host `evil` reuses the ids of web1's backups, dated so that its own policy removes
    /// them: `prune --all-hosts --keep-last 1` used to remove web1's backups by id. A shared
    /// id is refused (never one of the two picked) and neither backup is removed.
    func testAnIDAnotherHostReusesIsRefusedAndNeitherBackupIsRemoved() throws {
        let real = try twoBackups(host: "web1")
        let forge = path("forge")
        var planted: [String] = []
        for target in real {
            let made = try backup([attacker], dest: forge, options: ["--host", "evil", "--full"])
            planted.append(made)
            for suffix in [".tar.zst", ".manifest.jsonl.zst"] {
                let from = forge + "/evil_\(made)" + suffix, to = dest + "/evil_\(target)" + suffix
                if suffix.hasPrefix(".manifest") {
                    try writeSidecar(to, try sidecarText(from).replacingOccurrences(of: made, with: target))
                } else {
                    XCTAssertEqual(rename(from, to), 0)
                }
            }
        }
        // Evil's newest, made after the planted ones: its policy keeps only this.
        let newest = try backup([attacker], dest: dest, options: ["--host", "evil", "--full"])

        let pruned = try run(["prune", "--dest", dest, "--all-hosts", "--keep-last", "1"])
        assertExit(pruned, 0)
        for id in real {
            XCTAssertTrue(FileManager.default.fileExists(atPath: dest + "/web1_\(id).manifest.jsonl.zst"), "web1's \(id) was removed")
            XCTAssertTrue(FileManager.default.fileExists(atPath: dest + "/web1_\(id).tar.zst"), "web1's \(id) was removed")
        }
        XCTAssertTrue(FileManager.default.fileExists(atPath: dest + "/evil_\(newest).manifest.jsonl.zst"))

        let restore = try run(["restore", real[1], "--dest", dest, "--target", path("restored")])
        assertExit(restore, 1)
        XCTAssertTrue(restore.stderrText.contains("web1_\(real[1]).manifest.jsonl.zst")
                      && restore.stderrText.contains("evil_\(real[1]).manifest.jsonl.zst"), restore.stderrText)
        XCTAssertFalse(FileManager.default.fileExists(atPath: path("restored")), "a restore was made of one of the two")
    }

    /// A backup of web1 dated 2099 (as a host with a wrong clock, or an attacker, makes
    /// one): it used to become `latest` silently, every later id was dated 2099 after it,
    /// the next backup built on it, and `prune --keep-last 1` kept it instead of the real one.
    func testABackupDatedInTheFutureIsNotLatestNorAParentNorCountedByPrune() throws {
        let real = try backup([source], dest: dest, options: ["--host", "web1"])
        let future = try backup([attacker], dest: dest, options: ["--host", "web1"],
                                environment: ["KEEPSAKE_NOW": "2099-01-01T00:00:00Z"])

        let restore = try run(["restore", "latest", "--host", "web1", "--dest", dest, "--target", path("restored")])
        assertExit(restore, 0)
        XCTAssertEqual(try String(contentsOfFile: restored(source, into: path("restored")) + "/mine.txt", encoding: .utf8),
                       "the victim's own file\n")
        XCTAssertTrue(restore.stderrText.contains("'latest' is not backup \(future)")
                      && restore.stderrText.contains("dated after this machine's clock"), restore.stderrText)

        let next = try run(["backup", source, "--dest", dest, "--host", "web1", "--json"])
        assertExit(next, 0)
        let made = try json(next)
        XCTAssertEqual(made["parent"] as? String, real, "the next backup builds on the real one")
        let id = try XCTUnwrap(made["id"] as? String)
        XCTAssertFalse(id.hasPrefix("2099"), "the next id follows the planted date: \(id)")
        XCTAssertTrue(id > real, "\(id) sorts after \(real)")

        let pruned = try run(["prune", "--dest", dest, "--host", "web1", "--keep-last", "1"])
        assertExit(pruned, 0)
        XCTAssertTrue(pruned.stderrText.contains("dated after prune's clock"), pruned.stderrText)
        XCTAssertEqual(Set(try listedIDs(dest, host: "web1")), [id, future],
                       "the newest and the future backup are kept (what the newest takes from the real one, in its supplement)")
        let back = path("restored-newest")
        assertExit(try run(["restore", id, "--dest", dest, "--target", back]), 0)
        XCTAssertEqual(try String(contentsOfFile: restored(source, into: back) + "/mine.txt", encoding: .utf8),
                       "the victim's own file\n")

        // All of a host's backups in the future: 'latest' says why it means none.
        let alone = path("alone")
        _ = try backup([source], dest: alone, options: ["--host", "web1"], environment: ["KEEPSAKE_NOW": "2099-01-01T00:00:00Z"])
        let refused = try run(["restore", "latest", "--host", "web1", "--dest", alone, "--target", path("none")])
        assertExit(refused, 1)
        XCTAssertTrue(refused.stderrText.contains("check the clock"), refused.stderrText)
    }

    // MARK: §4 encrypted backups: the summary in the clear is checked against the manifest

    /// The older backup's objects under the newer one's names, its summary in the clear
    /// edited to match: `restore latest --identity` used to restore the old data, exit 0.
    /// The encrypted manifest names the older backup, so the restore is refused.
    func testAnEncryptedBackupSwappedForAnOlderOneIsRefusedByRestore() throws {
        let key = try makeKey()
        let older = try backup([source], dest: dest, options: ["--recipient", key.recipient])
        try Fixtures.makeTree(at: source, files: ["mine.txt": "the newer version\n"])
        let newer = try backup([source], dest: dest, options: ["--recipient", key.recipient, "--full"])
        let host = try hostPart(of: newer)
        for suffix in [".tar.zst.age", ".manifest.jsonl.zst.age"] {
            try toolSucceeds("cp", [dest + "/\(host)_\(older)" + suffix, dest + "/\(host)_\(newer)" + suffix])
        }
        let summary = try String(contentsOfFile: dest + "/\(host)_\(older).summary.json", encoding: .utf8)
        try summary.replacingOccurrences(of: older, with: newer)
            .write(toFile: dest + "/\(host)_\(newer).summary.json", atomically: true, encoding: .utf8)

        let restore = try run(["restore", "latest", "--dest", dest, "--target", path("restored"), "--identity", key.file])
        assertExit(restore, 4)
        XCTAssertTrue(restore.stderrText.contains("\(host)_\(newer).manifest.jsonl.zst.age")
                      && restore.stderrText.contains("its name says backup \(newer) but its summary says \(older)"), restore.stderrText)
        XCTAssertFalse(FileManager.default.fileExists(atPath: restored(source, into: path("restored")) + "/mine.txt"))
    }

    /// `relies_on` emptied in the summary in the clear of an incremental backup: prune used
    /// to remove the parent it still needs. With the key it reads the encrypted manifest and
    /// keeps the parent (saying the two differ); without, it says what it cannot check.
    func testPruneWithAKeyKeepsWhatAnEncryptedBackupNeedsWhateverItsClearSummarySays() throws {
        let key = try makeKey()
        let parent = try backup([source], dest: dest, options: ["--recipient", key.recipient])
        try Fixtures.makeTree(at: source, files: ["new.txt": "new\n"])
        let child = try backup([source], dest: dest, options: ["--recipient", key.recipient])
        let host = try hostPart(of: child)
        let clear = dest + "/\(host)_\(child).summary.json"
        let text = try String(contentsOfFile: clear, encoding: .utf8)
        XCTAssertTrue(text.contains("\"relies_on\":[\"\(parent)\"]"), "the child relies on its parent: \(text)")
        try text.replacingOccurrences(of: "\"relies_on\":[\"\(parent)\"]", with: "\"relies_on\":[]")
            .write(toFile: clear, atomically: true, encoding: .utf8)

        let blind = try run(["prune", "--dest", dest, "--keep-last", "1", "--dry-run"])
        assertExit(blind, 0)
        XCTAssertTrue(blind.stderrText.contains("what 1 encrypted backup relies on is taken from the summaries in the clear"),
                      blind.stderrText)
        let pruned = try run(["prune", "--dest", dest, "--keep-last", "1", "--identity", key.file])
        assertExit(pruned, 0)
        XCTAssertTrue(pruned.stderrText.contains("differs from its encrypted manifest's"), pruned.stderrText)
        XCTAssertTrue(FileManager.default.fileExists(atPath: dest + "/\(host)_\(parent).tar.zst.age"), "the parent was removed")
        XCTAssertTrue(FileManager.default.fileExists(atPath: dest + "/\(host)_\(parent).manifest.jsonl.zst.age"))
        // The edited summary is damage: restore refuses to go by it.
        let restore = try run(["restore", child, "--dest", dest, "--target", path("restored"), "--identity", key.file])
        assertExit(restore, 4)
        XCTAssertTrue(restore.stderrText.contains("differs from the encrypted manifest's"), restore.stderrText)
    }

    // MARK: Helpers

    /// A new identity file and its public key, made by `keepsake keygen`.
    private func makeKey() throws -> (file: String, recipient: String) {
        let file = path("key.txt")
        let outcome = try run(["keygen", "--output", file])
        assertExit(outcome, 0)
        return (file, outcome.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// The host part of the names of backup `id` in `dest`.
    private func hostPart(of id: String) throws -> String {
        let name = try XCTUnwrap(try names(in: dest).first { $0.hasSuffix("_\(id).summary.json") })
        return String(name.dropLast("_\(id).summary.json".count))
    }

    /// Two full backups of the source by `host`, the second after a change; their ids.
    private func twoBackups(host: String) throws -> [String] {
        let first = try backup([source], dest: dest, options: ["--host", host])
        try Fixtures.makeTree(at: source, files: ["mine.txt": "the victim's own file\n", "later.txt": "later\n"])
        let second = try backup([source], dest: dest, options: ["--host", host, "--full"])
        return [first, second]
    }

    private func backup(_ sources: [String], dest: String, options: [String], environment: [String: String?]) throws -> String {
        let outcome = try run(["backup"] + sources + ["--dest", dest, "--json"] + options, environment: environment)
        assertExit(outcome, 0)
        return try XCTUnwrap(try json(outcome)["id"] as? String)
    }

    /// The ids `list --json` shows with a summary (of `host` when given), oldest first.
    private func listedIDs(_ dest: String, host: String? = nil) throws -> [String] {
        let outcome = try run(["list", "--dest", dest, "--json"] + (host.map { ["--host", $0] } ?? []))
        assertExit(outcome, 0)
        let backups = try json(outcome)["backups"] as? [[String: Any]] ?? []
        return backups.filter { $0["error"] == nil }.compactMap { $0["id"] as? String }
    }

    /// The test clock `seconds` from now (`KEEPSAKE_NOW`).
    private func secondsAhead(_ seconds: TimeInterval) -> String {
        ISO8601DateFormatter().string(from: Date().addingTimeInterval(seconds))
    }

    private func digest(_ file: String) throws -> String {
        String(try toolSucceeds("sha256sum", [file]).stdoutText.prefix(64))
    }

    private func assertRestores(_ id: String, _ content: String, file: StaticString = #filePath, line: UInt = #line) {
        do {
            let target = path("restored-\(id)")
            assertExit(try run(["restore", id, "--dest", dest, "--target", target]), 0, file: file, line: line)
            XCTAssertEqual(try String(contentsOfFile: restored(source, into: target) + "/mine.txt", encoding: .utf8), content,
                           file: file, line: line)
        } catch {
            XCTFail("\(error)", file: file, line: line)
        }
    }
}
