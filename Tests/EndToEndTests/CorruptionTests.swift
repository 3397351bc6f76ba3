import Foundation
import XCTest

/// Single-bit flips at random offsets and truncations at random lengths, in archives (zstd,
/// gzip, uncompressed) and in the manifests beside them: `keepsake verify` must report
/// every one — exit 4, naming the backup and, where possible, the damaged file. Every run
/// damages the same offsets (seeded), and prints how many were found.
final class CorruptionTests: CorruptionTestCase {
    // MARK: Types

    /// How a damaged backup is handed to verify.
    enum VerifyMode: String {
        /// `verify --dest DIR`: the backup in its destination.
        case destination = "verify --dest"
        /// `verify FILE` with the manifest beside the archive.
        case loneWithSidecar = "verify FILE (manifest beside)"
        /// `verify FILE` alone: only the manifest inside the archive.
        case loneAlone = "verify FILE (no manifest beside)"
    }

    /// One damaged copy and what verify said about it.
    struct Trial {
        let backup: CorpusBackup
        let damage: Damage
        let verdict: VerifyVerdict

        /// The damage, where it landed, and what verify answered (for failure messages).
        var account: String {
            "\(backup.label) \(damage) — \(backup.locate(damage)) — \(verdict.summary)"
        }
    }

    // MARK: Baseline

    func testPristineCorpusVerifies() throws {
        for backup in try corpusBackups() {
            let dest = try stage(backup, damage: nil, in: path("pristine-\(backup.tree.name)-\(backup.compression)"))
            let verdict = try verifyVerdict(["--dest", dest], backup: backup)
            XCTAssertEqual(verdict.outcome.exitCode, 0, "\(backup.label) must verify before it is damaged:\n\(verdict.outcome)")
            XCTAssertEqual(verdict.report?["intact"] as? Bool, true, "\(backup.label):\n\(verdict.outcome)")
        }
    }

    // MARK: Bit flips

    /// 216 single-bit flips, 36 in each of the six archives (uniform offsets).
    // test-tag(plain-only): 216 flips; the flips of lone archives and the bit-flip restores feed flipped archives to a sanitized binary
    func testEveryArchiveBitFlipIsDetected() throws {
        var generator = SeededGenerator(seed: 0xA5C1_1F11_0000_0001)
        let plan = try corpusBackups().flatMap { backup in
            Damage.randomFlips(36, in: .archive, size: backup.archive.count, using: &generator).map { (backup, $0) }
        }
        let trials = try runTrials(plan, mode: .destination)
        report("bit flips", trials)
        reportUncompressedRegions(trials)
        assertEveryTrialDetected(trials, what: "archive bit flips")
        assertUncompressedContentFlipsNameTheirFile(trials)
    }

    /// 108 single-bit flips in the text of the manifests beside the archives, each compressed
    /// again soundly (what a hand edit leaves): per manifest 12 at uniform offsets (mostly
    /// entry lines) and 6 in the summary line.
    func testEveryManifestBitFlipIsDetected() throws {
        var generator = SeededGenerator(seed: 0xA5C1_1F11_0000_0002)
        let plan = try corpusBackups().flatMap { backup in
            (Damage.randomFlips(12, in: .manifest, size: backup.manifest.count, using: &generator)
                + Damage.randomFlips(6, in: .manifest, range: backup.summaryLineRange, using: &generator)).map { (backup, $0) }
        }
        let trials = try runTrials(plan, mode: .destination)
        report("manifest bit flips", trials)
        let summary = trials.filter { isInSummaryLine($0) }
        let entries = trials.filter { !isInSummaryLine($0) }
        printReport("manifest bit flips by line", [
            "summary line: \(summary.filter(\.verdict.detected).count)/\(summary.count) detected",
            "entry lines:  \(entries.filter(\.verdict.detected).count)/\(entries.count) detected, "
                + "\(entries.filter { !$0.verdict.damagedFiles.isEmpty }.count) attributed to a specific file",
        ])
        assertEveryTrialDetected(trials, what: "manifest bit flips")
    }

    /// 96 single-bit flips in the compressed bytes of the manifests as stored: per manifest
    /// 12 at uniform offsets and 4 in the frame that holds the summary line. A flip the
    /// reference decoder ignores (it decodes to the identical manifest) changes nothing any
    /// reader gets: counted, not required.
    func testEveryStoredManifestBitFlipIsDetected() throws {
        var generator = SeededGenerator(seed: 0xA5C1_1F11_0000_0005)
        let plan = try corpusBackups().flatMap { backup in
            (Damage.randomFlips(12, in: .storedManifest, size: backup.storedManifest.count, using: &generator)
                + Damage.randomFlips(4, in: .storedManifest, range: backup.summaryFrameRange, using: &generator)).map { (backup, $0) }
        }
        let trials = try runTrials(plan, mode: .destination)
        report("stored manifest bit flips", trials)
        assertEveryMeaningfulTrialDetected(trials, what: "stored manifest bit flips")
    }

