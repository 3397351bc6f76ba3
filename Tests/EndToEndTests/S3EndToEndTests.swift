import Foundation
import KeepsakeTestSupport
import XCTest

/// `keepsake` against a real S3 server (SeaweedFS on loopback): the whole workflow, a
/// restore with nothing but curl and tar, and the faults a network brings — a storm of
/// 503s, a download cut short, the connection dying mid-upload, a wrong secret, a bucket
/// that does not exist, and a storage node lost in the middle of a backup.
final class S3EndToEndTests: EndToEndTestCase {
    // MARK: Setup

    private var server: SeaweedServer?
    private let bucket = "backups"

    override func tearDownWithError() throws {
        server?.stop()
        server = nil
        try super.tearDownWithError()
    }

    private func started(access: SeaweedServer.Access = .open) throws -> SeaweedServer {
        let made = try SeaweedServer(buckets: [bucket], access: access)
        server = made
        return made
    }

    /// The environment a run needs to reach `endpoint`: its credentials and the endpoint.
    private func environment(_ server: SeaweedServer, endpoint: URL? = nil, secret: String? = nil,
                             attempts: Int? = nil) -> [String: String?] {
        var environment: [String: String?] = [
            "AWS_ACCESS_KEY_ID": server.accessKey,
            "AWS_SECRET_ACCESS_KEY": secret ?? server.secretKey,
            "KEEPSAKE_S3_ENDPOINT": (endpoint ?? server.endpoint).absoluteString,
            "AWS_PROFILE": nil, "AWS_SESSION_TOKEN": nil,
        ]
        if let attempts { environment["KEEPSAKE_S3_MAX_ATTEMPTS"] = String(attempts) }
        return environment
    }

    /// Puts the local `file` at `key` in the bucket with curl, as anyone holding the keys can,
    /// Keepsake not involved.
    private func upload(_ file: String, to key: String, in server: SeaweedServer) throws {
        try toolSucceeds("curl", ["-sf", "--aws-sigv4", "aws:amz:us-east-1:s3", "--user", "\(server.accessKey):\(server.secretKey)",
                                  "-T", file, "\(server.endpoint.absoluteString)/\(bucket)/\(key)"])
    }

    /// The keys under `prefix/` in the bucket, and the unfinished uploads there.
    private func stored(_ server: SeaweedServer, prefix: String) throws -> (objects: [String], uploads: [String]) {
        let listing = S3BucketListing(server: server, bucket: bucket)
        return (try listing.keys(prefix: prefix + "/"), try listing.unfinishedUploads(prefix: prefix + "/"))
    }

    // MARK: Where credentials come from

