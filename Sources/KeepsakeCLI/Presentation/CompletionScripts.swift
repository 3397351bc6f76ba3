/// Builds completion scripts from the command specs, so they never drift from the parser.
enum CompletionScripts {
    // MARK: What to complete after an option

    private enum ValueKind {
        case none, words([String]), directory, file
    }

    private static func valueKind(_ option: OptionSpec) -> ValueKind {
        if let values = option.allowedValues { return .words(values) }
        switch option.valueName {
        // A destination is most often a folder (s3:// and rclone: are typed out).
        case "dir", "where": return .directory
        case "file": return .file
        default: return .none
        }
    }

    /// Commands whose arguments are backup ids.
    private static let takesBackups: Set<String> = ["list", "restore", "verify", "diff", "copy"]

    private static func summary(_ text: String) -> String {
        let sentence = text.split(separator: ".", maxSplits: 1).first.map(String.init) ?? text
        return sentence.replacingOccurrences(of: "'", with: "").replacingOccurrences(of: "\"", with: "")
            .replacingOccurrences(of: "[", with: "(").replacingOccurrences(of: "]", with: ")")
            .replacingOccurrences(of: ":", with: " -")
    }

    private static func visibleOptions(_ spec: CommandSpec) -> [OptionSpec] {
        spec.options.filter { !$0.hidden }
    }

    // MARK: bash

    static func bash(_ specs: [CommandSpec]) -> String {
        var lines = [
            "# keepsake completion for bash: source this file, or put it in ~/.local/share/bash-completion/completions/keepsake",
            "_keepsake() {",
            "    local cur prev cmd",
            "    cur=\"${COMP_WORDS[COMP_CWORD]}\"",
            "    prev=\"${COMP_WORDS[COMP_CWORD-1]}\"",
            "    if [ \"$COMP_CWORD\" -eq 1 ]; then",
            "        COMPREPLY=( $(compgen -W \"\(specs.map(\.name).joined(separator: " ")) --help --version\" -- \"$cur\") )",
            "        return",
            "    fi",
            "    cmd=\"${COMP_WORDS[1]}\"",
            "    case \"$cmd\" in",
        ]
        for spec in specs {
            lines.append("        \(spec.name))")
            lines.append("            case \"$prev\" in")
            for option in visibleOptions(spec) where !option.isFlag {
                let names = [option.longFlag, option.shortFlag].compactMap { $0 }.joined(separator: "|")
                switch valueKind(option) {
                case .words(let words):
                    lines.append("                \(names)) COMPREPLY=( $(compgen -W \"\(words.joined(separator: " "))\" -- \"$cur\") ); return ;;")
                case .directory:
                    lines.append("                \(names)) COMPREPLY=( $(compgen -d -- \"$cur\") ); return ;;")
                case .file:
                    lines.append("                \(names)) COMPREPLY=( $(compgen -f -- \"$cur\") ); return ;;")
                case .none:
                    lines.append("                \(names)) return ;;")
                }
            }
            lines.append("            esac")
            let flags = visibleOptions(spec).flatMap { [$0.longFlag, $0.shortFlag].compactMap { $0 } }
            lines.append("            if [[ \"$cur\" == -* ]]; then COMPREPLY=( $(compgen -W \"\(flags.joined(separator: " "))\" -- \"$cur\") ); return; fi")
            if takesBackups.contains(spec.name) {
                lines.append("            COMPREPLY=( $(compgen -W \"latest $(keepsake list --ids 2>/dev/null)\" -- \"$cur\") $(compgen -f -- \"$cur\") )")
            } else if spec.name == "help" {
                lines.append("            COMPREPLY=( $(compgen -W \"\(specs.map(\.name).joined(separator: " "))\" -- \"$cur\") )")
            } else if spec.name == "completions" {
                lines.append("            COMPREPLY=( $(compgen -W \"\(CompletionsCommand.shells.joined(separator: " "))\" -- \"$cur\") )")
            } else {
                lines.append("            COMPREPLY=( $(compgen -f -- \"$cur\") )")
            }
            lines.append("            ;;")
        }
        lines += ["    esac", "}", "complete -o filenames -F _keepsake keepsake"]
        return lines.joined(separator: "\n")
    }

