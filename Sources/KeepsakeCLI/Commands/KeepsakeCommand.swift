/// One `keepsake` subcommand: its spec (parsing and help) and its action.
protocol KeepsakeCommand: Sendable {
    /// What the command accepts and how help describes it.
    static var spec: CommandSpec { get }

    /// Checks every option and argument (reporting all problems at once) and builds the
    /// command, or throws a usage error.
    init(arguments: ParsedArguments, context: CommandContext) throws

    /// Runs the command and says how it ended.
    func run(context: CommandContext) throws -> ExitCode
}
