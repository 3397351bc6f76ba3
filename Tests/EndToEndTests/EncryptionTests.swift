import Foundation
import XCTest

/// Encrypted backups (age v1) end to end, with the built binary and Debian's `age`: keys,
/// what each party can read, incrementals from the local cache, interop both ways, and
/// damage and wrong keys told apart by their exit codes (4 and 6).
final class EncryptionTests: EndToEndTestCase {
    // MARK: Helpers

    /// A new identity file and its public key, made by `keepsake keygen`.
    private func makeKey(_ name: String) throws -> (file: String, recipient: String) {
        let file = path(name)
        let outcome = try run(["keygen", "--output", file])
        assertExit(outcome, 0)
        let recipient = outcome.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertTrue(recipient.hasPrefix("age1"), "keygen printed \(outcome.stdoutText)")
        return (file, recipient)
    }

    /// A file holding `text` (mode 0600).
    private func secretFile(_ name: String, _ text: String) throws -> String {
        let file = path(name)
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        chmod(file, 0o600)
        return file
    }

    private func encryptedNames(in dest: String) throws -> (archive: String, manifest: String, summary: String) {
        let all = try names(in: dest).filter { !$0.hasPrefix(".") && $0 != "keepsake.lock" }
        let archive = try XCTUnwrap(all.first { $0.hasSuffix(".tar.zst.age") }, "no encrypted archive in \(all)")
        let manifest = try XCTUnwrap(all.first { $0.hasSuffix(".manifest.jsonl.zst.age") }, "no encrypted manifest in \(all)")
        let summary = try XCTUnwrap(all.first { $0.hasSuffix(".summary.json") }, "no summary in \(all)")
        return (dest + "/" + archive, dest + "/" + manifest, dest + "/" + summary)
    }

    // MARK: Keys

    func testKeygenWritesAnOwnerOnlyAgeKeyFileAndNeverReplacesOne() throws {
        let (file, recipient) = try makeKey("id.txt")
        var info = stat()
        XCTAssertEqual(stat(file, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600, "the identity file must be mode 0600")
        let text = try String(contentsOfFile: file, encoding: .utf8)
        XCTAssertTrue(text.contains("# public key: \(recipient)\n"), text)
        XCTAssertTrue(text.contains("\nAGE-SECRET-KEY-1"), text)
        let again = try run(["keygen", "--output", file])
        assertExit(again, 1)
        XCTAssertTrue(again.stderrText.contains("already exists"), "\(again)")
        XCTAssertEqual(try String(contentsOfFile: file, encoding: .utf8), text, "keygen replaced an existing key file")
        XCTAssertFalse(again.stdoutText.contains("AGE-SECRET-KEY"), "\(again)")
    }

    /// `keepsake keygen > FILE` (as age-keygen is used) warns at once when the shell made
    /// the file readable by others, naming it and the fix; an owner-only file draws nothing.
    func testKeygenIntoAFileOthersCanReadWarnsAtOnce() throws {
        for (umask, warns) in [("022", true), ("077", false)] {
            let file = path("key-\(umask).txt")
            let outcome = try tool("/bin/sh", ["-c", "umask \(umask); '\(keepsake.executable)' keygen > '\(file)'"])
            XCTAssertEqual(outcome.exitCode, 0, "\(outcome)")
            XCTAssertTrue(try String(contentsOfFile: file, encoding: .utf8).contains("AGE-SECRET-KEY-1"))
            XCTAssertEqual(outcome.stderrText.contains("which others can read (mode 644)") && outcome.stderrText.contains("chmod 600 \(file)"),
                           warns, "umask \(umask): \(outcome)")
            XCTAssertTrue(outcome.stderrText.contains("Public key: age1"), "\(outcome)")
        }
    }

    // MARK: Public keys

    func testPublicKeyBackupIsReadableOnlyWithItsIdentity() throws {
        let source = path("src")
        try Fixtures.makeMixedTree(at: source)
        let key = try makeKey("id.txt")
        let other = try makeKey("other.txt")
        let dest = path("dest")
        let id = try backup([source], dest: dest, options: ["--recipient", key.recipient])
        let stored = try encryptedNames(in: dest)
        XCTAssertEqual(Array(try Data(contentsOf: URL(fileURLWithPath: stored.archive)).prefix(21)), Array("age-encryption.org/v1".utf8))
        // The summary in the clear holds no names.
        let summaryText = try String(contentsOfFile: stored.summary, encoding: .utf8)
        XCTAssertFalse(summaryText.contains(source), "the summary in the clear names the source: \(summaryText)")
        XCTAssertTrue(summaryText.contains(key.recipient), summaryText)
        for object in [stored.archive, stored.manifest] {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: object))
            XCTAssertNil(bytes.range(of: Data("small".utf8)), "\(object) holds a file name in the clear")
        }

