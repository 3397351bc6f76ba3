import BackupCore
import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `keepsake restore` of a damaged backup (single-bit flips and truncations of the archive):
/// every file that lands under its final name is byte-identical to the original, nothing
/// else lands, every lost file is reported (named, or covered by the archive problem that
/// made it unreachable), and the exit code is 4. Prints how many files were restored and
/// lost for each flip location — a flip early in a single-frame zstd stream may make
/// everything after it unreadable, which is measured, not asserted.
// test-tag(threads): damaged archives through the parallel decoder
final class CorruptionRestoreTests: CorruptionTestCase {
    // MARK: Types

    /// One restore of a damaged copy, and what landed.
    struct Trial {
        let backup: CorpusBackup
        let damage: Damage
        let outcome: ProcessRunner.Outcome
        /// Files restored byte-identical.
        let restored: Int
        /// Files absent from the target (relative paths).
        let lost: [String]
        /// Lost files the output names (in `damaged` or `warnings`).
        let lostAndNamed: Int
        /// The restore's `archive_problem`, when it had one.
        let archiveProblem: String?
        /// Entries of `damaged` in the output.
        let reportedDamaged: Int
        /// Files present under their final name with other content (must never happen).
        let corrupted: [String]
        /// Names in the target that are not in the original tree (temporary files, strays).
        let unexpected: [String]
        /// Files under a name the original tree does not have, landed as NAME.unverified by
        /// an archive damaged before its manifest (which alone could tell the name is
        /// wrong), with the folders made on the way to them: allowed, and counted.
        let unverifiedStrays: [String]
        /// How restored files' modes or modification times differ from the originals.
        let metadata: [String]

        /// True when the output says something is wrong.
        var reportsDamage: Bool { reportedDamaged > 0 || archiveProblem != nil }

        /// One line: the damage, where it landed, and the counts.
        var account: String {
            "\(backup.label) \(damage) (\(backup.locate(damage))): exit \(outcome.exitCode), restored \(restored)/"
                + "\(backup.tree.files.count), lost \(lost.count) (\(lostAndNamed) named as damaged, "
                + "\(lost.count - lostAndNamed) unreached\(archiveProblem == nil ? "" : " after the archive problem"))"
                + (unverifiedStrays.isEmpty ? "" : ", unverified under a name it never had: \(unverifiedStrays)")
        }
    }

    /// How the damaged backup is handed to restore.
    enum Source {
        /// `restore latest --dest DIR`: checked against the manifest beside the archive.
        case destination
        /// `restore FILE` with no manifest beside it: checked against the one inside.
        case loneArchive
    }

    // MARK: Baseline

    func testPristineCorpusRestoresExactly() throws {
        for backup in try corpusBackups() {
            let trial = try restoreTrial(backup, damage: nil, source: .destination)
            assertExit(trial.outcome, 0, "\(backup.label) pristine")
            XCTAssertEqual(trial.restored, backup.tree.files.count, "\(backup.label):\n\(trial.outcome)")
            XCTAssertEqual(trial.metadata, [], "\(backup.label)")
            XCTAssertEqual(trial.unexpected, [], "\(backup.label)")
        }
    }

    // MARK: Damaged archives

    /// 60 single-bit flips, 10 in each archive, each restored from its destination.
    func testRestoreOfBitFlippedArchiveLandsOnlyIntactFiles() throws {
        var generator = SeededGenerator(seed: 0xA5C1_1F11_0000_0010)
        let plan = try corpusBackups().flatMap { backup in
            Damage.randomFlips(10, in: .archive, size: backup.archive.count, using: &generator).map { (backup, $0) }
        }
        let trials = try runTrials(plan, source: .destination)
        report("restore after a bit flip", trials)
        assertSafe(trials)
    }

    /// 18 truncations at random lengths, 3 per archive, each restored from its destination.
    func testRestoreOfTruncatedArchiveLandsOnlyIntactFiles() throws {
        var generator = SeededGenerator(seed: 0xA5C1_1F11_0000_0011)
        let plan = try corpusBackups().flatMap { backup in
            Damage.randomTruncations(3, in: .archive, size: backup.archive.count, using: &generator).map { (backup, $0) }
        }
        let trials = try runTrials(plan, source: .destination)
        report("restore after a truncation", trials)
        assertSafe(trials)
    }

    /// 24 flips in lone archive files with no manifest beside them (4 per archive): files
    /// wait under temporary names until the manifest inside has been read.
    func testRestoreOfDamagedLoneArchiveLandsOnlyIntactFiles() throws {
        var generator = SeededGenerator(seed: 0xA5C1_1F11_0000_0012)
        let plan = try corpusBackups().flatMap { backup in
            Damage.randomFlips(4, in: .archive, size: backup.archive.count, using: &generator).map { (backup, $0) }
        }
        let trials = try runTrials(plan, source: .loneArchive)
        report("restore of a lone archive after a bit flip", trials)
        assertSafe(trials)
    }

