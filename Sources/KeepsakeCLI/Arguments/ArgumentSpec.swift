// MARK: - ArgumentSpec

/// Describes one positional argument of a command, e.g. `PATH...` for `keepsake backup`.
struct ArgumentSpec: Sendable, Hashable {

    // MARK: Properties

    /// How the command looks it up; its name is the placeholder shown in usage and messages.
    var key: ArgumentKey
    /// One or two sentences for the help screen.
    var help: String
    /// Whether the command runs without it.
    var optional: Bool
    /// Whether it takes every remaining positional (`PATH...`), at least one unless optional.
    var repeating: Bool
    /// Whether its values name files: then they are kept as bytes and need not be UTF-8.
    /// Any other positional that is not valid UTF-8 is a usage error.
    var takesPath: Bool

    // MARK: Init

    /// Creates a positional argument spec; required and single by default.
    init(_ key: ArgumentKey, help: String, optional: Bool = false, repeating: Bool = false, takesPath: Bool = false) {
        self.key = key
        self.help = help
        self.optional = optional
        self.repeating = repeating
        self.takesPath = takesPath
    }

    // MARK: Display

    /// The placeholder, conventionally upper case (`PATH`).
    var name: String { key.name }

    /// `PATH` or `PATH...`: used in messages and in the ARGUMENTS section.
    var displayName: String { repeating ? name + "..." : name }

    /// The token in the usage line: `PATH...`, or `[PATH...]` when optional.
    var usageToken: String { optional ? "[\(displayName)]" : displayName }

    /// The help text, with `(optional)` appended when the argument may be left out
    /// (the usage line shows that with brackets, the ARGUMENTS section in words).
    var annotatedHelp: String {
        guard optional else { return help }
        return help.isEmpty ? "(optional)" : help + " (optional)"
    }
}