        // Listing needs no key; the files of the backup do.
        let listed = try run(["list", "--dest", dest])
        assertExit(listed, 0)
        XCTAssertTrue(listed.stdoutText.contains(id) && listed.stdoutText.contains("encrypted"), "\(listed)")
        XCTAssertFalse(listed.stdoutText.contains(source), "without a key the sources are hidden:\n\(listed)")
        let listedWithKey = try run(["list", "--dest", dest, "--identity", key.file])
        assertExit(listedWithKey, 0)
        XCTAssertTrue(listedWithKey.stdoutText.contains(source), "with the key the sources show:\n\(listedWithKey)")
        assertExit(try run(["list", id, "--dest", dest]), 6)
        let files = try run(["list", id, "--dest", dest, "--identity", key.file])
        assertExit(files, 0)
        XCTAssertFalse(files.stdoutText.isEmpty)

        // Restore: no key and a wrong key are exit 6 with nothing written; the right one restores.
        let target = path("out")
        let none = try run(["restore", id, "--dest", dest, "--target", target])
        assertExit(none, 6)
        XCTAssertTrue(none.stderrText.contains("--identity"), "\(none)")
        let wrong = try run(["restore", id, "--dest", dest, "--target", target, "--identity", other.file])
        assertExit(wrong, 6)
        XCTAssertFalse(wrong.stderrText.contains("AGE-SECRET-KEY"), "\(wrong)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: target + source), "a refused restore wrote files")
        assertExit(try run(["restore", id, "--dest", dest, "--target", target],
                           environment: ["KEEPSAKE_IDENTITY_FILE": key.file]), 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: target))

