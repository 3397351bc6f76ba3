/// A compiled `[...]` class of an exclude pattern: `[abc]`, `[a-z]`, negated with `[!...]` or
/// `[^...]`. Members are Unicode scalars, so `[é]` matches the two-byte name character `é`.
struct ExcludeCharacterClass: Sendable {
    // MARK: Properties

    /// Inclusive scalar-value ranges; single characters are one-value ranges.
    let ranges: [ClosedRange<UInt32>]
    /// True for `[!...]` / `[^...]`.
    let negated: Bool

    // MARK: Parsing

    /// Parses the class whose `[` is at `open`; returns it and the index just past its `]`.
    ///
    /// As in shells and git, a `]` right after `[` (or `[!`) is a member, not the end, and a `-`
    /// first or last is a member too.
    static func parse(
        _ scalars: ArraySlice<Unicode.Scalar>, openingAt open: Int, pattern: String
    ) throws(ExcludePatternError) -> (ExcludeCharacterClass, Int) {
        var index = open + 1
        let end = scalars.endIndex
        var negated = false
        if index < end, scalars[index] == "!" || scalars[index] == "^" {
            negated = true
            index += 1
        }

        var ranges: [ClosedRange<UInt32>] = []
        var first = true
        while true {
            guard index < end else { throw ExcludePatternError(pattern: pattern, kind: .unterminatedClass) }
            if scalars[index] == "]" && !first { return (ExcludeCharacterClass(ranges: ranges, negated: negated), index + 1) }
            first = false

            guard let (low, afterLow) = member(scalars, at: index, end: end) else {
                throw ExcludePatternError(pattern: pattern, kind: .unterminatedClass)
            }
            index = afterLow
            // `a-z` is a range unless the `-` is the last thing before `]`.
            if index + 1 < end, scalars[index] == "-", scalars[index + 1] != "]" {
                guard let (high, afterHigh) = member(scalars, at: index + 1, end: end) else {
                    throw ExcludePatternError(pattern: pattern, kind: .unterminatedClass)
                }
                guard low.value <= high.value else { throw ExcludePatternError(pattern: pattern, kind: .invalidRange) }
                ranges.append(low.value...high.value)
                index = afterHigh
            } else {
                ranges.append(low.value...low.value)
            }
        }
    }

    /// One member character at `index`, honouring a `\` escape; nil when the escape is cut off.
    private static func member(
        _ scalars: ArraySlice<Unicode.Scalar>, at index: Int, end: Int
    ) -> (Unicode.Scalar, Int)? {
        if scalars[index] == "\\" {
            guard index + 1 < end else { return nil }
            return (scalars[index + 1], index + 2)
        }
        return (scalars[index], index + 1)
    }

    // MARK: Matching

    /// Whether a name character (as produced by `ExcludeGlob.character`) is selected.
    func contains(_ value: UInt32) -> Bool {
        var found = false
        for range in ranges where range.contains(value) {
            found = true
            break
        }
        return found != negated
    }
}
