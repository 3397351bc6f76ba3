import Foundation
@testable import KeepsakeModel
import XCTest
@testable import BackupCore

final class RetentionPolicyTests: KeepsakeTestCase {
    // MARK: Fixtures

    private static let utc: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .gmt
        return calendar
    }()

    /// A moment in UTC (or in `calendar`'s time zone).
    private func date(
        _ year: Int, _ month: Int, _ day: Int, _ hour: Int = 0, _ minute: Int = 0, _ second: Int = 0,
        calendar: Calendar = RetentionPolicyTests.utc, file: StaticString = #filePath, line: UInt = #line
    ) throws -> Date {
        let components = DateComponents(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        return try XCTUnwrap(calendar.date(from: components), "\(components)", file: file, line: line)
    }

    /// A candidate whose id is its own UTC date, `YYYY-MM-DD HH:MM`.
    private func backup(
        _ year: Int, _ month: Int, _ day: Int, _ hour: Int = 0, _ minute: Int = 0, tags: [String] = [],
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> RetentionCandidate {
        let id = String(format: "%04d-%02d-%02d %02d:%02d", year, month, day, hour, minute)
        return RetentionCandidate(id: id, date: try date(year, month, day, hour, minute, file: file, line: line), tags: tags)
    }

    /// One backup every hour on the hour for `days` days from `start` (00:00 UTC).
    private func hourly(from start: Date, days: Int) -> [RetentionCandidate] {
        (0..<(days * 24)).map { hour in
            let when = start.addingTimeInterval(Double(hour) * 3600)
            let parts = Self.utc.dateComponents([.year, .month, .day, .hour], from: when)
            let id = String(format: "%04d-%02d-%02d %02d:00", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0, parts.hour ?? 0)
            return RetentionCandidate(id: id, date: when)
        }
    }

    /// A far-away "now", so that no backup is in the future unless a test says so.
    private let later = Date(timeIntervalSince1970: 4_000_000_000)

    private func plan(
        _ candidates: [RetentionCandidate], _ policy: RetentionPolicy,
        calendar: Calendar = RetentionPolicyTests.utc, now: Date? = nil
    ) -> [RetentionDecision] {
        RetentionPlanner.plan(candidates, policy: policy, calendar: calendar, now: now ?? later)
    }

    private func kept(_ decisions: [RetentionDecision]) -> [String] {
        decisions.filter(\.keep).map(\.id)
    }

    private func reasons(_ decisions: [RetentionDecision]) -> [String: [String]] {
        Dictionary(uniqueKeysWithValues: decisions.filter(\.keep).map { ($0.id, $0.reasons) })
    }

    // MARK: Basics

    func testAnEmptyListGivesNoDecisions() {
        XCTAssertEqual(plan([], RetentionPolicy(keepLast: 3)), [])
        XCTAssertEqual(plan([], RetentionPolicy()), [])
        XCTAssertFalse(RetentionPlanner.keepsNothing([]))
    }

    func testEmptyPolicyKeepsEverything() throws {
        let backups = [try backup(2024, 1, 1), try backup(2024, 1, 2)]
        for policy in [RetentionPolicy(), RetentionPolicy(keepLast: 0, keepDaily: 0),
                       RetentionPolicy(keepWithin: DurationSpec())] {
            XCTAssertTrue(policy.isEmpty, "\(policy)")
            XCTAssertEqual(plan(backups, policy), [
                RetentionDecision(id: "2024-01-02 00:00", keep: true, reasons: ["no policy"]),
                RetentionDecision(id: "2024-01-01 00:00", keep: true, reasons: ["no policy"]),
            ])
        }
    }

    func testIsEmpty() throws {
        XCTAssertFalse(RetentionPolicy(keepLast: 1).isEmpty)
        XCTAssertFalse(RetentionPolicy(keepYearly: RetentionPolicy.unlimited).isEmpty)
        XCTAssertFalse(RetentionPolicy(keepWithin: try DurationSpec(parsing: "1h")).isEmpty)
        XCTAssertFalse(RetentionPolicy(keepTags: [["a"]]).isEmpty)
        XCTAssertFalse(RetentionPolicy(keepTags: [[]]).isEmpty)
        XCTAssertTrue(RetentionPolicy(keepHourly: 0, keepWeekly: nil).isEmpty)
    }

    func testDecisionsComeNewestFirstWhateverTheInputOrder() throws {
        let backups = [try backup(2024, 1, 2), try backup(2024, 1, 5), try backup(2024, 1, 1), try backup(2024, 1, 3)]
        let decisions = plan(backups, RetentionPolicy(keepLast: 2))
        XCTAssertEqual(decisions.map(\.id), ["2024-01-05 00:00", "2024-01-03 00:00", "2024-01-02 00:00", "2024-01-01 00:00"])
        XCTAssertEqual(decisions.map(\.keep), [true, true, false, false])
        XCTAssertEqual(decisions.map(\.reasons), [["last backup #1"], ["last backup #2"], [], []])
    }

    // MARK: keepLast

    func testKeepLast() throws {
        let backups = try (1...6).map { try backup(2024, 5, $0, 10) }
        XCTAssertEqual(kept(plan(backups, RetentionPolicy(keepLast: 3))),
                       ["2024-05-06 10:00", "2024-05-05 10:00", "2024-05-04 10:00"])
        XCTAssertEqual(kept(plan(backups, RetentionPolicy(keepLast: 10))).count, 6)
        XCTAssertEqual(kept(plan(backups, RetentionPolicy(keepLast: RetentionPolicy.unlimited))).count, 6)
    }

    func testKeepLastCountsSeveralBackupsInOneHour() throws {
        let backups = [try backup(2024, 5, 1, 10, 5), try backup(2024, 5, 1, 10, 10), try backup(2024, 5, 1, 10, 15)]
        XCTAssertEqual(kept(plan(backups, RetentionPolicy(keepLast: 2))), ["2024-05-01 10:15", "2024-05-01 10:10"])
    }

    // MARK: Ties

    func testBackupsWithTheSameDateKeepTheirInputOrder() throws {
        let when = try date(2024, 5, 1, 10)
        let backups = ["b", "a", "c"].map { RetentionCandidate(id: $0, date: when) }
        let decisions = plan(backups, RetentionPolicy(keepLast: 1))
        XCTAssertEqual(decisions.map(\.id), ["b", "a", "c"])
        XCTAssertEqual(kept(decisions), ["b"])
        XCTAssertEqual(kept(plan(backups.reversed(), RetentionPolicy(keepLast: 1))), ["c"])
    }

    func testTiedBackupsShareOneDailyBucket() throws {
        let when = try date(2024, 5, 1, 10)
        let backups = [RetentionCandidate(id: "x", date: when), RetentionCandidate(id: "y", date: when),
                       try backup(2024, 4, 30, 9)]
        XCTAssertEqual(reasons(plan(backups, RetentionPolicy(keepDaily: 2))),
                       ["x": ["daily backup #1"], "2024-04-30 09:00": ["daily backup #2"]])
    }

    // MARK: Calendar buckets

    func testDailyKeepsTheNewestBackupOfEachDayWithBackups() throws {
        let backups = [
            try backup(2024, 5, 1, 8), try backup(2024, 5, 2, 8), try backup(2024, 5, 2, 11),
            try backup(2024, 5, 4, 9), try backup(2024, 5, 5, 10),
        ]
        // 3 May has no backup, so it is not counted: the 4 days are 5, 4, 2 and 1 May.
        XCTAssertEqual(kept(plan(backups, RetentionPolicy(keepDaily: 4))),
                       ["2024-05-05 10:00", "2024-05-04 09:00", "2024-05-02 11:00", "2024-05-01 08:00"])
        XCTAssertEqual(kept(plan(backups, RetentionPolicy(keepDaily: 3))),
                       ["2024-05-05 10:00", "2024-05-04 09:00", "2024-05-02 11:00"])
    }

    func testWeeksAreISOWeeksStartingOnMonday() throws {
        // Sunday 3 March and Monday 4 March 2024 are in different ISO weeks; Monday–Sunday 4–10 March is one.
        let backups = [try backup(2024, 3, 3, 12), try backup(2024, 3, 4, 12), try backup(2024, 3, 10, 12)]
        XCTAssertEqual(kept(plan(backups, RetentionPolicy(keepWeekly: 2))), ["2024-03-10 12:00", "2024-03-03 12:00"])
        var sundayFirst = Self.utc
        sundayFirst.firstWeekday = 1
        sundayFirst.minimumDaysInFirstWeek = 1
        XCTAssertEqual(kept(plan(backups, RetentionPolicy(keepWeekly: 2), calendar: sundayFirst)),
                       ["2024-03-10 12:00", "2024-03-03 12:00"], "weeks stay ISO whatever the calendar's first weekday")
    }

    func testISOWeekAcrossTheTurnOfTheYear() throws {
        // 30 Dec 2024 (Monday) to 5 Jan 2025 (Sunday) is ISO week 1 of 2025.
        let backups = [try backup(2024, 12, 29, 12), try backup(2024, 12, 30, 12), try backup(2025, 1, 5, 12)]
        XCTAssertEqual(reasons(plan(backups, RetentionPolicy(keepWeekly: 5))), [
            "2025-01-05 12:00": ["weekly backup #1"],
            "2024-12-29 12:00": ["weekly backup #2"],
        ])
        XCTAssertEqual(kept(plan(backups, RetentionPolicy(keepYearly: 1, keepTags: [["never"]]))), ["2025-01-05 12:00"])
    }

    func testMonthlyAndYearly() throws {
        let backups = [
            try backup(2022, 12, 31, 23), try backup(2023, 1, 15), try backup(2023, 1, 31, 22),
            try backup(2023, 2, 1, 1), try backup(2023, 2, 20),
        ]
        XCTAssertEqual(kept(plan(backups, RetentionPolicy(keepMonthly: 2))), ["2023-02-20 00:00", "2023-01-31 22:00"])
        XCTAssertEqual(kept(plan(backups, RetentionPolicy(keepYearly: 2))), ["2023-02-20 00:00", "2022-12-31 23:00"])
    }

    func testHourlyBuckets() throws {
        let backups = [try backup(2024, 5, 1, 10, 0), try backup(2024, 5, 1, 10, 59), try backup(2024, 5, 1, 11, 0),
                       try backup(2024, 5, 1, 12, 30)]
        XCTAssertEqual(kept(plan(backups, RetentionPolicy(keepHourly: 3))),
                       ["2024-05-01 12:30", "2024-05-01 11:00", "2024-05-01 10:59"])
    }

    func testBucketsFollowTheCalendarsTimeZone() throws {
        let backups = [try backup(2024, 3, 4, 12), try backup(2024, 3, 5, 22), try backup(2024, 3, 6, 1)]
        XCTAssertEqual(kept(plan(backups, RetentionPolicy(keepDaily: 2))), ["2024-03-06 01:00", "2024-03-05 22:00"])
        // At UTC−5, 22:00Z and 01:00Z the next day are both on 5 March.
        var eastern = Calendar(identifier: .gregorian)
        eastern.timeZone = try XCTUnwrap(TimeZone(secondsFromGMT: -5 * 3600))
        XCTAssertEqual(kept(plan(backups, RetentionPolicy(keepDaily: 2), calendar: eastern)),
                       ["2024-03-06 01:00", "2024-03-04 12:00"])
    }

    // MARK: Oldest backup

    func testLeftoverCountKeepsTheOldestBackup() throws {
        let backups = [try backup(2024, 5, 1, 8), try backup(2024, 5, 1, 9), try backup(2024, 5, 2, 9)]
        XCTAssertEqual(reasons(plan(backups, RetentionPolicy(keepDaily: 3))), [
            "2024-05-02 09:00": ["daily backup #1"],
            "2024-05-01 09:00": ["daily backup #2"],
            "2024-05-01 08:00": ["oldest daily backup #3"],
        ])
        XCTAssertEqual(kept(plan(backups, RetentionPolicy(keepDaily: 2))), ["2024-05-02 09:00", "2024-05-01 09:00"],
                       "no count left: the oldest is not kept")
    }

    func testUnlimitedKeepsOnePerPeriodAndTheOldest() throws {
        let backups = [try backup(2024, 5, 1, 8), try backup(2024, 5, 1, 9), try backup(2024, 5, 1, 10),
                       try backup(2024, 5, 2, 9), try backup(2024, 5, 3, 9), try backup(2024, 5, 3, 10)]
        XCTAssertEqual(reasons(plan(backups, RetentionPolicy(keepDaily: RetentionPolicy.unlimited))), [
            "2024-05-03 10:00": ["daily backup #1"],
            "2024-05-02 09:00": ["daily backup #2"],
            "2024-05-01 10:00": ["daily backup #3"],
            "2024-05-01 08:00": ["oldest daily backup #4"],
        ])
        XCTAssertEqual(kept(plan(backups, RetentionPolicy(keepDaily: -7))).count, 4, "other negative counts act as unlimited")
    }

    // MARK: Ten days of hourly backups

    func testTenDaysOfHourlyBackups() throws {
        // 25 Feb (Sunday, ISO week 8) to 5 Mar 2024 (Tuesday, week 10), every hour: 240 backups.
        let backups = hourly(from: try date(2024, 2, 25), days: 10)
        XCTAssertEqual(backups.count, 240)
        let policy = RetentionPolicy(keepHourly: 24, keepDaily: 7, keepWeekly: 4, keepMonthly: 12)
        let decisions = plan(backups.shuffled(), policy)

        var expected: [String: [String]] = [:]
        for hour in 0..<24 {
            expected[String(format: "2024-03-05 %02d:00", hour)] = ["hourly backup #\(24 - hour)"]
        }
        expected["2024-03-05 23:00"] = ["hourly backup #1", "daily backup #1", "weekly backup #1", "monthly backup #1"]
        expected["2024-03-04 23:00"] = ["daily backup #2"]
        expected["2024-03-03 23:00"] = ["daily backup #3", "weekly backup #2"]
        expected["2024-03-02 23:00"] = ["daily backup #4"]
        expected["2024-03-01 23:00"] = ["daily backup #5"]
        expected["2024-02-29 23:00"] = ["daily backup #6", "monthly backup #2"]
        expected["2024-02-28 23:00"] = ["daily backup #7"]
        expected["2024-02-25 23:00"] = ["weekly backup #3"]
        // Weekly and monthly have counts left after their oldest period: the oldest backup stays.
        expected["2024-02-25 00:00"] = ["oldest weekly backup #4", "oldest monthly backup #3"]

        XCTAssertEqual(reasons(decisions), expected)
        XCTAssertEqual(kept(decisions).count, 32)
        XCTAssertEqual(decisions.count, 240)
        XCTAssertEqual(decisions.map(\.id), backups.reversed().map(\.id), "newest first")
    }

    func testTenDaysOfHourlyBackupsWithSmallCounts() throws {
        let backups = hourly(from: try date(2024, 2, 25), days: 10)
        let policy = RetentionPolicy(keepHourly: 3, keepDaily: 2, keepWeekly: 2, keepMonthly: 1)
        XCTAssertEqual(reasons(plan(backups, policy)), [
            "2024-03-05 23:00": ["hourly backup #1", "daily backup #1", "weekly backup #1", "monthly backup #1"],
            "2024-03-05 22:00": ["hourly backup #2"],
            "2024-03-05 21:00": ["hourly backup #3"],
            "2024-03-04 23:00": ["daily backup #2"],
            "2024-03-03 23:00": ["weekly backup #2"],
        ])
    }

    // MARK: keepWithin

    func testKeepWithinCountsBackFromTheNewestBackupNotFromNow() throws {
        let newest = try date(2024, 3, 5, 12)
        let backups = [
            RetentionCandidate(id: "newest", date: newest),
            RetentionCandidate(id: "1d", date: newest.addingTimeInterval(-24 * 3600)),
            RetentionCandidate(id: "47h59m", date: newest.addingTimeInterval(-(48 * 3600 - 60))),
            RetentionCandidate(id: "48h", date: newest.addingTimeInterval(-48 * 3600)),
            RetentionCandidate(id: "3d", date: newest.addingTimeInterval(-72 * 3600)),
        ]
        let policy = RetentionPolicy(keepWithin: try DurationSpec(parsing: "2d"))
        // A year after the newest backup, keep-within still keeps the last two days of backups.
        let decisions = plan(backups, policy, now: newest.addingTimeInterval(365 * 86400))
        XCTAssertEqual(kept(decisions), ["newest", "1d", "47h59m"], "exactly 2d before the newest is outside")
        XCTAssertEqual(decisions.first?.reasons, ["within 2d"])
    }

    func testKeepWithinIgnoresFutureBackupsWhenFindingTheNewest() throws {
        let now = try date(2024, 3, 5, 12)
        let backups = [
            RetentionCandidate(id: "future", date: now.addingTimeInterval(365 * 86400)),
            RetentionCandidate(id: "newest", date: now.addingTimeInterval(-3600)),
            RetentionCandidate(id: "12h", date: now.addingTimeInterval(-13 * 3600)),
            RetentionCandidate(id: "2d", date: now.addingTimeInterval(-49 * 3600)),
        ]
        let policy = RetentionPolicy(keepWithin: try DurationSpec(parsing: "1d"))
        XCTAssertEqual(kept(plan(backups, policy, now: now)), ["future", "newest", "12h"])
        // Had the clock been a year ahead, the future backup would be the newest.
        XCTAssertEqual(kept(plan(backups, policy, now: now.addingTimeInterval(400 * 86400))), ["future"])
        // When every backup is in the future, all of them are within.
        XCTAssertEqual(kept(plan(backups, policy, now: try date(2000, 1, 1))).count, 4)
    }

    func testNowDefaultsToTheCurrentTime() throws {
        let backups = [RetentionCandidate(id: "far future", date: Date().addingTimeInterval(100 * 365 * 86400)),
                       RetentionCandidate(id: "past", date: try date(2020, 1, 1))]
        let policy = RetentionPolicy(keepWithin: try DurationSpec(parsing: "1d"))
        XCTAssertEqual(kept(RetentionPlanner.plan(backups, policy: policy, calendar: Self.utc)), ["far future", "past"])
    }

    func testKeepWithinMonthsAndYears() throws {
        let backups = [try backup(2024, 3, 31, 12), try backup(2024, 2, 29, 13), try backup(2024, 2, 29, 12),
                       try backup(2023, 3, 31, 13), try backup(2023, 3, 31, 12)]
        XCTAssertEqual(kept(plan(backups, RetentionPolicy(keepWithin: try DurationSpec(parsing: "1m")))),
                       ["2024-03-31 12:00", "2024-02-29 13:00"])
        XCTAssertEqual(kept(plan(backups, RetentionPolicy(keepWithin: try DurationSpec(parsing: "1y")))),
                       ["2024-03-31 12:00", "2024-02-29 13:00", "2024-02-29 12:00", "2023-03-31 13:00"])
    }

    // MARK: keepTags

    func testKeepTagKeepsEveryBackupWithAllTagsOfAList() throws {
        let backups = [
            try backup(2024, 5, 5, tags: ["daily"]),
            try backup(2024, 5, 4, tags: ["db", "nightly"]),
            try backup(2024, 5, 3, tags: ["db"]),
            try backup(2024, 5, 2, tags: ["nightly", "daily", "db"]),
            try backup(2024, 5, 1),
        ]
        XCTAssertEqual(reasons(plan(backups, RetentionPolicy(keepTags: [["db", "nightly"]]))), [
            "2024-05-04 00:00": ["has tags [db, nightly]"],
            "2024-05-02 00:00": ["has tags [db, nightly]"],
        ])
        XCTAssertEqual(reasons(plan(backups, RetentionPolicy(keepTags: [["daily"], ["db", "nightly"]]))), [
            "2024-05-05 00:00": ["has tags [daily]"],
            "2024-05-04 00:00": ["has tags [db, nightly]"],
            "2024-05-02 00:00": ["has tags [daily]", "has tags [db, nightly]"],
        ])
    }

    func testEmptyTagMeansUntagged() throws {
        let backups = [try backup(2024, 5, 2, tags: ["daily"]), try backup(2024, 5, 1)]
        XCTAssertEqual(reasons(plan(backups, RetentionPolicy(keepTags: [[""]]))), ["2024-05-01 00:00": ["has no tags"]])
        XCTAssertEqual(kept(plan(backups, RetentionPolicy(keepTags: [["", "daily"]]))), [], "untagged and tagged at once: nothing")
        XCTAssertEqual(kept(plan(backups, RetentionPolicy(keepTags: [[]]))).count, 2, "an empty list matches all, as in restic")
    }

    func testTagsAreNotCountedAgainstBuckets() throws {
        let backups = [try backup(2024, 5, 3, tags: ["keep"]), try backup(2024, 5, 2), try backup(2024, 5, 1, tags: ["keep"])]
        XCTAssertEqual(reasons(plan(backups, RetentionPolicy(keepLast: 2, keepTags: [["keep"]]))), [
            "2024-05-03 00:00": ["last backup #1", "has tags [keep]"],
            "2024-05-02 00:00": ["last backup #2"],
            "2024-05-01 00:00": ["has tags [keep]"],
        ])
    }

    // MARK: Keeping nothing

    func testAPolicyThatKeepsNothingIsReported() throws {
        let backups = [try backup(2024, 5, 2, tags: ["a"]), try backup(2024, 5, 1)]
        let decisions = plan(backups, RetentionPolicy(keepTags: [["missing"]]))
        XCTAssertEqual(decisions.map(\.keep), [false, false])
        XCTAssertTrue(RetentionPlanner.keepsNothing(decisions))
        XCTAssertFalse(RetentionPlanner.keepsNothing(plan(backups, RetentionPolicy(keepTags: [["a"]]))))
    }

    func testCountedRulesAlwaysKeepTheNewest() throws {
        let backups = [try backup(2020, 1, 1), try backup(2024, 5, 1)]
        for policy in [RetentionPolicy(keepLast: 1), RetentionPolicy(keepHourly: 1), RetentionPolicy(keepYearly: 1),
                       RetentionPolicy(keepWithin: try DurationSpec(parsing: "1h"))] {
            XCTAssertEqual(kept(plan(backups, policy)), ["2024-05-01 00:00"], "\(policy)")
        }
    }

    // MARK: Several rules

    func testOneBackupCanSatisfyEveryRuleAndListsAllReasons() throws {
        let backups = [try backup(2024, 5, 5, 23, tags: ["db"]), try backup(2024, 5, 5, 22), try backup(2024, 4, 20, 12)]
        let policy = RetentionPolicy(keepLast: 1, keepHourly: 2, keepDaily: 2, keepWeekly: 1, keepMonthly: 1, keepYearly: 1,
                                     keepWithin: try DurationSpec(parsing: "1d"), keepTags: [["db"]])
        XCTAssertEqual(reasons(plan(backups, policy)), [
            "2024-05-05 23:00": ["last backup #1", "hourly backup #1", "daily backup #1", "weekly backup #1",
                                 "monthly backup #1", "yearly backup #1", "within 1d", "has tags [db]"],
            "2024-05-05 22:00": ["hourly backup #2", "within 1d"],
            "2024-04-20 12:00": ["daily backup #2"],
        ])
    }

    func testRulesAreOredNotIntersected() throws {
        let backups = [try backup(2024, 5, 3), try backup(2024, 5, 2), try backup(2024, 4, 1)]
        XCTAssertEqual(kept(plan(backups, RetentionPolicy(keepLast: 1, keepMonthly: 2))),
                       ["2024-05-03 00:00", "2024-04-01 00:00"])
    }

    // MARK: Amending

    func testKeepingBecauseAmendsADecision() {
        let removed = RetentionDecision(id: "b", keep: false, reasons: [])
        let amended = removed.keeping(because: "base of c")
        XCTAssertEqual(amended, RetentionDecision(id: "b", keep: true, reasons: ["base of c"]))
        XCTAssertEqual(amended.keeping(because: "base of d").reasons, ["base of c", "base of d"])
        XCTAssertEqual(amended.keeping(because: "base of c"), amended, "the same reason is not repeated")
        let kept = RetentionDecision(id: "a", keep: true, reasons: ["daily backup #1"])
        XCTAssertEqual(kept.keeping(because: "base of c").reasons, ["daily backup #1", "base of c"])
    }

    // MARK: Description

    func testPolicyDescription() throws {
        XCTAssertEqual(RetentionPolicy().description, "keep everything (no rules)")
        XCTAssertEqual(RetentionPolicy(keepLast: 1, keepDaily: 7, keepWeekly: RetentionPolicy.unlimited).description,
                       "keep 1 latest, 7 daily, all weekly backups")
        XCTAssertEqual(
            RetentionPolicy(keepMonthly: 6, keepWithin: try DurationSpec(parsing: "2w"), keepTags: [["a", "b"], ["c"]]).description,
            "keep 6 monthly backups and all backups within 14d of the newest and all backups with tags [a, b] or [c]"
        )
    }

    // MARK: restic's documented examples

    /// restic's docs: one backup every Sunday at 11:00 for 12 weeks; `forget --keep-daily 4` keeps the
    /// last four and removes the other eight.
    func testResticExampleTwelveSundaysKeepDaily4() throws {
        let table: [(String, Int, Int)] = [
            ("0a1f9759", 9, 1), ("46cfe4d5", 9, 8), ("f6b1f037", 9, 15), ("eb430a5d", 9, 22),
            ("8cf1cb9a", 9, 29), ("5d33b116", 10, 6), ("b9553125", 10, 13), ("e1a7b58b", 10, 20),
            ("8f8018c0", 10, 27), ("59403279", 11, 3), ("dfee9fb4", 11, 10), ("e1ae2f40", 11, 17),
        ]
        let backups = try table.map { id, month, day in
            RetentionCandidate(id: id, date: try date(2019, month, day, 11))
        }
        let decisions = plan(backups, RetentionPolicy(keepDaily: 4))
        XCTAssertEqual(Set(kept(decisions)), ["8f8018c0", "59403279", "dfee9fb4", "e1ae2f40"])
        XCTAssertEqual(Set(decisions.filter { !$0.keep }.map(\.id)),
                       ["0a1f9759", "46cfe4d5", "f6b1f037", "eb430a5d", "8cf1cb9a", "5d33b116", "b9553125", "e1a7b58b"])
        XCTAssertTrue(decisions.filter(\.keep).allSatisfy { $0.reasons.count == 1 && $0.reasons[0].hasPrefix("daily backup") })
    }

    /// restic's docs: `forget --keep-last 1` on two snapshots a minute apart keeps 4bba301e, removes 8c02b94b.
    func testResticExampleKeepLast1() throws {
        let backups = [
            RetentionCandidate(id: "8c02b94b", date: try date(2017, 2, 21, 10, 48, 33)),
            RetentionCandidate(id: "4bba301e", date: try date(2017, 2, 21, 10, 49, 18)),
        ]
        XCTAssertEqual(plan(backups, RetentionPolicy(keepLast: 1)), [
            RetentionDecision(id: "4bba301e", keep: true, reasons: ["last backup #1"]),
            RetentionDecision(id: "8c02b94b", keep: false, reasons: []),
        ])
    }

    /// restic's docs: one backup a day for 100 years with `--keep-daily 7 --keep-weekly 5 --keep-monthly 12
    /// --keep-yearly 75` keeps 7 dailies, 4 more week-ends (the dailies hold one), 12 or 11 month-ends and
    /// 75 or 74 year-ends, depending on overlaps with snapshots already kept.
    func testResticExampleHundredYearsOfDailyBackups() throws {
        // Ending on Sunday 17 Nov 2019: the week-end falls on a daily, the month-end of October does not.
        let last = try date(2019, 11, 17, 11)
        let backups = (0..<36_500).map { offset in
            RetentionCandidate(id: "d\(offset)", date: Self.utc.date(byAdding: .day, value: -offset, to: last) ?? last)
        }
        let policy = RetentionPolicy(keepDaily: 7, keepWeekly: 5, keepMonthly: 12, keepYearly: 75)
        let decisions = plan(backups, policy)
        let keptDecisions = decisions.filter(\.keep)
        func count(_ rule: String) -> Int {
            keptDecisions.filter { $0.reasons.contains { $0.hasPrefix(rule + " backup") } }.count
        }
        XCTAssertEqual(count("daily"), 7)
        XCTAssertEqual(count("weekly"), 5)
        XCTAssertEqual(count("monthly"), 12)
        XCTAssertEqual(count("yearly"), 75)
        func only(_ rule: String) -> Int {
            keptDecisions.filter { $0.reasons.allSatisfy { $0.hasPrefix(rule + " backup") } }.count
        }
        XCTAssertEqual(only("weekly"), 4, "the 7 dailies already include 1 weekly")
        // November's newest is a daily, 31 Dec 2018 is both monthly and yearly: 11 month-ends beyond the
        // dailies, 10 of them kept by the monthly rule alone.
        XCTAssertEqual(only("monthly"), 10)
        XCTAssertEqual(only("yearly"), 73, "2019's is a daily, 2018's (31 December) a monthly")
        let lastOf2018 = try date(2018, 12, 31, 11)
        let both = try XCTUnwrap(keptDecisions.first { decision in backups.first { $0.id == decision.id }?.date == lastOf2018 })
        XCTAssertEqual(both.reasons, ["monthly backup #12", "yearly backup #2"])
        XCTAssertEqual(keptDecisions.count, 7 + 4 + 11 + 73)
        XCTAssertFalse(keptDecisions.contains { $0.reasons.contains { $0.hasPrefix("oldest") } })
    }

    /// restic's docs: `--keep-within 2y5m7d3h` keeps every snapshot made in the two years, five months,
    /// seven days and three hours before the latest.
    func testResticExampleKeepWithin2y5m7d3h() throws {
        let latest = try date(2024, 9, 20, 15)
        let boundary = try date(2022, 4, 13, 12)   // 2y5m7d3h before the latest
        let backups = [
            RetentionCandidate(id: "latest", date: latest),
            RetentionCandidate(id: "inside", date: boundary.addingTimeInterval(1)),
            RetentionCandidate(id: "boundary", date: boundary),
            RetentionCandidate(id: "outside", date: boundary.addingTimeInterval(-3600)),
        ]
        let decisions = plan(backups, RetentionPolicy(keepWithin: try DurationSpec(parsing: "2y5m7d3h")))
        XCTAssertEqual(kept(decisions), ["latest", "inside"])
        XCTAssertEqual(decisions.first?.reasons, ["within 2y5m7d3h"])
    }
}