        // Verify without a key checks the stored bytes; with one, everything.
        let stored1 = try run(["verify", id, "--dest", dest, "--json"])
        assertExit(stored1, 0)
        XCTAssertTrue(stored1.stdoutText.contains("contents_unchecked"), "\(stored1)")
        assertExit(try run(["verify", id, "--dest", dest, "--identity", key.file]), 0)
    }

    func testAgeDecryptsOurArchiveForPlainTar() throws {
        let source = path("src")
        try Fixtures.makeMixedTree(at: source)
        let key = try makeKey("id.txt")
        let dest = path("dest")
        try backup([source], dest: dest, options: ["--recipient", key.recipient])
        let stored = try encryptedNames(in: dest)
        let extracted = path("extracted")
        try FileManager.default.createDirectory(atPath: extracted, withIntermediateDirectories: true)
        try toolSucceeds("sh", ["-c", "age -d -i \"$1\" \"$2\" | tar --zstd -xpf - -C \"$3\"", "sh", key.file, stored.archive, extracted])
        try assertTreesEqual(expected: source, actual: extracted + source)
        // The manifest beside it too: age, then zstd.
        let manifest = try toolSucceeds("sh", ["-c", "age -d -i \"$1\" \"$2\" | zstd -dc", "sh", key.file, stored.manifest])
        XCTAssertTrue(manifest.stdoutText.hasPrefix("{\"keepsake\":\"manifest\""), manifest.stdoutText)
    }

    func testWeRestoreWhatAgeEncryptedAroundAPlainTar() throws {
        let source = path("src")
        try Fixtures.makeMixedTree(at: source)
        let key = try makeKey("id.txt")
        let tarball = path("plain.tar.zst")
        try toolSucceeds("tar", ["--zstd", "--format=posix", "-cpf", tarball, "-C", "/", String(source.dropFirst())])
        let encrypted = path("plain.tar.zst.age")
        try toolSucceeds("age", ["-r", key.recipient, "-o", encrypted, tarball])
        let target = path("out")
        let outcome = try run(["restore", encrypted, "--target", target, "--identity", key.file])
        assertExit(outcome, 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: target))

        // age -p asks on the terminal: script(1) gives it one, and types the passphrase twice.
        let byPassphrase = path("pass.tar.zst.age")
        let typed = try tool("script", ["-qec", "age -p -o '\(byPassphrase)' '\(tarball)'", "/dev/null"],
                             stdin: Data("correct horse\ncorrect horse\n".utf8))
        XCTAssertEqual(typed.exitCode, 0, "age -p under script failed:\n\(typed)")
        let passphrase = try secretFile("pass.txt", "correct horse\n")
        let target2 = path("out2")
        assertExit(try run(["restore", byPassphrase, "--target", target2, "--passphrase-file", passphrase]), 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: target2))
        let wrong = try secretFile("wrong.txt", "battery staple\n")
        assertExit(try run(["restore", byPassphrase, "--target", path("out3"), "--passphrase-file", wrong]), 6)
    }

    // MARK: Passphrases and chains

    func testPassphraseBackupsChainAndRestoreWithThePassphraseFile() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "one\n", "b.txt": "two\n"])
        let passphrase = try secretFile("pass.txt", "a long passphrase\n")
        let dest = path("dest")
        let first = try backup([source], dest: dest, options: ["--passphrase-file", passphrase])
        try Data("changed\n".utf8).write(to: URL(fileURLWithPath: source + "/b.txt"))
        let second = try run(["backup", source, "--dest", dest, "--json"], environment: ["KEEPSAKE_PASSPHRASE_FILE": passphrase])
        assertExit(second, 0)
        let object = try json(second)
        XCTAssertEqual(object["kind"] as? String, "incremental", "\(second)")
        XCTAssertEqual(object["parent"] as? String, first)
        let target = path("out")
        assertExit(try run(["restore", "latest", "--dest", dest, "--target", target, "--passphrase-file", passphrase]), 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: target))
        let wrong = try secretFile("wrong.txt", "not it\n")
        let refused = try run(["restore", "latest", "--dest", dest, "--target", path("out2"), "--passphrase-file", wrong])
        assertExit(refused, 6)
        XCTAssertTrue(refused.stderrText.contains("passphrase"), "\(refused)")
        XCTAssertFalse(refused.stderrText.contains("not it"), "the passphrase was printed:\n\(refused)")
    }

    /// Issue 26 §9: `list` with a passphrase opens one manifest per source set (each costs a
    /// scrypt run; every backup of a set has the same sources), not every backup's. The older
    /// backups' manifests are made unreadable here: their rows show the sources all the same,
    /// which they could only have from the newest one's.
    func testListOpensOneManifestPerSourceSetWithAPassphrase() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "one\n"])
        let passphrase = try secretFile("pass.txt", "a long passphrase\n")
        let dest = path("dest")
        var ids: [String] = []
        for night in 1...3 {
            try Data("night \(night)\n".utf8).write(to: URL(fileURLWithPath: source + "/a.txt"))
            ids.append(try backup([source], dest: dest, options: ["--passphrase-file", passphrase]))
        }
        for id in ids.dropLast() {
            let manifest = try XCTUnwrap(try names(in: dest).first { $0.contains(id) && $0.hasSuffix(".manifest.jsonl.zst.age") })
            try Data("not an age file\n".utf8).write(to: URL(fileURLWithPath: dest + "/" + manifest))
        }
        let listed = try run(["list", "--dest", dest, "--json", "--passphrase-file", passphrase])
        assertExit(listed, 0)
        let backups = try json(listed)["backups"] as? [[String: Any]] ?? []
        XCTAssertEqual(backups.compactMap { $0["id"] as? String }, ids)
        for backup in backups {
            XCTAssertEqual(backup["sources"] as? [String], [source], "\(backup)")
            XCTAssertNil(backup["sources_hidden"], "\(backup)")
        }
        let blind = try run(["list", "--dest", dest, "--json"])
        XCTAssertTrue((try json(blind)["backups"] as? [[String: Any]] ?? []).allSatisfy { $0["sources_hidden"] as? Bool == true })
    }

    func testPublicKeyIncrementalsComeFromTheLocalCacheAndAFullBackupWithoutIt() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "one\n", "b.txt": "two\n"])
        let key = try makeKey("id.txt")
        let dest = path("dest")
        let first = try backup([source], dest: dest, options: ["--recipient", key.recipient])
        let cacheRoot = keepsake.home + "/.cache/keepsake"
        var info = stat()
        XCTAssertEqual(stat(cacheRoot, &info), 0, "no cache at \(cacheRoot)")
        XCTAssertEqual(info.st_mode & 0o777, 0o700)
        try Data("changed\n".utf8).write(to: URL(fileURLWithPath: source + "/b.txt"))
        let second = try run(["backup", source, "--dest", dest, "--json", "--recipient", key.recipient])
        assertExit(second, 0)
        XCTAssertEqual(try json(second)["parent"] as? String, first, "\(second)")
        XCTAssertEqual(try json(second)["new_files"] as? Int, 1, "\(second)")

        try FileManager.default.removeItem(atPath: cacheRoot)
        let third = try run(["backup", source, "--dest", dest, "--recipient", key.recipient])
        assertExit(third, 0)
        XCTAssertTrue(third.stderrText.contains("making a full backup"), "\(third)")
        let target = path("out")
        assertExit(try run(["restore", "latest", "--dest", dest, "--target", target, "--identity", key.file]), 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: target))
        // The second one needs the first's archive: restoring it reads two encrypted archives.
        let target2 = path("out2")
        let middle = try XCTUnwrap(try json(second)["id"] as? String)
        assertExit(try run(["restore", middle, "--dest", dest, "--target", target2, "--identity", key.file]), 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: target2))
    }

    /// Issue 26 §8: a cache folder that another user owns, or that group or others can
    /// open, could hold a forged manifest that makes a backup take a changed file for
    /// unchanged. Such a cache is not used (a full backup, and a warning naming the folder
    /// and the fix); once it is this user's alone, backups are incremental again.
    func testACacheFolderSomeoneElseOwnsOrCanOpenIsNotUsed() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "one\n", "b.txt": "two\n"])
        let key = try makeKey("id.txt")
        let dest = path("dest")
        let cache: [String: String?] = ["XDG_CACHE_HOME": path("cache")]
        let root = path("cache") + "/keepsake"
        func backup(_ round: Int) throws -> ProcessRunner.Outcome {
            try Data("round \(round)\n".utf8).write(to: URL(fileURLWithPath: source + "/b.txt"))
            let outcome = try run(["backup", source, "--dest", dest, "--json", "--recipient", key.recipient], environment: cache)
            assertExit(outcome, 0)
            return outcome
        }
        let first = try backup(1)
        XCTAssertNil(try json(first)["parent"] as? String)
        // Handed to another user (nobody), open to all: as if they had made it first.
        try toolSucceeds("chown", ["-R", "65534", root])
        XCTAssertEqual(chmod(root, 0o777), 0)
        let theirs = try backup(2)
        XCTAssertNil(try json(theirs)["parent"] as? String, "a cache another user owns was used: \(theirs)")
        XCTAssertTrue(theirs.stderrText.contains("\(root) belongs to user 65534"), theirs.stderrText)

        try toolSucceeds("chown", ["-R", "0", root])
        XCTAssertEqual(chmod(root, 0o755), 0)
        let open = try backup(3)
        XCTAssertNil(try json(open)["parent"] as? String, "a cache others can open was used: \(open)")
        XCTAssertTrue(open.stderrText.contains("run 'chmod 700 \(root)'"), open.stderrText)

        XCTAssertEqual(chmod(root, 0o700), 0)
        let mine = try backup(4)
        XCTAssertNotNil(try json(mine)["parent"] as? String, "\(mine)")
        XCTAssertFalse(mine.stderrText.contains("change-detection cache"), mine.stderrText)
    }

    func testAPlainBackupAfterAnEncryptedOneIsRefusedUnlessAsked() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "one\n"])
        let key = try makeKey("id.txt")
        let dest = path("dest")
        try backup([source], dest: dest, options: ["--recipient", key.recipient])
        let refused = try run(["backup", source, "--dest", dest])
        assertExit(refused, 1)
        XCTAssertTrue(refused.stderrText.contains("--no-encryption"), "\(refused)")
        try backup([source], dest: dest, options: ["--no-encryption"])
    }

    // MARK: Copy and prune need no key

    func testCopyAndPruneWorkWithoutAnyKey() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "one\n"])
        let key = try makeKey("id.txt")
        let dest = path("dest")
        let first = try backup([source], dest: dest, options: ["--recipient", key.recipient])
        let mirror = path("mirror")
        assertExit(try run(["copy", "--from", dest, "--to", mirror]), 0)
        let copied = try encryptedNames(in: mirror)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: copied.archive)),
                       try Data(contentsOf: URL(fileURLWithPath: try encryptedNames(in: dest).archive)))
        let target = path("out")
        assertExit(try run(["restore", first, "--dest", mirror, "--target", target, "--identity", key.file]), 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: target))
        try backup([source], dest: dest, options: ["--recipient", key.recipient, "--full"])
        let repair = try run(["repair", "--dest", dest])
        assertExit(repair, 0, "repair must leave sound encrypted backups alone")
        XCTAssertTrue(repair.stdoutText.contains("nothing to repair"), "\(repair)")
        assertExit(try run(["prune", "--dest", dest, "--keep-last", "1"]), 0)
        let left = try names(in: dest).filter { !$0.hasPrefix(".") && $0 != "keepsake.lock" }
        XCTAssertEqual(left.count, 3, "prune must remove the archive, manifest and summary of the older backup: \(left)")
        XCTAssertFalse(left.contains { $0.contains(first) }, "\(left)")
    }

    // MARK: Damage

    func testFlippedBitsInAnEncryptedArchiveAreDamageNotAWrongKey() throws {
        let source = path("src")
        try Fixtures.makeIncompressibleTree(at: source, count: 4, size: 200_000)
        let key = try makeKey("id.txt")
        let dest = path("dest")
        let id = try backup([source], dest: dest, options: ["--recipient", key.recipient])
        let archive = try encryptedNames(in: dest).archive
        let original = try Data(contentsOf: URL(fileURLWithPath: archive))
        let headerEnd = try XCTUnwrap(original.range(of: Data("\n---".utf8))).lowerBound
        // In the recipient stanza, in the header MAC, in the payload's nonce, first and last
        // chunks; then seeded offsets all over.
        var offsets = [headerEnd - 10, headerEnd + 8, headerEnd + 60, headerEnd + 200, original.count / 2, original.count - 5]
        var generator = SeededGenerator(seed: 0xA6E0_0000_0000_0001)
        offsets += (0..<18).map { _ in Int.random(in: 0..<original.count, using: &generator) }
        for offset in offsets {
            var damaged = original
            damaged[offset] ^= UInt8(1 << Int.random(in: 0..<8, using: &generator))
            try damaged.write(to: URL(fileURLWithPath: archive))
            let target = path("out-\(offset)")
            let outcome = try run(["restore", id, "--dest", dest, "--target", target, "--identity", key.file])
            assertExit(outcome, 4, "a flipped bit at \(offset) of \(original.count) must be damage")
            assertExit(try run(["verify", id, "--dest", dest, "--identity", key.file]), 4, "verify, bit at \(offset)")
            assertExit(try run(["verify", id, "--dest", dest]), 4, "verify without a key, bit at \(offset)")
            let landed = (try? FileManager.default.subpathsOfDirectory(atPath: target)) ?? []
            XCTAssertFalse(landed.contains { $0.contains(".keepsake-") || $0.hasSuffix(".partial") }, "\(landed)")
        }
        try original.write(to: URL(fileURLWithPath: archive))
        assertExit(try run(["verify", id, "--dest", dest, "--identity", key.file]), 0)
    }

    func testFlippedBitsInTheEncryptedManifestAndTheSummaryAreFound() throws {
        let source = path("src")
        try Fixtures.makeMixedTree(at: source)
        let key = try makeKey("id.txt")
        let dest = path("dest")
        let id = try backup([source], dest: dest, options: ["--recipient", key.recipient])
        let stored = try encryptedNames(in: dest)
        var generator = SeededGenerator(seed: 0xA6E0_0000_0000_0002)
        for file in [stored.manifest, stored.summary] {
            let original = try Data(contentsOf: URL(fileURLWithPath: file))
            for _ in 0..<12 {
                let offset = Int.random(in: 0..<original.count, using: &generator)
                var damaged = original
                damaged[offset] ^= UInt8(1 << Int.random(in: 0..<8, using: &generator))
                try damaged.write(to: URL(fileURLWithPath: file))
                let outcome = try run(["verify", id, "--dest", dest, "--identity", key.file])
                assertExit(outcome, 4, "a flipped bit at \(offset) of \((file as NSString).lastPathComponent) must be found")
            }
            try original.write(to: URL(fileURLWithPath: file))
        }
        assertExit(try run(["verify", id, "--dest", dest, "--identity", key.file]), 0)
    }

    // MARK: Profiles, the other readers, prompts

    func testAProfileEncryptsAndItsRunVerifiesWithItsIdentity() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "one\n"])
        let key = try makeKey("id.txt")
        let recipients = try secretFile("recipients.txt", "# the restore machine\n\(key.recipient)\n")
        let dest = path("dest")
        let config = path("config.toml")
        try """
            [profiles.home]
            sources = ["\(source)"]
            destination = "\(dest)"
            recipients-file = "\(recipients)"
            identity-file = "\(key.file)"
            [profiles.home.retention]
            keep-last = 3
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let outcome = try run(["run", "home", "--config", config, "--json"])
        assertExit(outcome, 0)
        let document = try json(outcome)
        let verify = try XCTUnwrap(document["verify"] as? [String: Any], "\(outcome)")
        XCTAssertEqual(verify["contents_unchecked"] as? Bool, false, "the run's verify must decrypt with identity-file:\n\(outcome)")
        XCTAssertGreaterThan(verify["files_checked"] as? Int ?? 0, 0, "\(outcome)")
        _ = try encryptedNames(in: dest)
        // Without the identity the run still verifies what it stored.
        try """
            [profiles.home]
            sources = ["\(source)"]
            destination = "\(dest)"
            recipients = ["\(key.recipient)"]
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let second = try run(["run", "home", "--config", config, "--json"])
        assertExit(second, 0)
        let verify2 = try XCTUnwrap(try json(second)["verify"] as? [String: Any], "\(second)")
        XCTAssertEqual(verify2["contents_unchecked"] as? Bool, true, "\(second)")
        XCTAssertEqual(verify2["intact"] as? Bool, true, "\(second)")
    }

    func testDiffAndFindReadEncryptedBackupsWithTheIdentity() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "one\n", "b.txt": "two\n"])
        let key = try makeKey("id.txt")
        let dest = path("dest")
        let first = try backup([source], dest: dest, options: ["--recipient", key.recipient])
        try Data("changed\n".utf8).write(to: URL(fileURLWithPath: source + "/b.txt"))
        let second = try backup([source], dest: dest, options: ["--recipient", key.recipient])
        assertExit(try run(["diff", first, second, "--dest", dest]), 6)
        let diff = try run(["diff", first, second, "--dest", dest, "--identity", key.file])
        assertExit(diff, 0)
        XCTAssertTrue(diff.stdoutText.contains("b.txt"), "\(diff)")
        let found = try run(["find", "b.txt", "--dest", dest, "--identity", key.file])
        assertExit(found, 0)
        XCTAssertTrue(found.stdoutText.contains(second), "\(found)")
    }

    func testKeyFilesOthersCanReadDrawAWarning() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "one\n"])
        let key = try makeKey("id.txt")
        let dest = path("dest")
        let id = try backup([source], dest: dest, options: ["--recipient", key.recipient])
        chmod(key.file, 0o644)
        let outcome = try run(["restore", id, "--dest", dest, "--target", path("out"), "--identity", key.file])
        assertExit(outcome, 0)
        XCTAssertTrue(outcome.stderrText.contains("chmod 600"), "\(outcome)")
        XCTAssertFalse(outcome.stderrText.contains("AGE-SECRET-KEY"), "\(outcome)")
    }

    func testWithoutATerminalAMissingPassphraseIsExitSix() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "one\n"])
        let passphrase = try secretFile("pass.txt", "sesame seed\n")
        let dest = path("dest")
        try backup([source], dest: dest, options: ["--passphrase-file", passphrase])
        let refused = try run(["restore", "latest", "--dest", dest, "--target", path("out")])
        assertExit(refused, 6)
        XCTAssertTrue(refused.stderrText.contains("--passphrase-file"), "\(refused)")
        assertExit(try run(["backup", source, "--dest", dest, "--passphrase"]), 6, "no terminal to ask on")
    }
}
