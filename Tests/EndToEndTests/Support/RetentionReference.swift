import Foundation

/// The test's own reading of what a retention policy keeps, written from docs/commands.md
/// (restic's `forget` rules, with backups counted in the order they were made) and not from
/// Keepsake's code: for each rule, walking the backups newest first, the first backup of each new period is kept until the rule's count
/// is used up; a rule with count left after its oldest period keeps the oldest backup too.
/// Then, when chains are followed (`prune --keep-chains`), every backup a kept one takes
/// files from (its manifest's `in`) is kept, transitively; prune as it is by default copies
/// those files into supplements instead and keeps the policy's backups alone.
struct RetentionReference {
    // MARK: Types

    /// A calendar period a rule counts in.
    enum Period {
        case day, week, month, year
    }

    /// A backup as the reference sees it.
    struct Backup {
        var id: String
        var created: Date
        /// The ids its manifest's entries name in `in`.
        var takesFrom: Set<String>
    }

    // MARK: Policy

    /// How many periods of each kind are kept.
    var counts: [Period: Int]

    // MARK: Deciding

    /// The ids the policy keeps of `backups` (one group: one host, one set of sources), with
    /// what kept ones take files from when `followingChains`.
    func kept(_ backups: [Backup], followingChains: Bool = true) -> Set<String> {
        // In the order they were made (ids sort that way), each dated no earlier than the
        // one made before it (a clock set back does not make a backup older); newest first.
        var latest = Date.distantPast
        let dated = backups.sorted { $0.id < $1.id }.map { backup -> Backup in
            latest = max(latest, backup.created)
            var counted = backup
            counted.created = latest
            return counted
        }
        let ordered = Array(dated.reversed())
        var kept = Set<String>()
        for (period, count) in counts where count != 0 {
            var left = count
            var last: String?
            for backup in ordered where left != 0 {
                let key = RetentionReference.key(of: backup.created, in: period)
                guard key != last else { continue }
                last = key
                kept.insert(backup.id)
                if left > 0 { left -= 1 }
            }
            if left > 0, let oldest = ordered.last { kept.insert(oldest.id) }
        }
        guard followingChains else { return kept }
        // Chains: what a kept backup takes files from stays, transitively.
        let byID = Dictionary(backups.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var pending = Array(kept)
        while let id = pending.popLast() {
            for needed in byID[id]?.takesFrom ?? [] where byID[needed] != nil && kept.insert(needed).inserted {
                pending.append(needed)
            }
        }
        return kept
    }

    /// The period `date` falls in, as text (UTC; weeks are ISO weeks, Monday to Sunday).
    static func key(of date: Date, in period: Period) -> String {
        var calendar = Calendar(identifier: .iso8601)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        let parts = calendar.dateComponents([.year, .month, .day, .yearForWeekOfYear, .weekOfYear], from: date)
        switch period {
        case .day: return "\(parts.year ?? 0)-\(parts.month ?? 0)-\(parts.day ?? 0)"
        case .week: return "\(parts.yearForWeekOfYear ?? 0)-W\(parts.weekOfYear ?? 0)"
        case .month: return "\(parts.year ?? 0)-\(parts.month ?? 0)"
        case .year: return "\(parts.year ?? 0)"
        }
    }
}