    // MARK: zsh

    static func zsh(_ specs: [CommandSpec]) -> String {
        var lines = [
            "#compdef keepsake",
            "# keepsake completion for zsh: put this file as _keepsake in a folder of $fpath",
            "_keepsake_backups() {",
            "    local -a ids",
            "    ids=(latest ${(f)\"$(keepsake list --ids 2>/dev/null)\"})",
            "    _describe 'backup' ids",
            "    _files",
            "}",
            "_keepsake() {",
            "    local -a commands",
            "    commands=(",
        ]
        for spec in specs { lines.append("        '\(spec.name):\(summary(spec.abstract))'") }
        lines += ["    )", "    if (( CURRENT == 2 )); then", "        _describe 'command' commands", "        return", "    fi",
                  "    local cmd=$words[2]", "    shift words", "    (( CURRENT-- ))", "    case $cmd in"]
        for spec in specs {
            var arguments: [String] = []
            for option in visibleOptions(spec) {
                let help = summary(option.help)
                let repeatMark = option.repeatable ? "*" : ""
                var action = ""
                if !option.isFlag {
                    switch valueKind(option) {
                    case .words(let words): action = ":\(option.valueName ?? "value"):(\(words.joined(separator: " ")))"
                    case .directory: action = ":\(option.valueName ?? "dir"):_files -/"
                    case .file: action = ":\(option.valueName ?? "file"):_files"
                    case .none: action = ":\(option.valueName ?? "value"): "
                    }
                }
                arguments.append("'\(repeatMark)\(option.longFlag)[\(help)]\(action)'")
                if let short = option.shortFlag { arguments.append("'\(repeatMark)\(short)[\(help)]\(action)'") }
            }
            if takesBackups.contains(spec.name) {
                arguments.append("'*:backup:_keepsake_backups'")
            } else if spec.name == "help" {
                arguments.append("':command:(\(specs.map(\.name).joined(separator: " ")))'")
            } else if spec.name == "completions" {
                arguments.append("':shell:(\(CompletionsCommand.shells.joined(separator: " ")))'")
            } else {
                arguments.append("'*:path:_files'")
            }
            lines.append("        \(spec.name)) _arguments -s \(arguments.joined(separator: " ")) ;;")
        }
        lines += ["    esac", "}", "_keepsake \"$@\""]
        return lines.joined(separator: "\n")
    }

    // MARK: fish

    static func fish(_ specs: [CommandSpec]) -> String {
        var lines = [
            "# keepsake completion for fish: put this file in ~/.config/fish/completions/keepsake.fish",
            "complete -c keepsake -f",
        ]
        for spec in specs {
            lines.append("complete -c keepsake -n __fish_use_subcommand -a \(spec.name) -d '\(summary(spec.abstract))'")
        }
        for spec in specs {
            let condition = "'__fish_seen_subcommand_from \(spec.name)'"
            for option in visibleOptions(spec) {
                var line = "complete -c keepsake -n \(condition) -l \(option.long)"
                if let short = option.short { line += " -s \(short)" }
                if !option.isFlag {
                    switch valueKind(option) {
                    case .words(let words): line += " -x -a '\(words.joined(separator: " "))'"
                    case .directory: line += " -x -a '(__fish_complete_directories)'"
                    case .file: line += " -r -F"
                    case .none: line += " -x"
                    }
                }
                lines.append(line + " -d '\(summary(option.help))'")
            }
            if takesBackups.contains(spec.name) {
                lines.append("complete -c keepsake -n \(condition) -a 'latest (keepsake list --ids 2>/dev/null)' -F")
            } else if spec.name == "help" {
                lines.append("complete -c keepsake -n \(condition) -a '\(specs.map(\.name).joined(separator: " "))'")
            } else if spec.name == "completions" {
                lines.append("complete -c keepsake -n \(condition) -a '\(CompletionsCommand.shells.joined(separator: " "))'")
            } else {
                lines.append("complete -c keepsake -n \(condition) -F")
            }
        }
        return lines.joined(separator: "\n")
    }
}