    /// With no AWS_* variable, the keys come from `$HOME/.aws/credentials` (HOME is this
    /// test's, not the account's); then a profile that holds the endpoint and the keys
    /// serves list and restore with nothing else given.
    func testCredentialsFromHOMEAndFromAProfile() throws {
        let server = try started(access: .enforcedWithRandomKeys())
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "alpha\n"])
        let dest = "s3://\(bucket)/home"
        let aws = keepsake.home + "/.aws"
        try FileManager.default.createDirectory(atPath: aws, withIntermediateDirectories: true)
        try "[default]\naws_access_key_id = \(server.accessKey)\naws_secret_access_key = \(server.secretKey)\n"
            .write(toFile: aws + "/credentials", atomically: true, encoding: .utf8)
        let bare: [String: String?] = ["AWS_ACCESS_KEY_ID": nil, "AWS_SECRET_ACCESS_KEY": nil, "AWS_PROFILE": nil,
                                       "AWS_SESSION_TOKEN": nil, "AWS_SHARED_CREDENTIALS_FILE": nil, "AWS_CONFIG_FILE": nil]
        let made = try run(["backup", source, "--dest", dest, "--s3-endpoint", server.endpoint.absoluteString, "--json"],
                           environment: bare)
        assertExit(made, 0)
        let id = try XCTUnwrap(try json(made)["id"] as? String)

        try FileManager.default.removeItem(atPath: aws)
        let config = path("keepsake.toml")
        try """
            [profiles.web]
            sources = ["\(source)"]
            destination = "\(dest)"
            s3-endpoint = "\(server.endpoint.absoluteString)"
            aws-access-key-id = "\(server.accessKey)"
            aws-secret-access-key = "\(server.secretKey)"

            """.write(toFile: config, atomically: true, encoding: .utf8)
        XCTAssertEqual(chmod(config, 0o600), 0)
        assertExit(try run(["list", "--ids", "--dest", dest, "--s3-endpoint", server.endpoint.absoluteString], environment: bare), 1,
                   "without keys the server refuses")
        let listed = try run(["list", "--ids", "--profile", "web", "--config", config], environment: bare)
        assertExit(listed, 0)
        XCTAssertEqual(listed.stdoutText, id + "\n")
        let target = path("restored")
        assertExit(try run(["restore", "latest", "--profile", "web", "--config", config, "--target", target], environment: bare), 0)
        XCTAssertEqual(try String(contentsOfFile: restored(source, into: target) + "/a.txt", encoding: .utf8), "alpha\n")
    }

    // MARK: Workflow

    func testTheWholeWorkflowOnS3() throws {
        let server = try started()
        try RemoteWorkflow(test: self, dest: "s3://\(bucket)/hosts/web", environment: environment(server)).runAll()
        let (objects, uploads) = try stored(server, prefix: "hosts/web")
        XCTAssertEqual(uploads, [], "no unfinished upload is left")
        XCTAssertEqual(objects.filter { $0.hasSuffix(".tar.zst") }.count, 1)
        XCTAssertFalse(objects.contains { $0.hasSuffix(".lock") }, "the lock is released")
    }

    /// The README's promise: an archive in the bucket restores with standard tools alone.
    func testAnArchiveInTheBucketRestoresWithCurlAndTar() throws {
        let server = try started()
        let source = path("src")
        try Fixtures.makeMixedTree(at: source)
        let made = try json(try run(["backup", source, "--dest", "s3://\(bucket)/plain", "--json"], environment: environment(server)))
        let archive = try XCTUnwrap(made["archive"] as? String)
        let target = path("by-hand")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(target))
        let script = "curl -sf --aws-sigv4 aws:amz:us-east-1:s3 --user \"$1\" \"$2\" | tar --zstd -x -C \"$3\""
        try toolSucceeds("sh", ["-c", script, "sh", "\(server.accessKey):\(server.secretKey)",
                                "\(server.endpoint.absoluteString)/\(bucket)/plain/\(archive)", target])
        try assertTreesEqual(expected: source, actual: restored(source, into: target))
    }

    /// A byte flipped in an archive in the bucket costs only the file it spoils: restore and
    /// verify read on around the damaged frame with ranged GETs (issue 25 §2.3).
    func testDamageInTheBucketCostsOnlyTheFileItSpoils() throws {
        let server = try started()
        let source = path("src")
        // Six incompressible 1 MB files: two frames, stored as they are (a flip spoils one byte).
        try Fixtures.makeIncompressibleTree(at: source, count: 6, size: 1_000_000)
        let dest = "s3://\(bucket)/damaged"
        let made = try json(try run(["backup", source, "--dest", dest, "--json"], environment: environment(server)))
        let url = "\(server.endpoint.absoluteString)/\(bucket)/damaged/\(try XCTUnwrap(made["archive"] as? String))"
        let signing = ["-sf", "--aws-sigv4", "aws:amz:us-east-1:s3", "--user", "\(server.accessKey):\(server.secretKey)"]
        let local = path("archive.tar.zst")
        try toolSucceeds("curl", signing + [url, "-o", local])
        let size = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: local)[.size] as? Int)
        try Fixtures.flipByte(in: local, at: size * 3 / 4)
        try toolSucceeds("curl", signing + ["-T", local, url])

        let target = path("target")
        let restore = try run(["restore", "latest", "--dest", dest, "--target", target, "--json"], environment: environment(server))
        assertExit(restore, 4)
        let report = try json(restore)
        XCTAssertEqual((report["damaged"] as? [Any])?.count, 1, "one file spoiled: \(restore)")
        XCTAssertEqual(report["files"] as? Int, 5, "\(restore)")
        XCTAssertEqual(try names(in: restored(source, into: target)).count, 5)

        let verify = try run(["verify", "--dest", dest, "--json"], environment: environment(server))
        assertExit(verify, 4)
        let checked = try XCTUnwrap((try json(verify))["backups"] as? [[String: Any]]).first
        XCTAssertEqual((checked?["damaged_files"] as? [Any])?.count, 1, "\(verify)")
        XCTAssertEqual(checked?["files_checked"] as? Int, 6, "\(verify)")
    }

    /// Backups that leave the machine encrypted: a public-key backup and an incremental one in
    /// the bucket, listed, verified and pruned without the key, restored whole and in part
    /// with it, and decrypted by curl and age alone.
    func testEncryptedBackupsInABucket() throws {
        let server = try started()
        let environment = environment(server)
        let source = path("src")
        try Fixtures.makeMixedTree(at: source)
        let keyFile = path("key.txt")
        let made = try run(["keygen", "--output", keyFile])
        assertExit(made, 0)
        let recipient = made.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        let dest = "s3://\(bucket)/sealed"
        let first = try json(try run(["backup", source, "--dest", dest, "--json", "--recipient", recipient], environment: environment))
        try Data("changed\n".utf8).write(to: URL(fileURLWithPath: source + "/readme.txt"))
        let second = try json(try run(["backup", source, "--dest", dest, "--json", "--recipient", recipient], environment: environment))
        XCTAssertEqual(second["parent"] as? String, first["id"] as? String, "the cache makes the second backup incremental")
        let (objects, _) = try stored(server, prefix: "sealed")
        XCTAssertEqual(objects.filter { $0.hasSuffix(".tar.zst.age") }.count, 2, "\(objects)")
        XCTAssertEqual(objects.filter { $0.hasSuffix(".summary.json") }.count, 2, "\(objects)")
        XCTAssertFalse(objects.contains { $0.hasSuffix(".tar.zst") || $0.hasSuffix(".manifest.jsonl.zst") }, "\(objects)")

        assertExit(try run(["list", "--dest", dest], environment: environment), 0)
        assertExit(try run(["verify", "--dest", dest], environment: environment), 0)
        var withKey = environment
        withKey["KEEPSAKE_IDENTITY_FILE"] = keyFile
        assertExit(try run(["verify", "--dest", dest], environment: withKey), 0)
        let target = path("out")
        assertExit(try run(["restore", "latest", "--dest", dest, "--target", target], environment: withKey), 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: target))
        let partial = path("partial")
        assertExit(try run(["restore", "latest", String(source.dropFirst()) + "/readme.txt", "--dest", dest, "--target", partial],
                           environment: withKey), 0)
        XCTAssertEqual(try String(contentsOfFile: restored(source, into: partial) + "/readme.txt", encoding: .utf8), "changed\n")

        let archive = try XCTUnwrap(second["archive"] as? String)
        let byHand = path("by-hand")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(byHand))
        let script = "curl -sf --aws-sigv4 aws:amz:us-east-1:s3 --user \"$1\" \"$2\" | age -d -i \"$4\" | tar --zstd -x -C \"$3\""
        // The second backup is incremental: its archive holds what changed.
        try toolSucceeds("sh", ["-c", script, "sh", "\(server.accessKey):\(server.secretKey)",
                                "\(server.endpoint.absoluteString)/\(bucket)/sealed/\(archive)", byHand, keyFile])
        XCTAssertEqual(try String(contentsOfFile: restored(source, into: byHand) + "/readme.txt", encoding: .utf8), "changed\n")

        assertExit(try run(["prune", "--dest", dest, "--keep-last", "1"], environment: environment), 0)
    }

    /// `keepsake run` of a profile whose backups go to a local folder and are copied on to a
    /// bucket, with the endpoint and the keys in the profile (nothing in the environment).
    func testRunCopiesEachNewBackupToTheProfilesFurtherDestinations() throws {
        let server = try started(access: .enforcedWithRandomKeys())
        let source = path("src")
        try Fixtures.makeMixedTree(at: source)
        let config = path("config.toml")
        try """
            [profiles.laptop]
            sources = ["\(source)"]
            destination = "\(path("local"))"
            copy-to = ["s3://\(bucket)/laptop"]
            s3-endpoint = "\(server.endpoint.absoluteString)"
            aws-access-key-id = "\(server.accessKey)"
            aws-secret-access-key = "\(server.secretKey)"
            [profiles.laptop.retention]
            keep-last = 5
            """.write(toFile: config, atomically: true, encoding: .utf8)
        XCTAssertEqual(chmod(config, 0o600), 0)
        let bare: [String: String?] = ["AWS_ACCESS_KEY_ID": nil, "AWS_SECRET_ACCESS_KEY": nil]
        for round in 1...2 {
            try "round \(round)\n".write(toFile: source + "/readme.txt", atomically: true, encoding: .utf8)
            let outcome = try run(["run", "laptop", "--config", config, "--json"], environment: bare)
            assertExit(outcome, 0, "round \(round)")
            XCTAssertFalse(outcome.stdoutText.contains(server.secretKey) || outcome.stderrText.contains(server.secretKey),
                           "the secret is never shown")
            let report = try json(outcome)
            let copies = try XCTUnwrap(report["copies"] as? [[String: Any]])
            XCTAssertEqual(copies.first?["destination"] as? String, "s3://\(bucket)/laptop")
            XCTAssertEqual((copies.first?["copied"] as? [String])?.count, 1, "round \(round): the new backup (its parent is there)")
        }
        let keys: [String: String?] = ["AWS_ACCESS_KEY_ID": server.accessKey, "AWS_SECRET_ACCESS_KEY": server.secretKey,
                                       "KEEPSAKE_S3_ENDPOINT": server.endpoint.absoluteString]
        // The file holds a secret: others must not read it.
        XCTAssertEqual(chmod(config, 0o644), 0)
        let exposed = try run(["run", "laptop", "--config", config], environment: bare)
        assertExit(exposed, 0)
        XCTAssertTrue(exposed.stderrText.contains("chmod 600 \(config)"), "a secret others can read is warned about:\n\(exposed)")
        let listed = try json(try run(["list", "--dest", "s3://\(bucket)/laptop", "--json"], environment: keys))
        XCTAssertEqual((listed["backups"] as? [Any])?.count, 3)
        assertExit(try run(["verify", "--dest", "s3://\(bucket)/laptop"], environment: keys), 0)
    }

    /// Issue 26 §1–2 on a bucket: a hostile copy source cannot replace a backup's archive
    /// there, and a backup of host web1 made elsewhere and uploaded with curl under the name
    /// `evil_…` is neither web1's `latest` nor counted or removed by web1's prune.
    func testObjectsPlantedInABucketNeverPassForAnotherHostsBackups() throws {
        let server = try started()
        let keys = environment(server)
        let dest = "s3://\(bucket)/shared"
        let source = path("src"), attacker = path("attacker")
        try Fixtures.makeTree(at: source, files: ["mine.txt": "the victim's own file\n"])
        try Fixtures.makeTree(at: attacker, files: ["mine.txt": "planted\n"])
        let made = try run(["backup", source, "--dest", dest, "--host", "web1", "--json"], environment: keys)
        assertExit(made, 0)
        let victim = try XCTUnwrap(try json(made)["id"] as? String)

        let hostile = path("hostile")
        let evil = try backup([attacker], dest: hostile, options: ["--host", "evil"])
        XCTAssertEqual(rename(hostile + "/evil_\(evil).tar.zst", hostile + "/web1_\(victim).tar.zst"), 0)
        let manifest = hostile + "/evil_\(evil).manifest.jsonl.zst"
        try writeSidecar(manifest, try sidecarText(manifest).replacingOccurrences(of: "evil_\(evil).tar.zst", with: "web1_\(victim).tar.zst"))
        assertExit(try run(["copy", "--from", hostile, "--to", dest], environment: keys), 4)
        assertExit(try run(["verify", "--dest", dest], environment: keys), 0, "the victim's archive is its own")

        let forge = path("forge")
        let later = ISO8601DateFormatter().string(from: Date().addingTimeInterval(60))
        assertExit(try run(["backup", attacker, "--dest", forge, "--host", "web1"], environment: ["KEEPSAKE_NOW": later]), 0)
        for name in try names(in: forge) where name.hasPrefix("web1_") {
            try upload(forge + "/" + name, to: "shared/evil_\(name.dropFirst("web1_".count))", in: server)
        }
        let restore = try run(["restore", "latest", "--host", "web1", "--dest", dest, "--target", path("restored")], environment: keys)
        assertExit(restore, 0)
        XCTAssertEqual(try String(contentsOfFile: restored(source, into: path("restored")) + "/mine.txt", encoding: .utf8),
                       "the victim's own file\n")
        XCTAssertTrue(restore.stderrText.contains("its name says host 'evil' but its summary says 'web1'"), restore.stderrText)
        assertExit(try run(["prune", "--dest", dest, "--host", "web1", "--keep-last", "1"], environment: keys), 0)
        let objects = try stored(server, prefix: "shared").objects
        XCTAssertTrue(objects.contains("shared/web1_\(victim).manifest.jsonl.zst"), "\(objects)")
        XCTAssertEqual(objects.filter { $0.hasPrefix("shared/evil_") }.count, 2, "\(objects)")
    }

    /// Issue 26, signed backups on a bucket: an encrypted, signed chain restores and verifies
    /// with `--signed-by`, and is copied to a folder with its signatures; a newer backup
    /// under the host's name, made with the published recipient and uploaded with curl, is
    /// refused (exit 7) where it would otherwise be `latest`.
    func testSignedBackupsInABucketAndAForgeryUploadedBesideThem() throws {
        let server = try started()
        let keys = environment(server)
        let dest = "s3://\(bucket)/signed"
        let source = path("src"), attacker = path("attacker")
        try Fixtures.makeTree(at: source, files: ["mine.txt": "the host's own file\n"])
        try Fixtures.makeTree(at: attacker, files: ["mine.txt": "planted\n"])
        let identity = path("identity.txt"), signing = path("signing.pem")
        let recipient = try run(["keygen", "--output", identity]).stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        let publicKey = try run(["keygen", "--signing", "--output", signing]).stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        let options = ["--host", "web1", "--recipient", recipient, "--signing-key", signing]
        assertExit(try run(["backup", source, "--dest", dest] + options, environment: keys), 0)
        try Data("changed\n".utf8).write(to: URL(fileURLWithPath: source + "/mine.txt"))
        assertExit(try run(["backup", source, "--dest", dest] + options, environment: keys), 0)
        XCTAssertEqual(try stored(server, prefix: "signed").objects.filter { $0.hasSuffix(".signature") }.count, 2)

        let checked = ["--identity", identity, "--signed-by", publicKey, "--host", "web1"]
        let target = path("out")
        assertExit(try run(["restore", "latest", "--dest", dest, "--target", target] + checked, environment: keys), 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: target))
        assertExit(try run(["verify", "--dest", dest, "--signed-by", publicKey], environment: keys), 0)
        let offsite = path("offsite")
        assertExit(try run(["copy", "--from", dest, "--to", offsite], environment: keys), 0)
        assertExit(try run(["verify", "--dest", offsite, "--identity", identity, "--signed-by", publicKey]), 0)

        let forge = path("forge")
        let later = ISO8601DateFormatter().string(from: Date().addingTimeInterval(60))
        assertExit(try run(["backup", attacker, "--dest", forge, "--host", "web1", "--recipient", recipient],
                           environment: ["KEEPSAKE_NOW": later]), 0)
        for name in try names(in: forge) where name.hasPrefix("web1_") {
            try upload(forge + "/" + name, to: "signed/\(name)", in: server)
        }
        let unchecked = path("unchecked")
        assertExit(try run(["restore", "latest", "--dest", dest, "--target", unchecked, "--identity", identity, "--host", "web1"],
                           environment: keys), 0)
        XCTAssertEqual(try String(contentsOfFile: restored(attacker, into: unchecked) + "/mine.txt", encoding: .utf8), "planted\n",
                       "without a signature check the forgery is latest")
        let refused = try run(["restore", "latest", "--dest", dest, "--target", path("refused")] + checked, environment: keys)
        assertExit(refused, 7)
        XCTAssertTrue(refused.stderrText.contains("is not signed"), refused.stderrText)
        XCTAssertFalse(FileManager.default.fileExists(atPath: path("refused") + attacker))
        assertExit(try run(["verify", "--dest", dest, "--signed-by", publicKey], environment: keys), 7)
    }

    /// Issue 26 §3: a run in a container of this machine (its own pid namespace, where it is
    /// pid 1, with the same host name) holds the bucket's lock. Another run here used to find
    /// pid 1 running with another start time, call the lock stale and take it over, and both
    /// wrote at once; now it cannot judge that pid and is refused (exit 5), naming why.
    func testALiveLockHeldInAnotherPidNamespaceIsNotTakenOver() throws {
        let server = try started()
        let keys = environment(server)
        let dest = "s3://\(bucket)/containers"
        let source = path("src")
        try Fixtures.makeTree(at: source, files: Dictionary(uniqueKeysWithValues: (0..<8).map { ("f\($0).txt", "file \($0)\n") }))
        var slow = keys
        slow["KEEPSAKE_TEST_READ_PAUSE_MS"] = "300"
        let holder = try ProcessRunner.start("unshare", ["--pid", "--fork", "--mount-proc", keepsake.executable, "backup", source,
                                                         "--dest", dest, "--readers", "1"],
                                             environment: keepsake.environment(slow))
        defer { holder.kill() }
        let listing = S3BucketListing(server: server, bucket: bucket)
        let deadline = Date().addingTimeInterval(60)
        var locked = false
        while !locked, Date() < deadline, holder.isRunning {
            locked = try listing.keys(prefix: "containers/").contains("containers/keepsake.lock")
            if !locked { usleep(100_000) }
        }
        XCTAssertTrue(locked, "the run in its own pid namespace never took the lock")

        let second = try run(["backup", source, "--dest", dest], environment: keys)
        assertExit(second, 5, "a live lock of another pid namespace is not taken over")
        XCTAssertTrue(second.stderrText.contains("another container"), second.stderrText)
        let first = try holder.finish()
        XCTAssertEqual(first.exitCode, 0, "\(first)")
        XCTAssertEqual(try json(try run(["list", "--dest", dest, "--json"], environment: keys))["backups"].map { ($0 as? [Any])?.count },
                       1, "only the holder's backup was made")
    }

    /// Issue 26 §7: a server's error message and a lock record's fields are the server's
    /// (or whoever wrote the bucket's) to choose. Terminal escapes in them (a title change, a
    /// screen clear) reached stderr raw; now each control character shows as `?`, and JSON
    /// escapes them.
    func testEscapesFromTheServerAndFromALockRecordNeverReachTheTerminal() throws {
        let server = try started()
        let proxy = try FaultProxy(upstream: server.endpoint)
        defer { proxy.stop() }
        let through = environment(server, endpoint: proxy.endpoint)
        func assertNoEscapes(_ outcome: ProcessRunner.Outcome, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
            let raw = outcome.stdout + outcome.stderr
            XCTAssertFalse(raw.contains(0x1B) || raw.contains(0x07), "\(what): a raw escape reached the output:\n\(outcome)",
                           file: file, line: line)
        }
        try proxy.denyWithEscapes(1_000)
        for json in [false, true] {
            let denied = try run(["list", "--dest", "s3://\(bucket)/escapes"] + (json ? ["--json"] : []), environment: through)
            assertExit(denied, 1)
            assertNoEscapes(denied, "the server's message")
            XCTAssertTrue((denied.stdoutText + denied.stderrText).contains("Access Denied"), "\(denied)")
        }
        try proxy.pass()

        // A lock record written by someone else, its host and operation full of escapes.
        let record = #"{"pid":1,"host":"evil\u001b]0;pwned\u0007\u001b[2J","started":"2026-01-01T00:00:00Z","#
            + #""operation":"backup\u001b[31m","boot_id":"another-kernel"}"#
        let file = path("lock.json")
        try record.write(toFile: file, atomically: true, encoding: .utf8)
        try upload(file, to: "escapes/keepsake.lock", in: server)
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "a\n"])
        for json in [false, true] {
            let locked = try run(["backup", source, "--dest", "s3://\(bucket)/escapes"] + (json ? ["--json"] : []),
                                 environment: environment(server))
            assertExit(locked, 5)
            assertNoEscapes(locked, "the lock record")
            XCTAssertTrue((locked.stdoutText + locked.stderrText).contains("evil"), "\(locked)")
        }
    }

    /// Issue 26 §5: a server whose listings never end (the same token, the same upload
    /// markers, page after page) made `list` run for 30 minutes and grow to 6.3 GB, and a
    /// backup abort the same uploads 19,950 times in 30 s, another program's among them. Now
    /// a token or markers given twice stop the listing with a clear error, and only uploads
    /// named like Keepsake's own are aborted, once.
    func testAListingThatNeverEndsIsStoppedAndOnlyKeepsakesUploadsAreAborted() throws {
        let server = try started()
        let proxy = try FaultProxy(upstream: server.endpoint)
        defer { proxy.stop() }
        let through = environment(server, endpoint: proxy.endpoint)
        let dest = "s3://\(bucket)/endless"
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "a\n"])
        try proxy.endlessListings()

        let listed = try keepsake.run(["list", "--dest", dest], environment: through, timeout: 60)
        assertExit(listed, 1)
        XCTAssertTrue(listed.stderrText.contains("listing does not end") && listed.stderrText.contains("'again' twice"),
                      listed.stderrText)
        let backup = try keepsake.run(["backup", source, "--dest", dest], environment: through, timeout: 60)
        assertExit(backup, 1)
        XCTAssertTrue(backup.stderrText.contains("listing does not end"), backup.stderrText)
        XCTAssertEqual(try proxy.aborted(), ["/\(bucket)/endless/web1_20261206T020000Z-0000abcd.tar.zst"],
                       "Keepsake's upload once, never another program's")
        try proxy.pass()
        assertExit(try run(["backup", source, "--dest", dest], environment: through), 0, "a server that behaves again is used")
    }

    /// Issue 26 §6: a store that ignores `If-None-Match` lets every run "create" the lock,
    /// so runs of several hosts are not kept apart, and nobody was told. The run now writes
    /// the lock twice and, when the second write is not refused, says so (and still works).
    func testAStoreThatIgnoresConditionalWritesIsNamed() throws {
        let server = try started()
        let proxy = try FaultProxy(upstream: server.endpoint)
        defer { proxy.stop() }
        let through = environment(server, endpoint: proxy.endpoint)
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "a\n"])
        let honoured = try run(["backup", source, "--dest", "s3://\(bucket)/conditions"], environment: through)
        assertExit(honoured, 0)
        XCTAssertFalse(honoured.stderrText.contains("ignores conditional writes"), honoured.stderrText)
        try proxy.ignoreConditions()
        let ignored = try run(["backup", source, "--dest", "s3://\(bucket)/conditions"], environment: through)
        assertExit(ignored, 0)
        XCTAssertTrue(ignored.stderrText.contains("ignores conditional writes (If-None-Match)"), ignored.stderrText)
    }

    /// An archive in a bucket is named by its address, as a local archive file by its path:
    /// listed, verified and restored with no --dest.
    func testAnArchiveIsNamedByItsAddress() throws {
        let server = try started()
        let source = path("src")
        try Fixtures.makeMixedTree(at: source)
        let made = try json(try run(["backup", source, "--dest", "s3://\(bucket)/by-address", "--json"], environment: environment(server)))
        let address = "s3://\(bucket)/by-address/" + (try XCTUnwrap(made["archive"] as? String))
        let listed = try run(["list", address], environment: environment(server))
        assertExit(listed, 0)
        XCTAssertTrue(listed.stdoutText.contains("readme.txt"), "\(listed)")
        assertExit(try run(["verify", address], environment: environment(server)), 0)
        let target = path("restored")
        assertExit(try run(["restore", address, "--target", target], environment: environment(server)), 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: target))
        let missing = try run(["restore", "s3://\(bucket)/by-address/nothing.tar.zst", "--target", target], environment: environment(server))
        assertExit(missing, 1)
        XCTAssertTrue(missing.stderrText.contains("no archive 'nothing.tar.zst'"), "\(missing)")
    }

    // MARK: Faults

    /// 503 SlowDown for a while: retried with backoff, and the backup and the restore succeed.
    func testAStormOf503sIsRiddenOut() throws {
        let server = try started()
        let proxy = try FaultProxy(upstream: server.endpoint)
        defer { proxy.stop() }
        let source = path("src")
        try Fixtures.makeMixedTree(at: source)
        let through = environment(server, endpoint: proxy.endpoint)
        try proxy.storm(5)
        assertExit(try run(["backup", source, "--dest", "s3://\(bucket)/storm", "-q"], environment: through), 0, "the storm passes")
        XCTAssertEqual(try proxy.faultsServed(), 5, "every 503 was met and retried")
        try proxy.storm(4)
        let target = path("restored")
        assertExit(try run(["restore", "latest", "--dest", "s3://\(bucket)/storm", "--target", target], environment: through), 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: target))
    }

    /// A storm that outlasts the retries: a clear error naming the endpoint, bucket and key,
    /// nothing committed, and the next run works and leaves no unfinished upload.
    func testAStormLongerThanTheRetriesFailsCleanly() throws {
        let server = try started()
        let proxy = try FaultProxy(upstream: server.endpoint)
        defer { proxy.stop() }
        let source = path("src")
        try Fixtures.makeMixedTree(at: source)
        let dest = "s3://\(bucket)/long-storm"
        assertExit(try run(["backup", source, "--dest", dest, "-q"], environment: environment(server)), 0)
        try proxy.storm(10_000)
        let failed = try run(["backup", source, "--dest", dest], environment: environment(server, endpoint: proxy.endpoint, attempts: 2))
        assertExit(failed, 1, "the store never answers")
        XCTAssertTrue(failed.stderrText.contains(proxy.endpoint.absoluteString) && failed.stderrText.contains("s3://\(bucket)"),
                      "names the endpoint and where:\n\(failed)")
        XCTAssertTrue(failed.stderrText.contains("503"), "says what the store answered:\n\(failed)")
        try proxy.pass()
        let listed = try json(try run(["list", "--dest", dest, "--json"], environment: environment(server)))
        XCTAssertEqual((listed["backups"] as? [Any])?.count, 1, "nothing new was committed")
        assertExit(try run(["backup", source, "--dest", dest, "-q"], environment: environment(server)), 0, "the next run works")
        assertExit(try run(["verify", "--dest", dest], environment: environment(server)), 0)
        XCTAssertEqual(try stored(server, prefix: "long-storm").uploads, [])
    }

    /// A download cut halfway is fetched again: restore and verify succeed.
    func testATruncatedDownloadIsFetchedAgain() throws {
        let server = try started()
        let proxy = try FaultProxy(upstream: server.endpoint)
        defer { proxy.stop() }
        let source = path("src")
        try Fixtures.makeMixedTree(at: source)
        let dest = "s3://\(bucket)/cut"
        assertExit(try run(["backup", source, "--dest", dest, "-q"], environment: environment(server)), 0)
        let through = environment(server, endpoint: proxy.endpoint)
        for arguments in [["restore", "latest", "--target", path("restored")], ["verify"]] {
            try proxy.truncateNextDownload()
            assertExit(try run(arguments + ["--dest", dest], environment: through), 0, "\(arguments[0]) after a cut download")
        }
        XCTAssertEqual(try proxy.faultsServed(), 2, "both downloads were cut once")
        try assertTreesEqual(expected: source, actual: restored(source, into: path("restored")))
    }

    /// The way to the store dies in the middle of an upload: the backup fails cleanly (exit 1),
    /// the earlier backup still verifies, and the next run aborts the unfinished upload.
    func testTheConnectionDyingMidUploadLeavesEarlierBackupsIntact() throws {
        let server = try started()
        let source = path("src")
        try Fixtures.makeMixedTree(at: source)
        let dest = "s3://\(bucket)/dying"
        assertExit(try run(["backup", source, "--dest", dest, "-q"], environment: environment(server)), 0)
        try Fixtures.makeIncompressibleTree(at: source + "/bulk", count: 12, size: 8 << 20)
        let proxy = try FaultProxy(upstream: server.endpoint)
        let running = try keepsake.start(["backup", source, "--dest", dest],
                                         environment: environment(server, endpoint: proxy.endpoint, attempts: 2))
        // Wait for the upload to begin, then take the way to the store away.
        let deadline = Date().addingTimeInterval(60)
        while try stored(server, prefix: "dying").uploads.isEmpty && running.isRunning && Date() < deadline { usleep(20_000) }
        usleep(300_000)
        proxy.process.kill()
        let finished = try running.finish()
        assertExit(finished, 1, "the backup fails")
        XCTAssertEqual(try json(try run(["list", "--dest", dest, "--json"], environment: environment(server)))["backups"]
                        .map { ($0 as? [Any])?.count }, 1, "nothing half-done is listed")
        assertExit(try run(["verify", "--dest", dest], environment: environment(server)), 0, "the earlier backup is intact")
        XCTAssertFalse(try stored(server, prefix: "dying").uploads.isEmpty, "the killed run left an unfinished upload")
        let next = try run(["backup", source, "--dest", dest], environment: environment(server))
        assertExit(next, 0)
        XCTAssertTrue(next.stderrText.contains("leftover"), "the clean-up is reported:\n\(next)")
        XCTAssertEqual(try stored(server, prefix: "dying").uploads, [], "and the upload is gone")
    }

    /// The two mistakes people make first, each a clear error with exit 1.
    func testAWrongSecretAndAMissingBucketAreClearErrors() throws {
        let server = try started(access: .enforcedWithRandomKeys())
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "a\n"])
        let wrong = try run(["backup", source, "--dest", "s3://\(bucket)/x"], environment: environment(server, secret: "not-the-secret"))
        assertExit(wrong, 1)
        XCTAssertTrue(wrong.stderrText.contains("Access denied") && wrong.stderrText.contains("AWS_SECRET_ACCESS_KEY"), "\(wrong)")
        XCTAssertFalse(wrong.stderrText.contains("not-the-secret") || wrong.stdoutText.contains("not-the-secret"), "no secret shown")
        let missing = try run(["backup", source, "--dest", "s3://no-such-bucket/x"], environment: environment(server))
        assertExit(missing, 1)
        XCTAssertTrue(missing.stderrText.contains("'no-such-bucket' does not exist"), "\(missing)")
        let noKeys = try run(["list", "--dest", "s3://\(bucket)/x"],
                             environment: ["AWS_ACCESS_KEY_ID": nil, "AWS_SECRET_ACCESS_KEY": nil,
                                           "KEEPSAKE_S3_ENDPOINT": server.endpoint.absoluteString])
        assertExit(noKeys, 1)
        XCTAssertTrue(noKeys.stderrText.contains("No S3 credentials"), "\(noKeys)")
    }

    /// A replicated cluster loses a volume server in the middle of a backup: the backup
    /// either succeeds or fails cleanly, and every earlier backup still verifies.
    func testAVolumeServerLostMidBackupLeavesEveryBackupReadable() throws {
        let cluster = try SeaweedCluster(volumeServers: 3, buckets: [bucket])
        defer { cluster.stop() }
        let environment: [String: String?] = [
            "AWS_ACCESS_KEY_ID": cluster.accessKey, "AWS_SECRET_ACCESS_KEY": cluster.secretKey,
            "KEEPSAKE_S3_ENDPOINT": cluster.endpoint.absoluteString, "KEEPSAKE_S3_MAX_ATTEMPTS": "4",
        ]
        let source = path("src")
        try Fixtures.makeMixedTree(at: source)
        let dest = "s3://\(bucket)/cluster"
        assertExit(try run(["backup", source, "--dest", dest, "-q"], environment: environment), 0)
        try Fixtures.makeIncompressibleTree(at: source + "/bulk", count: 8, size: 6 << 20)
        let running = try keepsake.start(["backup", source, "--dest", dest, "--json"], environment: environment)
        usleep(400_000)
        cluster.stopVolumeServer(1)
        let finished = try running.finish()
        XCTAssertTrue([0, 1].contains(finished.exitCode), "succeeds or fails cleanly:\n\(finished)")
        let verified = try run(["verify", "--dest", dest], environment: environment)
        assertExit(verified, 0, "every committed backup still verifies with a volume server gone")
        let listed = try json(try run(["list", "--dest", dest, "--json"], environment: environment))
        XCTAssertEqual((listed["backups"] as? [Any])?.count, finished.exitCode == 0 ? 2 : 1)
    }
}
