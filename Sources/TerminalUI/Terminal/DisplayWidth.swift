import Foundation

/// Measures and lays out text in terminal cells rather than characters.
///
/// A terminal draws East Asian wide characters (Hangul, CJK, kana, fullwidth forms) and
/// emoji in two cells, combining marks and joiners in none, and everything else in one.
/// All functions here work per grapheme cluster (Swift `Character`) and treat ANSI escape
/// sequences as zero-width, so styled text can be measured too.
///
/// ```swift
/// DisplayWidth.width(of: "사진.jpg")                                  // 8
/// DisplayWidth.truncate("/very/long/path/file.txt", toWidth: 12, position: .middle)
/// ```
public enum DisplayWidth {

    // MARK: Options

    /// Where `truncate(_:toWidth:position:)` removes text and puts the ellipsis.
    public enum TruncationPosition: Sendable, Equatable, CaseIterable {
        /// Keep the beginning: `"long-file-na…"`.
        case end
        /// Keep both ends, good for paths: `"/home/…/file.txt"`.
        case middle
        /// Keep the end: `"…ng-file-name"`.
        case start
    }

    /// Horizontal placement used by `pad(_:toWidth:alignment:)`.
    public enum Alignment: Sendable, Equatable, CaseIterable {
        /// Text at the left, spaces after it.
        case left
        /// Spaces before the text; the usual choice for numbers.
        case right
        /// Spaces split on both sides (the extra one goes right).
        case center
    }

    /// The ellipsis inserted by truncation (one cell wide).
    public static let ellipsis = "…"

    /// The SGR reset sequence appended when truncation cuts styled text.
    static let sgrReset = "\u{1B}[0m"

    // MARK: Measuring

