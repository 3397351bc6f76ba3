import Foundation
import KeepsakeTestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Simulated years of `keepsake run` from cron (issue 25), lived by `YearOfNightsTests` (an
/// off-site folder) and `S3YearOfNightsTests` (an off-site S3 bucket): a home folder that
/// changes every night (`SimulatedHome`), a profile with a retention policy and an off-site
/// copy, the test clock (`KEEPSAKE_NOW`) set to each night at 02:00 UTC. After every night
/// the test checks, with its own record of the tree and its own reading of the policy, what
/// a person relying on the backups takes for granted:
///
/// - the run exits 0 and prints nothing (`--quiet`, as `keepsake schedule` writes it);
/// - the new backup restores to exactly that night's tree;
/// - the backups kept are exactly those the policy keeps (`RetentionReference`; prune
///   copies what kept backups take from the others into supplements), and a backup known
///   damaged that a kept one takes files from;
/// - the off-site destination holds every kept backup;
/// - both destinations hold nothing but each backup's archive and manifest and whole
///   supplements of kept backups, at most one for each in the destination (no temporary
///   object, no lock, no half-removed backup, no unfinished upload to S3).
///
/// Weekly, `list` shows what the destination holds and the backups copied off-site that
/// week verify there; every four weeks the whole destination verifies and its oldest
/// backup and three others restore to the trees of their nights again; on the last night
/// both destinations verify whole and every kept backup restores from both.
///
/// Some nights go wrong on purpose (`Mishap`): a killed run, another host, the clock back
/// an hour, a lost manifest, a flipped byte or a cut in an archive, a full disk, a file
/// saved by write-then-rename while the run reads. A backup known damaged
/// is never built on, restores with only what its damaged archive held lost, and restores
/// whole from the off-site copy.
class SimulatedYearTestCase: EndToEndTestCase {
    // MARK: Constants

    /// 2027-01-01T00:00:00Z, a Friday.
    private static let firstMidnight: TimeInterval = 1_798_761_600
    /// The profile's policy, as the reference reads it.
    private static let policy = RetentionReference(counts: [.day: 7, .week: 5, .month: 12, .year: 2])

    // MARK: State

    private var home: SimulatedHome!
    private var config = ""
    private var dest = ""
    /// The off-site destination's address (a folder, or `s3://BUCKET/offsite`).
    private var offsite = ""
    /// Where the off-site copies go.
    private var offsiteKind = Offsite.folder
    /// Every backup made: its night's tree, when it was made and what it takes files from.
    private var made: [String: (tree: SimulatedHome.Snapshot, night: Int, backup: RetentionReference.Backup)] = [:]
    /// The backups the test expects in the destination (its own record).
    private var present = Set<String>()
    /// The off-site backups verified there so far.
    private var verifiedOffsite = Set<String>()
    /// Which kept backups the monthly check restores, and when a run is killed.
    private var choices = SeededGenerator(seed: 2025)
    /// Backups another host made in the same destination, with the trees they hold.
    private var otherHost: [String: SimulatedHome.Snapshot] = [:]
    /// The other host's folder.
    private var laptop: SimulatedHome!
    /// The night a run was killed and its process, until a run has cleaned up after it.
    private var killedNight: Int?
    private var killedPID: Int32?
    /// The tree of the killed night: a run killed after its archive was stored, before its
    /// manifest, leaves a whole archive that the next run commits by rebuilding the manifest
    /// from the archive's own copy.
    private var killedTree: SimulatedHome.Snapshot?
    /// How many such archives the year saw committed.
    private var killedArchivesCommitted = 0
    /// Backups in the destination known damaged: one whose archive a night damaged on
    /// purpose, and one made that night that takes files from it. No later backup may take
    /// files from any of them; their off-site copies stay whole.
    private var damaged = Set<String>()
    /// Of those, the backups whose run failed on the damage: the run copies only a backup
    /// that verifies, so the off-site copy may lack them.
    private var failedOnDamage = Set<String>()
    /// What the year met of damage, for its closing line: restores of damaged backups and
    /// the files they lost.
    private var damagedRestores = 0
    /// A file saved by write-then-rename while the run read it may be in that night's
    /// backup as it was before or after: the version before, by backup.
    private var savedWhileRead: [String: (path: String, before: SimulatedHome.Node)] = [:]
    /// How the nights' backups held such files: after the save, before it.
    private var savesSeen = (after: 0, before: 0)
    private var filesLostToDamage = 0
    /// The owner each supplement manifest read so far names, by its path.
    private var supplementOwners: [String: String] = [:]
    /// Nights whose prune kept a damaged backup for a kept one, and the most supplements the
    /// destination held: what the year met of consolidation, for its closing line.
    private var damagedKeptNights = 0
    private var mostSupplements = 0
    /// Backups whose manifest has a file stored by blocks (its mailbox), and supplement
    /// manifests that hold blocks: the year must meet both (issue 34's "Done when").
    private var backupsWithBlocks = Set<String>()
    private var supplementsWithBlocks = Set<String>()
    /// Seconds spent in each kind of keepsake process (`run`, `restore`, `verify`, …), and
    /// in everything else, for the closing line: where the year's minutes go.
    private var spent: [String: TimeInterval] = [:]

    // MARK: Living the year

    /// Where `keepsake run` copies each night's backup (the profile's `copy-to`).
    enum Offsite {
        /// A folder on this machine.
        case folder
        /// The prefix `offsite/` of `bucket` on a SeaweedFS server: the run reaches it with
        /// the endpoint and keys its profile holds, as from cron; the test's own `verify` and
        /// `restore` with the environment; the test lists it with curl.
        case s3(SeaweedServer, bucket: String)
    }

    /// Lives `nights` nights, each run copying to `offsite`, with a full backup every
    /// `fullEvery` (KEEPSAKE_TEST_FULL_EVERY sets another), and fails the test at the
    /// first night that breaks a promise; ends with a line saying what the year met and
    /// where its time went.
    func liveTheYear(nights: Int, offsite kind: Offsite, fullEvery: Int) throws {
        offsiteKind = kind
        self.fullEvery = ProcessInfo.processInfo.environment["KEEPSAKE_TEST_FULL_EVERY"].flatMap(Int.init) ?? fullEvery
        try setUpYear()
        let started = Date()
        for night in 0..<nights {
            guard try live(night, last: night == nights - 1) else { return }
        }
        XCTAssertFalse(backupsWithBlocks.isEmpty, "the mailbox was stored by its changed blocks")
        XCTAssertFalse(supplementsWithBlocks.isEmpty, "prune moved blocks kept backups take into a supplement")
        print("\(type(of: self)): \(nights) nights (off-site: \(offsite), a full backup every \(self.fullEvery)) "
            + "in \(Int(Date().timeIntervalSince(started))) s; "
            + "\(present.count) backups kept of \(made.count) made; \(damagedRestores) restores of damaged backups "
            + "lost \(filesLostToDamage) files, all held in damaged archives; files saved while the run read were backed up "
            + "\(savesSeen.after) times as saved, \(savesSeen.before) as before; \(killedArchivesCommitted) killed runs' whole "
            + "archives committed by the next run; at most \(mostSupplements) supplements at once; \(backupsWithBlocks.count) "
            + "backups stored the mailbox by blocks, \(supplementsWithBlocks.count) supplements held blocks; \(damagedKeptNights) nights' "
            + "prune kept a damaged backup a kept one takes files from; seconds spent: " + spentLine(total: Date().timeIntervalSince(started)))
    }

    /// The number of nights to live: `KEEPSAKE_TEST_NIGHTS` when set, else `standard` (or
    /// `underSanitizer` under one, which makes every process several times slower).
    static func nights(standard: Int, underSanitizer: Int) -> Int {
        ProcessInfo.processInfo.environment["KEEPSAKE_TEST_NIGHTS"].flatMap(Int.init) ?? (runsUnderSanitizer ? underSanitizer : standard)
    }

    /// `run 120, restore 80, …, the test 20`, largest first.
    private func spentLine(total: TimeInterval) -> String {
        let rest = total - spent.values.reduce(0, +)
        return (spent.sorted { $0.value > $1.value } + [("the test", rest)]).map { "\($0.0) \(Int($0.1))" }.joined(separator: ", ")
    }

    /// Runs `keepsake ARGUMENTS`, adding its time to `spent`. Every command but `run`
    /// reaches an S3 off-site destination through the environment (`run` through its
    /// profile).
    @discardableResult
    override func run(_ arguments: [String], stdin: Data? = nil, environment: [String: String?] = [:],
                      asNobody: Bool = false, executable: String? = nil, currentDirectory: String? = nil,
                      hostName: String? = nil) throws -> ProcessRunner.Outcome {
        let started = Date()
        defer { spent[arguments.first ?? "", default: 0] += Date().timeIntervalSince(started) }
        var environment = environment
        if arguments.first != "run", case let .s3(server, _) = offsiteKind {
            environment.merge(["KEEPSAKE_S3_ENDPOINT": server.endpoint.absoluteString, "AWS_ACCESS_KEY_ID": server.accessKey,
                               "AWS_SECRET_ACCESS_KEY": server.secretKey]) { $1 }
        }
        return try super.run(arguments, stdin: stdin, environment: environment, asNobody: asNobody, executable: executable,
                             currentDirectory: currentDirectory, hostName: hostName)
    }

    /// The environment of the run of `night`, `minutes` after 02:00: the test clock, and
    /// nothing that could reach S3 but what the profile holds.
    private func runEnvironment(_ night: Int, minutes: Int = 0) -> [String: String?] {
        ["KEEPSAKE_NOW": SimulatedYearTestCase.clock(night, minutes: minutes), "TZ": "UTC", "KEEPSAKE_S3_ENDPOINT": nil,
         "AWS_ACCESS_KEY_ID": nil, "AWS_SECRET_ACCESS_KEY": nil, "AWS_SESSION_TOKEN": nil, "AWS_PROFILE": nil,
         "AWS_SHARED_CREDENTIALS_FILE": nil, "AWS_CONFIG_FILE": nil]
    }

    // MARK: The year

    /// The profile's chain length: two weeks, longer than the daily window, so that prune
    /// removes backups inside a chain (nights that held nothing a later one needs), which
    /// is what broke `copy` (issue 25 §2.1); shorter than the default 30, whose restores
    /// read up to 30 archives each and would not fit the year into CI's minutes in the
    /// debug build the tests run. KEEPSAKE_TEST_FULL_EVERY sets another.
    private var fullEvery = 14

    private func setUpYear() throws {
        // A mailbox over 1 MiB, stored by its changed blocks (`blocks = true`) until it is
        // compacted below 1 MiB, and again once it grows past.
        home = try SimulatedHome(root: path("home/ana"), seed: 25, mailboxSize: (1 << 20) + 120_000)
        dest = path("backups")
        config = path("keepsake.toml")
        var s3Settings = ""
        switch offsiteKind {
        case .folder:
            offsite = path("offsite")
        case let .s3(server, bucket):
            offsite = "s3://\(bucket)/offsite"
            s3Settings = """
                s3-endpoint = "\(server.endpoint.absoluteString)"
                aws-access-key-id = "\(server.accessKey)"
                aws-secret-access-key = "\(server.secretKey)"

                """
        }
        try Data("""
            [profiles.nightly]
            sources = ["\(home.root)"]
            destination = "\(dest)"
            copy-to = ["\(offsite)"]
            full-every = \(fullEvery)
            blocks = true
            \(s3Settings)

            [profiles.nightly.retention]
            keep-daily = 7
            keep-weekly = 5
            keep-monthly = 12
            keep-yearly = 2
            """.utf8).write(to: URL(fileURLWithPath: config))
        // It may hold an S3 secret: only its owner reads it (else every run warns).
        guard chmod(config, 0o600) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }

    /// One night: the day's changes, the run, and every check. False once a check failed
    /// (the year stops there: what follows would only repeat it).
    private func live(_ night: Int, last: Bool) throws -> Bool {
        if night > 0 { try home.liveADay(night) }
        let context = "night \(night) (\(SimulatedYearTestCase.clock(night)))"
            + (killedNight.map { ", after the run of night \($0) was killed" } ?? "") + "; the day's changes: \(home.lastChanges)"
        switch SimulatedYearTestCase.mishap(on: night) {
        case .killed?:
            return try liveAKilledNight(night, context: context)
        case .secondHost?:
            guard try backUpTheLaptop(night, context: context) else { return false }
        case .clockBack?:
            // A second run the same night, after more changes, with the clock an hour back.
            guard try runAndCheck(night, minutes: 0, last: false, context: context) else { return false }
            try home.liveADay(night)
            return try runAndCheck(night, minutes: -60, last: last,
                                   context: context + "; then the clock went back an hour and the run ran again after \(home.lastChanges)")
        case .flippedByte?, .truncatedArchive?:
            let (victim, what) = try damageTheNewestArchive(truncating: SimulatedYearTestCase.mishap(on: night) == .truncatedArchive)
            return try runAndCheck(night, minutes: 0, last: last, context: context + "; before the run, \(what)", damagedBefore: victim)
        case .fullDisk?:
            return try liveAFullNight(night, context: context)
        case .savedWhileRead?:
            let temporary = path("save-in-progress")
            guard let staged = try home.stageSaveByRename(temporary: temporary) else { break }
            return try runAndCheck(night, minutes: 0, last: last, context: context + "; while the run read, \(staged.path) was saved",
                                   savedWhileRead: (staged.path, temporary, staged.before))
        case .lostManifest?:
            let lost = try loseTheNewestManifest()
            return try runAndCheck(night, minutes: 0, last: last,
                                   context: context + "; before the run, the manifest of backup \(lost) was lost", lostManifest: lost)
        case nil:
            break
        }
        return try runAndCheck(night, minutes: 0, last: last, context: context)
    }

    /// The run at `minutes` after 02:00 of `night`, and every check after it.
    /// `damagedBefore`: the backup whose archive was damaged just before the run;
    /// `lostManifest`: the backup whose manifest was lost just before it.
    /// `savedWhileRead`: a file whose new version waits at `temporary`, renamed over it
    /// while the run reads (slowed down to a few milliseconds a file).
    private func runAndCheck(_ night: Int, minutes: Int, last: Bool, context: String, damagedBefore: String? = nil,
                             lostManifest: String? = nil,
                             savedWhileRead save: (path: String, temporary: String, before: SimulatedHome.Node)? = nil) throws -> Bool {
        let arguments = ["run", "nightly", "--config", config, "--quiet"]
        let environment = runEnvironment(night, minutes: minutes)
        let outcome: ProcessRunner.Outcome
        if let save {
            let started = Date()
            let running = try keepsake.start(arguments, environment: environment.merging(["KEEPSAKE_TEST_READ_PAUSE_MS": "40"]) { $1 })
            usleep(useconds_t(20_000 + choices.below(230_000)))
            try home.finishSave(save.path, from: save.temporary)
            outcome = try running.finish(timeout: 120)
            spent["run", default: 0] += Date().timeIntervalSince(started)
        } else {
            outcome = try run(arguments, environment: environment)
        }
        // `--quiet` prints warnings: after a killed run, that its lock was taken over, naming
        // the killed process; a lost manifest, rebuilt; once a damaged backup is known (or
        // seen), that the chain it is in is not built on. Nothing else.
        var expected: [String] = []
        if let killedPID { expected.append("warning: took over a stale lock left by pid \(killedPID) ") }
        if let lostManifest {
            expected.append("warning: backup \(lostManifest) had lost its manifest; it was rebuilt from the archive's own copy")
        }
        if let killedNight {
            expected.append("warning: backup \(SimulatedYearTestCase.idPrefix(killedNight))")
        }
        // (An archive cut short is seen by its size before the backup is built on it.)
        if !damaged.isEmpty || damagedBefore != nil { expected.append("warning: starting a new chain: backup ") }
        // Prune keeps a damaged backup a kept one takes files from, and says so.
        for victim in damaged { expected.append("warning: backup \(victim) is kept: backup ") }
        let errors = outcome.stderrText.split(separator: "\n")
        // A damaged archive the new backup takes files from makes its verify fail: exit 4,
        // the error naming it, its lines indented.
        let damageError = errors.first { $0.hasPrefix("Error: The new backup ") && $0.hasSuffix(" is damaged:") }
        let unexpected = errors.filter { line in
            !expected.contains { line.hasPrefix($0) } && !(damageError != nil && (line == damageError || line.hasPrefix("  ")))
        }
        let code: Int32 = damageError == nil ? 0 : 4
        guard outcome.exitCode == code, outcome.stdoutText.isEmpty, unexpected.isEmpty, damagedBefore != nil || code == 0 else {
            XCTFail("\(context): the run did not exit 0 quietly:\n\(outcome)")
            return false
        }

        // The new backup, recorded with the tree it must restore to. What the destination
        // holds is read from its folder (every object must be a listed backup's, below).
        let all = try backups(in: dest)
        let stored = all.subtracting(otherHost.keys)
        if !Set(otherHost.keys).isSubset(of: all) {
            XCTFail("\(context): the laptop's backups \(Set(otherHost.keys).subtracting(all).sorted()) are gone")
            return false
        }
        var new = stored.filter { made[$0] == nil }
        var rebuiltNow: [String] = []
        // The killed run's whole archive, committed now (said in a warning, allowed above).
        if let killedNight, let killedTree {
            for rebuilt in new.filter({ $0.hasPrefix(SimulatedYearTestCase.idPrefix(killedNight)) }) {
                guard outcome.stderrText.contains("warning: backup \(rebuilt) had lost its manifest; it was rebuilt") else { continue }
                made[rebuilt] = (killedTree, killedNight, RetentionReference.Backup(id: rebuilt, created: SimulatedYearTestCase.instant(killedNight),
                                                                                   takesFrom: try takesFrom(rebuilt)))
                present.insert(rebuilt)
                new.remove(rebuilt)
                rebuiltNow.append(rebuilt)
                killedArchivesCommitted += 1
            }
        }
        guard new.count == 1, let id = new.first else {
            XCTFail("\(context): expected one new backup in \(dest), found \(new.sorted()) in \(stored.sorted())")
            return false
        }
        let created = SimulatedYearTestCase.instant(night).addingTimeInterval(Double(minutes) * 60)
        let takes = try takesFrom(id)
        made[id] = (home.nodes, night, RetentionReference.Backup(id: id, created: created, takesFrom: takes))
        if let save { savedWhileRead[id] = (save.path, save.before) }
        present.insert(id)
        present = SimulatedYearTestCase.policy.kept(present.compactMap { made[$0]?.backup }, followingChains: false)
        // A backup known damaged stays while a kept one takes files from it: prune could not
        // copy them into a supplement (`needed by ID; damaged`, said in a warning).
        present.formUnion(stored.subtracting(present).filter { extra in
            damaged.contains(extra) && present.contains { made[$0]?.backup.takesFrom.contains(extra) ?? false }
        })

        var problems: [String] = []
        // A chain known damaged is never built on.
        if !takes.isDisjoint(with: damaged) {
            problems.append("backup \(id) takes files from \(takes.intersection(damaged).sorted()), known damaged")
        }
        if let victim = damagedBefore {
            problems += try learnOfDamage(victim, newBackup: id, takes: takes, said: damageError == nil ? nil : outcome.stderrText)
        }
        damaged.formIntersection(stored)
        failedOnDamage.formIntersection(stored)
        if stored != present {
            problems.append("kept \(stored.sorted()), but the policy keeps \(present.sorted()) "
                + "(extra: \(stored.subtracting(present).sorted()), missing: \(present.subtracting(stored).sorted()))")
        }
        problems += try restoreProblems(id, from: dest)
        for rebuilt in rebuiltNow { problems += try restoreProblems(rebuilt, from: dest) }
        if let save, case .file(_, let after, _) = home.nodes[save.path], case .file(_, let before, _) = save.before, after != before {
            // Which version the backup holds, by the size its manifest records.
            let size = try recordedSize(of: save.path, in: id)
            if size == after { savesSeen.after += 1 } else if size == before { savesSeen.before += 1 }
        }
        if let lostManifest, !all.contains(lostManifest) && present.contains(lostManifest) {
            problems.append("backup \(lostManifest), whose manifest was lost, is not listed again")
        }
        let offsiteNames = try offsiteObjects()
        let copied = Set(offsiteNames.compactMap(SimulatedYearTestCase.backupID(inObjectName:)))
        if !stored.subtracting(failedOnDamage).isSubset(of: copied) {
            problems.append("the off-site copy lacks \(stored.subtracting(failedOnDamage).subtracting(copied).sorted())")
        }
        let destNames = try names(in: dest)
        problems += try strayObjects(in: dest, names: destNames, backups: all)
        mostSupplements = max(mostSupplements, destNames.filter { $0.hasSuffix(".supplement.jsonl.zst") }.count)
        if let id = made.first(where: { $0.value.night == night })?.key, backupsWithBlocks.count < 3,
           destNames.contains(where: { $0.contains(id) && $0.hasSuffix(".manifest.jsonl.zst") }),
           try manifestLines(of: id).contains(where: { ($0["blocks"] as? [String: Any])?["runs"] != nil }) {
            backupsWithBlocks.insert(id)
        }
        for name in destNames where name.hasSuffix(".supplement.jsonl.zst") && !supplementsWithBlocks.contains(name)
            && supplementsWithBlocks.count < 3 {
            if try toolSucceeds("zstd", ["-dc", dest + "/" + name]).stdoutText.contains("\"held_blocks\"") { supplementsWithBlocks.insert(name) }
        }
        if outcome.stderrText.contains(" is kept: backup ") { damagedKeptNights += 1 }
        problems += try strayObjects(in: offsite, names: offsiteNames, backups: copied)
        problems += try unfinishedOffsiteUploads()
        killedNight = nil
        killedPID = nil

        // Weekly: `list` shows what the destination holds, and the backups copied off-site
        // since the last check verify there.
        if night % 7 == 6 || last {
            let listed = try listedIDs(dest)
            if Set(listed) != all || listed != listed.sorted() {
                problems.append("list shows \(listed), the destination holds \(all.sorted())")
            }
            // (None named would verify them all: the last night does that.)
            let unchecked = copied.subtracting(verifiedOffsite).sorted()
            if !unchecked.isEmpty {
                let verify = try run(["verify", "--dest", offsite, "--quiet"] + unchecked)
                if verify.exitCode != 0 { problems.append("verify of \(unchecked) off-site exit \(verify.exitCode):\n\(verify)") }
                verifiedOffsite.formUnion(unchecked)
            }
        }
        // Every four weeks: the whole destination verifies, and its oldest backup and three
        // others still restore to the trees of their nights (prune has removed backups
        // around them since); on the last night every kept one, from both destinations.
        if night % 28 == 27 || last {
            // Exit 4 exactly while a backup known damaged is kept.
            let verify = try run(["verify", "--dest", dest, "--quiet"])
            if verify.exitCode != (damaged.isEmpty ? 0 : 4) {
                problems.append("verify of the destination exit \(verify.exitCode) with \(damaged.sorted()) damaged:\n\(verify)")
            }
            let others = stored.filter { $0 != id }.sorted()
            var sample = Set(others.prefix(1))
            while sample.count < min(4, others.count) { sample.insert(others[choices.below(others.count)]) }
            for kept in (last ? others : sample.sorted()) { problems += try restoreProblems(kept, from: dest) }
        }
        if last {
            let verify = try run(["verify", "--dest", offsite, "--quiet"])
            if verify.exitCode != 0 { problems.append("verify of the off-site copy exit \(verify.exitCode):\n\(verify)") }
            for kept in stored.intersection(copied).sorted() { problems += try restoreProblems(kept, from: offsite) }
            for (id, tree) in otherHost.sorted(by: { $0.key < $1.key }) {
                problems += try restoreProblems(id, from: dest, expected: tree, root: laptop.root)
            }
        }
        guard problems.isEmpty else {
            XCTFail("\(context):\n" + problems.joined(separator: "\n"))
            return false
        }
        return true
    }

    // MARK: Mishaps

    /// What goes wrong on purpose on some nights.
    private enum Mishap {
        /// The run is killed (SIGKILL) at a random moment.
        case killed
        /// Another host (a laptop) backs up into the same destination before the run.
        case secondHost
        /// After the run, the clock is set back an hour and the run runs again.
        case clockBack
        /// Before the run, one byte of the newest backup's archive is flipped.
        case flippedByte
        /// Before the run, the newest backup's archive loses its end.
        case truncatedArchive
        /// Before the run, the newest backup's manifest is deleted.
        case lostManifest
        /// The destination's disk has room for what it holds and hardly more.
        case fullDisk
        /// A file is saved by write-then-rename while the run reads.
        case savedWhileRead
    }

    private static func mishap(on night: Int) -> Mishap? {
        if night % 37 == 17 { return .killed }
        if night % 29 == 11 { return .secondHost }
        if night % 43 == 30 { return .clockBack }
        if night % 59 == 40 { return .flippedByte }
        if night % 71 == 57 { return .truncatedArchive }
        if night % 47 == 25 { return .lostManifest }
        if night % 53 == 33 { return .fullDisk }
        if night % 41 == 21 { return .savedWhileRead }
        return nil
    }

    /// The newest backup this host made that the destination holds.
    private func newestBackup() throws -> String {
        try XCTUnwrap(present.max(), "no backup yet")
    }

    /// Flips a byte of the newest backup's archive, or cuts the archive at a random point,
    /// as a disk or a transfer might; returns the backup and what was done.
    private func damageTheNewestArchive(truncating: Bool) throws -> (String, String) {
        let victim = try newestBackup()
        let name = try XCTUnwrap(try names(in: dest).first { $0.contains(victim) && $0.hasSuffix(".tar.zst") })
        let file = dest + "/" + name
        var bytes = try RawFileSystem.readFile(RawFileSystem.bytes(file))
        // Past the first tenth, before the last: inside the archive's frames.
        let offset = bytes.count / 10 + choices.below(max(1, bytes.count * 8 / 10))
        if truncating {
            bytes.removeSubrange(offset...)
        } else {
            bytes[offset] ^= UInt8(1 << choices.below(8))
        }
        try RawFileSystem.writeFile(RawFileSystem.bytes(file), contents: bytes)
        return (victim, truncating ? "the archive of backup \(victim) was cut at byte \(offset)"
                                   : "one byte of the archive of backup \(victim) was flipped at \(offset)")
    }

    /// Deletes the newest backup's manifest (the archive keeps its own copy).
    private func loseTheNewestManifest() throws -> String {
        let lost = try newestBackup()
        let name = try XCTUnwrap(try names(in: dest).first { $0.contains(lost) && $0.hasSuffix(".manifest.jsonl.zst") })
        try FileManager.default.removeItem(atPath: dest + "/" + name)
        return lost
    }

    /// After the run of a night that began with backup `victim`'s archive damaged: the run
    /// failed (exit 4, naming it) exactly when the new backup takes files from it; when it
    /// does not, verify finds the damage. Either way the damage is known from then on.
    /// `said`: the run's stderr when it failed on the damage.
    private func learnOfDamage(_ victim: String, newBackup: String, takes: Set<String>, said: String?) throws -> [String] {
        var problems: [String] = []
        let relies = takes.contains(victim) || !takes.isDisjoint(with: damaged)
        if relies != (said != nil) || !(said?.contains("backup \(victim)") ?? true) {
            problems.append("backup \(newBackup) \(relies ? "takes" : "does not take") files from the damaged \(victim), "
                + "but the run \(said.map { "failed, saying:\n\($0)" } ?? "succeeded")")
        }
        damaged.insert(victim)
        if relies {
            damaged.insert(newBackup)
            failedOnDamage.insert(newBackup)
        }
        if said == nil {
            let verify = try run(["verify", victim, "--dest", dest, "--quiet"])
            if verify.exitCode != 4 || !verify.combinedText.contains(victim) {
                problems.append("verify of the damaged backup \(victim) exit \(verify.exitCode):\n\(verify)")
            }
        }
        return problems
    }

    /// Another host's backup of its own small folder into the destination, before the run:
    /// this host's prune must leave it alone, and it must restore exactly at the end.
    /// When last night's killed run left its lock, the laptop cannot tell whether that run
    /// still goes on (its pid is another host's): it must be refused (exit 5, naming the
    /// holder) and leave the lock alone, for this host's run to take over.
    private func backUpTheLaptop(_ night: Int, context: String) throws -> Bool {
        if laptop == nil {
            laptop = try SimulatedHome(root: path("laptop/ana"), seed: 7)
        } else {
            try laptop.liveADay(night)
        }
        let lockFile = dest + "/keepsake.lock"
        let lockLeft = FileManager.default.fileExists(atPath: lockFile)
        let outcome = try run(["backup", laptop.root, "--dest", dest, "--json"],
                              environment: ["KEEPSAKE_NOW": SimulatedYearTestCase.clock(night, minutes: -30), "TZ": "UTC"],
                              hostName: "laptop")
        if lockLeft {
            let holder = killedPID.map { "pid \($0) on " } ?? "(no killed run)"
            let error = try json(outcome)["error"] as? String ?? ""
            guard outcome.exitCode == 5, error.contains(holder), error.contains("takes the lock over"), FileManager.default.fileExists(atPath: lockFile) else {
                XCTFail("\(context): the lock left by the killed run must refuse the laptop (exit 5, naming "
                    + "'\(holder)') and stay for this host to take over:\n\(outcome)")
                return false
            }
            return true
        }
        guard outcome.exitCode == 0, let id = try json(outcome)["id"] as? String else {
            XCTFail("\(context): the laptop's backup failed:\n\(outcome)")
            return false
        }
        otherHost[id] = laptop.nodes
        return true
    }

    /// A night whose run meets a full disk: the destination moves onto a tmpfs with room for
    /// what it holds and two pages more. The run must fail with exit 1 saying the disk is
    /// full, commit nothing, remove nothing and leave nothing behind (the usual checks, on
    /// the next night, find any leftover); then the destination moves back. Only a killed
    /// run's whole archive may be committed (its manifest rebuilt, said in a warning): it
    /// must restore to its night's tree.
    private func liveAFullNight(_ night: Int, context: String) throws -> Bool {
        let before = try backups(in: dest)
        let objects = try names(in: dest)
        let page = 4096
        var pages = 2
        for name in objects {
            let size = try FileManager.default.attributesOfItem(atPath: dest + "/" + name)[.size] as? Int ?? 0
            pages += (size + page - 1) / page
        }
        let aside = dest + ".aside"
        try FileManager.default.moveItem(atPath: dest, toPath: aside)
        try mountTmpfs(at: dest, size: String(pages * page))
        try toolSucceeds("cp", ["-a", aside + "/.", dest])
        let outcome = try run(["run", "nightly", "--config", config, "--quiet"],
                              environment: runEnvironment(night))
        var problems: [String] = []
        if outcome.exitCode != 1 || !outcome.stderrText.contains("No space left in \(dest)") {
            problems.append("the run on a full disk must fail with exit 1, saying so:\n\(outcome)")
        }
        let after = try backups(in: dest)
        var rebuilt = Set<String>()
        if let killedNight, let killedTree {
            for id in after.subtracting(before) where id.hasPrefix(SimulatedYearTestCase.idPrefix(killedNight))
                && outcome.stderrText.contains("warning: backup \(id) had lost its manifest; it was rebuilt") {
                made[id] = (killedTree, killedNight, RetentionReference.Backup(id: id, created: SimulatedYearTestCase.instant(killedNight),
                                                                               takesFrom: try takesFrom(id)))
                present.insert(id)
                rebuilt.insert(id)
                killedArchivesCommitted += 1
            }
        }
        if after != before.union(rebuilt) {
            problems.append("on a full disk the backups went from \(before.sorted()) to \(after.sorted())")
        }
        let left = Set(try names(in: dest)).subtracting(objects).filter { name in
            !rebuilt.contains { name.contains($0) && name.hasSuffix(".manifest.jsonl.zst") }
        }
        if !left.isEmpty { problems.append("the failed run left \(left.sorted()) behind") }
        // Back to the disk it was on.
        try FileManager.default.removeItem(atPath: aside)
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(aside), mode: 0o700)
        try toolSucceeds("cp", ["-a", dest + "/.", aside])
        unmountTmpfs(dest)
        try FileManager.default.removeItem(atPath: dest)
        try FileManager.default.moveItem(atPath: aside, toPath: dest)
        for id in rebuilt.sorted() { problems += try restoreProblems(id, from: dest) }
        guard problems.isEmpty else {
            XCTFail("\(context); the destination's disk was full:\n" + problems.joined(separator: "\n"))
            return false
        }
        return true
    }

    /// A run killed at a random moment: whatever it committed must be whole and restore
    /// exactly; the next night's run must clean up after it (checked by the next night).
    private func liveAKilledNight(_ night: Int, context: String) throws -> Bool {
        let started = Date()
        let running = try keepsake.start(["run", "nightly", "--config", config, "--quiet"],
                                         environment: runEnvironment(night))
        // Somewhere in the backup, prune, verify or copy (a night's run takes 0.1-0.5 s).
        usleep(useconds_t(20_000 + choices.below(300_000)))
        _ = Glibc.kill(running.processIdentifier, SIGKILL)
        let outcome = try running.finish(timeout: 60)
        spent["run", default: 0] += Date().timeIntervalSince(started)
        killedNight = night
        killedPID = running.processIdentifier
        killedTree = home.nodes
        let committed = try backups(in: dest).subtracting(otherHost.keys)
        var before = present
        for id in committed where made[id] == nil {
            made[id] = (home.nodes, night, RetentionReference.Backup(id: id, created: SimulatedYearTestCase.instant(night),
                                                                     takesFrom: try takesFrom(id)))
            let problems = try restoreProblems(id, from: dest)
            guard problems.isEmpty else {
                XCTFail("\(context): killed (\(outcome.exitCode)), its committed backup:\n" + problems.joined(separator: "\n"))
                return false
            }
            before.insert(id)
        }
        // Prune may have been under way: it may have removed only what the policy lets go.
        let mustStay = SimulatedYearTestCase.policy.kept(before.compactMap { made[$0]?.backup }, followingChains: false)
        guard mustStay.isSubset(of: committed), committed.isSubset(of: before) else {
            XCTFail("\(context): killed (\(outcome.exitCode)); it left \(committed.sorted()), but must keep "
                + "\(mustStay.sorted()) and can only have made \(before.subtracting(present).sorted())")
            return false
        }
        present = committed
        return true
    }

    // MARK: Clock

    /// Night `night` at 02:00 UTC.
    private static func instant(_ night: Int) -> Date {
        Date(timeIntervalSince1970: firstMidnight + Double(night) * 86_400 + 7_200)
    }

    /// The start of the ids of backups made at 02:00 of `night` (`20270118T020000Z-`).
    private static func idPrefix(_ night: Int) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'-"
        return formatter.string(from: instant(night))
    }

    /// `KEEPSAKE_NOW` for night `night`, `minutes` after 02:00.
    private static func clock(_ night: Int, minutes: Int = 0) -> String {
        ISO8601DateFormatter().string(from: instant(night).addingTimeInterval(Double(minutes) * 60))
    }

    // MARK: Checks

    /// What differs between a restore of backup `id` from `destination` and its night's tree
    /// (or `expected`, a tree of the folder `root`).
    private func restoreProblems(_ id: String, from destination: String, expected: SimulatedHome.Snapshot? = nil,
                                 root: String? = nil) throws -> [String] {
        guard let tree = expected ?? made[id]?.tree else { return ["\(id) is not a backup this year made"] }
        let label = "restore of \(id) (night \(made[id].map { String($0.night) } ?? "?")) from \(destination)"
        // In memory (/dev/shm, a tmpfs): restores are most of the year's time, and a fifth
        // of theirs went to the disk.
        let target = "/dev/shm/keepsake-year-\(getpid())"
        defer { _ = try? tool("rm", ["-rf", target]) }
        let outcome = try run(["restore", id, "--dest", destination, "--target", target, "--quiet"])
        // A backup known damaged restores from the destination with exit 4, every file it
        // brings back whole, and loses only files held in a damaged archive.
        let isDamaged = destination == dest && damaged.contains(id)
        guard outcome.exitCode == 0 || (isDamaged && outcome.exitCode == 4) else {
            return ["\(label) exit \(outcome.exitCode)\(isDamaged ? " (damaged: 0 or 4 expected)" : ""):\n\(outcome)"]
        }
        let losable = outcome.exitCode == 4 ? try filesHeldInDamagedArchives(by: id) : []
        var differences = try SimulatedHome.differences(expected: tree, actual: restored(root ?? home.root, into: target))
        if !differences.isEmpty, expected == nil, let save = savedWhileRead[id] {
            // The file saved while the run read it, as it was before the save.
            var before = tree
            before[save.path] = save.before
            let other = try SimulatedHome.differences(expected: before, actual: restored(home.root, into: target))
            if other.count < differences.count { differences = other }
        }
        let allowed = differences.filter { $0.hasSuffix(": missing") && losable.contains(String($0.dropLast(": missing".count))) }
        if outcome.exitCode == 4 {
            damagedRestores += 1
            filesLostToDamage += allowed.count
        }
        return differences.filter { !allowed.contains($0) }.map { "\(label): \($0)" }
    }

    /// The size backup `id`'s manifest (read with zstd and JSONSerialization) records for
    /// `file` (relative to the home folder).
    private func recordedSize(of file: String, in id: String) throws -> Int? {
        let wanted = String(home.root.dropFirst()) + "/" + file
        return try manifestLines(of: id).first { $0["path"] as? String == wanted }?["size"] as? Int
    }

    /// The files of backup `id` (relative to the home folder) that its manifest, read with
    /// zstd and JSONSerialization, places in the archive of a backup known damaged (wholly
    /// or some of their blocks).
    private func filesHeldInDamagedArchives(by id: String) throws -> Set<String> {
        let prefix = String(home.root.dropFirst()) + "/"
        return Set(try manifestLines(of: id).compactMap { object -> String? in
            // A file stored by blocks lies in every archive its `blocks.from` names (none: its own).
            let holders = ((object["blocks"] as? [String: Any])?["from"] as? [[String: Any]])?.map { $0["in"] as? String ?? id }
                ?? [object["in"] as? String ?? id]
            guard let path = object["path"] as? String, path.hasPrefix(prefix), holders.contains(where: damaged.contains) else {
                return nil
            }
            return String(path.dropFirst(prefix.count))
        })
    }

    /// The backups in `destination`: the ids of its manifests (an archive alone is none).
    private func backups(in destination: String) throws -> Set<String> {
        Set(try names(in: destination).filter { $0.hasSuffix(".manifest.jsonl.zst") }
            .compactMap(SimulatedYearTestCase.backupID(inObjectName:)))
    }

    /// Of the `names` in `destination`, those other than an archive and a manifest of one of
    /// `backups`, and backups without both.
    private func strayObjects(in destination: String, names: [String], backups: Set<String>) throws -> [String] {
        var problems: [String] = []
        var objects: [String: Int] = [:]
        var supplements: [String: [String]] = [:]
        for name in names {
            if let id = SimulatedYearTestCase.objectID(in: name, suffixes: [".supplement.tar.zst", ".supplement.jsonl.zst"]) {
                supplements[id, default: []].append(name)
                continue
            }
            // The record of a backup known damaged (`verify` and `run` write it beside it).
            if name.hasSuffix(".damaged"), let id = SimulatedYearTestCase.backupID(inObjectName: String(name.dropLast(8)) + ".tar.zst"),
               destination == dest, damaged.contains(id), backups.contains(id) {
                continue
            }
            guard let id = SimulatedYearTestCase.backupID(inObjectName: name), backups.contains(id) else {
                problems.append("\(destination) holds \(name), which is no backup's archive or manifest")
                continue
            }
            objects[id, default: 0] += 1
        }
        for id in backups.sorted() where objects[id] != 2 {
            problems.append("\(destination) holds \(objects[id] ?? 0) objects of backup \(id), not its archive and manifest")
        }
        // Supplements: archive and manifest, of a backup there (its first line, read with
        // zstd and JSONSerialization, names the owner); in the destination, one per owner.
        var owners: [String: String] = [:]
        for (id, parts) in supplements.sorted(by: { $0.key < $1.key }) {
            guard parts.count == 2 else {
                problems.append("\(destination) holds \(parts) of supplement \(id), not its archive and manifest")
                continue
            }
            // (The off-site bucket's objects are listed, not read.)
            var inFolder = destination == dest
            if case .folder = offsiteKind { inFolder = true }
            guard inFolder, let manifest = parts.first(where: { $0.hasSuffix(".jsonl.zst") }) else { continue }
            let path = destination + "/" + manifest
            if supplementOwners[path] == nil {
                // Read once: a committed supplement never changes.
                let first = try sidecarText(path).split(separator: "\n").first.map(String.init) ?? ""
                supplementOwners[path] = (try JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: Any])?["owner"] as? String ?? ""
            }
            let owner = supplementOwners[path] ?? ""
            if !backups.contains(owner) {
                problems.append("\(destination) holds supplement \(id) of \(owner.isEmpty ? "no backup" : owner), which it does not hold")
            } else if destination == dest, let other = owners.updateValue(id, forKey: owner) {
                problems.append("\(destination) holds two supplements of backup \(owner): \(other) and \(id)")
            }
        }
        return problems
    }

    /// The backup id in `HOST_ID.tar.zst` or `HOST_ID.manifest.jsonl.zst` (as docs/formats.md
    /// names them), or nil for any other name.
    private static func backupID(inObjectName name: String) -> String? {
        objectID(in: name, suffixes: [".tar.zst", ".manifest.jsonl.zst"])
    }

    /// The id in `HOST_ID` followed by one of `suffixes`, or nil for any other name.
    private static func objectID(in name: String, suffixes: [String]) -> String? {
        guard !name.hasPrefix("."), let underscore = name.lastIndex(of: "_") else { return nil }
        let rest = name[name.index(after: underscore)...]
        // YYYYMMDDTHHMMSSZ-xxxxxxxx
        let id = rest.prefix(25)
        guard id.count == 25, suffixes.contains(String(rest.dropFirst(25))) else { return nil }
        let bytes = Array(id.utf8)
        let digits = bytes[0..<8] + bytes[9..<15]
        guard digits.allSatisfy({ $0 >= 48 && $0 <= 57 }), bytes[8] == 84, bytes[15] == 90, bytes[16] == 45,
              bytes[17...].allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }) else { return nil }
        return String(id)
    }

    // MARK: Reading

    /// The names in the off-site destination: a folder's entries, or the keys under the
    /// bucket's `offsite/` as the S3 server lists them to curl (fifty keys a page, so that
    /// the year's listings take several pages).
    private func offsiteObjects() throws -> [String] {
        guard case let .s3(server, bucket) = offsiteKind else { return try names(in: offsite) }
        let keys = try S3BucketListing(server: server, bucket: bucket, pageSize: 50).keys(prefix: "offsite/")
        return keys.map { String($0.dropFirst("offsite/".count)) }.sorted()
    }

    /// Multipart uploads to S3 that a run began and neither finished nor aborted.
    private func unfinishedOffsiteUploads() throws -> [String] {
        guard case let .s3(server, bucket) = offsiteKind else { return [] }
        let keys = try S3BucketListing(server: server, bucket: bucket).unfinishedUploads(prefix: "offsite/")
        return keys.isEmpty ? [] : ["\(offsite) holds unfinished uploads of \(keys)"]
    }

    /// The ids `keepsake list --json` shows in `destination`, oldest first.
    private func listedIDs(_ destination: String) throws -> [String] {
        let outcome = try run(["list", "--dest", destination, "--json"])
        assertExit(outcome, 0)
        let backups = try XCTUnwrap(try json(outcome)["backups"] as? [[String: Any]], "\(outcome)")
        return backups.compactMap { $0["id"] as? String }
    }

    /// The backups backup `id`'s manifest names in `in`, read with zstd and JSONSerialization
    /// (not with Keepsake's own reader).
    private func takesFrom(_ id: String) throws -> Set<String> {
        Set(try manifestLines(of: id).compactMap { $0["in"] as? String })
    }

    /// The lines of backup `id`'s manifest in the destination, read with zstd and
    /// JSONSerialization (not with Keepsake's own reader): the summary, then the entries.
    private func manifestLines(of id: String) throws -> [[String: Any]] {
        let manifest = try XCTUnwrap(try names(in: dest).first { $0.contains(id) && $0.hasSuffix(".manifest.jsonl.zst") })
        return try sidecarText(dest + "/" + manifest).split(separator: "\n").compactMap {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }
}
