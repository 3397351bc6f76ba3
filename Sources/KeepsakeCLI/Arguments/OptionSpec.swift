// MARK: - OptionSpec

/// Describes one named option of a command: a flag (`--quiet`, `-q`) or an option that
/// takes a value (`--dest <dir>`, `-d <dir>`).
///
/// The spec drives both parsing (`ArgumentParser`) and help (`HelpRenderer`), so the two
/// can never disagree about what a command accepts.
struct OptionSpec: Sendable, Hashable {

    // MARK: Kind

    /// Whether the option stands alone or takes a value.
    enum Kind: Sendable, Hashable {
        /// A switch such as `--quiet`; giving it a value (`--quiet=yes`) is a usage error.
        case flag
        /// An option followed by a value, shown in help as `<valueName>` (e.g. `<dir>`).
        case value(valueName: String)
    }

    // MARK: Properties

    /// The key commands look the option up by.
    var key: OptionKey
    /// The long name without dashes, e.g. `"dest"` for `--dest`.
    var long: String { key.name }
    /// The one-letter short name without the dash, e.g. `"d"` for `-d`.
    var short: Character?
    /// Flag or value option.
    var kind: Kind
    /// Whether the option may be given several times, all values kept (`--exclude`).
    /// Non-repeatable value options given twice are not an error: the last one wins.
    var repeatable: Bool
    /// The only accepted values (e.g. the codecs), checked while parsing; `nil` accepts any.
    var allowedValues: [String]?
    /// The default as shown in help (`(default: zstd)`); parsing does not apply it.
    var defaultDescription: String?
    /// The environment variable that can supply this value, shown in help (`(env: KEEPSAKE_DEST)`).
    /// Parsing does not read it; the command resolves the environment itself.
    var environment: String?
    /// One or two sentences for the help screen.
    var help: String
    /// Hidden options parse normally but are left out of help and "Did you mean" suggestions.
    var hidden: Bool
    /// Whether the value names a file or folder: then it is kept as bytes and need not be
    /// UTF-8. Any other value that is not valid UTF-8 is a usage error.
    var takesPath: Bool

    // MARK: Init

    /// Creates an option spec; only `key`, `help` and (for value options) `kind` are usually needed.
    init(
        _ key: OptionKey,
        short: Character? = nil,
        kind: Kind = .flag,
        repeatable: Bool = false,
        allowedValues: [String]? = nil,
        defaultDescription: String? = nil,
        environment: String? = nil,
        help: String,
        hidden: Bool = false,
        takesPath: Bool = false
    ) {
        self.key = key
        self.short = short
        self.kind = kind
        self.repeatable = repeatable
        self.allowedValues = allowedValues
        self.defaultDescription = defaultDescription
        self.environment = environment
        self.help = help
        self.hidden = hidden
        self.takesPath = takesPath
    }

    /// The conventional `-h, --help` flag. The parser gives it priority over every other
    /// problem on the line, so `keepsake backup --destt --help` still shows help.
    static let help = OptionSpec(.help, short: "h", help: "Show help information.")

    // MARK: Display

    /// `true` for `.flag`.
    var isFlag: Bool {
        if case .flag = kind { return true }
        return false
    }

    /// The value placeholder without brackets (`"dir"`), or `nil` for a flag.
    var valueName: String? {
        if case .value(let name) = kind { return name }
        return nil
    }

    /// `--dest`.
    var longFlag: String { "--" + long }

    /// `-d`, or `nil` when there is no short name.
    var shortFlag: String? { short.map { "-" + String($0) } }

    /// How the option reads in messages when the user wrote `token` (`--dest` or `-d`):
    /// `--dest <dir>` for a value option, just the token for a flag.
    func display(as token: String) -> String {
        guard let valueName else { return token }
        return "\(token) <\(valueName)>"
    }

    /// The left column of the help row: `-d, --dest <dir>` or `--quiet`.
    var helpLabel: String {
        let names = [shortFlag, longFlag].compactMap { $0 }.joined(separator: ", ")
        return display(as: names)
    }

    /// The notes help appends to the text, in a fixed order:
    /// `(repeatable)`, `(default: …)`, `(values: …)`, `(env: …)`.
    var helpAnnotations: [String] {
        var notes: [String] = []
        if repeatable { notes.append("(repeatable)") }
        if let defaultDescription { notes.append("(default: \(defaultDescription))") }
        if let allowedValues, !allowedValues.isEmpty {
            notes.append("(values: \(allowedValues.joined(separator: ", ")))")
        }
        if let environment { notes.append("(env: \(environment))") }
        return notes
    }

    /// The help text followed by its annotations, as one plain string.
    var annotatedHelp: String {
        ([help].filter { !$0.isEmpty } + helpAnnotations).joined(separator: " ")
    }
}

// MARK: - Option keys

extension OptionKey {
    static let help = OptionKey("help")
}
