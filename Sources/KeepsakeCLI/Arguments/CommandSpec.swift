// MARK: - CommandSpec

/// Everything the parser and the help screen need to know about one command
/// (`keepsake backup`): its positionals, its options, and the words around them.
struct CommandSpec: Sendable, Hashable {

    // MARK: Example

    /// One line of the EXAMPLES section: a command to type and what it does.
    struct Example: Sendable, Hashable {
        /// The full command line, e.g. `keepsake backup ~/Documents --dest /media/usb`.
        var command: String
        /// One sentence saying what the command does.
        var explanation: String

        /// Creates an example.
        init(command: String, explanation: String) {
            self.command = command
            self.explanation = explanation
        }
    }

    // MARK: Properties

    /// The command word, e.g. `"backup"`.
    var name: String
    /// One line for the OVERVIEW and for the command list of `keepsake --help`.
    var abstract: String
    /// Optional longer text under the overview; `\n` separates paragraphs or lines.
    var discussion: String
    /// Positionals in the order they are given.
    var arguments: [ArgumentSpec]
    /// Options in the order help lists them.
    var options: [OptionSpec]
    /// Shown in the EXAMPLES section, in order.
    var examples: [Example]

    // MARK: Init

    /// Creates a command spec.
    init(
        name: String,
        abstract: String,
        discussion: String = "",
        arguments: [ArgumentSpec] = [],
        options: [OptionSpec] = [],
        examples: [Example] = []
    ) {
        self.name = name
        self.abstract = abstract
        self.discussion = discussion
        self.arguments = arguments
        self.options = options
        self.examples = examples
    }

    // MARK: Usage

    /// The usage line of `keepsake --help` after the program name.
    static let topLevelSynopsis = "<command> [options]"

    /// The usage line after the program and command names: `[options] PATH...`.
    /// `[options]` appears only when the command has a visible option.
    var synopsis: String {
        var tokens: [String] = []
        if options.contains(where: { !$0.hidden }) { tokens.append("[options]") }
        tokens += arguments.map(\.usageToken)
        return tokens.joined(separator: " ")
    }

    /// The whole usage line: `keepsake backup [options] PATH...`.
    func usage(programName: String = "keepsake") -> String {
        [programName, name, synopsis].filter { !$0.isEmpty }.joined(separator: " ")
    }

    // MARK: Lookup

    /// The option whose long name is `long` (without dashes), hidden ones included.
    func option(long: String) -> OptionSpec? {
        options.first { $0.long == long }
    }

    /// The option whose short name is `short`, hidden ones included.
    func option(short: Character) -> OptionSpec? {
        options.first { $0.short == short }
    }
}
