// MARK: - ParsedArguments

/// The result of parsing one command line against a `CommandSpec`.
///
/// Options are looked up by their key (`.dest`), whichever form the user typed (`--dest`,
/// `--dest=…`, `-d`). Asking for an option the spec does not declare simply answers "not
/// given".
///
/// Values keep their bytes (see `CommandLineArgument`): `value(_:)` and `argument(_:)` give
/// the text, `path(_:)` and `argumentPaths(_:)` the bytes for options and positionals that
/// name files.
struct ParsedArguments: Sendable, Hashable {

    // MARK: Storage

    /// How many times each flag was given, by long name.
    private(set) var flagCounts: [String: Int]
    /// Every value given for each value option, by long name, in command-line order.
    private(set) var optionArguments: [String: [CommandLineArgument]]
    /// Every positional in command-line order (including those after `--`).
    private(set) var positionalArguments: [CommandLineArgument]
    /// The positionals assigned to each `ArgumentSpec`, by its name.
    private(set) var assignedArguments: [String: [CommandLineArgument]]

    // MARK: Init

    /// Creates a result; the parser fills it in, tests may build one directly.
    init(
        flagCounts: [String: Int] = [:],
        optionValues: [String: [String]] = [:],
        positionals: [String] = [],
        argumentValues: [String: [String]] = [:]
    ) {
        self.flagCounts = flagCounts
        optionArguments = optionValues.mapValues { $0.map(CommandLineArgument.init) }
        positionalArguments = positionals.map(CommandLineArgument.init)
        assignedArguments = argumentValues.mapValues { $0.map(CommandLineArgument.init) }
    }

    // MARK: Options

    /// Whether the flag was given at least once.
    func flag(_ key: OptionKey) -> Bool {
        flagCount(key) > 0
    }

    /// How many times the flag was given (`-vv` counts 2).
    func flagCount(_ key: OptionKey) -> Int {
        flagCounts[key.name] ?? 0
    }

    /// The option's value, or `nil` when not given. When given several times the last one
    /// wins, as in most command-line tools, so a wrapper script's default can be overridden
    /// by appending the option again.
    func value(_ key: OptionKey) -> String? {
        optionArguments[key.name]?.last?.text
    }

    /// Every value given for the option, in command-line order (for repeatable options).
    func values(_ key: OptionKey) -> [String] {
        (optionArguments[key.name] ?? []).map(\.text)
    }

    /// The bytes of the option's last value (an option that names a file), or `nil`.
    func path(_ key: OptionKey) -> [UInt8]? {
        optionArguments[key.name]?.last?.bytes
    }

    /// The bytes of every value of the option, in command-line order.
    func paths(_ key: OptionKey) -> [[UInt8]] {
        (optionArguments[key.name] ?? []).map(\.bytes)
    }

    // MARK: Positionals

    /// The positional assigned to the argument `key`, or `nil` when it was left out.
    /// For a repeating argument this is the first of its values.
    func argument(_ key: ArgumentKey) -> String? {
        assignedArguments[key.name]?.first?.text
    }

    /// Every positional assigned to the argument `key` (for `PATH...`).
    func arguments(_ key: ArgumentKey) -> [String] {
        (assignedArguments[key.name] ?? []).map(\.text)
    }

    /// The bytes of every positional assigned to the argument `key` (paths).
    func argumentPaths(_ key: ArgumentKey) -> [[UInt8]] {
        (assignedArguments[key.name] ?? []).map(\.bytes)
    }

    /// Every positional as text, in command-line order.
    var positionals: [String] { positionalArguments.map(\.text) }

    // MARK: Building

    /// Records one more occurrence of a flag.
    mutating func addFlag(_ long: String) {
        flagCounts[long, default: 0] += 1
    }

    /// Records one value of a value option.
    mutating func addValue(_ value: CommandLineArgument, for long: String) {
        optionArguments[long, default: []].append(value)
    }

    /// Records one positional, before it is assigned to an argument.
    mutating func addPositional(_ value: CommandLineArgument) {
        positionalArguments.append(value)
    }

    /// Records the positionals assigned to an argument.
    mutating func assign(_ values: [CommandLineArgument], to name: String) {
        assignedArguments[name] = values
    }
}
