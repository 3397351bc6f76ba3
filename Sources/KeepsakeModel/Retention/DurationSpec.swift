import Foundation

/// A length of calendar time like restic's `--keep-within` durations: `7d`, `2w`, `36h`, `1y6m`,
/// `30d12h`.
///
/// A duration is one or more numbers, each followed by its unit, with no spaces:
///
/// | unit | meaning |
/// |---|---|
/// | `y` | calendar years |
/// | `m` | calendar **months** — never minutes (`90m` is ninety months, as in restic) |
/// | `w` | weeks of seven days (stored as days; restic does not know `w`) |
/// | `d` | calendar days |
/// | `h` | hours of 3600 seconds |
///
/// Units may come in any order and each at most once (`w` and `d` add up: `1w3d` is ten days).
/// Upper-case units, minus signs, spaces and a duration of zero are rejected.
public struct DurationSpec: Sendable, Equatable, CustomStringConvertible {
    // MARK: Parts

    /// Calendar years.
    public let years: Int
    /// Calendar months.
    public let months: Int
    /// Calendar days (weeks are folded in as seven days each).
    public let days: Int
    /// Hours of 3600 seconds.
    public let hours: Int

    /// The largest number accepted before a unit.
    public static let maximumNumber = 1_000_000

    /// The unit letters the parser accepts.
    static let units: Set<String> = ["y", "m", "w", "d", "h"]

    // MARK: Creation

    /// A duration from its parts; negative parts count as zero.
    public init(years: Int = 0, months: Int = 0, days: Int = 0, hours: Int = 0) {
        self.years = max(0, years)
        self.months = max(0, months)
        self.days = max(0, days)
        self.hours = max(0, hours)
    }

    /// Parses a duration such as `7d`, `2w`, `36h`, `1y6m` or `30d12h` (white space around it
    /// is ignored).
    ///
    /// - Throws: ``DurationSpecError`` naming the text and what is wrong with it, e.g.
    ///   `'7x' is not a duration: unknown unit 'x'; use y, m, w, d or h (e.g. 7d, 2w, 1y6m)`.
    public init(parsing text: String) throws(DurationSpecError) {
        let characters = Array(text.trimmingCharacters(in: .whitespacesAndNewlines))
        func fail(_ kind: DurationSpecError.Kind) -> DurationSpecError {
            DurationSpecError(text: text, kind: kind)
        }
        guard !characters.isEmpty else { throw fail(.empty) }

        var values: [Character: Int] = [:]
        var index = 0
        while index < characters.count {
            // A number …
            let character = characters[index]
            if character == "-" { throw fail(.negative) }
            var digits = ""
            while index < characters.count, characters[index].isASCII, characters[index].isWholeNumber {
                digits.append(characters[index])
                index += 1
            }
            if digits.isEmpty {
                let found = String(character)
                if character.isLetter {
                    if DurationSpec.units.contains(found) { throw fail(.missingNumber(unit: found)) }
                    throw fail(.unknownUnit(found))
                }
                throw fail(.unexpectedCharacter(found))
            }
            let trimmed = String(digits.drop(while: { $0 == "0" }))
            guard trimmed.count <= 7, let number = Int(digits), number <= DurationSpec.maximumNumber else {
                throw fail(.tooLarge(number: digits))
            }
            // … and its unit.
            guard index < characters.count else { throw fail(.missingUnit(number: digits)) }
            let unit = characters[index]
            guard DurationSpec.units.contains(String(unit)) else {
                if unit.isLetter { throw fail(.unknownUnit(String(unit))) }
                throw fail(.missingUnit(number: digits))
            }
            guard values[unit] == nil else { throw fail(.repeatedUnit(String(unit))) }
            values[unit] = number
            index += 1
        }

        let spec = DurationSpec(
            years: values["y"] ?? 0,
            months: values["m"] ?? 0,
            days: (values["w"] ?? 0) * 7 + (values["d"] ?? 0),
            hours: values["h"] ?? 0
        )
        guard !spec.isZero else { throw fail(.zero) }
        self = spec
    }

    // MARK: Properties

    /// Whether every part is zero (a policy treats such a `keepWithin` as unused, like restic).
    public var isZero: Bool {
        years == 0 && months == 0 && days == 0 && hours == 0
    }

    /// The duration in canonical form, largest unit first: `1y6m`, `14d` (for `2w`), `30d12h`;
    /// `0h` when zero.
    public var description: String {
        var text = ""
        if years != 0 { text += "\(years)y" }
        if months != 0 { text += "\(months)m" }
        if days != 0 { text += "\(days)d" }
        if hours != 0 { text += "\(hours)h" }
        return text.isEmpty ? "0h" : text
    }

    // MARK: Arithmetic

    /// The moment this long before `date`: years, months and days are stepped back on
    /// `calendar` (in its time zone, so a day across a daylight-saving change is a wall-clock
    /// day), then the hours are taken off as 3600 seconds each.
    ///
    /// A day of the month that does not exist in the target month is clamped to the month's
    /// last day (31 March minus `1m` is 29 February in a leap year); restic (Go's `AddDate`)
    /// rolls over into the next month instead (2 March). A date the calendar cannot reach gives
    /// `Date.distantPast`.
    public func subtract(from date: Date, calendar: Calendar) -> Date {
        var shifted = date
        if years != 0 || months != 0 || days != 0 {
            var step = DateComponents()
            step.year = -years
            step.month = -months
            step.day = -days
            shifted = calendar.date(byAdding: step, to: date) ?? .distantPast
        }
        return shifted.addingTimeInterval(-Double(hours) * 3600)
    }
}
