/// An exclude pattern that cannot be compiled, naming the pattern and what is wrong with it.
public struct ExcludePatternError: Error, Sendable, Equatable, CustomStringConvertible {
    // MARK: Kinds

    /// What is wrong with a pattern.
    public enum Kind: Sendable, Equatable {
        /// Nothing is left once `!` and the trailing `/` are removed (e.g. `""`, `"!"`, `"/"`).
        case empty
        /// A `[` without its closing `]`.
        case unterminatedClass
        /// A class range whose end comes before its start, like `[z-a]`.
        case invalidRange
        /// A `\` at the very end, escaping nothing.
        case trailingBackslash
    }

    // MARK: Properties

    /// The pattern exactly as given.
    public let pattern: String
    /// What is wrong with it.
    public let kind: Kind

    /// Creates an error for `pattern`.
    public init(pattern: String, kind: Kind) {
        self.pattern = pattern
        self.kind = kind
    }

    // MARK: Description

    /// Why the pattern was rejected, in words.
    public var reason: String {
        switch kind {
        case .empty: return "the pattern is empty"
        case .unterminatedClass: return "unterminated '[' (a character class needs a closing ']')"
        case .invalidRange: return "invalid range in '[...]' (the end comes before the start)"
        case .trailingBackslash: return "trailing '\\' escapes nothing"
        }
    }

    public var description: String {
        "Invalid exclude pattern '\(pattern)': \(reason)"
    }
}