    // MARK: Running trials

    private func runTrials(_ plan: [(CorpusBackup, Damage)], source: Source) throws -> [Trial] {
        let started = Date()
        let trials = try plan.map { try restoreTrial($0.0, damage: $0.1, source: source) }
        print(String(format: "   (%d restores in %.1f s)", trials.count, Date().timeIntervalSince(started)))
        return trials
    }

    /// Stages the damaged copy, restores it into a fresh target and compares every file
    /// with the original tree.
    private func restoreTrial(_ backup: CorpusBackup, damage: Damage?, source: Source) throws -> Trial {
        let folder = try stage(backup, damage: damage, in: path("restore-\(backup.tree.name)-\(backup.compression)"))
        let target = path("target")
        let outcome: ProcessRunner.Outcome
        switch source {
        case .destination:
            outcome = try run(["restore", "latest", "--dest", folder, "--target", target, "--json"])
        case .loneArchive:
            try FileManager.default.removeItem(atPath: folder + "/" + backup.manifestName)
            outcome = try run(["restore", folder + "/" + backup.archiveName, "--target", target, "--json"],
                              environment: ["KEEPSAKE_DEST": path("no-destination")])
        }
        defer { try? FileManager.default.removeItem(atPath: target) }
        let object = (try? JSONSerialization.jsonObject(with: outcome.stdout)) as? [String: Any] ?? [:]
        let damagedPaths = (object["damaged"] as? [[String: Any]] ?? []).compactMap { $0["path"] as? String }
        let warnedPaths = (object["warnings"] as? [[String: Any]] ?? []).compactMap { $0["path"] as? String }
        let named = Set(damagedPaths + warnedPaths)
        // What the restore says ("the archive is damaged before its manifest: N files could not
        // be checked and were restored as NAME.unverified") when no manifest was read.
        let damagedBeforeManifest = object["archive_problem"] is String && (object["unverified_files"] as? Int ?? 0) > 0

        let tree = backup.tree
        let landedRoot = target + tree.root
        var restored = 0
        var lost: [String] = [], corrupted: [String] = [], metadata: [String] = []
        for relative in tree.files {
            let original = RawFileSystem.bytes(tree.root + "/" + relative)
            let landed = RawFileSystem.bytes(landedRoot + "/" + relative)
            guard let have = RawFileSystem.lstat(landed) else {
                lost.append(relative)
                continue
            }
            guard have.st_mode & S_IFMT == S_IFREG, try RawFileSystem.filesEqual(original, landed) else {
                corrupted.append(relative)
                continue
            }
            restored += 1
            if let want = RawFileSystem.lstat(original) {
                if want.st_mode & 0o7777 != have.st_mode & 0o7777 {
                    metadata.append("\(relative): mode \(String(have.st_mode & 0o7777, radix: 8)), "
                        + "expected \(String(want.st_mode & 0o7777, radix: 8))")
                }
                if want.st_mtim.tv_sec != have.st_mtim.tv_sec || want.st_mtim.tv_nsec != have.st_mtim.tv_nsec {
                    metadata.append("\(relative): mtime \(have.st_mtim.tv_sec).\(have.st_mtim.tv_nsec), "
                        + "expected \(want.st_mtim.tv_sec).\(want.st_mtim.tv_nsec)")
                }
            }
        }
        let names = try unexpectedNames(in: target, tree: tree,
                                        allowingUnverifiedStrays: source == .loneArchive && damagedBeforeManifest)
        return Trial(backup: backup, damage: damage ?? Damage(target: .archive, kind: .truncation(length: backup.archive.count)),
                     outcome: outcome, restored: restored, lost: lost,
                     lostAndNamed: lost.filter { named.contains(tree.archivePath(of: $0)) }.count,
                     archiveProblem: object["archive_problem"] as? String, reportedDamaged: damagedPaths.count,
                     corrupted: corrupted, unexpected: names.unexpected, unverifiedStrays: names.unverifiedStrays,
                     metadata: metadata)
    }

