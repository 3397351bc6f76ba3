import Foundation
import KeepsakeTestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Consolidating prune (issue 34): prune removes the backups its policy lets go even when
/// kept ones take files from them, copying those files into supplements first. Checked with
/// the built binary against the test's own record of every night's tree and its own reading
/// of the policy (`RetentionReference`, with no chain to follow: the kept set is exactly the
/// policy's), with GNU tar for the promise that the oldest kept backup and its supplement
/// restore with tar alone, and with `kill -9` at every step of a consolidating prune.
final class ConsolidationTests: FaultTestCase {
    // MARK: Constants

    /// 2027-01-01T00:00:00Z, a Friday.
    private static let firstMidnight: TimeInterval = 1_798_761_600
    private static let policy = RetentionReference(counts: [.day: 7, .week: 5, .month: 12, .year: 2])
    private static let policyOptions = ["--keep-daily", "7", "--keep-weekly", "5", "--keep-monthly", "12", "--keep-yearly", "2"]

    // MARK: Helpers

    /// Night `night` at 02:00 UTC, `minutes` later.
    private static func instant(_ night: Int, minutes: Int = 0) -> Date {
        Date(timeIntervalSince1970: firstMidnight + Double(night) * 86_400 + 7_200 + Double(minutes) * 60)
    }

    private static func clock(_ night: Int, minutes: Int = 0) -> [String: String?] {
        ["KEEPSAKE_NOW": ISO8601DateFormatter().string(from: instant(night, minutes: minutes)), "TZ": "UTC"]
    }

    /// The ids `list --json` shows.
    private func listedSet(_ dest: String, file: StaticString = #filePath, line: UInt = #line) throws -> Set<String> {
        let outcome = try run(["list", "--dest", dest, "--json"])
        assertExit(outcome, 0, file: file, line: line)
        let backups = try XCTUnwrap(try json(outcome)["backups"] as? [[String: Any]], file: file, line: line)
        return Set(backups.compactMap { $0["id"] as? String })
    }

    /// The supplements in `dest` (the names of their manifests, encrypted or not).
    private func supplementManifests(_ dest: String) throws -> [String] {
        try names(in: dest).filter { $0.hasSuffix(".supplement.jsonl.zst") || $0.hasSuffix(".supplement.jsonl.zst.age") }
    }

    /// Names in `dest` that are neither a backup's archive, manifest or summary in the clear
    /// nor a committed supplement's: temporaries, locks, markers, supplements without their
    /// manifest, summaries without theirs.
    private func strayNames(_ dest: String) throws -> [String] {
        let all = try names(in: dest)
        let set = Set(all)
        // An object's ending, and the ending of the manifest that commits it (the longest first).
        let committedBy: [(String, String)] = [
            (".supplement.tar.zst.age", ".supplement.jsonl.zst.age"), (".supplement.summary.json", ".supplement.jsonl.zst.age"),
            (".supplement.tar.zst", ".supplement.jsonl.zst"), (".tar.zst.age", ".manifest.jsonl.zst.age"),
            (".summary.json", ".manifest.jsonl.zst.age"), (".tar.zst", ".manifest.jsonl.zst"),
        ]
        return all.filter { name in
            if [".manifest.jsonl.zst", ".supplement.jsonl.zst", ".manifest.jsonl.zst.age", ".supplement.jsonl.zst.age"]
                .contains(where: { name.hasSuffix($0) }) { return false }
            guard let (ending, manifest) = committedBy.first(where: { name.hasSuffix($0.0) }) else { return true }
            return !set.contains(String(name.dropLast(ending.count)) + manifest)
        }
    }

    /// What differs between a restore of `id` (opened with `keys`) and `tree` (empty when
    /// they are the same).
    private func restoreProblems(_ id: String, dest: String, tree: SimulatedHome.Snapshot, root: String,
                                 keys: [String] = []) throws -> [String] {
        let target = "/dev/shm/keepsake-consolidation-\(getpid())"
        defer { _ = try? tool("rm", ["-rf", target]) }
        let outcome = try run(["restore", id, "--dest", dest, "--target", target, "--quiet"] + keys)
        guard outcome.exitCode == 0 else { return ["restore of \(id) exit \(outcome.exitCode):\n\(outcome)"] }
        return try SimulatedHome.differences(expected: tree, actual: restored(root, into: target)).map { "\(id): \($0)" }
    }

    /// Backs up `home` on `night`; returns the new backup's id.
    private func backUp(_ home: SimulatedHome, dest: String, night: Int) throws -> String {
        try backUp(at: home.root, dest: dest, night: night)
    }

    /// Backs up the folder `source` on `night` (with `options`); returns the new backup's id.
    private func backUp(at source: String, dest: String, night: Int, options: [String] = []) throws -> String {
        let outcome = try run(["backup", source, "--dest", dest, "--json"] + options, environment: ConsolidationTests.clock(night))
        assertExit(outcome, 0, "night \(night)")
        return try XCTUnwrap(try json(outcome)["id"] as? String)
    }

    /// A home folder (seed `seed`) backed up into `dest` for `nights` nights, then pruned
    /// once with `--keep-last KEEP` on the next night's clock: the folder, and
    /// each backup's tree by id.
    private func consolidatedNights(_ nights: Int, seed: UInt64, dest: String,
                                    keeping keep: Int) throws -> (home: SimulatedHome, trees: [String: SimulatedHome.Snapshot]) {
        var home = try SimulatedHome(root: path("home"), seed: seed)
        var trees: [String: SimulatedHome.Snapshot] = [:]
        for night in 0..<nights {
            if night > 0 { try home.liveADay(night) }
            trees[try backUp(home, dest: dest, night: night)] = home.nodes
        }
        assertExit(try run(["prune", "--dest", dest, "--keep-last", String(keep), "--quiet"],
                           environment: ConsolidationTests.clock(nights)), 0)
        return (home, trees)
    }

