// MARK: - WordWrapper

/// Word wrapping for help text, measured in characters (help text is ASCII English;
/// user data never passes through here).
enum WordWrapper {

    // MARK: Wrap

    /// U+00A0: glues two words together, e.g. `(env:` and `KEEPSAKE_DEST)`.
    static let noBreakSpace: Character = "\u{00A0}"

    /// Wraps `text` so no line is longer than `width`. The first line starts with
    /// `firstPrefix`, later ones with `restPrefix` (a hanging indent). Lines break at
    /// spaces; a word longer than the room left is cut, so the limit always holds.
    /// `\n` in `text` starts a new line; an empty line stays empty.
    /// A no-break space (`WordWrapper.noBreakSpace`) joins two words that must stay on one
    /// line and is printed as a plain space. Trailing spaces are never emitted.
    /// Always returns at least one line.
    static func wrap(_ text: String, width: Int, firstPrefix: String = "", restPrefix: String = "") -> [String] {
        var lines: [String] = []
        var current = ""
        var currentLength = 0

        // The first output line has its own prefix; every later one hangs under it.
        func room() -> Int {
            max(1, width - (lines.isEmpty ? firstPrefix : restPrefix).count)
        }
        func flush() {
            let prefix = lines.isEmpty ? firstPrefix : restPrefix
            lines.append(trimTrailing(String((prefix + current).map { $0 == noBreakSpace ? " " : $0 })))
            current = ""
            currentLength = 0
        }

        for (number, paragraph) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if number > 0 { flush() }
            for word in paragraph.split(separator: " ") {
                var characters = Array(word)
                if currentLength > 0 && currentLength + 1 + characters.count <= room() {
                    current += " " + String(characters)
                    currentLength += 1 + characters.count
                    continue
                }
                if currentLength > 0 { flush() }
                while characters.count > room() {
                    let limit = room()
                    current = String(characters.prefix(limit))
                    flush()
                    characters.removeFirst(limit)
                }
                current = String(characters)
                currentLength = characters.count
            }
        }
        flush()
        return lines
    }

    // MARK: Helpers

    private static func trimTrailing(_ line: String) -> String {
        var line = Substring(line)
        while line.last == " " { line = line.dropLast() }
        return String(line)
    }
}
