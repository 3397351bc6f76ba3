/// Why TOML text could not be parsed, and where.
///
/// `line` and `column` are 1-based. Columns count Unicode scalars from the start of the line
/// (a tab counts as one), so they match what an editor shows for ordinary text.
public struct TOMLError: Error, Sendable, Equatable, CustomStringConvertible {
    // MARK: Kinds

    /// The class of problem, for callers that react to it (tests, mostly).
    public enum Kind: Sendable, Equatable {
        /// Bytes that are not well-formed UTF-8.
        case invalidUTF8
        /// A control character where none is allowed (in a string or comment), or a carriage
        /// return not followed by a line feed.
        case controlCharacter
        /// A character that does not fit the grammar where it appears.
        case unexpectedCharacter
        /// A key not followed by `=`.
        case missingEquals
        /// Something other than a comment after a value or table header on the same line.
        case trailingContent
        /// A string without its closing quote(s).
        case unterminatedString
        /// An array without its closing `]`.
        case unterminatedArray
        /// An inline table without its closing `}` on the same line.
        case unterminatedInlineTable
        /// A `\` escape that the subset does not define, or a malformed `\u`/`\U` escape.
        case invalidEscape
        /// A number that breaks the grammar, or a float beyond `Double`.
        case invalidNumber
        /// An integer that does not fit in `Int64`.
        case integerOverflow
        /// Valid TOML outside the subset: dates and times, `inf`, `nan`.
        case unsupported
        /// A key given a value twice.
        case duplicateKey
        /// A table header for a table that is already defined.
        case tableRedefined
        /// A key used both as a value and as a table (or as a table and an array of tables).
        case keyConflict
        /// Arrays and tables nested deeper than `TOMLParser.maxDepth`.
        case tooDeep
    }

    // MARK: Properties

    /// The class of problem.
    public let kind: Kind
    /// The 1-based line of the problem.
    public let line: Int
    /// The 1-based column of the problem, in Unicode scalars.
    public let column: Int
    /// What is wrong, without the position (e.g. "expected '=' after key 'sources'").
    public let message: String

    /// Creates an error.
    public init(kind: Kind, line: Int, column: Int, message: String) {
        self.kind = kind
        self.line = line
        self.column = column
        self.message = message
    }

    // MARK: Description

    /// The message with its position, e.g. "line 12, column 9: expected '=' after key 'sources'".
    public var description: String { "line \(line), column \(column): \(message)" }

    /// The message prefixed the way compilers do, e.g.
    /// "config.toml:12:9: expected '=' after key 'sources'".
    public func description(file: String) -> String { "\(file):\(line):\(column): \(message)" }
}