    /// Flips in a lone archive file, verified directly (`verify FILE`): 48 with the manifest
    /// beside it, 48 with only the manifest inside the archive.
    func testEveryBitFlipInALoneArchiveFileIsDetected() throws {
        var generator = SeededGenerator(seed: 0xA5C1_1F11_0000_0003)
        for mode in [VerifyMode.loneWithSidecar, .loneAlone] {
            let plan = try corpusBackups().flatMap { backup in
                Damage.randomFlips(8, in: .archive, size: backup.archive.count, using: &generator).map { (backup, $0) }
            }
            let trials = try runTrials(plan, mode: mode)
            report("lone archive bit flips, \(mode.rawValue)", trials)
            // Alone, an uncompressed archive's padding carries no information: a flip there
            // changes nothing a restore produces, and only the archive SHA-256 recorded in the
            // manifest beside it can notice it. The same holds for a flip in a compressed archive
            // that the reference decompressor turns into the identical tar stream (bits of a zstd
            // frame its decoder does not use). Those flips are counted, not required.
            let meaningless = mode == .loneAlone ? trials.filter { trial in
                if decodesIdentically(trial.backup, trial.damage) { return true }
                guard case .bitFlip(let offset, _) = trial.damage.kind, let layout = trial.backup.layout else { return false }
                switch layout.region(at: offset) {
                case .padding, .endOfArchive: return true
                case .paxHeader(_, let part): return part == "padding"
                default: return false
                }
            } : []
            if !meaningless.isEmpty {
                print("   \(meaningless.count) flips changed nothing a reader gets (tar padding, or a compressed archive that decodes to the same tar stream; detectable only with the manifest beside): "
                      + "\(meaningless.filter(\.verdict.detected).count) detected anyway")
            }
            let required = trials.filter { trial in !meaningless.contains { $0.damage.description == trial.damage.description && $0.backup.label == trial.backup.label } }
            assertEveryTrialDetected(required, what: "lone archive bit flips, \(mode.rawValue)")
        }
    }

    // MARK: Truncations

    /// Per backup: 8 archive truncations and 4 manifest truncations at random lengths, 2
    /// manifest cuts at line boundaries (after the summary line; before the last entry),
    /// which leave a manifest that parses (those three compressed again soundly), 3 cuts of
    /// the compressed manifest as stored at random lengths, and one after the summary line's
    /// frame, which leaves a sound zstd stream.
    func testEveryTruncationIsDetected() throws {
        var generator = SeededGenerator(seed: 0xA5C1_1F11_0000_0004)
        let plan = try corpusBackups().flatMap { backup -> [(CorpusBackup, Damage)] in
            let manifest = backup.manifest
            let lastLineStart = (manifest.dropLast().lastIndex(of: UInt8(ascii: "\n")) ?? 0) + 1
            let boundaries = [backup.summaryLineRange.upperBound, lastLineStart].map {
                Damage(target: .manifest, kind: .truncation(length: $0))
            }
            return (Damage.randomTruncations(8, in: .archive, size: backup.archive.count, using: &generator)
                + Damage.randomTruncations(4, in: .manifest, size: manifest.count, using: &generator)
                + boundaries
                + Damage.randomTruncations(3, in: .storedManifest, size: backup.storedManifest.count, using: &generator)
                + [Damage(target: .storedManifest, kind: .truncation(length: backup.summaryFrameRange.upperBound))]).map { (backup, $0) }
        }
        let trials = try runTrials(plan, mode: .destination)
        report("truncations", trials)
        // A cut that only removes the compressed manifest's seek table leaves every frame:
        // counted, not required.
        assertEveryMeaningfulTrialDetected(trials, what: "truncations")
    }

    /// Fails with every undetected trial, leaving out damage after which the reference
    /// decoder gives the identical bytes (no reader can tell; it is counted and printed).
    private func assertEveryMeaningfulTrialDetected(_ trials: [Trial], what: String) {
        let meaningless = trials.filter { decodesIdentically($0.backup, $0.damage) }
        if !meaningless.isEmpty {
            print("   \(meaningless.count) damages changed nothing a reader gets (they decode to the identical bytes): "
                  + "\(meaningless.filter(\.verdict.detected).count) detected anyway")
        }
        let meaninglessKeys = Set(meaningless.map { "\($0.backup.label) \($0.damage)" })
        assertEveryTrialDetected(trials.filter { !meaninglessKeys.contains("\($0.backup.label) \($0.damage)") }, what: what)
    }

    // MARK: Running trials

