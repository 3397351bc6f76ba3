/// `keepsake completions bash|zsh|fish`: a shell completion script for commands, options,
/// option values and backup ids (read with `keepsake list --ids` at completion time).
struct CompletionsCommand: KeepsakeCommand {
    // MARK: Spec

    static let shells = ["bash", "zsh", "fish"]

    static let spec = CommandSpec(
        name: "completions",
        abstract: "Print a shell completion script (bash, zsh or fish).",
        discussion: "Completes commands, options, option values (codecs, overwrite modes, colour modes) and backup ids.",
        arguments: [ArgumentSpec(.shell, help: "bash, zsh or fish.")],
        options: CommonOptions.global,
        examples: [
            .init(command: "keepsake completions bash > ~/.local/share/bash-completion/completions/keepsake",
                  explanation: "Install bash completion for your user."),
            .init(command: "keepsake completions zsh > \"${fpath[1]}/_keepsake\"", explanation: "Install zsh completion."),
            .init(command: "keepsake completions fish > ~/.config/fish/completions/keepsake.fish", explanation: "Install fish completion."),
        ]
    )

    private let shell: String

    init(arguments: ParsedArguments, context: CommandContext) throws {
        // The parser has already insisted on exactly one positional.
        guard let shell = arguments.argument(.shell) else {
            throw UsageError(.missingArgument(ArgumentKey.shell.name), command: Self.spec)
        }
        guard Self.shells.contains(shell) else {
            throw UsageError(.invalidValue(shell, option: ArgumentKey.shell.name, allowed: Self.shells), command: Self.spec)
        }
        self.shell = shell
        if context.json {
            throw UsageError.custom("'completions' prints a shell script; '--json' does not apply.", command: Self.spec)
        }
    }

    func run(context: CommandContext) throws -> ExitCode {
        let specs = CommandRegistry.all.map { $0.spec }
        switch shell {
        case "bash": context.printLine(CompletionScripts.bash(specs))
        case "zsh": context.printLine(CompletionScripts.zsh(specs))
        default: context.printLine(CompletionScripts.fish(specs))
        }
        return .success
    }
}

// MARK: - Arguments

extension ArgumentKey {
    /// The shell to write completions for.
    static let shell = ArgumentKey("SHELL")
}
