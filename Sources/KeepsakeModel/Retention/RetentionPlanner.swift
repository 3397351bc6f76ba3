import Foundation

/// Applies a ``RetentionPolicy`` to a list of backups, the way restic's `forget` applies its
/// `--keep-*` options to one snapshot group.
///
/// The planner is a pure function of its inputs: the calendar (with its time zone) decides
/// where hours, days, months and years begin; weeks are always ISO weeks (Monday–Sunday) in
/// that time zone, whatever the calendar's `firstWeekday`. It only says which backups the
/// policy keeps: protecting the backups that kept incremental backups build on is the caller's
/// job, done afterwards with ``RetentionDecision/keeping(because:)``.
///
/// ## Differences from restic
///
/// - `keepWithin` durations accept `w` (seven days); restic has no week unit. Durations of
///   zero, negative numbers and repeated units are errors instead of being ignored or
///   overwritten.
/// - Stepping back months clamps to the end of a shorter month (31 March − 1m = 29 February);
///   restic rolls over (2 March).
/// - Reasons carry each rule's running count (`daily snapshot #3`) and list counted rules
///   first, then `within`, then tags; restic lists tags and `within` first, without counts.
///   A `[""]` tag list is reported as `has no tags`.
/// - A tag list containing `""` together with other tags matches nothing; restic's result
///   for such a list depends on the order of its tags.
/// - Counts below `-1` act as unlimited (restic rejects them).
/// - `--keep-within-hourly` and its siblings, and grouping by host or path, are not offered.
public enum RetentionPlanner {
    // MARK: Planning

    /// Decides for every candidate whether `policy` keeps it.
    ///
    /// - Parameters:
    ///   - candidates: The backups of one set, in any order.
    ///   - policy: The rules. An empty policy (``RetentionPolicy/isEmpty``) keeps every backup
    ///     with the reason `no policy`; `keepsake prune` refuses an empty policy before it gets
    ///     here, as restic does.
    ///   - calendar: Where periods begin; pass one with the user's time zone (tests use UTC).
    ///   - now: The current time; `nil` means `Date()`. Backups dated after it are ignored when
    ///     finding the newest backup that `keepWithin` counts back from (so a clock gone wrong
    ///     on one backup cannot age out all others), and, being newer than the cutoff, are
    ///     kept by `keepWithin`. The counted rules treat them like any other backup, as restic
    ///     does.
    /// - Returns: One decision per candidate, newest first; candidates with the same date stay
    ///   in their input order (the first of them counts as the newer).
    ///
    /// A non-empty policy can keep nothing (only tag rules, and no backup has the tags); the
    /// decisions then all say remove. Restic's `forget` refuses that case ("refusing to delete
    /// last snapshot"), and so must the caller: see ``keepsNothing(_:)``.
    public static func plan(
        _ candidates: [RetentionCandidate],
        policy: RetentionPolicy,
        calendar: Calendar,
        now: Date? = nil
    ) -> [RetentionDecision] {
        let ordered = candidates.enumerated()
            .sorted { lhs, rhs in
                lhs.element.date != rhs.element.date
                    ? lhs.element.date > rhs.element.date
                    : lhs.offset < rhs.offset
            }
            .map(\.element)
        guard !ordered.isEmpty else { return [] }
        guard !policy.isEmpty else {
            return ordered.map { RetentionDecision(id: $0.id, keep: true, reasons: ["no policy"]) }
        }

        var buckets = countedRules(of: policy, calendar: calendar)
        let cutoff = withinCutoff(policy: policy, ordered: ordered, calendar: calendar, now: now ?? Date())
        let oldestIndex = ordered.count - 1

        return ordered.enumerated().map { index, candidate in
            var reasons: [String] = []

            // Counted rules: a new period (or, with count left, the oldest backup) is kept.
            for slot in buckets.indices where buckets[slot].remaining != 0 {
                let key = buckets[slot].key(candidate.date, index)
                let isNewPeriod = key != buckets[slot].lastKey
                guard isNewPeriod || index == oldestIndex else { continue }
                buckets[slot].lastKey = key
                buckets[slot].kept += 1
                if buckets[slot].remaining > 0 { buckets[slot].remaining -= 1 }
                let label = "\(buckets[slot].name) backup #\(buckets[slot].kept)"
                reasons.append(isNewPeriod ? label : "oldest " + label)
            }

            // keepWithin, relative to the newest backup.
            if let within = policy.keepWithin, !within.isZero {
                if cutoff.map({ candidate.date > $0 }) ?? true {
                    reasons.append("within \(within)")
                }
            }

            // keepTags: every matching list is a reason.
            for list in policy.keepTags where hasTags(candidate.tags, matching: list) {
                reasons.append(tagReason(list))
            }

            return RetentionDecision(id: candidate.id, keep: !reasons.isEmpty, reasons: reasons)
        }
    }

