/// A duration text that cannot be parsed, naming the text and what is wrong with it.
///
/// The description reads like `'7x' is not a duration: unknown unit 'x'; use y, m, w, d or h
/// (e.g. 7d, 2w, 1y6m)`.
public struct DurationSpecError: Error, Sendable, Equatable, CustomStringConvertible {
    // MARK: Kinds

    /// What is wrong with a duration text.
    public enum Kind: Sendable, Equatable {
        /// Nothing but white space.
        case empty
        /// A number without a unit after it, like `"7"` or the `12` of `"1d12"`.
        case missingUnit(number: String)
        /// A letter that is not one of `y`, `m`, `w`, `d`, `h`, like the `x` of `"7x"`.
        case unknownUnit(String)
        /// A unit with no number before it, like `"d"` or the second `d` of `"7dd"`.
        case missingNumber(unit: String)
        /// Anything else where a number should start: a space, a dot, a sign other than `-`.
        case unexpectedCharacter(String)
        /// A number with a minus sign; durations count backwards from the newest backup already.
        case negative
        /// The same unit twice, like `"1d2d"`.
        case repeatedUnit(String)
        /// A number above ``DurationSpec/maximumNumber``.
        case tooLarge(number: String)
        /// Every number is zero, like `"0d"`; such a duration would keep nothing.
        case zero
    }

    // MARK: Properties

    /// The text exactly as given.
    public let text: String
    /// What is wrong with it.
    public let kind: Kind

    /// Creates an error for `text`.
    public init(text: String, kind: Kind) {
        self.text = text
        self.kind = kind
    }

    // MARK: Description

    private static let unitHint = "use y, m, w, d or h (e.g. 7d, 2w, 1y6m)"

    /// Why the text was rejected, in words, with a hint at the accepted form.
    public var reason: String {
        switch kind {
        case .empty:
            return "it is empty; \(Self.unitHint)"
        case .missingUnit(let number):
            return "the number \(number) has no unit; \(Self.unitHint)"
        case .unknownUnit(let unit):
            let lower = unit.lowercased()
            if lower != unit, DurationSpec.units.contains(lower) {
                return "unknown unit '\(unit)' (units are lower-case); \(Self.unitHint)"
            }
            return "unknown unit '\(unit)'; \(Self.unitHint)"
        case .missingNumber(let unit):
            return "the unit '\(unit)' has no number before it; \(Self.unitHint)"
        case .unexpectedCharacter(let character):
            return "unexpected character '\(character)'; write numbers and units without spaces (e.g. 30d12h)"
        case .negative:
            return "negative numbers are not allowed (the duration already counts back from the newest backup)"
        case .repeatedUnit(let unit):
            return "the unit '\(unit)' appears more than once; give each unit once (e.g. 1y6m)"
        case .tooLarge(let number):
            return "\(number) is too large (at most \(DurationSpec.maximumNumber))"
        case .zero:
            return "it is zero; give a length of at least 1h (e.g. 7d, 2w, 1y6m)"
        }
    }

    public var description: String {
        "'\(text)' is not a duration: \(reason)"
    }
}
