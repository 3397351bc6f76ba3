import BackupCore
import KeepsakeSupport

// MARK: - ArgumentParser

/// Parses a command's arguments (everything after the command word) against its spec.
///
/// Accepted forms:
/// - `--dest value` and `--dest=value`; `-d value`; flags `--quiet`, `-q`.
/// - Clustered short options `-qv`; the last letter of a cluster may take a value
///   from the next argument (`-qd /mnt`), as with getopt.
/// - `--` ends options: everything after it is positional, even `--weird`.
/// - `-` alone is a positional (stdin by convention).
/// - Options before, after and between positionals.
/// - A non-repeatable value option given twice: the last value wins (see
///   `ParsedArguments.value(_:)`); a repeatable one keeps all values in order.
///
/// A value must not look like an option: in `--dest --quiet` the value is missing, since
/// the user far more likely forgot it than meant a folder named `--quiet`
/// (`--dest=--quiet` says the latter). Negative numbers such as `-5` are values.
///
/// If the spec declares a `help` option and `--help` (or its short form) appears before
/// `--`, parsing stops and the result holds only that flag (and `--json`, for help as data),
/// so help wins over errors.
///
/// Arguments are bytes (`CommandLineArgument`): options and positionals marked
/// `takesPath` keep any bytes; every other value, and every option name, must be UTF-8.
enum ArgumentParser {

    // MARK: Parse

    /// Parses `arguments` given as text for `spec`, or throws the first problem found.
    static func parse(_ arguments: [String], for spec: CommandSpec) throws(UsageError) -> ParsedArguments {
        try parse(arguments.map { CommandLineArgument($0) }, for: spec)
    }

    /// Parses `arguments` for `spec`, or throws the first problem found.
    static func parse(_ arguments: [CommandLineArgument], for spec: CommandSpec) throws(UsageError) -> ParsedArguments {
        if let help = helpRequest(in: arguments, for: spec) { return help }

        var state = State(spec: spec, arguments: arguments)
        try state.run()
        try assignPositionals(&state.result, for: spec)
        return state.result
    }

    // MARK: Help shortcut

    private static func helpRequest(in arguments: [CommandLineArgument], for spec: CommandSpec) -> ParsedArguments? {
        guard let help = spec.option(long: OptionKey.help.name), help.isFlag else { return nil }
        let tokens = Set([help.longFlag, help.shortFlag].compactMap { $0 })
        let before = arguments.prefix { $0.text != "--" }
        guard before.contains(where: { tokens.contains($0.text) }) else { return nil }
        var flags = [help.long: 1]
        if before.contains(where: { $0.text == OptionKey.json.description }) { flags[OptionKey.json.name] = 1 }
        return ParsedArguments(flagCounts: flags)
    }

    // MARK: Positionals

    /// Hands positionals to the argument specs left to right. Each takes what it can while
    /// leaving one for every required argument after it, so `[SRC] DEST` with one value
    /// fills `DEST`.
    private static func assignPositionals(_ result: inout ParsedArguments, for spec: CommandSpec) throws(UsageError) {
        var remaining = result.positionalArguments[...]
        for (index, argument) in spec.arguments.enumerated() {
            let requiredAfter = spec.arguments[(index + 1)...].filter { !$0.optional }.count
            let available = max(0, remaining.count - requiredAfter)
            let count = argument.repeating ? available : min(1, available)
            if count == 0 && !argument.optional {
                throw UsageError(.missingArgument(argument.displayName), command: spec)
            }
            let values = Array(remaining.prefix(count))
            if !argument.takesPath, let bad = values.first(where: { !$0.isValidUTF8 }) {
                throw UsageError(.notUTF8(bad.text, argument: argument.displayName), command: spec)
            }
            result.assign(values, to: argument.name)
            remaining = remaining.dropFirst(count)
        }
        if let extra = remaining.first {
            throw UsageError(.unexpectedArgument(extra.text), command: spec)
        }
    }

    // MARK: Token helpers

    /// Whether a token would be read as an option rather than a value.
    static func looksLikeOption(_ token: String) -> Bool {
        token.hasPrefix("-") && token != "-" && !isNegativeNumber(token)
    }

    private static func isNegativeNumber(_ token: String) -> Bool {
        let digits = token.dropFirst()
        // `Double` also reads `inf` and `nan`; only digits or a dot may follow the dash.
        return token.hasPrefix("-") && !digits.isEmpty && Double(digits) != nil
            && digits.first.map { $0.isNumber || $0 == "." } == true
    }
}

// MARK: - State

extension ArgumentParser {