    /// Whether `decisions` would remove every backup — the case restic's `forget` refuses
    /// ("refusing to delete last snapshot of snapshot group") and `keepsake prune` must refuse
    /// too. False for an empty list.
    public static func keepsNothing(_ decisions: [RetentionDecision]) -> Bool {
        !decisions.isEmpty && !decisions.contains(where: \.keep)
    }

    // MARK: Counted rules

    /// One counted rule while the newest-first walk runs.
    private struct Bucket {
        /// `last`, `hourly`, `daily`, …
        let name: String
        /// The period of a backup, from its date and its position newest-first.
        let key: (Date, Int) -> [Int]
        /// Backups this rule may still keep; `-1` for unlimited, `0` when done.
        var remaining: Int
        /// The period of the backup this rule kept last.
        var lastKey: [Int]? = nil
        /// How many backups this rule has kept so far.
        var kept = 0
    }

    private static func countedRules(of policy: RetentionPolicy, calendar: Calendar) -> [Bucket] {
        var week = Calendar(identifier: .iso8601)
        week.timeZone = calendar.timeZone
        func fields(_ units: Set<Calendar.Component>, _ order: [Calendar.Component]) -> (Date, Int) -> [Int] {
            { date, _ in
                let parts = calendar.dateComponents(units, from: date)
                return order.map { parts.value(for: $0) ?? 0 }
            }
        }
        let rules: [(String, Int?, (Date, Int) -> [Int])] = [
            ("last", policy.keepLast, { _, index in [index] }),
            ("hourly", policy.keepHourly, fields([.era, .year, .month, .day, .hour], [.era, .year, .month, .day, .hour])),
            ("daily", policy.keepDaily, fields([.era, .year, .month, .day], [.era, .year, .month, .day])),
            ("weekly", policy.keepWeekly, { date, _ in
                let parts = week.dateComponents([.yearForWeekOfYear, .weekOfYear], from: date)
                return [parts.yearForWeekOfYear ?? 0, parts.weekOfYear ?? 0]
            }),
            ("monthly", policy.keepMonthly, fields([.era, .year, .month], [.era, .year, .month])),
            ("yearly", policy.keepYearly, fields([.era, .year], [.era, .year])),
        ]
        return rules.compactMap { name, count, key in
            RetentionPolicy.effectiveCount(count).map { Bucket(name: name, key: key, remaining: $0) }
        }
    }

    // MARK: keepWithin

    /// The moment `keepWithin` counts back to from the newest backup not after `now`; nil when
    /// every backup is in the future (then all of them are within).
    private static func withinCutoff(
        policy: RetentionPolicy,
        ordered: [RetentionCandidate],
        calendar: Calendar,
        now: Date
    ) -> Date? {
        guard let within = policy.keepWithin, !within.isZero,
              let newest = ordered.first(where: { $0.date < now }) else { return nil }
        return within.subtract(from: newest.date, calendar: calendar)
    }

    // MARK: keepTags

    /// Whether a backup's tags satisfy one tag list: every tag present, `""` meaning untagged.
    private static func hasTags(_ tags: [String], matching list: [String]) -> Bool {
        list.allSatisfy { $0.isEmpty ? tags.isEmpty : tags.contains($0) }
    }

    private static func tagReason(_ list: [String]) -> String {
        if !list.isEmpty, list.allSatisfy(\.isEmpty) { return "has no tags" }
        return "has tags [" + list.joined(separator: ", ") + "]"
    }
}
