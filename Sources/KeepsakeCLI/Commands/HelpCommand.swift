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
    /// What `keepsake` alone prints: what it is, three commands to start with, and where
    /// the rest is (the whole list is `keepsake help`).
    static func printShortUsage(environment: [String: String]) {
        let capabilities = TerminalCapabilities.detect(colorMode: .auto, environment: environment)
        let out = capabilities.renderContext(for: .standardOutput)
        let examples = [
            ("keepsake backup ~/Documents", "back up a folder"),
            ("keepsake list", "show the backups"),
            ("keepsake restore latest --target /tmp/restore", "restore the newest one"),
        ]
        let width = examples.map { $0.0.count }.max() ?? 0
        var lines = ["\(out.apply(.heading, to: "Usage:")) keepsake <command> [options]", "", KeepsakeCLI.abstract, ""]
        for (command, explanation) in examples {
            let padding = String(repeating: " ", count: width - command.count + 2)
            lines.append("  " + out.apply(.accent, to: command) + padding + out.apply(.muted, to: explanation))
        }
        lines += ["", "Every command and exit code: keepsake help. One command: keepsake help COMMAND."]
        for line in lines { _ = ConsoleWriter.standardOutput.writeLine(line) }
    }

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