    /// Every name below `target` that is neither a folder on the way to the restored tree
    /// nor a path of the original tree. With `allowingUnverifiedStrays` (a lone archive
    /// damaged before its manifest), a file under any name ending in the unverified suffix
    /// is set apart, with the folders on the way to it: nothing could tell its name was
    /// damaged, and by design it never lands under a final name.
    private func unexpectedNames(in target: String, tree: CorpusTree,
                                 allowingUnverifiedStrays: Bool) throws -> (unexpected: [String], unverifiedStrays: [String]) {
        guard RawFileSystem.exists(target) else { return ([], []) }
        let original = try TreeComparison.snapshot(of: tree.root, xattrName: nil)
        let prefix = String(tree.root.dropFirst())
        var allowed = Set(original.keys.map { $0.isEmpty ? prefix : prefix + "/" + RawFileSystem.display($0) })
        var ancestor = ""
        for component in prefix.split(separator: "/") {
            ancestor += ancestor.isEmpty ? String(component) : "/" + component
            allowed.insert(ancestor)
        }
        allowed.insert("")
        // A file that a damaged archive without a manifest delivered lands beside its final
        // name as NAME.unverified (never under it): expected, not a stray.
        let suffix = Restorer.unverifiedSuffix
        let snapshot = try TreeComparison.snapshot(of: target, xattrName: nil)
        let landed = Dictionary(snapshot.map { (RawFileSystem.display($0.key), $0.value.kind) },
                                uniquingKeysWith: { first, _ in first })
        let unexpected = landed.keys.filter {
            !allowed.contains($0) && !($0.hasSuffix(suffix) && allowed.contains(String($0.dropLast(suffix.count))))
        }
        guard allowingUnverifiedStrays else { return (unexpected.sorted(), []) }
        let strays = Set(unexpected.filter { $0.hasSuffix(suffix) && landed[$0] == .file })
        var onTheWay = Set<String>()
        for stray in strays {
            var folder = Substring(stray)
            while let slash = folder.lastIndex(of: "/") {
                folder = folder[..<slash]
                onTheWay.insert(String(folder))
            }
        }
        let setApart = Set(unexpected.filter { strays.contains($0) || (onTheWay.contains($0) && landed[$0] == .directory) })
        return (unexpected.filter { !setApart.contains($0) }.sorted(), setApart.sorted())
    }

    // MARK: Checking

    /// The safety promises, for every trial: no damaged content under a final name, no
    /// stray or temporary names, every lost file reported, exit 4 whenever something was
    /// lost or reported, and an exit 0 only when everything came back exactly.
    private func assertSafe(_ trials: [Trial], file: StaticString = #filePath, line: UInt = #line) {
        for trial in trials {
            XCTAssertEqual(trial.corrupted, [], "damaged content landed under a final name: \(trial.account)"
                           + diagnose(trial.backup, trial.damage) + "\n\(trial.outcome)",
                           file: file, line: line)
            XCTAssertEqual(trial.unexpected, [], "names the original tree does not have: \(trial.account)", file: file, line: line)
            XCTAssertTrue([0, 4].contains(trial.outcome.exitCode), "exit 0 or 4 expected: \(trial.account)\n\(trial.outcome)",
                          file: file, line: line)
            if !trial.lost.isEmpty || trial.reportsDamage {
                XCTAssertEqual(trial.outcome.exitCode, 4, "\(trial.account)\n\(trial.outcome)", file: file, line: line)
            }
            if trial.archiveProblem == nil {
                XCTAssertEqual(trial.lostAndNamed, trial.lost.count,
                               "lost files must be named when the archive could be read to its end: \(trial.account)\n"
                                + "unnamed: \(trial.lost.prefix(5))\n\(trial.outcome)", file: file, line: line)
            }
            if trial.outcome.exitCode == 0 {
                XCTAssertEqual(trial.metadata, [], "exit 0, yet the mode or modification time differ: \(trial.account)",
                               file: file, line: line)
            }
        }
    }

    // MARK: Reporting

    /// Prints every trial and, per backup and flip location, files restored vs. lost.
    private func report(_ what: String, _ trials: [Trial]) {
        let expected = trials.map(\.backup.tree.files.count).reduce(0, +)
        let restored = trials.map(\.restored).reduce(0, +)
        print("\(what): \(trials.count) restores, files restored \(restored)/\(expected), lost \(expected - restored); "
            + "exit 4 in \(trials.filter { $0.outcome.exitCode == 4 }.count), exit 0 in \(trials.filter { $0.outcome.exitCode == 0 }.count); "
            + "damaged content under a final name: \(trials.map(\.corrupted.count).reduce(0, +))")
        var groups: [String: [Trial]] = [:]
        var order: [String] = []
        for trial in trials {
            let key = "\(trial.backup.label), \(trial.backup.bucket(trial.damage))"
            if groups[key] == nil { order.append(key) }
            groups[key, default: []].append(trial)
        }
        printReport("\(what): files restored vs. lost per location", order.sorted().map { key in
            let group = groups[key] ?? []
            let want = group.map(\.backup.tree.files.count).reduce(0, +)
            let have = group.map(\.restored).reduce(0, +)
            return "\(key): \(group.count) trials, restored \(have)/\(want), lost \(want - have)"
        })
        printReport("\(what): every trial", trials.map(\.account))
    }
}
