import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Issue 26, backups that prove who wrote them: a host signs its backups with an Ed25519 key
/// (`backup --signing-key`), and whoever restores with the public key (`--signed-by`) uses
/// nothing of a backup that key did not sign or that changed since. Every test runs the built
/// binary; signatures are checked from outside with the `openssl` program, objects are
/// planted and edited with plain file operations, as someone who can write the destination
/// (and knows the published age recipient) would.
final class SignedBackupTests: EndToEndTestCase {
    // MARK: State

    private var source = ""
    private var dest = ""
    /// The host's signing key file and its public key (`ed25519:…`), made by `keygen --signing`.
    private var signingKey = ""
    private var publicKey = ""

    override func setUpWithError() throws {
        try super.setUpWithError()
        source = path("src")
        try Fixtures.makeTree(at: source, files: ["mine.txt": "the host's own file\n", "sub/notes.md": "notes\n"])
        dest = path("dest")
        (signingKey, publicKey) = try makeSigningKey("signing.pem")
    }

    // MARK: Round trip

    /// A signed backup, in the clear and encrypted, restores with `--signed-by` (the one-line
    /// key, and openssl's PEM public key in a file), verifies, and its signature checks with
    /// `openssl pkeyutl` against the public key openssl derives from the key file, over a
    /// statement whose every size and SHA-256 `sha256sum` confirms.
    func testASignedBackupRestoresAndAnyoneChecksItsSignatureWithOpenSSL() throws {
        let made = try run(["backup", source, "--dest", dest, "--signing-key", signingKey, "--json"])
        assertExit(made, 0)
        XCTAssertEqual(try json(made)["signed_by"] as? String, publicKey)
        let plain = try XCTUnwrap(try json(made)["id"] as? String)
        XCTAssertTrue(try run(["backup", source, "--dest", path("unsigned"), "--json"]).stdoutText.contains("\"signed_by\":null"))
        let identity = try makeIdentity()
        let encryptedDest = path("encrypted")
        let encrypted = try backup([source], dest: encryptedDest, options: ["--signing-key", signingKey, "--recipient", identity.recipient])
        let publicPEM = path("public.pem")
        try toolSucceeds("openssl", ["pkey", "-in", signingKey, "-pubout", "-out", publicPEM])

        for (folder, id, keys) in [(dest, plain, [String]()), (encryptedDest, encrypted, ["--identity", identity.file])] {
            let objects = try checkWithOpenSSL(id, in: folder, publicPEM: publicPEM)
            XCTAssertEqual(objects.sorted(), try names(in: folder).filter { !$0.hasSuffix(".signature") && !$0.hasPrefix(".") }.sorted(),
                           "the statement names every object of the backup")
            for (index, key) in [publicKey, publicPEM].enumerated() {
                let target = path("restored-\(id)-\(index)")
                assertExit(try run(["restore", id, "--dest", folder, "--target", target, "--signed-by", key] + keys), 0)
                try assertTreesEqual(expected: source, actual: restored(source, into: target))
            }
            assertExit(try run(["verify", "--dest", folder, "--signed-by", publicKey] + keys), 0)
        }
        XCTAssertTrue(try objectsOf(encrypted, in: encryptedDest).contains { $0.hasSuffix(".summary.json") })
    }

    // MARK: Forgery