    /// Stages every planned damage in a fresh copy, verifies it in `mode`, and — for every
    /// twelfth trial in a destination, when detected — checks the plain-text output names the backup and
    /// the first damaged file too.
    private func runTrials(_ plan: [(CorpusBackup, Damage)], mode: VerifyMode) throws -> [Trial] {
        let started = Date()
        var trials: [Trial] = []
        for (index, (backup, damage)) in plan.enumerated() {
            let folder = path("trial-\(backup.tree.name)-\(backup.compression)-\(mode == .destination ? "dest" : "lone")")
            let verdict: VerifyVerdict
            switch mode {
            case .destination:
                let dest = try stage(backup, damage: damage, in: folder)
                verdict = try verifyVerdict(["--dest", dest], backup: backup)
                if index % 12 == 0 && verdict.detected { try assertTextNamesDamage(dest: dest, backup: backup, damage: damage, json: verdict) }
            case .loneWithSidecar, .loneAlone:
                try stage(backup, damage: damage, in: folder)
                if mode == .loneAlone { try? FileManager.default.removeItem(atPath: folder + "/" + backup.manifestName) }
                let archive = folder + "/" + backup.archiveName
                verdict = try verifyVerdict([archive], backup: backup, archivePath: archive,
                                            environment: ["KEEPSAKE_DEST": path("no-destination")])
            }
            trials.append(Trial(backup: backup, damage: damage, verdict: verdict))
        }
        print(String(format: "   (%d trials, %@, in %.1f s)", trials.count, mode.rawValue, Date().timeIntervalSince(started)))
        return trials
    }

    /// The text output (no `--json`) of a damaged backup names it, and its first damaged file.
    private func assertTextNamesDamage(dest: String, backup: CorpusBackup, damage: Damage, json: VerifyVerdict) throws {
        let outcome = try run(["verify", "--dest", dest])
        assertExit(outcome, 4, "\(backup.label) \(damage) (\(backup.locate(damage))), text output")
        XCTAssertTrue(outcome.combinedText.contains(backup.id), "the text output must name \(backup.id):\n\(outcome)")
        if let first = json.damagedFiles.first {
            XCTAssertTrue(outcome.combinedText.contains(first), "the text output must name \(first):\n\(outcome)")
        }
    }

    // MARK: Checking

    /// Fails with every undetected trial: the backup, the damage, where it landed and what
    /// verify printed (in full for the first few).
    private func assertEveryTrialDetected(_ trials: [Trial], what: String, file: StaticString = #filePath, line: UInt = #line) {
        let missed = trials.filter { !$0.verdict.detected }
        guard !missed.isEmpty else { return }
        let details = missed.enumerated().map { index, trial in
            trial.account + diagnose(trial.backup, trial.damage) + (index < 5 ? "\n" + trial.verdict.outcome.description : "")
        }
        XCTFail("\(missed.count) of \(trials.count) \(what) went undetected:\n" + details.joined(separator: "\n"),
                file: file, line: line)
    }

    /// A flip in a file's content in an uncompressed archive can be pinned on that file:
    /// verify must name exactly it.
    private func assertUncompressedContentFlipsNameTheirFile(_ trials: [Trial]) {
        for trial in trials {
            guard case .bitFlip(let offset, _) = trial.damage.kind, let layout = trial.backup.layout,
                  case .content(let path) = layout.region(at: offset), !path.hasPrefix(".keepsake/") else { continue }
            XCTAssertTrue(trial.verdict.damagedFiles.contains(path),
                          "verify must name the file whose content was hit: \(trial.account)")
        }
    }

    private func isInSummaryLine(_ trial: Trial) -> Bool {
        guard case .bitFlip(let offset, _) = trial.damage.kind else { return false }
        return trial.backup.summaryLineRange.contains(offset)
    }

    // MARK: Reporting

    /// Prints the detection and attribution counts, overall and per backup.
    private func report(_ what: String, _ trials: [Trial]) {
        let detected = trials.filter(\.verdict.detected).count
        let attributed = trials.filter { !$0.verdict.damagedFiles.isEmpty }.count
        print("\(what) detected: \(detected)/\(trials.count)")
        print("\(what) attributed to a specific file: \(attributed)/\(trials.count)")
        var lines: [String] = []
        for label in orderedLabels(trials) {
            let group = trials.filter { $0.backup.label == label }
            lines.append("\(label): \(group.filter(\.verdict.detected).count)/\(group.count) detected, "
                + "\(group.filter { !$0.verdict.damagedFiles.isEmpty }.count) attributed to a file")
        }
        for trial in trials where !trial.verdict.detected {
            lines.append("UNDETECTED " + trial.account + diagnose(trial.backup, trial.damage))
        }
        printReport("\(what) per backup", lines)
    }

    /// For uncompressed archives: detection and attribution by the tar region hit.
    private func reportUncompressedRegions(_ trials: [Trial]) {
        var groups: [String: [Trial]] = [:]
        for trial in trials where trial.backup.layout != nil {
            groups[trial.backup.bucket(trial.damage), default: []].append(trial)
        }
        printReport("uncompressed archives by region hit", groups.keys.sorted().map { region in
            let group = groups[region] ?? []
            return "\(region): \(group.filter(\.verdict.detected).count)/\(group.count) detected, "
                + "\(group.filter { !$0.verdict.damagedFiles.isEmpty }.count) attributed to a file"
        })
    }

    private func orderedLabels(_ trials: [Trial]) -> [String] {
        var seen: [String] = []
        for trial in trials where !seen.contains(trial.backup.label) { seen.append(trial.backup.label) }
        return seen
    }
}
