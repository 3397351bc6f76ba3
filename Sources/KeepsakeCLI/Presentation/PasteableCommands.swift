import Foundation

/// Makes the commands Keepsake's messages name work when pasted.
///
/// A message names a command as `'keepsake VERB …'` (or between backquotes). Such a command
/// is completed with the options the user gave that chose and opened the destination
/// (`--profile`, `--config`, `--dest`, `--s3-endpoint`, `--identity`, `--passphrase-file`),
/// as far as VERB accepts them, so that `keepsake list --dest /mnt/usb` that failed says
/// `'keepsake list --dest /mnt/usb'`, not a `keepsake list` that would look in the default
/// destination. A command that names its own `--dest` (another destination) is left as it is.
/// The wrapper keeps each command whole on one line (`spans(in:)`).
struct PasteableCommands: Sendable {
    // MARK: Carried options

    /// The options a pasted command needs, in the order they are added, each with the
    /// option it becomes (copy's `--from` is the `--dest` of the other commands).
    static let carriedKeys: [(given: OptionKey, carried: OptionKey)] = [
        (.profile, .profile), (.config, .config), (.dest, .dest), (.from, .dest), (.s3Endpoint, .s3Endpoint),
        (.identity, .identity), (.passphraseFile, .passphraseFile),
    ]

    /// The options to carry, as the user gave them.
    let carried: [(key: OptionKey, value: String)]

    /// Carries nothing: the commands stay as written.
    init() {
        carried = []
    }

    /// Carries the options of `carriedKeys` that `arguments` holds.
    init(_ arguments: ParsedArguments) {
        // `run PROFILE` speaks for its profile: what its messages name needs `--profile`.
        let profile = arguments.argument(.profile).map { [(key: OptionKey.profile, value: $0)] } ?? []
        carried = profile + Self.carriedKeys.flatMap { keys in
            arguments.values(keys.given).filter { !$0.isEmpty }.map { (keys.carried, $0) }
        }
    }

    /// Carries the given options (tests).
    init(carrying options: [(key: OptionKey, value: String)]) {
        carried = options
    }

    // MARK: Completing

    /// `text` with every command it names completed with the carried options.
    func complete(_ text: String) -> String {
        guard !carried.isEmpty else { return text }
        var result = ""
        var rest = Substring(text)
        while let found = Self.nextCommand(in: rest) {
            result += rest[rest.startIndex..<found.range.lowerBound]
            let completed = complete(command: found.command)
            // A value that needs quoting for the shell would end a '…' command early.
            let quote = completed.contains("'") ? "`" : String(found.quote)
            result += quote + completed + quote
            rest = rest[found.range.upperBound...]
        }
        return result + rest
    }

    /// One bare command (`keepsake restore ID PATH`) completed with the carried options.
    func complete(command: String) -> String {
        let words = command.split(separator: " ")
        guard words.count >= 2, words[0] == "keepsake",
              let spec = CommandRegistry.command(named: String(words[1]))?.spec,
              !words.contains("--dest"), !words.contains("-d") else { return command }
        var completed = command
        for (key, value) in carried where spec.options.contains(where: { $0.key == key }) {
            // An option the command already names keeps the value it names.
            guard !words.contains(Substring("--" + key.name)) else { continue }
            completed += " --\(key.name) \(Self.shellWord(value))"
        }
        return completed
    }

    // MARK: Finding commands

    /// The commands `text` names, each with its quotes and the characters glued to them
    /// (`('keepsake list').`): the spans a wrapper must keep whole.
    static func spans(in text: String) -> [String] {
        var spans: [String] = []
        var rest = Substring(text)
        while let found = nextCommand(in: rest) {
            var lower = found.range.lowerBound
            while lower > rest.startIndex, rest[rest.index(before: lower)] != " " { lower = rest.index(before: lower) }
            var upper = found.range.upperBound
            while upper < rest.endIndex, rest[upper] != " " { upper = rest.index(after: upper) }
            spans.append(String(rest[lower..<upper]))
            rest = rest[upper...]
        }
        return spans
    }

    /// The next `'keepsake …'` or `` `keepsake …` `` in `text`: its range with the quotes,
    /// the command inside them, and the quote character.
    private static func nextCommand(in text: Substring) -> (range: Range<Substring.Index>, command: String, quote: Character)? {
        var search = text[...]
        while let start = search.firstIndex(where: { $0 == "'" || $0 == "`" }) {
            let quote = search[start]
            let inside = search[search.index(after: start)...]
            guard inside.hasPrefix("keepsake "), let end = inside.firstIndex(of: quote) else {
                search = inside
                continue
            }
            return (start..<inside.index(after: end), String(inside[..<end]), quote)
        }
        return nil
    }

    // MARK: Shell words

    /// `word` as the shell reads it back: as it is when plain, else in single quotes.
    static func shellWord(_ word: String) -> String {
        let plain = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:@%+=,-~")
        if !word.isEmpty, word.allSatisfy({ plain.contains($0) }), !word.hasPrefix("~") { return word }
        return "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