    // MARK: Nights

    /// Seventy nights of a home folder, each backed up and pruned (consolidating, as prune does) with
    /// keep-daily 7, weekly 5, monthly 12, yearly 2: after every night the backups listed
    /// are exactly those the policy names, the destination holds nothing else but their
    /// supplements (at most one per kept backup); every ten nights the destination verifies
    /// and every kept backup restores to its night's tree; at the end, the oldest kept
    /// backup's supplement and archive extracted by GNU tar alone are its tree.
    func testSeventyNightsKeepWhatThePolicyNamesAndEveryKeptBackupRestores() throws {
        try nightsKeepWhatThePolicyNames(70)
    }

    /// Seventy nights of the same with backups encrypted to a public key by a host without its
    /// identity, pruned with the identity: the same promises, each supplement encrypted, and
    /// the oldest kept backup restored by `age -d` and GNU tar alone.
    func testSeventyEncryptedNightsKeepWhatThePolicyNamesAndEveryKeptBackupRestores() throws {
        let identity = path("identity.txt")
        let made = try run(["keygen", "--output", identity])
        assertExit(made, 0)
        let recipient = made.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        try nightsKeepWhatThePolicyNames(70, encrypting: ["--recipient", recipient], identity: identity)
    }

    /// The nights of the tests above: backups made with `encrypting`, read (pruned, verified,
    /// restored) with `identity` when given.
    private func nightsKeepWhatThePolicyNames(_ nights: Int, encrypting: [String] = [], identity: String? = nil) throws {
        let reading = identity.map { ["--identity", $0] } ?? []
        let dest = path("dest")
        // Not the process's home folder: an encrypted backup's change-detection cache is there.
        var home = try SimulatedHome(root: path("data"), seed: 34)
        var trees: [String: SimulatedHome.Snapshot] = [:]
        var made: [RetentionReference.Backup] = []
        var supplementsSeen = 0
        for night in 0..<nights {
            if night > 0 { try home.liveADay(night) }
            let id = try backUp(at: home.root, dest: dest, night: night, options: encrypting)
            trees[id] = home.nodes
            made.append(RetentionReference.Backup(id: id, created: ConsolidationTests.instant(night), takesFrom: []))
            let pruned = try run(["prune", "--dest", dest, "--quiet"] + ConsolidationTests.policyOptions + reading,
                                 environment: ConsolidationTests.clock(night, minutes: 5))
            assertExit(pruned, 0, "night \(night)")
            let expected = ConsolidationTests.policy.kept(made)
            let listed = try listedSet(dest)
            XCTAssertEqual(listed, expected, "night \(night): the backups kept are the policy's, no more")
            XCTAssertEqual(try strayNames(dest), [], "night \(night): nothing but backups and committed supplements")
            let supplements = try supplementManifests(dest)
            XCTAssertLessThanOrEqual(supplements.count, listed.count, "night \(night): at most one supplement per kept backup")
            supplementsSeen = max(supplementsSeen, supplements.count)
            guard night % 10 == 9 || night == nights - 1 else { continue }
            assertExit(try run(["verify", "--dest", dest, "--quiet"] + reading), 0, "night \(night): the destination verifies")
            for kept in listed.sorted() {
                XCTAssertEqual(try restoreProblems(kept, dest: dest, tree: trees[kept] ?? [:], root: home.root, keys: reading), [],
                               "night \(night)")
            }
            if testRun?.failureCount ?? 0 > 0 { return }
        }
        XCTAssertGreaterThan(supplementsSeen, 0, "the nights made supplements")
        // diff and find read manifests only: a kept backup whose files lie in supplements is
        // like any other to them.
        let kept = try listedSet(dest).sorted()
        assertExit(try run(["diff", "--dest", dest, kept[0], kept[kept.count - 1]] + reading), 0)
        let found = try run(["find", "--dest", dest, "--json", "inbox.mbox"] + reading)
        assertExit(found, 0)
        XCTAssertEqual((try json(found)["matches"] as? [[String: Any]])?.count, kept.count, "\(found)")

        // The oldest kept backup and its supplement hold its whole tree: tar alone restores it
        // (age -d first, when encrypted). Its supplement is the one whose first line (the
        // summary in the clear, when encrypted) names it its owner.
        let oldest = try XCTUnwrap(try listedSet(dest).min())
        let ending = identity == nil ? "" : ".age"
        let objects = try names(in: dest)
        let archive = try XCTUnwrap(objects.first { $0.contains(oldest) && $0.hasSuffix(".tar.zst" + ending) && !$0.contains(".supplement") })
        let supplement = try supplementManifests(dest).compactMap { name -> String? in
            let stem = String(name.dropLast((".supplement.jsonl.zst" + ending).count))
            let first = identity == nil ? try tool("zstd", ["-dc", dest + "/" + name]).stdoutText
                : try String(contentsOfFile: dest + "/" + stem + ".supplement.summary.json", encoding: .utf8)
            guard first.split(separator: "\n").first?.contains("\"owner\":\"\(oldest)\"") == true else { return nil }
            return stem + ".supplement.tar.zst" + ending
        }
        XCTAssertLessThanOrEqual(supplement.count, 1, "one supplement per kept backup")
        let target = path("by-tar")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(target))
        for name in supplement + [archive] {
            var tarball = dest + "/" + name
            if let identity {
                tarball = path("decrypted-" + name)
                try toolSucceeds("age", ["-d", "-i", identity, "-o", tarball, dest + "/" + name])
            }
            try toolSucceeds("tar", ["--zstd", "-xf", tarball, "-C", target, "--exclude", ".keepsake"])
        }
        XCTAssertEqual(try SimulatedHome.differences(expected: trees[oldest] ?? [:], actual: restored(home.root, into: target)), [],
                       "tar -x of the supplement, then of the archive, restores backup \(oldest)")
    }

    // MARK: Remote destinations

    /// `nights` nights into `dest` (reached with `environment`) with `--blocks`, its mailbox
    /// over 1 MiB (so supplements hold blocks too), each pruned with `--keep-last KEEP`: the
    /// newest KEEP are listed, the destination verifies, and each restores to its night's tree.
    private func live(_ nights: Int, keeping keep: Int, dest: String, environment: [String: String?], label: String,
                      encrypting: [String] = [], reading: [String] = []) throws {
        var home = try SimulatedHome(root: path("home-\(label)"), seed: 12, mailboxSize: (1 << 20) + 50_000)
        var trees: [String: SimulatedHome.Snapshot] = [:]
        var ids: [String] = []
        for night in 0..<nights {
            if night > 0 { try home.liveADay(night) }
            let made = try run(["backup", home.root, "--dest", dest, "--json", "--blocks"] + encrypting,
                               environment: environment.merging(ConsolidationTests.clock(night)) { $1 })
            assertExit(made, 0, "\(label), night \(night)")
            let id = try XCTUnwrap(try json(made)["id"] as? String)
            trees[id] = home.nodes
            ids.append(id)
            assertExit(try run(["prune", "--dest", dest, "--keep-last", String(keep), "--quiet"] + reading,
                               environment: environment.merging(ConsolidationTests.clock(night, minutes: 5)) { $1 }),
                       0, "\(label), night \(night)")
        }
        let listed = try run(["list", "--dest", dest, "--json"], environment: environment)
        let backups = try XCTUnwrap(try json(listed)["backups"] as? [[String: Any]])
        XCTAssertEqual(Set(backups.compactMap { $0["id"] as? String }), Set(ids.suffix(keep)), label)
        assertExit(try run(["verify", "--dest", dest, "--quiet"] + reading, environment: environment), 0, label)
        for id in ids.suffix(keep) {
            let target = "/dev/shm/keepsake-consolidation-\(getpid())"
            defer { _ = try? tool("rm", ["-rf", target]) }
            assertExit(try run(["restore", id, "--dest", dest, "--target", target, "--quiet"] + reading, environment: environment),
                       0, label)
            XCTAssertEqual(try SimulatedHome.differences(expected: trees[id] ?? [:], actual: restored(home.root, into: target)), [],
                           "\(label): \(id)")
        }
    }

    /// Supplements in an S3 bucket (SeaweedFS on loopback): written, read and replaced there
    /// as in a folder, and nothing but backups and committed supplements left; then the same
    /// with backups encrypted to a public key, pruned with its identity, under another prefix.
    func testSupplementsInAnS3Bucket() throws {
        let server = try SeaweedServer(buckets: ["backups"], access: .open)
        defer { server.stop() }
        let environment: [String: String?] = [
            "AWS_ACCESS_KEY_ID": server.accessKey, "AWS_SECRET_ACCESS_KEY": server.secretKey,
            "KEEPSAKE_S3_ENDPOINT": server.endpoint.absoluteString, "AWS_PROFILE": nil, "AWS_SESSION_TOKEN": nil,
        ]
        try live(12, keeping: 3, dest: "s3://backups/home", environment: environment, label: "S3")
        let keys = try S3BucketListing(server: server, bucket: "backups").keys(prefix: "home/")
        XCTAssertEqual(keys.filter { $0.hasSuffix(".supplement.jsonl.zst") }.count, 1, "one supplement, for the oldest kept: \(keys)")
        XCTAssertEqual(keys.filter { !$0.hasSuffix(".zst") }, [], "no lock, no temporary: \(keys)")

        let identity = path("identity.txt")
        let made = try run(["keygen", "--output", identity])
        assertExit(made, 0)
        let recipient = made.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        try live(8, keeping: 3, dest: "s3://backups/sealed", environment: environment, label: "S3, encrypted",
                 encrypting: ["--recipient", recipient], reading: ["--identity", identity])
        let sealed = try S3BucketListing(server: server, bucket: "backups").keys(prefix: "sealed/")
        XCTAssertEqual(sealed.filter { $0.hasSuffix(".supplement.jsonl.zst.age") }.count, 1, "\(sealed)")
        XCTAssertEqual(sealed.filter { $0.hasSuffix(".supplement.summary.json") }.count, 1, "\(sealed)")
        XCTAssertEqual(sealed.filter { $0.hasSuffix(".supplement.tar.zst") || $0.hasSuffix(".supplement.jsonl.zst") }, [],
                       "nothing of a supplement in the clear: \(sealed)")
        XCTAssertEqual(sealed.filter { !$0.hasSuffix(".age") && !$0.hasSuffix(".summary.json") }, [],
                       "no lock, no temporary: \(sealed)")
    }

    /// Supplements on an rclone remote (sftp on OpenSSH's sshd, loopback): four nights, the
    /// two newest kept, so that a supplement is written, replaced and removed there (each
    /// rclone call takes seconds).
    // test-tag(plain-only): rclone does the work
    func testSupplementsOnAnRcloneRemote() throws {
        let server = try SSHServer()
        defer { server.stop() }
        let config = try server.rcloneConfig(remoteName: "nas")
        try live(4, keeping: 2, dest: "rclone:nas:\(server.folder.path)/keepsake", environment: ["RCLONE_CONFIG": config.file.path],
                 label: "rclone")
        let left = try FileManager.default.contentsOfDirectory(atPath: server.folder.path + "/keepsake")
        XCTAssertEqual(left.filter { $0.hasSuffix(".supplement.jsonl.zst") }.count, 1, "\(left)")
        XCTAssertEqual(left.filter { !$0.hasSuffix(".zst") }, [], "no lock, no temporary: \(left)")
    }

    // MARK: Faults

    /// Ten nights backed up with `--blocks`, a mailbox of more than 1 MiB among the files
    /// (the first eight pruned with `--keep-last 3`, so a supplement holding files and
    /// blocks is there), then `prune --keep-last 3` killed with SIGKILL at
    /// each step it takes in the destination (writing a supplement, removing backups and the
    /// supplement it replaces; the k-th change of its listing, k = 1, 2, …, until one prune
    /// ends first): afterwards the three kept backups are listed and restore
    /// to their trees; a prune run again finishes the job (exactly those three listed,
    /// nothing else but supplements, the destination verifies, each restores); and the next
    /// backup is incremental on the newest.
    // test-tag(plain-only): a dozen killed prunes, each followed by restores, verify and prune, of the whole binary: the code they run is run under the sanitizers by BigFileTests and the S3 test
    func testKilledAtEveryStepOfAConsolidatingPruneKeptBackupsStillRestore() throws {
        try killAtEveryStepOfAConsolidatingPrune(options: ["--blocks"])
    }

    /// The same with backups encrypted to a public key, pruned with its identity: the
    /// supplements are encrypted, with a summary in the clear written between archive and
    /// manifest and removed after them; the host's next backup is made without the identity.
    // test-tag(plain-only): as above, encrypted: the S3 test's encrypted half runs this code under the sanitizers
    func testKilledAtEveryStepOfAnEncryptedConsolidatingPruneKeptBackupsStillRestore() throws {
        let identity = path("identity.txt")
        let made = try run(["keygen", "--output", identity])
        assertExit(made, 0)
        let recipient = made.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        try killAtEveryStepOfAConsolidatingPrune(options: ["--recipient", recipient, "--blocks"], reading: ["--identity", identity])
    }

    /// The test above, backups made with `options` and read (pruned, verified, restored)
    /// with `reading`.
    private func killAtEveryStepOfAConsolidatingPrune(options: [String], reading: [String] = []) throws {
        // Made at the path every try prunes (an encrypted backup's change-detection cache is
        // kept by destination), then set aside as the template each try starts from.
        let template = path("template")
        let dest = path("dest")
        // Not the process's home folder: an encrypted backup's change-detection cache is there.
        // A mailbox of more than 1 MiB: stored by its changed blocks (`--blocks`), whose
        // blocks kept backups take from removed ones go into the supplement too.
        var home = try SimulatedHome(root: path("data"), seed: 7, mailboxSize: (1 << 20) + 100_000)
        var trees: [String: SimulatedHome.Snapshot] = [:]
        var ids: [String] = []
        for night in 0..<10 {
            if night > 0 { try home.liveADay(night) }
            let id = try backUp(at: home.root, dest: dest, night: night, options: options)
            trees[id] = home.nodes
            ids.append(id)
            // Supplements already there, so that the prune killed replaces one and removes it.
            if night < 8 {
                assertExit(try run(["prune", "--dest", dest, "--keep-last", "3", "--quiet"] + reading,
                                   environment: ConsolidationTests.clock(night, minutes: 5)), 0)
            }
        }
        try toolSucceeds("mv", [dest, template])
        XCTAssertEqual(try supplementManifests(template).count, 1, "the template holds a supplement to replace")
        if reading.isEmpty, let supplement = try supplementManifests(template).first {
            XCTAssertTrue(try toolSucceeds("zstd", ["-dc", template + "/" + supplement]).stdoutText.contains("\"held_blocks\""),
                          "the supplement holds blocks of the mailbox")
        }
        let kept = Set(ids.suffix(3))
        var step = 1
        var killedAt: [Int] = []
        while step < 200 {
            _ = try tool("rm", ["-rf", dest])
            try toolSucceeds("cp", ["-a", template, dest])
            var environment = ConsolidationTests.clock(10)
            environment["KEEPSAKE_TEST_REMOVAL_PAUSE_MS"] = "60"
            let running = try keepsake.start(["prune", "--dest", dest, "--keep-last", "3", "--quiet"] + reading,
                                             environment: environment)
            defer { running.kill() }
            var last = try names(in: dest)
            var changes = 0
            let deadline = Date().addingTimeInterval(60)
            while running.isRunning && changes < step && Date() < deadline {
                usleep(2_000)
                let now = try names(in: dest)
                if now != last {
                    changes += 1
                    last = now
                }
            }
            let killed = running.isRunning && changes == step
            if killed { _ = Glibc.kill(running.processIdentifier, SIGKILL) }
            let outcome = try running.finish(timeout: 60)
            guard killed else {
                assertExit(outcome, 0, "the prune that ran to its end")
                break
            }
            killedAt.append(step)
            let context = "killed at step \(step)"
            XCTAssertTrue(try listedSet(dest).isSuperset(of: kept), context)
            for id in kept.sorted() {
                XCTAssertEqual(try restoreProblems(id, dest: dest, tree: trees[id] ?? [:], root: home.root, keys: reading), [], context)
            }
            assertExit(try run(["prune", "--dest", dest, "--keep-last", "3", "--quiet"] + reading,
                           environment: ConsolidationTests.clock(10, minutes: 1)), 0, context + ": the next prune")
            XCTAssertEqual(try listedSet(dest), kept, context)
            // A killed run's lock (and its temporary) are the next backup's to clean up.
            XCTAssertEqual(try strayNames(dest).filter { $0 != "keepsake.lock" && !$0.hasPrefix(".tmp-lock-") }, [], context)
            assertExit(try run(["verify", "--dest", dest, "--quiet"] + reading), 0, context + ": verify")
            for id in kept.sorted() {
                XCTAssertEqual(try restoreProblems(id, dest: dest, tree: trees[id] ?? [:], root: home.root, keys: reading), [],
                               context + ", pruned again")
            }
            if testRun?.failureCount ?? 0 > 0 { return }
            step += 1
        }
        XCTAssertGreaterThanOrEqual(killedAt.count, 5, "the prune was killed at many steps: \(killedAt)")

        // The next backup builds on the newest, whose files now lie in a supplement too.
        try home.liveADay(10)
        let next = try run(["backup", home.root, "--dest", dest, "--json"] + options, environment: ConsolidationTests.clock(11))
        assertExit(next, 0)
        XCTAssertEqual(try json(next)["kind"] as? String, "incremental", "\(next)")
        let id = try XCTUnwrap(try json(next)["id"] as? String)
        XCTAssertEqual(try restoreProblems(id, dest: dest, tree: home.nodes, root: home.root, keys: reading), [])
        XCTAssertEqual(try strayNames(dest), [], "the backup cleaned up after the killed prune")
        print("consolidating prune killed at steps \(killedAt): every kept backup restored each time")
    }

    /// A destination too full for the supplement (a 12 MiB tmpfs, filled to within 0, 64 KiB,
    /// 1 MiB and 1.9 MiB of free space, the supplement needing 2 MiB): the consolidating
    /// prune fails and removes nothing, leaves nothing half-written, and every backup still
    /// restores to its tree; with the space back, the same prune goes through.
    func testAFullDestinationStopsAConsolidatingPruneBeforeItRemovesAnything() throws {
        let dest = path("full-dest")
        try mountTmpfs(at: dest, size: "12m")
        let source = path("source")
        try FaultFixtures.writeIncompressible(source + "/photo.raw", size: 2 << 20, seed: 34)
        var trees: [String: [String: String]] = [:]
        var ids: [String] = []
        for night in 0..<4 {
            try Fixtures.makeTree(at: source, files: ["notes/night-\(night).txt": "night \(night)\n"])
            let id = try backup([source], dest: dest, options: ["--quiet"])
            ids.append(id)
            trees[id] = try tool("sha256sum", ["-b"] + (try FileManager.default.subpathsOfDirectory(atPath: source))
                .filter { !$0.hasSuffix("notes") }.sorted().map { source + "/" + $0 }).stdoutText
                .split(separator: "\n").reduce(into: [:]) { $0[String($1.dropFirst(66))] = String($1.prefix(64)) }
        }
        func assertEveryBackupRestores(_ context: String) throws {
            for id in try listedSet(dest).sorted() {
                let target = path("restore-\(id)")
                defer { _ = try? tool("rm", ["-rf", target]) }
                assertExit(try run(["restore", id, "--dest", dest, "--target", target, "--quiet"]), 0, context)
                for (file, sha) in trees[id] ?? [:] {
                    let restoredFile = restored(file, into: target)
                    XCTAssertEqual(try tool("sha256sum", [restoredFile]).stdoutText.prefix(64), Substring(sha), "\(context): \(file)")
                }
            }
        }
        let filler = dest + "/filler"
        for left in [0, 64 << 10, 1 << 20, 1_900 << 10] {
            let context = "\(left) bytes left free"
            _ = try tool("rm", ["-f", filler])
            let room = freeBytes(dest) - left
            if room > 0 { try FaultFixtures.writeIncompressible(filler, size: room, seed: 9) }
            let outcome = try run(["prune", "--dest", dest, "--keep-last", "1"])
            XCTAssertNotEqual(outcome.exitCode, 0, "\(context): \(outcome)")
            XCTAssertEqual(try listedSet(dest), Set(ids), "\(context): nothing removed")
            XCTAssertEqual(try strayNames(dest).filter { $0 != "filler" }, [], "\(context): nothing half-written")
            try assertEveryBackupRestores(context)
        }
        _ = try tool("rm", ["-f", filler])
        assertExit(try run(["prune", "--dest", dest, "--keep-last", "1"]), 0, "with the space back")
        XCTAssertEqual(try listedSet(dest), [ids[3]])
        XCTAssertEqual(try strayNames(dest), [])
        try assertEveryBackupRestores("with the space back")
    }

    /// `--dry-run` says what would be removed and what copied into supplements first (files
    /// and bytes, from the manifests), and changes nothing; the prune itself then copies
    /// exactly that and says what it stored (`--json`: `supplements`).
    func testADryRunSaysWhatSupplementsWouldHoldAndChangesNothing() throws {
        let dest = path("dest")
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["keep.txt": String(repeating: "kept since the first night\n", count: 40)])
        var ids: [String] = []
        for night in 0..<3 {
            try Fixtures.makeTree(at: source, files: ["night-\(night).txt": "night \(night)\n"])
            ids.append(try backup([source], dest: dest, options: ["--quiet"]))
        }
        let before = try names(in: dest)
        let dry = try run(["prune", "--dest", dest, "--keep-last", "1", "--dry-run", "--json"])
        assertExit(dry, 0)
        XCTAssertEqual(try names(in: dest), before, "a dry run changes nothing")
        let planned = try XCTUnwrap(try json(dry)["supplements"] as? [String: Any], "\(dry)")
        // What the newest takes from the two removed: keep.txt and the first two nights' files.
        XCTAssertEqual(planned["files"] as? Int, 3, "\(dry)")
        XCTAssertEqual(planned["bytes"] as? Int, 27 * 40 + 8 + 8, "\(dry)")
        XCTAssertEqual(planned["written"] as? Int, 0)
        let text = try run(["prune", "--dest", dest, "--keep-last", "1", "--dry-run"])
        XCTAssertTrue(text.stdoutText.contains("Would remove 2 backups, freeing ") && text.stdoutText.contains(
            "after copying 3 files (1.1 KiB) that kept backups take from them into supplements."), "\(text)")

        let pruned = try run(["prune", "--dest", dest, "--keep-last", "1", "--json"])
        assertExit(pruned, 0)
        let done = try XCTUnwrap(try json(pruned)["supplements"] as? [String: Any], "\(pruned)")
        XCTAssertEqual(done["files"] as? Int, 3)
        XCTAssertEqual(done["written"] as? Int, 1)
        let stored = try XCTUnwrap(done["stored_bytes"] as? Int)
        let supplement = try XCTUnwrap(try names(in: dest).first { $0.hasSuffix(".supplement.tar.zst") })
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: dest + "/" + supplement)[.size] as? Int, stored)
        XCTAssertEqual(try listedSet(dest), [ids[2]])
    }

    /// `copy` of a consolidated destination brings the supplements its backups take files
    /// from (checked on the way, once each): the copy verifies and restores every backup to
    /// its tree; a copy again sends nothing; a supplement whose archive is gone from the
    /// source stops the copy of the backups that need it, named, and the others are copied.
    func testCopyBringsTheSupplementsAlong() throws {
        let dest = path("dest")
        var home = try SimulatedHome(root: path("home"), seed: 21)
        var trees: [String: SimulatedHome.Snapshot] = [:]
        for night in 0..<9 {
            if night > 0 { try home.liveADay(night) }
            trees[try backUp(home, dest: dest, night: night)] = home.nodes
            assertExit(try run(["prune", "--dest", dest, "--keep-last", "3", "--quiet"],
                               environment: ConsolidationTests.clock(night, minutes: 5)), 0)
        }
        let kept = try listedSet(dest)
        let offsite = path("offsite")
        let copied = try run(["copy", "--from", dest, "--to", offsite, "--json"])
        assertExit(copied, 0)
        XCTAssertEqual(Set(try json(copied)["copied"] as? [String] ?? []), kept, "\(copied)")
        XCTAssertEqual(try supplementManifests(offsite), try supplementManifests(dest))
        assertExit(try run(["verify", "--dest", offsite, "--quiet"]), 0, "the copy verifies")
        for id in kept.sorted() {
            XCTAssertEqual(try restoreProblems(id, dest: offsite, tree: trees[id] ?? [:], root: home.root), [], "from the copy")
        }
        let again = try json(try run(["copy", "--from", dest, "--to", offsite, "--json"]))
        XCTAssertEqual(again["copied"] as? [String] ?? ["?"], [], "nothing new")
        XCTAssertEqual(again["bytes"] as? Int, 0, "nothing sent again: \(again)")

        let lost = try XCTUnwrap(try names(in: dest).first { $0.hasSuffix(".supplement.tar.zst") })
        XCTAssertEqual(unlink(dest + "/" + lost), 0)
        let elsewhere = path("elsewhere")
        let broken = try run(["copy", "--from", dest, "--to", elsewhere, "--json"])
        XCTAssertNotEqual(broken.exitCode, 0, "\(broken)")
        XCTAssertTrue(broken.stdoutText.contains(lost) || broken.stderrText.contains(lost), "the missing supplement is named:\n\(broken)")
        XCTAssertEqual(try strayNames(elsewhere), [], "nothing half-copied")
    }

    /// A supplement whose manifest object is lost: verify says the files it held are not
    /// found (exit 4); `repair`, and the next consolidating prune, commit it again from the
    /// copy of its manifest inside the archive (never deleting it), and everything verifies
    /// and restores.
    func testALostSupplementManifestIsCommittedAgainFromItsArchive() throws {
        let dest = path("dest")
        let (home, trees) = try consolidatedNights(5, seed: 5, dest: dest, keeping: 2)
        let manifest = try XCTUnwrap(try supplementManifests(dest).first)
        XCTAssertEqual(unlink(dest + "/" + manifest), 0)
        assertExit(try run(["verify", "--dest", dest, "--quiet"]), 4, "files held by a supplement without its manifest")

        // `repair` commits it again…
        let repaired = try run(["repair", "--dest", dest])
        assertExit(repaired, 0)
        XCTAssertTrue(repaired.stdoutText.contains("REBUILT") && repaired.stdoutText.contains(".supplement.tar.zst"), "\(repaired)")
        XCTAssertEqual(try supplementManifests(dest), [manifest])
        assertExit(try run(["verify", "--dest", dest, "--quiet"]), 0)

        // …and so does the next consolidating prune.
        XCTAssertEqual(unlink(dest + "/" + manifest), 0)
        let pruned = try run(["prune", "--dest", dest, "--keep-last", "2"], environment: ConsolidationTests.clock(5, minutes: 1))
        assertExit(pruned, 0)
        XCTAssertTrue(pruned.stderrText.contains("committed supplement") && pruned.stderrText.contains("again"), "\(pruned)")
        XCTAssertEqual(try supplementManifests(dest), [manifest], "the same supplement, committed again")
        XCTAssertEqual(try strayNames(dest), [])
        assertExit(try run(["verify", "--dest", dest, "--quiet"]), 0)
        for id in try listedSet(dest).sorted() {
            XCTAssertEqual(try restoreProblems(id, dest: dest, tree: trees[id] ?? [:], root: home.root), [])
        }
    }

    /// A lone archive file restored elsewhere: with the archives of its chain and the
    /// supplements beside it (no manifest of any backup), the newest kept backup restores
    /// whole from its own manifest inside it; without the supplements, the files they held
    /// are named missing (exit 3), never restored wrong.
    func testALoneArchiveRestoresWithTheSupplementsBesideIt() throws {
        let dest = path("dest")
        var home = try SimulatedHome(root: path("home"), seed: 3)
        var newest = ""
        for night in 0..<6 {
            if night > 0 { try home.liveADay(night) }
            newest = try backUp(home, dest: dest, night: night)
            assertExit(try run(["prune", "--dest", dest, "--keep-last", "2", "--quiet"],
                               environment: ConsolidationTests.clock(night, minutes: 5)), 0)
        }
        let elsewhere = path("usb")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(elsewhere))
        for name in try names(in: dest) where name.hasSuffix(".tar.zst") || name.hasSuffix(".supplement.jsonl.zst") {
            try toolSucceeds("cp", [dest + "/" + name, elsewhere + "/" + name])
        }
        let file = try XCTUnwrap(try names(in: elsewhere).first { $0.contains(newest) })
        let target = path("target")
        assertExit(try run(["restore", elsewhere + "/" + file, "--target", target, "--quiet"]), 0)
        XCTAssertEqual(try SimulatedHome.differences(expected: home.nodes, actual: restored(home.root, into: target)), [])

        for name in try names(in: elsewhere) where name.contains(".supplement.") { XCTAssertEqual(unlink(elsewhere + "/" + name), 0) }
        let without = path("without")
        let outcome = try run(["restore", elsewhere + "/" + file, "--target", without])
        assertExit(outcome, 3)
        let differences = try SimulatedHome.differences(expected: home.nodes, actual: restored(home.root, into: without))
        XCTAssertFalse(differences.isEmpty)
        XCTAssertEqual(differences.filter { !$0.hasSuffix(": missing") }, [], "what came back is right; the rest is missing")
    }

    /// A supplement planted beside the real one, newer, for the same kept backup, saying it
    /// holds the same files with the right SHA-256 but holding other bytes. The next
    /// consolidating prune does not take it for the real one, which stays; `verify` names
    /// the planted one (exit 4), and restore takes the real one, which reads whole, so every
    /// kept backup restores exactly; deleted, everything verifies and restores. Planted again,
    /// a prune that lets their owner go copies the files from the real one, not the planted.
    func testAPlantedSupplementNeverMakesPruneDeleteTheRealOne() throws {
        let dest = path("dest")
        var (home, trees) = try consolidatedNights(5, seed: 8, dest: dest, keeping: 3)
        let real = try XCTUnwrap(try supplementManifests(dest).first)
        let realStem = String(real.dropLast(".supplement.jsonl.zst".count))
        let plantedStem = String(realStem.dropLast(25)) + "20991231T000000Z-0badf00d"
        // The forgery: the real supplement's objects under a newer id, its archive's bytes
        // changed and its manifest saying the new archive's size and SHA-256.
        func plant() throws {
            var archive = try Data(contentsOf: URL(fileURLWithPath: dest + "/" + realStem + ".supplement.tar.zst"))
            archive[archive.count / 2] ^= 0x01
            try archive.write(to: URL(fileURLWithPath: dest + "/" + plantedStem + ".supplement.tar.zst"))
            let sha = String(try tool("sha256sum", [dest + "/" + plantedStem + ".supplement.tar.zst"]).stdoutText.prefix(64))
            var lines = try tool("zstd", ["-dc", dest + "/" + real]).stdoutText.split(separator: "\n").map(String.init)
            lines[0] = lines[0].replacingOccurrences(of: "\"id\":\"\(realStem.suffix(25))\"", with: "\"id\":\"20991231T000000Z-0badf00d\"")
                .replacingOccurrences(of: realStem + ".supplement", with: plantedStem + ".supplement")
                .replacingOccurrences(of: #""size":\d+,"sha256":"[0-9a-f]{64}""#, with: "\"size\":\(archive.count),\"sha256\":\"\(sha)\"",
                                      options: .regularExpression)
            let plain = path("planted.jsonl")
            try (lines.joined(separator: "\n") + "\n").write(toFile: plain, atomically: true, encoding: .utf8)
            try toolSucceeds("zstd", ["-q", "-f", plain, "-o", dest + "/" + plantedStem + ".supplement.jsonl.zst"])
        }
        try plant()

        let pruned = try run(["prune", "--dest", dest, "--keep-last", "3"], environment: ConsolidationTests.clock(5, minutes: 1))
        assertExit(pruned, 0)
        XCTAssertTrue(try names(in: dest).contains(real), "the real supplement stays:\n\(pruned)")
        XCTAssertTrue(pruned.stderrText.contains("is kept"), "and prune says why:\n\(pruned)")
        let verified = try run(["verify", "--dest", dest])
        assertExit(verified, 4, "the planted supplement is damage")
        XCTAssertTrue((verified.stdoutText + verified.stderrText).contains(plantedStem), "\(verified)")
        // Restore passes the planted one over for the real one, which reads whole.
        for id in try listedSet(dest).sorted() {
            XCTAssertEqual(try restoreProblems(id, dest: dest, tree: trees[id] ?? [:], root: home.root), [], "beside the planted one")
        }
        for name in try names(in: dest) where name.hasPrefix(plantedStem) { XCTAssertEqual(unlink(dest + "/" + name), 0) }
        assertExit(try run(["verify", "--dest", dest, "--quiet"]), 0)

        // Planted again; the next night lets their owner go: the files come from the real one.
        try plant()
        try home.liveADay(5)
        trees[try backUp(home, dest: dest, night: 5)] = home.nodes
        assertExit(try run(["prune", "--dest", dest, "--keep-last", "3", "--quiet"],
                           environment: ConsolidationTests.clock(5, minutes: 5)), 0)
        for name in try names(in: dest) where name.hasPrefix(plantedStem) { XCTAssertEqual(unlink(dest + "/" + name), 0) }
        assertExit(try run(["verify", "--dest", dest, "--quiet"]), 0)
        for id in try listedSet(dest).sorted() {
            XCTAssertEqual(try restoreProblems(id, dest: dest, tree: trees[id] ?? [:], root: home.root), [])
        }
    }

    /// A byte flipped in the archive of a backup the policy lets go, inside a file a kept
    /// backup takes from it: prune keeps that backup (`needed by ID; damaged`, a warning
    /// naming it) and still removes the rest, the kept one's other files copied into its
    /// supplement; every night after, the same (exit 0), until the kept one goes too.
    func testADamagedBackupAKeptOneTakesFromIsKeptAndTheRestGo() throws {
        let dest = path("dest")
        let source = path("src")
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        func write(_ name: String, _ data: Data) throws { try data.write(to: URL(fileURLWithPath: source + "/" + name)) }
        var generator = SeededGenerator(seed: 34)
        let noise = Data((0..<(256 * 1024)).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
        try write("kept-from-the-full.txt", Data("the full backup holds this\n".utf8))
        let full = try backUp(at: source, dest: dest, night: 0)
        try write("changed-on-night-1.bin", noise)
        let damaged = try backUp(at: source, dest: dest, night: 1)
        try write("changed-on-night-2.txt", Data("night 2\n".utf8))
        let kept = try backUp(at: source, dest: dest, night: 2)
        // The night-1 archive is mostly the noise file: its middle byte is inside it.
        let archive = try XCTUnwrap(try names(in: dest).first { $0.contains(damaged) && $0.hasSuffix(".tar.zst") })
        try Fixtures.flipByte(in: dest + "/" + archive)

        for night in 3...4 {
            let pruned = try run(["prune", "--dest", dest, "--keep-last", "1", "--json"], environment: ConsolidationTests.clock(night))
            assertExit(pruned, 0)
            XCTAssertTrue(pruned.stderrText.contains("warning: backup \(damaged) is kept: backup \(kept) takes files from it")
                && pruned.stderrText.contains("keepsake verify"), "night \(night): \(pruned)")
            let decisions = try XCTUnwrap(try json(pruned)["decisions"] as? [[String: Any]])
            let reasons = decisions.first { $0["id"] as? String == damaged }?["reasons"] as? [String]
            XCTAssertEqual(reasons, ["needed by \(kept); damaged"], "night \(night): \(pruned.stdoutText)")
            XCTAssertEqual(try listedSet(dest), [damaged, kept], "night \(night): the full backup goes, the damaged one stays")
            XCTAssertFalse(try names(in: dest).contains { $0.contains(full) })
            XCTAssertEqual(try supplementManifests(dest).count, 1, "night \(night)")
            XCTAssertEqual(try strayNames(dest), [])
        }
        // What the kept backup took from the full backup comes back from its supplement; the
        // damaged file is named (exit 4), never restored wrong.
        let target = path("target")
        let restored = try run(["restore", kept, "--dest", dest, "--target", target])
        assertExit(restored, 4)
        XCTAssertTrue(restored.stderrText.contains("changed-on-night-1.bin"), "\(restored)")
        let back = self.restored(source, into: target)
        XCTAssertEqual(try String(contentsOfFile: back + "/kept-from-the-full.txt", encoding: .utf8), "the full backup holds this\n")
        XCTAssertEqual(try String(contentsOfFile: back + "/changed-on-night-2.txt", encoding: .utf8), "night 2\n")
        XCTAssertNotEqual(FileManager.default.contents(atPath: back + "/changed-on-night-1.bin"), noise)
        assertExit(try run(["verify", "--dest", dest, "--quiet"]), 4)
    }

    /// A byte flipped in a supplement's archive: verify names the supplement (exit 4), and
    /// a restore of a backup that takes files from it brings back every other file and
    /// names the damaged ones (exit 4); nothing is restored wrong; a prune that would move
    /// its files leaves it in place with a warning and removes what its policy lets go
    /// (exit 0), night after night, and nothing more is lost.
    func testADamagedSupplementIsNamedByVerifyAndRestore() throws {
        let dest = path("dest")
        var (home, trees) = try consolidatedNights(4, seed: 11, dest: dest, keeping: 1)
        let newest = try XCTUnwrap(trees.keys.max())
        XCTAssertEqual(try listedSet(dest), [newest])
        let archive = try XCTUnwrap(try names(in: dest).first { $0.hasSuffix(".supplement.tar.zst") })
        let file = dest + "/" + archive
        let size = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int)
        try Fixtures.flipByte(in: file, at: size / 3)

        let verified = try run(["verify", "--dest", dest])
        assertExit(verified, 4)
        XCTAssertTrue(verified.stdoutText.contains(archive) || verified.stderrText.contains(archive), "\(verified)")

        let target = path("target")
        let restored = try run(["restore", newest, "--dest", dest, "--target", target])
        assertExit(restored, 4)
        let differences = try SimulatedHome.differences(expected: home.nodes, actual: self.restored(home.root, into: target))
        XCTAssertFalse(differences.isEmpty, "the damage cost files")
        XCTAssertEqual(differences.filter { !$0.hasSuffix(": missing") }, [], "what came back is right; the rest is missing")

        // Prunes that would move its files leave it in place, say so, and free the rest,
        // night after night; the kept backups restore all but the damaged files exactly.
        for night in 4..<6 {
            try home.liveADay(night)
            let next = try backUp(home, dest: dest, night: night)
            trees[next] = home.nodes
            let pruned = try run(["prune", "--dest", dest, "--keep-last", "1"], environment: ConsolidationTests.clock(night, minutes: 5))
            assertExit(pruned, 0, "night \(night)")
            XCTAssertTrue(pruned.stderrText.contains("the supplement \(archive) is left as it is")
                          && pruned.stderrText.contains("keepsake verify"), "\(pruned)")
            XCTAssertEqual(try listedSet(dest), [next], "night \(night)")
            XCTAssertTrue(try names(in: dest).contains(archive), "night \(night)")
            XCTAssertEqual(try strayNames(dest), [])
            let again = path("target-\(night)")
            assertExit(try run(["restore", next, "--dest", dest, "--target", again]), 4, "night \(night)")
            let lost = try SimulatedHome.differences(expected: home.nodes, actual: self.restored(home.root, into: again))
            XCTAssertEqual(lost.filter { !$0.hasSuffix(": missing") }, [], "night \(night): what came back is right")
            XCTAssertLessThanOrEqual(lost.count, differences.count, "night \(night): nothing more is lost")
            let named = try run(["verify", "--dest", dest])
            assertExit(named, 4)
            XCTAssertTrue(named.stdoutText.contains(archive) || named.stderrText.contains(archive), "\(named)")
        }
    }
}
