import BackupCore
import Foundation
@testable import KeepsakeCLI
import KeepsakeConfig
import KeepsakeModel
import XCTest

/// `keepsake backup`'s and `prune`'s options and a profile's keys obey one set of rules
/// (`BackupSettingRules`, `RetentionPolicy.count` and `.tagList`): at each rule's edges, and for every kind
/// of bad tag, the command line accepts exactly what a profile accepts. (They had drifted:
/// `--full-every` took any number while `full-every` stopped at 1,000,000, and `--keep-daily -1`
/// meant every day while `keep-daily = -1` was refused.)
final class BackupSettingAgreementTests: InProcessTestCase {
    // MARK: Helpers

    /// Whether `keepsake backup --dry-run` takes `arguments`; a refusal names the option.
    private func commandLineAccepts(_ arguments: [String], naming option: String,
                                    file: StaticString = #filePath, line: UInt = #line) throws -> Bool {
        try makeTree(path("src"), ["a.txt": "a\n"])
        let run = keepsake(["backup", "--dry-run", path("src"), "--dest", path("dest")] + arguments)
        XCTAssertTrue([.success, .usage].contains(run.code), "\(arguments): \(run)", file: file, line: line)
        if run.code == .usage {
            XCTAssertTrue(run.stderr.contains(option), "the refusal names \(option):\n\(run)", file: file, line: line)
        }
        return run.code == .success
    }

    /// Whether a profile with `setting` (a line of TOML) loads; a refusal names the key.
    private func profileAccepts(_ setting: String, naming key: String,
                                file: StaticString = #filePath, line: UInt = #line) -> Bool {
        do {
            _ = try ConfigFile(text: "[profiles.p]\nsources = [\"/a\"]\n\(setting)\n", path: path("config.toml"), home: home)
            return true
        } catch {
            XCTAssertTrue(error.description.contains("'\(key)'"), "the refusal names '\(key)': \(error)", file: file, line: line)
            return false
        }
    }

    // MARK: Tests

    func testRangesAreTheSameOnTheCommandLineAndInAProfile() throws {
        let rules: [(option: String, key: String, range: ClosedRange<Int>)] = [
            ("--threads", "threads", BackupSettingRules.threads),
            ("--readers", "readers", BackupSettingRules.readers),
            ("--full-every", "full-every", BackupSettingRules.fullEvery),
        ]
        for rule in rules {
            for value in [rule.range.lowerBound - 1, rule.range.lowerBound, rule.range.upperBound, rule.range.upperBound + 1] {
                let expected = rule.range.contains(value)
                XCTAssertEqual(try commandLineAccepts([rule.option, "\(value)"], naming: rule.option), expected,
                               "\(rule.option) \(value)")
                XCTAssertEqual(profileAccepts("\(rule.key) = \(value)", naming: rule.key), expected, "\(rule.key) = \(value)")
            }
        }
    }

    func testRetentionCountsAreTheSameOnTheCommandLineAndInAProfile() throws {
        for (given, toml) in [("-2", "-2"), ("-1", "-1"), ("1", "1"), ("999999", "999999"), ("unlimited", "\"unlimited\""),
                              ("all", "\"all\"")] {
            let expected = RetentionPolicy.count(word: given) ?? Int(given).flatMap { RetentionPolicy.count($0) }
            let run = keepsake(["prune", "--dry-run", "--dest", path("dest"), "--keep-daily", given])
            XCTAssertEqual(run.code == .success, expected != nil, "--keep-daily \(given): \(run)")
            if expected == nil { XCTAssertTrue(run.stderr.contains("--keep-daily"), "\(run)") }
            XCTAssertEqual(profileAccepts("[profiles.p.retention]\nkeep-daily = \(toml)", naming: "keep-daily"), expected != nil,
                           "keep-daily = \(toml)")
        }
    }

    func testTagsAreJudgedAlike() throws {
        for (tag, toml) in [("nightly", "\"nightly\""), ("", "\"\""), ("a,b", "\"a,b\""), ("a\nb", "\"a\\nb\"")] {
            let expected = BackupSettingRules.tagProblem(tag) == nil
            XCTAssertEqual(try commandLineAccepts(["--tag", tag], naming: "--tag"), expected, "--tag \(tag.debugDescription)")
            XCTAssertEqual(profileAccepts("tags = [\(toml)]", naming: "tags"), expected, "tags = [\(toml)]")
        }
    }

    func testKeepTagListsAreReadAlike() throws {
        // (They had drifted: a profile took "db, nightly" and the command line refused the space.)
        for (given, expected) in [("db", ["db"]), ("db,nightly", ["db", "nightly"]), ("db, nightly", ["db", "nightly"]),
                                  ("", [""]), (" ", [""]), ("db,", nil), (",", nil), ("a,,b", nil)] as [(String, [String]?)] {
            XCTAssertEqual(RetentionPolicy.tagList(given), expected, given.debugDescription)
            let run = keepsake(["prune", "--dry-run", "--dest", path("dest"), "--keep-tag", given])
            XCTAssertEqual(run.code == .success, expected != nil, "--keep-tag \(given.debugDescription): \(run)")
            if expected == nil { XCTAssertTrue(run.stderr.contains("--keep-tag"), "\(run)") }
            do {
                let config = try ConfigFile(text: "[profiles.p]\nsources = [\"/a\"]\n[profiles.p.retention]\nkeep-tag = [\"\(given)\"]\n",
                                            path: path("config.toml"), home: home)
                XCTAssertEqual(try config.profile(named: "p").retention?.keepTags, expected.map { [$0] }, "keep-tag = [\(given.debugDescription)]")
            } catch {
                XCTAssertNil(expected, "keep-tag = [\(given.debugDescription)]: \(error)")
                XCTAssertTrue(error.description.contains("'keep-tag'"), "the refusal names 'keep-tag': \(error)")
            }
        }
    }

    func testFolderMarkersAreJudgedAlike() throws {
        for name in [".nobackup", "", "dir/.nobackup"] {
            let expected = BackupSettingRules.markerProblem(name) == nil
            XCTAssertEqual(try commandLineAccepts(["--exclude-if-present", name], naming: "--exclude-if-present"), expected,
                           "--exclude-if-present \(name.debugDescription)")
            XCTAssertEqual(profileAccepts("exclude-if-present = [\"\(name)\"]", naming: "exclude-if-present"), expected,
                           "exclude-if-present = [\(name.debugDescription)]")
        }
    }
}
