import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Consolidating prune on encrypted backups (issue 34): a kept encrypted backup's supplement
/// is encrypted as the backup is, and only to keys the person running prune gives; a prune
/// without them keeps the chain and leaves encrypted supplements alone; a host that encrypts
/// to public keys and holds no identity still builds on its chain after a prune elsewhere.
/// Checked with the built binary against each night's files as written, with Debian's `age`
/// and GNU tar for the claim that a supplement is an age file holding a tar, and by reading
/// every stored byte for what must never be there in the clear.
final class EncryptedConsolidationTests: EndToEndTestCase {
    // MARK: Helpers

    /// A new identity file and its public key, made by `keepsake keygen`.
    private func makeKey(_ name: String) throws -> (file: String, recipient: String) {
        let file = path(name)
        let outcome = try run(["keygen", "--output", file])
        assertExit(outcome, 0)
        return (file, outcome.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// The files of night `night`: one new file a night (its name and content unique
    /// markers), and one changed every night.
    private func liveNight(_ night: Int, in source: String) throws {
        try Fixtures.makeTree(at: source, files: ["secret-note-\(night).txt": "marker-\(night)-kept-private\n",
                                                 "changing.txt": "night \(night)\n"])
    }

    /// Backs up `source` into `dest` with `options`; the backup's JSON report.
    private func backUp(_ source: String, dest: String, _ options: [String]) throws -> [String: Any] {
        let outcome = try run(["backup", source, "--dest", dest, "--json"] + options)
        assertExit(outcome, 0)
        return try json(outcome)
    }

    /// Nights `0..<count` of `source` (`liveNight`), each backed up into `dest` with
    /// `options`, then `after` run; the backups' ids.
    private func backUpNights(_ count: Int, source: String, dest: String, _ options: [String],
                              after: (Int) throws -> Void = { _ in }) throws -> [String] {
        var ids: [String] = []
        for night in 0..<count {
            try liveNight(night, in: source)
            ids.append(try XCTUnwrap(try backUp(source, dest: dest, options)["id"] as? String))
            try after(night)
        }
        return ids
    }

    /// The ids `list --json` shows (no key needed).
    private func listed(_ dest: String) throws -> Set<String> {
        let outcome = try run(["list", "--dest", dest, "--json"])
        assertExit(outcome, 0)
        return Set((try json(outcome)["backups"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String })
    }

    /// The names in `dest` of supplements' objects.
    private func supplementNames(_ dest: String) throws -> [String] {
        try names(in: dest).filter { $0.contains(".supplement.") }
    }

    /// Fails when any object in `dest` holds `needle` in the clear.
    private func assertNothingInTheClear(_ needles: [String], in dest: String, file: StaticString = #filePath, line: UInt = #line) throws {
        for name in try names(in: dest) where !name.hasPrefix(".") {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: dest + "/" + name))
            for needle in needles {
                XCTAssertNil(bytes.range(of: Data(needle.utf8)), "\(name) holds '\(needle)' in the clear", file: file, line: line)
            }
        }
    }

    /// Restores `id` from `dest` with `keys` and checks that night `night`'s files came back.
    private func assertRestores(_ id: String, dest: String, keys: [String], night: Int, source: String,
                                file: StaticString = #filePath, line: UInt = #line) throws {
        let target = path("restore-\(UUID().uuidString.prefix(8))")
        let outcome = try run(["restore", id, "--dest", dest, "--target", target, "--quiet"] + keys)
        assertExit(outcome, 0, "restore of \(id)", file: file, line: line)
        let root = restored(source, into: target)
        for earlier in 0...night {
            XCTAssertEqual(try? String(contentsOfFile: root + "/secret-note-\(earlier).txt", encoding: .utf8),
                           "marker-\(earlier)-kept-private\n", "\(id): note of night \(earlier)", file: file, line: line)
        }
        XCTAssertEqual(try? String(contentsOfFile: root + "/changing.txt", encoding: .utf8), "night \(night)\n", file: file, line: line)
    }

    // MARK: Public keys

    /// A host that encrypts to a public key and holds no identity backs up five nights; a
    /// prune there keeps the chain (it cannot open it) and says what to give. A prune given
    /// the identity keeps only the newest backup: its supplement is two age files and a
    /// summary in the clear that names no file, nothing of the files is stored in the clear;
    /// `age -d` with the identity and GNU tar read the supplement; restore and verify with
    /// the identity are whole. The host without an identity then builds its next backup on
    /// the newest (the summary tells it the gone backups' files are held); a prune without a
    /// key leaves the encrypted supplement as it is; `copy` without a key brings it along.
    func testAPublicKeyChainIsConsolidatedIntoEncryptedSupplements() throws {
        let key = try makeKey("identity.txt")
        let source = path("src")
        let dest = path("dest")
        let encrypting = ["--recipient", key.recipient]
        let ids = try backUpNights(5, source: source, dest: dest, encrypting)
        let keptWhole = try run(["prune", "--dest", dest, "--keep-last", "1"])
        assertExit(keptWhole, 0)
        XCTAssertTrue(keptWhole.stderrText.contains("keep the backups they take files from")
                      && keptWhole.stderrText.contains("--identity"), "\(keptWhole)")
        XCTAssertEqual(try listed(dest), Set(ids), "without a key the chain stays whole")

        let pruned = try run(["prune", "--dest", dest, "--keep-last", "1", "--identity", key.file, "--json"])
        assertExit(pruned, 0)
        XCTAssertEqual(try listed(dest), [ids[4]])
        let names = try supplementNames(dest)
        XCTAssertEqual(names.filter { $0.hasSuffix(".supplement.tar.zst.age") }.count, 1, "\(names)")
        XCTAssertEqual(names.filter { $0.hasSuffix(".supplement.jsonl.zst.age") }.count, 1, "\(names)")
        XCTAssertEqual(names.filter { $0.hasSuffix(".supplement.summary.json") }.count, 1, "\(names)")
        XCTAssertEqual(names.count, 3, "nothing of a supplement in the clear: \(names)")
        for name in names where name.hasSuffix(".age") {
            let head = try Data(contentsOf: URL(fileURLWithPath: dest + "/" + name)).prefix(21)
            XCTAssertEqual(Array(head), Array("age-encryption.org/v1".utf8), name)
        }
        try assertNothingInTheClear(["secret-note", "marker-", "kept-private", "changing.txt"], in: dest)
        let summaryName = try XCTUnwrap(names.first { $0.hasSuffix(".summary.json") })
        let summary = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dest + "/" + summaryName)))
            as? [String: Any])
        XCTAssertEqual(Set(summary["holds"] as? [String] ?? []), Set(ids.prefix(4)), "\(summary)")
        XCTAssertEqual(summary["owner"] as? String, ids[4])
        XCTAssertEqual((summary["encryption"] as? [String: Any])?["recipients"] as? [String], [key.recipient])

        // age and tar alone read it.
        let archive = try XCTUnwrap(names.first { $0.hasSuffix(".supplement.tar.zst.age") })
        let plain = path("supplement.tar.zst")
        try toolSucceeds("age", ["-d", "-i", key.file, "-o", plain, dest + "/" + archive])
        let listing = try toolSucceeds("tar", ["--zstd", "-tf", plain]).stdoutText
        for night in 0..<4 { XCTAssertTrue(listing.contains("secret-note-\(night).txt"), listing) }

        try assertRestores(ids[4], dest: dest, keys: ["--identity", key.file], night: 4, source: source)
        assertExit(try run(["verify", "--dest", dest, "--identity", key.file, "--quiet"]), 0)
        let refused = try run(["restore", ids[4], "--dest", dest, "--target", path("no-key")])
        assertExit(refused, 6, "no key: the backup's own manifest already needs one")

        // The host without an identity builds on its chain.
        try liveNight(5, in: source)
        let next = try backUp(source, dest: dest, encrypting)
        XCTAssertEqual(next["parent"] as? String, ids[4], "\(next)")
        XCTAssertEqual(next["kind"] as? String, "incremental", "\(next)")
        let sixth = try XCTUnwrap(next["id"] as? String)
        try assertRestores(sixth, dest: dest, keys: ["--identity", key.file], night: 5, source: source)

        // Without a key: left as it is; a copy brings it along, as stored.
        let blind = try run(["prune", "--dest", dest, "--keep-last", "1"])
        assertExit(blind, 0)
        XCTAssertTrue(blind.stderrText.contains("1 encrypted supplement is left as it is"), "\(blind)")
        XCTAssertEqual(try supplementNames(dest), names)
        let offsite = path("offsite")
        assertExit(try run(["copy", "--from", dest, "--to", offsite, "--quiet"]), 0)
        XCTAssertEqual(try supplementNames(offsite), names)
        try assertRestores(sixth, dest: offsite, keys: ["--identity", key.file], night: 5, source: source)

        // With the key again: the newest kept only; the old supplement and its summary go.
        let again = try run(["prune", "--dest", dest, "--keep-last", "1", "--identity", key.file])
        assertExit(again, 0)
        XCTAssertEqual(try listed(dest), [sixth])
        let after = try supplementNames(dest)
        XCTAssertEqual(after.count, 3, "one supplement, its summary with it: \(after)")
        XCTAssertTrue(Set(after).isDisjoint(with: names), "the replaced supplement is gone whole: \(after)")
        try assertRestores(sixth, dest: dest, keys: ["--identity", key.file], night: 5, source: source)
        assertExit(try run(["verify", "--dest", dest, "--identity", key.file, "--quiet"]), 0)
        try assertNothingInTheClear(["secret-note", "marker-", "kept-private"], in: dest)
    }

    /// Backups encrypted to two keys, the second someone else's (say, planted there): a
    /// prune given only the first key's identity keeps the chain, names `--recipient`, and
    /// encrypts nothing to the other key; given `--recipient` for it too, it consolidates,
    /// and the supplement opens with either identity.
    func testASupplementIsEncryptedOnlyToKeysGivenToPrune() throws {
        let mine = try makeKey("mine.txt")
        let other = try makeKey("other.txt")
        let source = path("src")
        let dest = path("dest")
        let ids = try backUpNights(3, source: source, dest: dest, ["--recipient", mine.recipient, "--recipient", other.recipient])
        let withheld = try run(["prune", "--dest", dest, "--keep-last", "1", "--identity", mine.file])
        assertExit(withheld, 0)
        XCTAssertTrue(withheld.stderrText.contains("--recipient"), "\(withheld)")
        XCTAssertEqual(try listed(dest), Set(ids))
        XCTAssertEqual(try supplementNames(dest), [])

        let given = try run(["prune", "--dest", dest, "--keep-last", "1", "--identity", mine.file, "--recipient", other.recipient])
        assertExit(given, 0)
        XCTAssertEqual(try listed(dest), [ids[2]])
        XCTAssertEqual(try supplementNames(dest).count, 3)
        try assertRestores(ids[2], dest: dest, keys: ["--identity", mine.file], night: 2, source: source)
        try assertRestores(ids[2], dest: dest, keys: ["--identity", other.file], night: 2, source: source)
    }

    /// The age header of an encrypted supplement's manifest damaged (its X25519 share
    /// changed, so the identity no longer unwraps it): prune given the identity of a key the
    /// supplement's summary names takes it for damage, not a missing key — it removes nothing
    /// (exit 4) and says so; verify names it (exit 4).
    func testADamagedAgeHeaderOfASupplementIsDamageNotAWrongKey() throws {
        let key = try makeKey("identity.txt")
        let source = path("src")
        let dest = path("dest")
        let ids = try backUpNights(4, source: source, dest: dest, ["--recipient", key.recipient]) { night in
            if night == 2 { self.assertExit(try self.run(["prune", "--dest", dest, "--keep-last", "1", "--identity", key.file]), 0) }
        }
        let manifest = try XCTUnwrap(try supplementNames(dest).first { $0.hasSuffix(".supplement.jsonl.zst.age") })
        let file = URL(fileURLWithPath: dest + "/" + manifest)
        var bytes = try Data(contentsOf: file)
        let stanza = try XCTUnwrap(bytes.range(of: Data("-> X25519 ".utf8)))
        let at = stanza.upperBound + 5
        bytes[at] = bytes[at] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        try bytes.write(to: file)

        let pruned = try run(["prune", "--dest", dest, "--keep-last", "1", "--identity", key.file])
        assertExit(pruned, 4)
        XCTAssertTrue(pruned.stderrText.contains("Prune removed nothing") && pruned.stderrText.contains(manifest)
                      && pruned.stderrText.contains("damaged"), "\(pruned)")
        XCTAssertEqual(try listed(dest), [ids[2], ids[3]])
        let verified = try run(["verify", "--dest", dest, "--identity", key.file])
        assertExit(verified, 4)
    }

    // MARK: Passphrase

    /// Passphrase backups: prune with the passphrase file consolidates, the supplement
    /// encrypted with the same passphrase; restore and verify with it are whole, the next
    /// backup builds on the kept one; a wrong passphrase is refused (exit 6) and never taken
    /// for damage, and a prune given it keeps the chain and leaves the supplement alone.
    func testAPassphraseChainIsConsolidatedWithItsPassphrase() throws {
        let passphrase = path("pass.txt")
        try Data("a long passphrase\n".utf8).write(to: URL(fileURLWithPath: passphrase))
        chmod(passphrase, 0o600)
        let wrong = path("wrong.txt")
        try Data("not the one\n".utf8).write(to: URL(fileURLWithPath: wrong))
        chmod(wrong, 0o600)
        let source = path("src")
        let dest = path("dest")
        let ids = try backUpNights(3, source: source, dest: dest, ["--passphrase-file", passphrase])
        let pruned = try run(["prune", "--dest", dest, "--keep-last", "1", "--passphrase-file", passphrase])
        assertExit(pruned, 0)
        XCTAssertEqual(try listed(dest), [ids[2]])
        let supplements = try supplementNames(dest)
        XCTAssertEqual(supplements.count, 3, "\(supplements)")
        try assertNothingInTheClear(["secret-note", "marker-", "kept-private"], in: dest)
        try assertRestores(ids[2], dest: dest, keys: ["--passphrase-file", passphrase], night: 2, source: source)
        assertExit(try run(["verify", "--dest", dest, "--passphrase-file", passphrase, "--quiet"]), 0)
        // The next backup builds on the kept one, its gone chain held by the supplement.
        try liveNight(3, in: source)
        let next = try backUp(source, dest: dest, ["--passphrase-file", passphrase])
        XCTAssertEqual(next["parent"] as? String, ids[2], "\(next)")
        let fourth = try XCTUnwrap(next["id"] as? String)
        try assertRestores(fourth, dest: dest, keys: ["--passphrase-file", passphrase], night: 3, source: source)
        let refused = try run(["restore", ids[2], "--dest", dest, "--target", path("wrong"), "--passphrase-file", wrong])
        assertExit(refused, 6)
        // A prune with the wrong passphrase opens nothing: it keeps and leaves everything.
        let blind = try run(["prune", "--dest", dest, "--keep-last", "1", "--passphrase-file", wrong])
        assertExit(blind, 0)
        XCTAssertEqual(try supplementNames(dest).count, 3)
        XCTAssertEqual(try listed(dest), [ids[2], fourth])
    }

    // MARK: Profiles

    /// `keepsake run` with a profile that encrypts to two public keys and reads with the
    /// first's identity: its prune may encrypt supplements to the keys the run encrypts to,
    /// so three nights leave one backup and its supplement, which either identity restores.
    func testARunConsolidatesToTheKeysItsProfileEncryptsTo() throws {
        let mine = try makeKey("mine.txt")
        let offline = try makeKey("offline.txt")
        let source = path("src")
        let dest = path("dest")
        let config = path("keepsake.toml")
        try """
            [profiles.home]
            sources = ["\(source)"]
            destination = "\(dest)"
            recipients = ["\(mine.recipient)", "\(offline.recipient)"]
            identity-file = "\(mine.file)"

            [profiles.home.retention]
            keep-last = 1

            """.write(toFile: config, atomically: true, encoding: .utf8)
        for night in 0..<3 {
            try liveNight(night, in: source)
            assertExit(try run(["run", "home", "--config", config, "--quiet"]), 0, "night \(night)")
        }
        let ids = try listed(dest)
        XCTAssertEqual(ids.count, 1, "the policy's one backup: \(ids)")
        let all = try names(in: dest)
        XCTAssertEqual(try supplementNames(dest).count, 3, "\(all)")
        let id = try XCTUnwrap(ids.first)
        try assertRestores(id, dest: dest, keys: ["--identity", offline.file], night: 2, source: source)
        try assertNothingInTheClear(["secret-note", "marker-", "kept-private"], in: dest)
    }
}
