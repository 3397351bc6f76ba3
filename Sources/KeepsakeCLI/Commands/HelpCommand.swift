import Foundation
import TerminalUI

/// `keepsake help [COMMAND]`: the overview, or one command's help.
struct HelpCommand: KeepsakeCommand {
    // MARK: Spec

    static let spec = CommandSpec(
        name: "help",
        abstract: "Show help for keepsake or for one command.",
        arguments: [ArgumentSpec(.command, help: "The command to explain.", optional: true)],
        options: [OptionSpec(.man, help: "Print the keepsake(1) manual page (roff), for 'man -l -' or to install.")]
            + CommonOptions.global,
        examples: [.init(command: "keepsake help restore", explanation: "Explain the restore command."),
                   .init(command: "keepsake help --man | man -l -", explanation: "Read the whole manual page.")]
    )

    private let topic: String?
    private let manPage: Bool

    /// The variables the manual page lists (the README's table, shortened).
    static let environment: [(String, String)] = [
        ("KEEPSAKE_DEST", "The destination when --dest is not given."),
        ("KEEPSAKE_PROFILE, KEEPSAKE_CONFIG", "The profile when --profile is not given, and its configuration file."),
        ("XDG_DATA_HOME", "Base of the default destination (keepsake/backups)."),
        ("XDG_CONFIG_HOME", "Base of the default config file (keepsake/config.toml)."),
        ("XDG_CACHE_HOME", "Base of the change-detection cache of encrypted backups."),
        ("KEEPSAKE_IDENTITY_FILE, KEEPSAKE_PASSPHRASE_FILE", "The identity or passphrase file of encrypted backups."),
        ("NO_COLOR", "Non-empty: no colours (bold and dim stay)."),
        ("TERM", "dumb: no escape sequences and no animation."),
        ("COLUMNS", "The output width."),
        ("KEEPSAKE_S3_ENDPOINT, AWS_*, KEEPSAKE_RCLONE, RCLONE_CONFIG", "S3 and rclone destinations."),
    ]

    init(arguments: ParsedArguments, context: CommandContext) throws {
        topic = arguments.argument(.command)
        manPage = arguments.flag(.man)
        if manPage && context.json {
            throw UsageError.custom("Give either '--man' (a manual page in roff) or '--json', not both.", command: Self.spec)
        }
        if let topic, CommandRegistry.command(named: topic) == nil {
            throw UsageError.unknownCommand(topic, known: CommandRegistry.all.map { $0.spec.name })
        }
    }

    func run(context: CommandContext) throws -> ExitCode {
        if manPage {
            let formatter = DateFormatter()
            formatter.dateFormat = "yyyy-MM-dd"
            formatter.timeZone = TimeZone(identifier: "UTC")
            let page = ManPageRenderer.render(commands: CommandRegistry.all.map { $0.spec },
                                              globalOptions: CommonOptions.global,
                                              exitCodes: ExitCode.allCases.map { ($0.rawValue, $0.meaning) },
                                              environment: HelpCommand.environment, version: KeepsakeCLI.version,
                                              date: formatter.string(from: Date()))
            context.printLine(String(page.dropLast()))
            return .success
        }
        if let topic, let command = CommandRegistry.command(named: topic) {
            HelpCommand.printHelp(for: command.spec, context: context)
        } else {
            HelpCommand.printTopLevel(context: context)
        }
        return .success
    }

    // MARK: Rendering

    /// One command's help on stdout, wrapped to the terminal.
    static func printHelp(for spec: CommandSpec, context: CommandContext) {
        guard !context.json else {
            context.printJSON(HelpJSON.command(spec))
            return
        }
        let out = context.out
        let text = HelpRenderer.render(spec, width: context.capabilities.width, heading: { out.apply(.heading, to: $0) })
        context.printLine(text)
    }

    /// What `keepsake` alone prints: what it is, three commands to start with, and where
    /// the rest is (the whole list is `keepsake help`).
    static func printShortUsage(context: CommandContext) {
        let out = context.out
        let examples = [
            ("keepsake backup ~/Documents", "back up a folder"),
            ("keepsake list", "show the backups"),
            ("keepsake restore latest --target /tmp/restore", "restore the newest one"),
        ]
        let width = examples.map { $0.0.count }.max() ?? 0
        let widest = examples.map { 2 + width + 2 + $0.1.count }.max() ?? 0
        var lines = ["\(out.apply(.heading, to: "Usage:")) keepsake <command> [options]", ""]
        lines += DisplayWidth.wrap(KeepsakeCLI.abstract, width: out.width) + [""]
        for (command, explanation) in examples {
            // Side by side when they fit, else each explanation under its command.
            if widest <= out.width {
                let padding = String(repeating: " ", count: width - command.count + 2)
                lines.append("  " + out.apply(.accent, to: command) + padding + out.apply(.muted, to: explanation))
            } else {
                lines += ["  " + out.apply(.accent, to: command), "      " + out.apply(.muted, to: explanation)]
            }
        }
        lines += [""] + DisplayWidth.wrap("Every command and exit code: keepsake help. One command: keepsake help COMMAND.",
                                          width: out.width)
        for line in lines { context.printLine(line) }
    }

    /// `keepsake --help`: a header on a terminal, then every command, the global options
    /// and the exit codes.
    static func printTopLevel(context: CommandContext) {
        guard !context.json else {
            context.printJSON(HelpJSON.overview())
            return
        }
        let out = context.out
        if context.capabilities.stdoutIsTTY {
            context.print(Header(title: "Keepsake \(KeepsakeCLI.version)",
                                 subtitle: "Backups you can trust, in formats that outlive the tool.").padding(bottom: 1))
        }
        let text = HelpRenderer.renderTopLevel(
            abstract: KeepsakeCLI.abstract,
            commands: CommandRegistry.all.map { ($0.spec.name, $0.spec.abstract) },
            globalOptions: CommonOptions.global + [OptionSpec(.version, help: "Print the version and exit.")],
            exitCodes: ExitCode.allCases.map { ($0.rawValue, $0.meaning) },
            width: context.capabilities.width,
            heading: { out.apply(.heading, to: $0) })
        context.printLine(text)
    }
}

// MARK: - Option keys

extension OptionKey {
    static let man = OptionKey("man")
    static let version = OptionKey("version")
}

// MARK: - Arguments

extension ArgumentKey {
    /// The command to explain.
    static let command = ArgumentKey("COMMAND")
}
