// MARK: - Suggestion

/// Finds the "Did you mean …?" candidate for a mistyped command, option, config key or
/// path: the one edit distance of the program.
public enum Suggestion {

    // MARK: Nearest

    /// The candidate closest to `input`, or `nil` when nothing is close enough.
    ///
    /// A candidate is close when its case-insensitive Damerau–Levenshtein distance
    /// (optimal string alignment: insertions, deletions, substitutions, adjacent swaps)
    /// is at most 2 and less than half the candidate's length, so `bakup` finds `backup`
    /// but `x` does not find `ls`. The smallest distance wins; ties go to the earlier
    /// candidate. When no candidate is that close, a unique prefix match in either
    /// direction is suggested (`comp` → `compression`, `destination` → `dest`).
    public static func nearest(to input: String, among candidates: [String]) -> String? {
        let needle = input.lowercased()
        guard !needle.isEmpty else { return nil }

        var best: (candidate: String, distance: Int)?
        for candidate in candidates {
            let target = candidate.lowercased()
            let limit = min(maximumDistance, (target.count - 1) / 2)
            guard limit >= 0, let distance = distance(needle, target, limit: limit) else { continue }
            if best.map({ distance < $0.distance }) ?? true {
                best = (candidate, distance)
            }
        }
        if let best { return best.candidate }

        let prefixed = candidates.filter { candidate in
            let target = candidate.lowercased()
            return target.hasPrefix(needle) || (target.count >= 2 && needle.hasPrefix(target))
        }
        return prefixed.count == 1 ? prefixed.first : nil
    }

    // MARK: Distance

    /// The largest edit distance ever suggested: beyond two edits a guess is more often wrong.
    public static let maximumDistance = 2

    /// The optimal-string-alignment distance between `a` and `b`, or `nil` when it exceeds
    /// `limit` (checked cheaply on the lengths first, then once per row).
    public static func distance(_ a: String, _ b: String, limit: Int) -> Int? {
        let a = Array(a), b = Array(b)
        guard abs(a.count - b.count) <= limit else { return nil }
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }

        // Three rows suffice: the swap rule looks two rows back.
        var previous2 = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            var rowMinimum = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    value = min(value, previous2[j - 2] + 1)
                }
                current[j] = value
                rowMinimum = min(rowMinimum, value)
            }
            // Every later cell grows from this row, so the bound can only be exceeded.
            if rowMinimum > limit { return nil }
            (previous2, previous, current) = (previous, current, previous2)
        }
        let result = previous[b.count]
        return result <= limit ? result : nil
    }
}