    /// The cursor over the arguments and the result being built.
    private struct State {
        let spec: CommandSpec
        let arguments: [CommandLineArgument]
        var index = 0
        var result = ParsedArguments()

        init(spec: CommandSpec, arguments: [CommandLineArgument]) {
            self.spec = spec
            self.arguments = arguments
        }

        mutating func run() throws(UsageError) {
            while index < arguments.count {
                let argument = arguments[index]
                let token = argument.text
                index += 1
                if token == "--" {
                    arguments[index...].forEach { result.addPositional($0) }
                    index = arguments.count
                } else if token.hasPrefix("--") {
                    try parseLong(argument)
                } else if token.hasPrefix("-") && token != "-" && !isPositionalNumber(token) {
                    try parseShort(token)
                } else {
                    result.addPositional(argument)
                }
            }
        }

        // MARK: Long options

        private mutating func parseLong(_ argument: CommandLineArgument) throws(UsageError) {
            // Only the name must be UTF-8 here: the value after `=` may be a path.
            let inlineValue = argument.inlineValue
            let nameBytes = inlineValue.map { Array(argument.bytes.prefix(argument.bytes.count - $0.bytes.count - 1)) }
                ?? argument.bytes
            let written = CommandLineArgument(bytes: nameBytes).text
            let name = String(written.dropFirst(2))

            guard let option = spec.option(long: name) else {
                let suggestion = Suggestion.nearest(to: name, among: visibleLongNames)
                throw UsageError(.unknownOption(written, suggestion: suggestion.map { "--" + $0 }), command: spec)
            }
            if option.isFlag {
                guard inlineValue == nil else { throw UsageError(.flagWithValue(flag: written), command: spec) }
                result.addFlag(option.long)
            } else if let inlineValue {
                try store(inlineValue, for: option, writtenAs: written)
            } else {
                try store(nextValue(for: option, writtenAs: written), for: option, writtenAs: written)
            }
        }

        // MARK: Short options

        private mutating func parseShort(_ token: String) throws(UsageError) {
            let letters = Array(token.dropFirst())
            var options: [OptionSpec] = []
            for letter in letters {
                guard let option = spec.option(short: letter) else {
                    throw unknownShort(token, letters: letters)
                }
                options.append(option)
            }
            // Every letter but the last must be a flag: there is no room for a value.
            for (position, option) in options.enumerated() {
                let written = "-" + String(letters[position])
                if option.isFlag {
                    result.addFlag(option.long)
                } else if position == options.count - 1 {
                    try store(nextValue(for: option, writtenAs: written), for: option, writtenAs: written)
                } else {
                    throw UsageError(.missingValue(option: option.display(as: written)), command: spec)
                }
            }
        }

        /// `-x` is reported as is; a longer unknown token such as `-dest` is reported whole,
        /// with a suggestion among the long names, since it is most likely a long option
        /// typed with one dash.
        private func unknownShort(_ token: String, letters: [Character]) -> UsageError {
            guard letters.count > 1 else {
                return UsageError(.unknownOption(token, suggestion: nil), command: spec)
            }
            let name = String(letters).split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
            let suggestion = Suggestion.nearest(to: name, among: visibleLongNames)
            return UsageError(.unknownOption(token, suggestion: suggestion.map { "--" + $0 }), command: spec)
        }

        // MARK: Values

        private mutating func nextValue(for option: OptionSpec, writtenAs written: String) throws(UsageError) -> CommandLineArgument {
            guard index < arguments.count, !ArgumentParser.looksLikeOption(arguments[index].text) else {
                throw UsageError(.missingValue(option: option.display(as: written)), command: spec)
            }
            defer { index += 1 }
            return arguments[index]
        }

        private mutating func store(_ value: CommandLineArgument, for option: OptionSpec, writtenAs written: String) throws(UsageError) {
            if !value.isValidUTF8 && !option.takesPath {
                throw UsageError(.notUTF8(value.text, argument: option.display(as: written)), command: spec)
            }
            if let allowed = option.allowedValues, !allowed.contains(value.text) {
                throw UsageError(.invalidValue(value.text, option: option.display(as: written), allowed: allowed), command: spec)
            }
            result.addValue(value, for: option.long)
        }

        // MARK: Helpers

        private var visibleLongNames: [String] {
            spec.options.filter { !$0.hidden }.map(\.long)
        }

        /// `-5` is a positional number, not option `5`, unless the spec declares `-5`.
        private func isPositionalNumber(_ token: String) -> Bool {
            guard !ArgumentParser.looksLikeOption(token) else { return false }
            guard let first = token.dropFirst().first else { return false }
            return spec.option(short: first) == nil
        }
    }
}
