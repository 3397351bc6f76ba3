/// Why a configuration file could not be used: each problem names the file and, where it has
/// one, the line and column, the way compilers do (`config.toml:7:1: unknown key 'exlude' in
/// profile 'home'; did you mean 'exclude'?`).
///
/// Syntax errors stop at the first one (the parser cannot go on); validation collects every
/// problem in the file, in the order of their positions, so one edit can fix them all.
public struct ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    // MARK: Kinds

    /// The class of a problem, for callers that react to it (tests, mostly).
    public enum Kind: Sendable, Equatable {
        /// There is no file at the path.
        case fileMissing
        /// The file exists but cannot be read.
        case unreadable
        /// The text is not valid TOML (or outside the subset `TOMLParser` accepts).
        case syntax
        /// A key Keepsake does not know.
        case unknownKey
        /// A value of the wrong TOML type.
        case wrongType
        /// A value of the right type that is not acceptable (an unknown codec, a level out
        /// of range, a bad duration or pattern).
        case invalidValue
        /// A required key is absent.
        case missingKey
        /// The profile asked for is not in the file.
        case profileNotFound
    }

    /// One problem and where it is.
    public struct Problem: Sendable, Equatable, CustomStringConvertible {
        /// The class of problem.
        public let kind: Kind
        /// The 1-based line, when the problem has a place in the file.
        public let line: Int?
        /// The 1-based column (in Unicode scalars), when the problem has a place in the file.
        public let column: Int?
        /// What is wrong, without file or position.
        public let message: String

        /// Creates a problem.
        public init(kind: Kind, line: Int?, column: Int?, message: String) {
            self.kind = kind
            self.line = line
            self.column = column
            self.message = message
        }

        /// The message with its position (`line 7, column 1: …`), or the bare message.
        public var description: String {
            guard let line, let column else { return message }
            return "line \(line), column \(column): \(message)"
        }
    }

    // MARK: Properties

    /// The configuration file's path, as given.
    public let file: String
    /// Every problem found, ordered by position; never empty.
    public let problems: [Problem]

    /// An error with several problems (ordered as given).
    public init(file: String, problems: [Problem]) {
        self.file = file
        self.problems = problems
    }

    /// An error with one problem.
    public init(file: String, kind: Kind, line: Int? = nil, column: Int? = nil, message: String) {
        self.init(file: file, problems: [Problem(kind: kind, line: line, column: column, message: message)])
    }

    // MARK: Queries

    /// The kind of the first problem.
    public var kind: Kind { problems.first?.kind ?? .invalidValue }

    // MARK: Description

    /// One line per problem: `FILE:LINE:COLUMN: message` where the problem has a position,
    /// else the message alone (which then names the file itself).
    public var description: String {
        problems.map { problem in
            guard let line = problem.line, let column = problem.column else { return problem.message }
            return "\(file):\(line):\(column): \(problem.message)"
        }.joined(separator: "\n")
    }
}
