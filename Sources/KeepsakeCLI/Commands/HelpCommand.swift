import TerminalUI

/// `keepsake help [COMMAND]`: the overview, or one command's help.
struct HelpCommand: KeepsakeCommand {
    // MARK: Spec

    static let spec = CommandSpec(
        name: "help",
        abstract: "Show help for keepsake or for one command.",
        arguments: [ArgumentSpec(name: "COMMAND", help: "The command to explain.", optional: true)],
        options: CommonOptions.global,
        examples: [.init(command: "keepsake help restore", explanation: "Explain the restore command.")]
    )

    private let topic: String?

    init(arguments: ParsedArguments, context: CommandContext) throws {
        topic = arguments.positionals.first
        if let topic, CommandRegistry.command(named: topic) == nil {
            throw UsageError.unknownCommand(topic, known: CommandRegistry.all.map { $0.spec.name })
        }
    }

    func run(context: CommandContext) throws -> ExitCode {
        if let topic, let command = CommandRegistry.command(named: topic) {
            HelpCommand.printHelp(for: command.spec, context: context)
        } else {
            HelpCommand.printTopLevel(environment: context.environment)
        }
        return .success
    }

    // MARK: Rendering

    /// One command's help on stdout, wrapped to the terminal.
    static func printHelp(for spec: CommandSpec, context: CommandContext) {
        let out = context.out
        let text = HelpRenderer.render(spec, width: context.capabilities.width, heading: { out.apply(.heading, to: $0) })
        context.printLine(text)
    }

    /// `keepsake --help`.
    static func printTopLevel(environment: [String: String]) {
        let capabilities = TerminalCapabilities.detect(colorMode: .auto, environment: environment)
        let out = capabilities.renderContext(for: .standardOutput)
        if capabilities.stdoutIsTTY {
            _ = ConsoleWriter.standardOutput.write(Header(title: "Keepsake \(KeepsakeCLI.version)",
                                                          subtitle: "Backups you can trust, in formats that outlive the tool."),
                                                   in: out)
            _ = ConsoleWriter.standardOutput.writeLine("")
        }
        let text = HelpRenderer.renderTopLevel(
            abstract: KeepsakeCLI.abstract,
            commands: CommandRegistry.all.map { ($0.spec.name, $0.spec.abstract) },
            globalOptions: CommonOptions.global + [OptionSpec(long: "version", help: "Print the version and exit.")],
            exitCodes: ExitCode.allCases.map { ($0.rawValue, $0.meaning) },
            width: capabilities.width,
            heading: { out.apply(.heading, to: $0) })
        _ = ConsoleWriter.standardOutput.writeLine(text)
    }
}