    /// Someone who can write the destination and knows the host's public age key writes a
    /// newer backup under the host's name: without a signature check it is `latest` and
    /// restores their file (exit 0); with `--signed-by` restore refuses it (exit 7) and
    /// writes nothing, verify names it, and so does a copy of the genuine signature put
    /// beside it. The genuine backup still restores by its id.
    func testABackupForgedWithThePublicRecipientIsRefused() throws {
        let identity = try makeIdentity()
        let genuine = try backup([source], dest: dest, options: ["--host", "web1", "--signing-key", signingKey,
                                                                 "--recipient", identity.recipient])
        let attacker = path("attacker")
        try Fixtures.makeTree(at: attacker, files: ["mine.txt": "planted by someone else\n"])
        let forged = try backup([attacker], dest: dest, options: ["--host", "web1", "--recipient", identity.recipient])

        let unchecked = path("unchecked")
        assertExit(try run(["restore", "latest", "--dest", dest, "--host", "web1", "--target", unchecked,
                            "--identity", identity.file]), 0, "without a signature check the forgery restores")
        XCTAssertEqual(try String(contentsOfFile: restored(attacker, into: unchecked) + "/mine.txt", encoding: .utf8),
                       "planted by someone else\n")

        let checked = path("checked")
        let refused = try run(["restore", "latest", "--dest", dest, "--host", "web1", "--target", checked,
                               "--identity", identity.file, "--signed-by", publicKey])
        assertExit(refused, 7)
        XCTAssertTrue(refused.stderrText.contains("Backup \(forged) is not signed"), refused.stderrText)
        XCTAssertFalse(FileManager.default.fileExists(atPath: checked + attacker), "something of the forgery was written")

        let verified = try run(["verify", "--dest", dest, "--signed-by", publicKey, "--json"])
        assertExit(verified, 7)
        let reports = try json(verified)["backups"] as? [[String: Any]] ?? []
        XCTAssertEqual(reports.filter { $0["signature_problem"] is String }.compactMap { $0["id"] as? String }, [forged])

        // The genuine signature beside the forgery speaks of another backup.
        let host = "web1"
        try toolSucceeds("cp", [dest + "/\(host)_\(genuine).signature", dest + "/\(host)_\(forged).signature"])
        let borrowed = try run(["restore", forged, "--dest", dest, "--target", checked, "--identity", identity.file,
                                "--signed-by", publicKey])
        assertExit(borrowed, 7)
        XCTAssertTrue(borrowed.stderrText.contains("made for backup \(host)_\(genuine)"), borrowed.stderrText)

        let own = path("own")
        assertExit(try run(["restore", genuine, "--dest", dest, "--target", own, "--identity", identity.file,
                            "--signed-by", publicKey]), 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: own))
    }

    /// Every change after signing is refused before anything is written, each with its
    /// reason: a byte of the archive, an older backup's objects under the newer one's names,
    /// a signature object that is not one, a signature by another key, and a parent archive
    /// of an incremental replaced by another (found when the restore reaches it).
    func testAnyChangeAfterSigningIsRefused() throws {
        let first = try backup([source], dest: dest, options: ["--signing-key", signingKey])
        try Fixtures.makeTree(at: source, files: ["later.txt": "later\n"])
        let second = try backup([source], dest: dest, options: ["--signing-key", signingKey, "--full"])
        let pristine = path("pristine")
        try toolSucceeds("cp", ["-a", dest, pristine])
        func reset() throws {
            try toolSucceeds("rm", ["-rf", dest])
            try toolSucceeds("cp", ["-a", pristine, dest])
        }
        func assertRefused(_ id: String, _ reason: String, file: StaticString = #filePath, line: UInt = #line) throws {
            let target = path("target-\(UUID().uuidString)")
            let outcome = try run(["restore", id, "--dest", dest, "--target", target, "--signed-by", publicKey])
            assertExit(outcome, 7, file: file, line: line)
            XCTAssertTrue(outcome.stderrText.contains(reason), "wanted '\(reason)':\n\(outcome.stderrText)", file: file, line: line)
            XCTAssertFalse(FileManager.default.fileExists(atPath: target + source), "something was written", file: file, line: line)
        }
        let archive = try XCTUnwrap(try objectsOf(second, in: dest).first { $0.hasSuffix(".tar.zst") })
        let host = String(archive.prefix { $0 != "_" })

        // One byte of the archive, its size kept.
        let handle = try XCTUnwrap(FileHandle(forUpdatingAtPath: dest + "/" + archive))
        try handle.seek(toOffset: 600)
        let byte = try XCTUnwrap(try handle.read(upToCount: 1)?.first)
        try handle.seek(toOffset: 600)
        try handle.write(contentsOf: Data([byte ^ 0x20]))
        try handle.close()
        try assertRefused(second, "\(archive) is not what the signature of backup \(second) names (its SHA-256 is not the one signed)")

        // The older backup's signature beside the newer one (its objects moved along are
        // misnamed, which the catalog refuses before any signature is read).
        try reset()
        try toolSucceeds("cp", [dest + "/\(host)_\(first).signature", dest + "/\(host)_\(second).signature"])
        try assertRefused("latest", "made for backup \(host)_\(first)")

        // Not a signature object; then one made by another key (a statement of this backup).
        try reset()
        try Data("{\"keepsake\":\"signature\"}\n".utf8).write(to: URL(fileURLWithPath: dest + "/\(host)_\(second).signature"))
        try assertRefused(second, "\(host)_\(second).signature is not a signature object")
        try reset()
        let (otherKey, otherPublic) = try makeSigningKey("other.pem")
        let otherDest = path("other")
        try toolSucceeds("cp", ["-a", pristine, otherDest])
        // Signed by the other key: a backup that key's holder made in a copy of the destination.
        let theirs = try backup([source], dest: otherDest, options: ["--signing-key", otherKey, "--full"])
        for suffix in [".tar.zst", ".manifest.jsonl.zst", ".signature"] {
            try toolSucceeds("cp", [otherDest + "/\(host)_\(theirs)\(suffix)", dest + "/\(host)_\(theirs)\(suffix)"])
        }
        try assertRefused(theirs, "is signed by \(otherPublic), not by \(publicKey)")

        // An incremental whose parent's archive is replaced by one of the same size: the
        // restore stops at the parent (exit 7) and writes nothing of it.
        try reset()
        try Fixtures.makeTree(at: source, files: ["third.txt": "third\n"])
        let child = try backup([source], dest: dest, options: ["--signing-key", signingKey])
        XCTAssertTrue(try sidecarText(try sidecarPath(in: dest, id: child)).contains("\"parent\":\"\(second)\""))
        let parentArchive = dest + "/" + archive
        var bytes = try Data(contentsOf: URL(fileURLWithPath: parentArchive))
        bytes[bytes.count - 40] ^= 0x01
        try bytes.write(to: URL(fileURLWithPath: parentArchive))
        let target = path("child")
        let outcome = try run(["restore", child, "--dest", dest, "--target", target, "--signed-by", publicKey])
        assertExit(outcome, 7)
        XCTAssertTrue(outcome.stderrText.contains("the signature of backup \(second)"), outcome.stderrText)
        XCTAssertFalse(FileManager.default.fileExists(atPath: restored(source, into: target) + "/mine.txt"),
                       "a file of the changed parent archive was written")
        let verified = try run(["verify", child, "--dest", dest, "--signed-by", publicKey])
        assertExit(verified, 4, "the changed archive is damage, and damage comes first")
    }

    // MARK: Chains, copies, lone archives, prune

    /// A signed backup never builds on an unsigned one (a new chain starts, and says so); an
    /// unsigned backup after signed ones is warned about; signatures travel with `copy` and
    /// with a lone archive file (and without one the file is refused), and prune removes
    /// them with their backups. A profile's `signing-key` and `signed-by` do the same.
    func testSignaturesFollowTheirBackupsThroughChainsCopiesLoneArchivesAndPrune() throws {
        let unsigned = try backup([source], dest: dest)
        try Fixtures.makeTree(at: source, files: ["two.txt": "two\n"])
        let signedRun = try run(["backup", source, "--dest", dest, "--signing-key", signingKey])
        assertExit(signedRun, 0)
        XCTAssertTrue(signedRun.stderrText.contains("starting a new chain: \(unsigned) is not signed by this host's signing key"),
                      signedRun.stderrText)
        let (signed, kind) = try newest(in: dest)
        XCTAssertEqual(kind, "full")
        try Fixtures.makeTree(at: source, files: ["three.txt": "three\n"])
        assertExit(try run(["backup", source, "--dest", dest, "--signing-key", signingKey]), 0)
        let (child, childKind) = try newest(in: dest)
        XCTAssertEqual(childKind, "incremental", "a signed chain goes on")

        let refused = try run(["restore", unsigned, "--dest", dest, "--target", path("old"), "--signed-by", publicKey])
        assertExit(refused, 7)
        XCTAssertTrue(refused.stderrText.contains("is not signed"), refused.stderrText)

        // copy carries the signatures byte for byte.
        let offsite = path("offsite")
        assertExit(try run(["copy", "--from", dest, "--to", offsite]), 0)
        for id in [signed, child] {
            let name = try XCTUnwrap(try objectsOf(id, in: dest).first { $0.hasSuffix(".signature") })
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: offsite + "/" + name)),
                           try Data(contentsOf: URL(fileURLWithPath: dest + "/" + name)))
        }
        let fromOffsite = path("from-offsite")
        assertExit(try run(["restore", child, "--dest", offsite, "--target", fromOffsite, "--signed-by", publicKey]), 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: fromOffsite))

        // A lone archive file with its signature beside it, then without.
        let lone = path("usb")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(lone))
        for name in try objectsOf(signed, in: dest) where !name.contains(".manifest.") {
            try toolSucceeds("cp", [dest + "/" + name, lone + "/" + name])
        }
        let archiveFile = lone + "/" + (try XCTUnwrap(try objectsOf(signed, in: dest).first { $0.hasSuffix(".tar.zst") }))
        assertExit(try run(["restore", archiveFile, "--target", path("from-usb"), "--signed-by", publicKey]), 0)
        try toolSucceeds("rm", [lone + "/" + (try XCTUnwrap(try objectsOf(signed, in: dest).first { $0.hasSuffix(".signature") }))])
        let bare = try run(["restore", archiveFile, "--target", path("from-usb-bare"), "--signed-by", publicKey])
        assertExit(bare, 7)
        XCTAssertTrue(bare.stderrText.contains("keep its .signature file with it"), bare.stderrText)

        // An unsigned backup after signed ones: warned, still made (a full one, so that prune
        // below keeps nothing the signed ones).
        let again = try run(["backup", source, "--dest", dest, "--full"])
        assertExit(again, 0)
        XCTAssertTrue(again.stderrText.contains("this backup is not signed, though the last backup of this host, \(child), is"),
                      again.stderrText)

        // prune takes the signature with its backup.
        assertExit(try run(["prune", "--dest", dest, "--keep-last", "1"]), 0)
        XCTAssertEqual(try names(in: dest).filter { $0.hasSuffix(".signature") }, [], "a signature outlived its backup")

        // A profile: run signs, restore and verify check.
        let config = path("keepsake.toml")
        try """
            [profiles.signed]
            sources = ["\(source)"]
            destination = "\(path("profile-dest"))"
            signing-key = "\(signingKey)"
            signed-by = "\(publicKey)"

            [profiles.mismatched]
            sources = ["\(source)"]
            destination = "\(path("mismatched-dest"))"
            signing-key = "\(signingKey)"
            signed-by = "\(try makeSigningKey("unrelated.pem").publicKey)"

            """.write(toFile: config, atomically: true, encoding: .utf8)
        assertExit(try run(["run", "signed", "--config", config]), 0)
        let mismatched = try run(["run", "mismatched", "--config", config])
        assertExit(mismatched, 7, "the run's verify checks the new backup against the profile's signed-by")
        XCTAssertTrue(mismatched.stderrText.contains("does not pass the profile's signed-by check"), mismatched.stderrText)
        let target = path("from-profile")
        assertExit(try run(["restore", "latest", "--profile", "signed", "--config", config, "--target", target]), 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: target))
        assertExit(try run(["verify", "--profile", "signed", "--config", config]), 0)
        assertExit(try run(["verify", "--profile", "signed", "--config", config, "--dest", dest]), 7,
                   "the profile's signed-by applies to another destination too")
    }

    /// A signed backup whose manifest is lost (as when a run dies between writing the
    /// signature and committing the manifest) is rebuilt from the archive's own copy by the
    /// next backup, without its signature, which no longer names its manifest: restore with
    /// `--signed-by` then says it is not signed. A signature with neither archive nor
    /// manifest is removed as a leftover.
    func testABackupRebuiltAfterItsManifestWasLostIsNoLongerSigned() throws {
        let id = try backup([source], dest: dest, options: ["--signing-key", signingKey])
        let manifest = try sidecarPath(in: dest, id: id)
        try toolSucceeds("rm", [manifest])
        let stem = String((manifest as NSString).lastPathComponent.dropLast(".manifest.jsonl.zst".count))
        try Data("{}".utf8).write(to: URL(fileURLWithPath: dest + "/\(stem.prefix { $0 != "_" })_20200101T000000Z-00000000.signature"))

        let next = try run(["backup", source, "--dest", dest, "--signing-key", signingKey])
        assertExit(next, 0)
        XCTAssertTrue(next.stderrText.contains("backup \(id) had lost its manifest; it was rebuilt"), next.stderrText)
        XCTAssertTrue(next.stderrText.contains("removed 2 leftover files"), "the lost manifest's signature and the orphan:\n"
            + next.stderrText)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dest + "/\(stem).signature"))
        XCTAssertEqual(try newest(in: dest).kind, "full", "a signed backup built on an unsigned one")
        let outcome = try run(["restore", id, "--dest", dest, "--target", path("restored"), "--signed-by", publicKey])
        assertExit(outcome, 7)
        XCTAssertTrue(outcome.stderrText.contains("is not signed"), outcome.stderrText)
        assertExit(try run(["restore", id, "--dest", dest, "--target", path("restored")]), 0, "it is intact all the same")

        // `repair` rebuilds a lost manifest the same way, and takes the signature that named
        // the lost one away.
        let (newer, _) = try newest(in: dest)
        try toolSucceeds("rm", [try sidecarPath(in: dest, id: newer)])
        let repaired = try run(["repair", "--dest", dest])
        XCTAssertEqual(repaired.exitCode, 0, repaired.description)
        XCTAssertEqual(try objectsOf(newer, in: dest).filter { $0.hasSuffix(".signature") }, [])
        assertExit(try run(["restore", newer, "--dest", dest, "--target", path("repaired"), "--signed-by", publicKey]), 7)
    }

    // MARK: Many nights

    /// Thirty nights of a host's signed backups (a full one every five) in a destination
    /// someone else can write: on some nights a backup forged under the host's name, of the
    /// same sources, lands beside them (unsigned, or with a genuine signature copied over), on others a genuine
    /// archive is changed for a while. Checked every night against the test's own record:
    /// `restore latest --signed-by` gives that night's tree, or refuses (exit 7, nothing
    /// written) when a forgery is the newest or the archive was changed, and then the night's
    /// backup restores by its id; `prune --keep-last 4 --signed-by` never removes a forgery,
    /// always keeps the four newest genuine backups, and keeps no more genuine ones than
    /// those and the fulls they rely on (without `--signed-by` the forgeries count and push
    /// genuine backups out); a backup after a forgery starts a new chain. Weekly, `verify --signed-by` names exactly the
    /// forgeries present.
    func testThirtyNightsOfSignedBackupsAmongForgeries() throws {
        try Fixtures.makeTree(at: source, files: ["constant.txt": "the same every night\n"])
        let attacker = path("attacker")
        try Fixtures.makeTree(at: attacker, files: ["changing.txt": "planted\n", "constant.txt": "planted too\n"])
        var random = SeededGenerator(seed: 26)
        var genuine: [(id: String, night: Int, kind: String)] = []
        var forgeries = Set<String>()
        let formatter = ISO8601DateFormatter()
        let firstNight = Date(timeIntervalSince1970: 1_798_768_800)  // 2027-01-01T02:00:00Z
        var refusedNights = 0
        for night in 0..<30 {
            let now = firstNight.addingTimeInterval(Double(night) * 86_400)
            let clock: [String: String?] = ["KEEPSAKE_NOW": formatter.string(from: now)]
            try Data("night \(night)\n".utf8).write(to: URL(fileURLWithPath: source + "/changing.txt"))
            let made = try run(["backup", source, "--dest", dest, "--host", "web1", "--signing-key", signingKey, "--full-every", "5",
                                "--json"], environment: clock)
            assertExit(made, 0, "night \(night)")
            let object = try json(made)
            genuine.append((try XCTUnwrap(object["id"] as? String), night, try XCTUnwrap(object["kind"] as? String)))
            let tonight = genuine[genuine.count - 1].id

            let mishap = Int.random(in: 0..<6, using: &random)
            var changedArchive: (path: String, bytes: Data)?
            if mishap == 0 || mishap == 1 {
                // A forgery of the same sources dated an hour after tonight's backup, made
                // elsewhere (here: with the source folder swapped for the attacker's) and put here.
                let forge = path("forge-\(night)")
                let later: [String: String?] = ["KEEPSAKE_NOW": formatter.string(from: now.addingTimeInterval(3600))]
                XCTAssertEqual(rename(source, path("aside")), 0)
                XCTAssertEqual(rename(attacker, source), 0)
                let forgedRun = try run(["backup", source, "--dest", forge, "--host", "web1", "--json"], environment: later)
                XCTAssertEqual(rename(source, attacker), 0)
                XCTAssertEqual(rename(path("aside"), source), 0)
                let id = try XCTUnwrap(try json(forgedRun)["id"] as? String)
                for name in try names(in: forge) where name.hasPrefix("web1_") {
                    try toolSucceeds("cp", [forge + "/" + name, dest + "/" + name])
                }
                if mishap == 1 {
                    try toolSucceeds("cp", [dest + "/web1_\(tonight).signature", dest + "/web1_\(id).signature"])
                }
                forgeries.insert(id)
            } else if mishap == 2 {
                let archive = dest + "/web1_\(tonight).tar.zst"
                let bytes = try Data(contentsOf: URL(fileURLWithPath: archive))
                var changed = bytes
                changed[changed.count / 2] ^= 0x40
                try changed.write(to: URL(fileURLWithPath: archive))
                changedArchive = (archive, bytes)
            }

            let target = path("night-\(night)")
            let restore = try run(["restore", "latest", "--dest", dest, "--host", "web1", "--target", target, "--signed-by", publicKey],
                                  environment: clock)
            if mishap <= 2 {
                refusedNights += 1
                assertExit(restore, 7, "night \(night), mishap \(mishap)")
                XCTAssertFalse(FileManager.default.fileExists(atPath: target + source), "night \(night): something was written")
                if let changedArchive { try changedArchive.bytes.write(to: URL(fileURLWithPath: changedArchive.path)) }
                assertExit(try run(["restore", tonight, "--dest", dest, "--target", target, "--signed-by", publicKey],
                                   environment: clock), 0, "night \(night): the genuine backup by its id")
            } else {
                assertExit(restore, 0, "night \(night)")
            }
            XCTAssertEqual(try String(contentsOfFile: restored(source, into: target) + "/changing.txt", encoding: .utf8),
                           "night \(night)\n", "night \(night)")
            XCTAssertEqual(try String(contentsOfFile: restored(source, into: target) + "/constant.txt", encoding: .utf8),
                           "the same every night\n", "night \(night)")

            let pruned = try run(["prune", "--dest", dest, "--host", "web1", "--keep-last", "4", "--signed-by", publicKey],
                                 environment: clock)
            assertExit(pruned, 0, "night \(night)")
            let present = Set(try names(in: dest).filter { $0.hasSuffix(".manifest.jsonl.zst") }.map {
                String($0.dropFirst("web1_".count).dropLast(".manifest.jsonl.zst".count))
            })
            XCTAssertTrue(forgeries.isSubset(of: present), "night \(night): prune removed a forgery")
            let newestFour = genuine.suffix(4).map(\.id)
            XCTAssertTrue(Set(newestFour).isSubset(of: present), "night \(night): prune removed one of the newest four")
            // The fulls the newest four rely on (each changed night's file is new, the
            // constant one is the full's).
            let fulls = Set(newestFour.compactMap { id in genuine.last { $0.kind == "full" && $0.id <= id }?.id })
            let keptGenuine = present.subtracting(forgeries)
            XCTAssertTrue(keptGenuine.isSubset(of: Set(newestFour).union(fulls)),
                          "night \(night): prune kept more than the policy and its chains: \(keptGenuine.sorted())")

            if night % 7 == 6 || night == 29 {
                let verified = try run(["verify", "--dest", dest, "--signed-by", publicKey, "--json"], environment: clock)
                assertExit(verified, forgeries.isEmpty ? 0 : 7, "night \(night)")
                let document = try json(verified)
                XCTAssertEqual(document["damaged"] as? Int, 0, "night \(night)")
                let named = (document["backups"] as? [[String: Any]] ?? []).filter { $0["signature_problem"] is String }
                XCTAssertEqual(Set(named.compactMap { $0["id"] as? String }), forgeries, "night \(night)")
            }
        }
        XCTAssertGreaterThan(refusedNights, 5, "the seed gives nights of every kind")
        XCTAssertGreaterThan(forgeries.count, 3)
    }

    // MARK: Usage

    /// Keys given wrongly are usage errors or failures naming the file, never a crash: a
    /// secret key for `--signed-by`, a public key for `--signing-key`, a missing file.
    func testKeysGivenWronglyAreNamed() throws {
        let id = try backup([source], dest: dest, options: ["--signing-key", signingKey])
        let secret = try run(["restore", id, "--dest", dest, "--target", path("t"), "--signed-by", signingKey])
        assertExit(secret, 2)
        XCTAssertTrue(secret.stderrText.contains("it is a secret signing key") && !secret.stderrText.contains("PRIVATE"),
                      secret.stderrText)
        let garbled = try run(["verify", "--dest", dest, "--signed-by", "ed25519:nope"])
        assertExit(garbled, 2)
        let publicFile = path("public.txt")
        try Data((publicKey + "\n").utf8).write(to: URL(fileURLWithPath: publicFile))
        let wrongWay = try run(["backup", source, "--dest", dest, "--signing-key", publicFile])
        assertExit(wrongWay, 1)
        XCTAssertTrue(wrongWay.stderrText.contains("The signing key '\(publicFile)' is unusable: it holds a public key"),
                      wrongWay.stderrText)
        let missing = try run(["backup", source, "--dest", dest, "--signing-key", path("nowhere.pem")])
        assertExit(missing, 1)
        XCTAssertTrue(missing.stderrText.contains("nowhere.pem"), missing.stderrText)
        let keygen = try run(["keygen", "--signing", "--output", signingKey])
        assertExit(keygen, 1, "an existing key file is never replaced")
    }

    // MARK: Helpers

    /// A new signing key file `name` made by `keygen --signing`, and the public key it printed.
    private func makeSigningKey(_ name: String) throws -> (file: String, publicKey: String) {
        let file = path(name)
        let outcome = try run(["keygen", "--signing", "--output", file, "--json"])
        assertExit(outcome, 0)
        let key = try XCTUnwrap(try json(outcome)["signing_public_key"] as? String)
        XCTAssertTrue(key.hasPrefix("ed25519:"), key)
        var info = stat()
        XCTAssertEqual(stat(file, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
        return (file, key)
    }

    /// A new age identity file and its recipient.
    private func makeIdentity() throws -> (file: String, recipient: String) {
        let file = path("identity.txt")
        let outcome = try run(["keygen", "--output", file])
        assertExit(outcome, 0)
        return (file, outcome.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// The id and kind of the newest backup in `folder` (`list --json`).
    private func newest(in folder: String) throws -> (id: String, kind: String) {
        let outcome = try run(["list", "--dest", folder, "--json"])
        assertExit(outcome, 0)
        let last = try XCTUnwrap((try json(outcome)["backups"] as? [[String: Any]])?.last)
        return (try XCTUnwrap(last["id"] as? String), try XCTUnwrap(last["kind"] as? String))
    }

    /// The objects of backup `id` in `folder` (its archive, manifest, summary, signature).
    private func objectsOf(_ id: String, in folder: String) throws -> [String] {
        try names(in: folder).filter { $0.contains("_\(id).") }
    }

    /// Checks backup `id`'s signature as a third party would, with python3 (to read the JSON),
    /// openssl and sha256sum only: the signature over the statement with `publicPEM`, the
    /// statement's form, the public key the object names (openssl's raw key, base64), and
    /// each named object's size and SHA-256. Returns the names the statement lists.
    private func checkWithOpenSSL(_ id: String, in folder: String, publicPEM: String,
                                  file: StaticString = #filePath, line: UInt = #line) throws -> [String] {
        let signature = try XCTUnwrap(try objectsOf(id, in: folder).first { $0.hasSuffix(".signature") }, file: file, line: line)
        let statement = path("statement-\(id)")
        let raw = path("signature-\(id)")
        let script = """
            import base64, json, sys
            record = json.load(open(sys.argv[1]))
            assert record["keepsake"] == "signature" and record["format"] == 1
            open(sys.argv[2], "w").write(record["statement"])
            open(sys.argv[3], "wb").write(base64.b64decode(record["signature"]))
            print(record["key"])
            """
        let key = try toolSucceeds("python3", ["-c", script, folder + "/" + signature, statement, raw], file: file, line: line)
        try toolSucceeds("openssl", ["pkeyutl", "-verify", "-pubin", "-inkey", publicPEM, "-rawin", "-in", statement, "-sigfile", raw],
                         file: file, line: line)
        let der = try tool("openssl", ["pkey", "-pubin", "-in", publicPEM, "-outform", "DER"])
        XCTAssertEqual(key.stdoutText.trimmingCharacters(in: .newlines), "ed25519:" + der.stdout.suffix(32).base64EncodedString(),
                       "the key the object names is the signer's", file: file, line: line)
        XCTAssertEqual(key.stdoutText.trimmingCharacters(in: .newlines), publicKey, file: file, line: line)

        let lines = try String(contentsOfFile: statement, encoding: .utf8).split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.first, "keepsake-signature 1", file: file, line: line)
        XCTAssertEqual(lines.dropFirst().first, "backup " + String(signature.dropLast(".signature".count)), file: file, line: line)
        var named: [String] = []
        for entry in lines.dropFirst(2) {
            let fields = entry.split(separator: " ").map(String.init)
            XCTAssertEqual(fields.count, 4, entry, file: file, line: line)
            guard fields.count == 4 else { continue }
            let object = folder + "/" + fields[1]
            let size = (try FileManager.default.attributesOfItem(atPath: object)[.size] as? NSNumber)?.int64Value
            XCTAssertEqual(size.map(String.init), fields[2], entry, file: file, line: line)
            XCTAssertEqual(String(try toolSucceeds("sha256sum", [object], file: file, line: line).stdoutText.prefix(64)), fields[3],
                           entry, file: file, line: line)
            named.append(fields[1])
        }
        XCTAssertEqual(lines.dropFirst(2).map { String($0.prefix { $0 != " " }) }.prefix(2), ["archive", "manifest"],
                       file: file, line: line)
        return named
    }
}
