import Foundation

/// Which backups `keepsake prune` keeps, with the rules of restic's `forget --keep-*`.
///
/// A backup is kept when **any** rule keeps it (the rules are ORed), and one backup may satisfy
/// several rules at once — the newest backup of a Sunday can be the last, hourly, daily and
/// weekly one all together, and it is counted by each of those rules.
///
/// - `keepLast n`: the `n` newest backups.
/// - `keepHourly`/`keepDaily`/`keepWeekly`/`keepMonthly`/`keepYearly n`: for the `n` newest
///   hours/days/weeks/months/years **that have backups**, the newest backup of each. Periods
///   are calendar periods in the planner's calendar and time zone (hours :00–:59, days
///   00:00–23:59, ISO weeks Monday–Sunday, months, years), not periods counted back from now.
///   If a rule still has count left after the oldest period, the oldest backup of all is kept
///   too (`oldest daily snapshot`), as restic does since 0.17.
/// - `keepWithin d`: every backup made less than `d` before the newest backup (not before
///   now, so stopping backups does not age them all out).
/// - `keepTags`: every backup carrying all tags of at least one of the lists.
///
/// A count of `nil` or `0` leaves the rule unused; ``unlimited`` (`-1`, restic's `unlimited`)
/// counts every period. Restic rejects other negative counts; here they act as unlimited, so a
/// bad count never removes more. A zero `keepWithin` is unused, as in restic.
public struct RetentionPolicy: Sendable, Equatable, CustomStringConvertible {
    // MARK: Constants

    /// The count that keeps one backup for every period (restic's `--keep-daily unlimited`).
    public static let unlimited = -1

    /// A `keep-*` count as given (`--keep-daily 7`, `keep-daily = 7`): a whole number of 0 or
    /// more (0 leaves the rule unused), or -1 for every period; nil for anything else. The
    /// command line and profiles both read counts here.
    public static func count<Number: BinaryInteger>(_ value: Number) -> Int? {
        guard let exact = Int(exactly: value), exact >= 0 || exact == unlimited else { return nil }
        return exact
    }

    /// A `keep-*` count given as a word: `unlimited` is -1, every period.
    public static func count(word: String) -> Int? {
        word == "unlimited" ? unlimited : nil
    }

    /// A `keep-tag` value as given (`--keep-tag db,nightly`, `keep-tag = ["db, nightly"]`): the
    /// tags a backup must all carry, split at commas, each without the spaces around it. An
    /// empty value (or only spaces) means backups without tags (`[""]`); nil when a tag
    /// between commas is empty (`db,`, `a,,b`). The command line and profiles both read
    /// lists here.
    public static func tagList(_ text: String) -> [String]? {
        let tags = text.split(separator: ",", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces) }
        if tags == [""] { return [""] }
        return tags.contains(where: \.isEmpty) ? nil : tags
    }

    // MARK: Rules

    /// Keep the newest `n` backups.
    public var keepLast: Int?
    /// Keep the newest backup of each of the newest `n` hours that have backups.
    public var keepHourly: Int?
    /// Keep the newest backup of each of the newest `n` days that have backups.
    public var keepDaily: Int?
    /// Keep the newest backup of each of the newest `n` ISO weeks (Monday–Sunday) that have backups.
    public var keepWeekly: Int?
    /// Keep the newest backup of each of the newest `n` months that have backups.
    public var keepMonthly: Int?
    /// Keep the newest backup of each of the newest `n` years that have backups.
    public var keepYearly: Int?
    /// Keep every backup made less than this long before the newest backup.
    public var keepWithin: DurationSpec?
    /// Keep every backup that carries all tags of at least one inner list (restic's repeatable
    /// `--keep-tag a,b`). The tag `""` stands for "no tags at all": `[""]` keeps untagged
    /// backups. An empty inner list matches every backup, as in restic.
    public var keepTags: [[String]]

    // MARK: Creation

    /// A policy; every rule is unused unless given.
    public init(
        keepLast: Int? = nil,
        keepHourly: Int? = nil,
        keepDaily: Int? = nil,
        keepWeekly: Int? = nil,
        keepMonthly: Int? = nil,
        keepYearly: Int? = nil,
        keepWithin: DurationSpec? = nil,
        keepTags: [[String]] = []
    ) {
        self.keepLast = keepLast
        self.keepHourly = keepHourly
        self.keepDaily = keepDaily
        self.keepWeekly = keepWeekly
        self.keepMonthly = keepMonthly
        self.keepYearly = keepYearly
        self.keepWithin = keepWithin
        self.keepTags = keepTags
    }

    // MARK: Queries

    /// Whether no rule is in use: every count is `nil` or `0`, `keepWithin` is `nil` or zero
    /// and there are no tag lists.
    ///
    /// ``RetentionPlanner/plan(_:policy:calendar:now:)`` keeps everything under an empty
    /// policy; `keepsake prune` refuses one before planning, as restic's `forget` does.
    public var isEmpty: Bool {
        countRules.allSatisfy { RetentionPolicy.effectiveCount($0.count) == nil }
            && (keepWithin?.isZero ?? true)
            && keepTags.isEmpty
    }

    /// The policy in words, like restic's "Applying Policy" line:
    /// `keep 1 latest, 7 daily, all weekly snapshots and all snapshots within 2d of the newest
    /// and all snapshots with tags [a, b] or [c]`; `keep everything (no rules)` when empty.
    public var description: String {
        var parts: [String] = []
        let counts = countRules.compactMap { rule -> String? in
            guard let count = RetentionPolicy.effectiveCount(rule.count) else { return nil }
            return count == RetentionPolicy.unlimited ? "all \(rule.word)" : "\(count) \(rule.word)"
        }
        if !counts.isEmpty { parts.append(counts.joined(separator: ", ") + " backups") }
        if let within = keepWithin, !within.isZero {
            parts.append("all backups within \(within) of the newest")
        }
        if !keepTags.isEmpty {
            let lists = keepTags.map { "[" + $0.joined(separator: ", ") + "]" }
            parts.append("all backups with tags " + lists.joined(separator: " or "))
        }
        return parts.isEmpty ? "keep everything (no rules)" : "keep " + parts.joined(separator: " and ")
    }

    // MARK: Internals

    /// The counted rules in restic's order, with the word `description` uses.
    private var countRules: [(count: Int?, word: String)] {
        [(keepLast, "latest"), (keepHourly, "hourly"), (keepDaily, "daily"),
         (keepWeekly, "weekly"), (keepMonthly, "monthly"), (keepYearly, "yearly")]
    }

    /// A count as the planner uses it: nil when unused (`nil` or `0`), ``unlimited`` for any
    /// negative count, else the count.
    static func effectiveCount(_ count: Int?) -> Int? {
        guard let count, count != 0 else { return nil }
        return count < 0 ? unlimited : count
    }
}