    /// The number of terminal cells `text` occupies, ignoring ANSI escape sequences.
    ///
    /// Line breaks are control characters and count as zero; measure lines one by one.
    public static func width(of text: String) -> Int {
        // Fast path for printable ASCII, by far the most common case in listings.
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return text.utf8.count }
        var total = 0
        for token in tokens(of: text) {
            if case .character(_, let width) = token { total += width }
        }
        return total
    }

    /// The number of terminal cells one grapheme cluster occupies: 0, 1 or 2.
    public static func width(of character: Character) -> Int {
        let scalars = character.unicodeScalars
        guard let first = scalars.first else { return 0 }
        if isControl(first) { return 0 }

        if scalars.count > 1 {
            // U+FE0E asks for text presentation: one cell even for an emoji base.
            if scalars.contains(where: { $0.value == 0xFE0E }) { return 1 }
            // U+FE0F (emoji presentation), a ZWJ sequence or a skin-tone modifier turns an
            // emoji-capable base into a two-cell pictograph (also keycaps like "1️⃣").
            let makesEmoji = scalars.contains { scalar in
                scalar.value == 0xFE0F || scalar.value == 0x200D || scalar.value == 0x20E3
                    || (0x1F3FB...0x1F3FF).contains(scalar.value)
            }
            if makesEmoji && first.properties.isEmoji { return 2 }
            // A pair of regional indicators is a flag.
            if isRegionalIndicator(first) { return 2 }
        }

        // The first scalar with a width decides (base + combining marks = base width;
        // Hangul L+V+T jamo = the wide leading consonant).
        for scalar in scalars {
            let width = cellWidth(of: scalar)
            if width > 0 { return width }
        }
        return 0
    }

    /// The width of a single Unicode scalar outside any grapheme context.
    static func cellWidth(of scalar: Unicode.Scalar) -> Int {
        if isControl(scalar) || isZeroWidth(scalar) { return 0 }
        if isWide(scalar) { return 2 }
        return 1
    }

    // MARK: ANSI escape sequences

    /// Removes ANSI escape sequences (CSI such as colours and cursor moves, OSC such as
    /// hyperlinks and titles, and two-byte escapes), leaving the visible text.
    static func stripANSI(_ text: String) -> String {
        // Fast path: most text has no ESC at all.
        guard text.unicodeScalars.contains(where: { $0.value == 0x1B || $0.value == 0x9B }) else {
            return text
        }
        var result = ""
        for token in tokens(of: text) {
            if case .character(let character, _) = token { result.append(character) }
        }
        return result
    }

    // MARK: Truncating and padding

    /// Shortens `text` to at most `width` cells, replacing the removed part with "…".
    ///
    /// Text that already fits is returned unchanged. A wide character is never split, so
    /// the result may be one cell narrower than `width`; `pad` fills it up. Escape
    /// sequences inside the kept part are kept, and a reset is appended when styled text
    /// was cut so the style cannot leak.
    static func truncate(
        _ text: String,
        toWidth width: Int,
        position: TruncationPosition = .end
    ) -> String {
        guard width > 0 else { return "" }
        let all = tokens(of: text)
        let total = all.reduce(0) { $0 + $1.width }
        if total <= width { return text }
        if width == 1 { return ellipsis }

        let budget = width - 1  // one cell for the ellipsis
        let hasEscapes = all.contains { $0.isEscape }
        let tail = hasEscapes ? sgrReset : ""

        switch position {
        case .end:
            let head = prefix(of: all, fitting: budget)
            return render(head) + tail + ellipsis
        case .start:
            let end = suffix(of: all, fitting: budget)
            return ellipsis + render(end) + tail
        case .middle:
            let headBudget = (budget + 1) / 2
            let head = prefix(of: all, fitting: headBudget)
            let headWidth = head.reduce(0) { $0 + $1.width }
            let end = suffix(of: all, fitting: budget - headWidth)
            return render(head) + tail + ellipsis + render(end) + tail
        }
    }

    /// Pads `text` with spaces to exactly `width` cells. Text that is already as wide or
    /// wider is returned unchanged (truncate first when it must fit).
    public static func pad(_ text: String, toWidth width: Int, alignment: Alignment = .left) -> String {
        let missing = width - self.width(of: text)
        guard missing > 0 else { return text }
        switch alignment {
        case .left:
            return text + spaces(missing)
        case .right:
            return spaces(missing) + text
        case .center:
            let before = missing / 2
            return spaces(before) + text + spaces(missing - before)
        }
    }

    /// Truncates then pads, giving exactly `width` cells.
    static func fit(
        _ text: String,
        toWidth width: Int,
        alignment: Alignment = .left,
        truncation: TruncationPosition = .end
    ) -> String {
        pad(truncate(text, toWidth: width, position: truncation), toWidth: width, alignment: alignment)
    }

    /// `count` spaces (empty for zero or negative counts).
    static func spaces(_ count: Int) -> String {
        count > 0 ? String(repeating: " ", count: count) : ""
    }

    /// `text` made safe for a single line: line breaks and tabs become spaces, other
    /// control characters (which would move the cursor and break layouts) become "?".
    /// Escape sequences are not kept; use it on data such as file names, and on every
    /// message that may carry what a destination or a server supplied, before styling.
    public static func singleLine(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) else {
            return text
        }
        var result = ""
        for character in text {
            guard let first = character.unicodeScalars.first, isControl(first) else {
                result.append(character)
                continue
            }
            result.append(first == "\n" || first == "\t" || first == "\r" ? " " : "?")
        }
        return result
    }

    // MARK: Wrapping

    /// U+00A0, the no-break space: the wrapper never breaks a line there, so it glues two
    /// words (help writes `(env:` and `KEEPSAKE_DEST)` with one).
    public static let noBreakSpace: Character = "\u{00A0}"

    /// Word-wraps `text` into lines of at most `width` cells, the first starting with
    /// `firstPrefix` and the others with `restPrefix` (a hanging indent).
    ///
    /// Lines break at spaces; at a no-break space only when the words it glues cannot fit
    /// on one line together. Existing line breaks are kept (an empty line stays empty), runs
    /// of spaces between words collapse to one, and a word longer than a line is broken
    /// after its last `/` that fits (paths stay readable) or else by characters, never
    /// inside a wide character. No line ends with a space. Always returns at least one line.
    ///
    /// Each of `keepingWhole` found in `text` (a command to paste, spaces and all) is one
    /// word that is never broken: it starts a line of its own when it does not fit on the
    /// current one, and stands alone, wider than the line, when it fits on none.
    public static func wrap(_ text: String, width: Int, firstPrefix: String = "", restPrefix: String = "",
                            keepingWhole: [String] = []) -> [String] {
        let width = max(1, width)
        let firstRoom = max(1, width - self.width(of: firstPrefix))
        let restRoom = max(1, width - self.width(of: restPrefix))
        var body: [String] = []
        for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
            wrapParagraph(String(paragraph), keepingWhole: keepingWhole, into: &body) { $0 == 0 ? firstRoom : restRoom }
        }
        return body.enumerated().map { index, line in
            var line = Substring((index == 0 ? firstPrefix : restPrefix) + line)
            while line.last == " " { line = line.dropLast() }
            return String(line)
        }
    }

    /// Appends the lines of one paragraph to `lines`; `room` gives the cells line N may hold.
    private static func wrapParagraph(_ paragraph: String, keepingWhole: [String], into lines: inout [String],
                                      room: (Int) -> Int) {
        let widest = max(room(0), room(1))
        let words = pieces(of: paragraph, keepingWhole: keepingWhole).flatMap { piece -> [(text: String, whole: Bool)] in
            if piece.whole { return [(piece.text, true)] }
            return piece.text.split(separator: " ", omittingEmptySubsequences: true).flatMap { word -> [String] in
                // Glued words too wide for any line come apart at their no-break spaces.
                guard self.width(of: String(word)) > widest, word.contains(noBreakSpace) else { return [String(word)] }
                return word.split(separator: noBreakSpace).map(String.init)
            }.map { ($0, false) }
        }
        guard !words.isEmpty else {
            lines.append("")
            return
        }
        var current = ""
        var currentWidth = 0
        for (word, whole) in words {
            let wordWidth = self.width(of: word)
            if currentWidth > 0 && currentWidth + 1 + wordWidth <= room(lines.count) {
                current += " " + word
                currentWidth += 1 + wordWidth
                continue
            }
            if currentWidth > 0 {
                lines.append(current)
            }
            if whole {
                // Never broken: wider than the line, it stands alone.
                current = word
                currentWidth = wordWidth
                continue
            }
            // Too long for any line: hard-break it, keep the last piece open so the next
            // word may follow it.
            var rest = tokens(of: word)
            var restWidth = wordWidth
            while restWidth > room(lines.count) {
                var piece = prefix(of: rest, fitting: room(lines.count))
                if let slash = piece.lastIndex(where: { if case .character("/", _) = $0 { return true } else { return false } }),
                   slash > 0 {
                    piece = Array(piece[...slash])
                }
                let taken = piece.isEmpty ? Array(rest.prefix(1)) : piece
                lines.append(render(taken))
                rest.removeFirst(taken.count)
                restWidth -= taken.reduce(0) { $0 + $1.width }
            }
            current = render(rest)
            currentWidth = restWidth
        }
        lines.append(current)
    }

    /// `paragraph` cut into the occurrences of `keepingWhole` (in the order found, none
    /// overlapping) and the text between them.
    private static func pieces(of paragraph: String, keepingWhole: [String]) -> [(text: String, whole: Bool)] {
        let spans = keepingWhole.filter { !$0.isEmpty }
        guard !spans.isEmpty else { return [(paragraph, false)] }
        var pieces: [(text: String, whole: Bool)] = []
        var rest = Substring(paragraph)
        while true {
            let found = spans.compactMap { span in rest.range(of: span) }.min { $0.lowerBound < $1.lowerBound }
            guard let found else { break }
            pieces.append((String(rest[..<found.lowerBound]), false))
            pieces.append((String(rest[found]), true))
            rest = rest[found.upperBound...]
        }
        pieces.append((String(rest), false))
        return pieces
    }

    // MARK: Tokens

    /// A visible grapheme with its width, or an escape sequence of width zero.
    enum Token {
        case character(Character, width: Int)
        case escape(String)

        var width: Int {
            if case .character(_, let width) = self { return width }
            return 0
        }

        var isEscape: Bool {
            if case .escape = self { return true }
            return false
        }
    }

    /// Splits text into escape sequences and measured grapheme clusters.
    static func tokens(of text: String) -> [Token] {
        var result: [Token] = []
        let scalars = Array(text.unicodeScalars)
        var plain = String.UnicodeScalarView()
        var index = 0

        func flushPlain() {
            guard !plain.isEmpty else { return }
            // ESC always starts a new grapheme cluster, so splitting here cannot change
            // how the plain runs segment.
            for character in String(plain) {
                result.append(.character(character, width: width(of: character)))
            }
            plain = String.UnicodeScalarView()
        }

        while index < scalars.count {
            let scalar = scalars[index]
            if scalar.value == 0x1B || scalar.value == 0x9B {
                flushPlain()
                let end = escapeEnd(in: scalars, from: index)
                var sequence = String.UnicodeScalarView()
                sequence.append(contentsOf: scalars[index..<end])
                result.append(.escape(String(sequence)))
                index = end
            } else {
                plain.append(scalar)
                index += 1
            }
        }
        flushPlain()
        return result
    }

    /// The index just past the escape sequence starting at `start`.
    private static func escapeEnd(in scalars: [Unicode.Scalar], from start: Int) -> Int {
        var index = start + 1
        if scalars[start].value == 0x9B {
            return csiEnd(in: scalars, from: index)
        }
        guard index < scalars.count else { return index }
        switch scalars[index].value {
        case 0x5B:  // "[" CSI: parameters and intermediates, then a final byte 0x40–0x7E
            return csiEnd(in: scalars, from: index + 1)
        case 0x5D, 0x50, 0x5F, 0x5E:  // "]" OSC, "P" DCS, "_" APC, "^" PM: up to BEL or ST
            index += 1
            while index < scalars.count {
                let value = scalars[index].value
                if value == 0x07 { return index + 1 }
                if value == 0x1B {
                    if index + 1 < scalars.count && scalars[index + 1].value == 0x5C { return index + 2 }
                    return index  // an unterminated string ends at the next escape
                }
                index += 1
            }
            return index
        default:
            // Two-byte escapes such as ESC 7 / ESC 8 (save/restore cursor).
            return index + 1
        }
    }

    private static func csiEnd(in scalars: [Unicode.Scalar], from start: Int) -> Int {
        var index = start
        while index < scalars.count {
            let value = scalars[index].value
            if (0x40...0x7E).contains(value) { return index + 1 }
            if !(0x20...0x3F).contains(value) { return index }  // malformed: stop before it
            index += 1
        }
        return index
    }

    private static func render(_ tokens: some Sequence<Token>) -> String {
        var result = ""
        for token in tokens {
            switch token {
            case .character(let character, _): result.append(character)
            case .escape(let sequence): result += sequence
            }
        }
        return result
    }

    private static func prefix(of tokens: [Token], fitting budget: Int) -> [Token] {
        var kept: [Token] = []
        var used = 0
        for token in tokens {
            if used + token.width > budget { break }
            kept.append(token)
            used += token.width
        }
        return kept
    }

    private static func suffix(of tokens: [Token], fitting budget: Int) -> [Token] {
        var kept: [Token] = []
        var used = 0
        for token in tokens.reversed() {
            if used + token.width > budget { break }
            kept.append(token)
            used += token.width
        }
        return kept.reversed()
    }

    // MARK: Unicode classes

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        return value < 0x20 || (0x7F...0x9F).contains(value)
    }

    private static func isRegionalIndicator(_ scalar: Unicode.Scalar) -> Bool {
        (0x1F1E6...0x1F1FF).contains(scalar.value)
    }

    private static func isZeroWidth(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        // Hangul medial vowels and final consonants join the leading consonant's cell.
        if (0x1160...0x11FF).contains(value) || (0xD7B0...0xD7FF).contains(value) { return true }
        // Soft hyphen is format (Cf) but terminals draw it like a hyphen.
        if value == 0x00AD { return false }
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format:
            // Covers combining accents, ZWJ/ZWNJ/ZWSP, variation selectors, BOM.
            return true
        default:
            return false
        }
    }

    private static func isWide(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        if value < 0x1100 { return false }
        if scalar.properties.isEmojiPresentation { return true }
        for range in wideRanges where range.contains(value) { return true }
        return false
    }

    /// East Asian Wide (W) and Fullwidth (F) blocks from Unicode's EastAsianWidth.txt,
    /// condensed. Pictographs (U+1F300 and up) are matched by `isEmojiPresentation`
    /// instead, because text-default ones such as U+1F321 draw in one cell like wcwidth.
    private static let wideRanges: [ClosedRange<UInt32>] = [
        0x1100...0x115F,    // Hangul Jamo leading consonants
        0x2329...0x232A,    // angle brackets
        0x2E80...0x303E,    // CJK radicals, Kangxi, ideographic description, CJK punctuation
        0x3041...0x33FF,    // Hiragana, Katakana, Bopomofo, Hangul compatibility Jamo, CJK compatibility
        0x3400...0x4DBF,    // CJK extension A
        0x4E00...0x9FFF,    // CJK unified ideographs
        0xA000...0xA4CF,    // Yi
        0xA960...0xA97F,    // Hangul Jamo extended A
        0xAC00...0xD7A3,    // Hangul syllables
        0xF900...0xFAFF,    // CJK compatibility ideographs
        0xFE10...0xFE19,    // vertical forms
        0xFE30...0xFE6F,    // CJK compatibility forms, small form variants
        0xFF00...0xFF60,    // fullwidth forms
        0xFFE0...0xFFE6,    // fullwidth signs
        0x16FE0...0x16FE4,  // ideographic symbols
        0x17000...0x18CFF,  // Tangut
        0x1B000...0x1B2FF,  // Kana supplement and extensions, Nushu
        0x1F200...0x1F2FF,  // enclosed ideographic supplement
        0x20000...0x2FFFD,  // CJK extensions B–F
        0x30000...0x3FFFD,  // CJK extension G and later
    ]
}
