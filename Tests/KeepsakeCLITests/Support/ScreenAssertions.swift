import BackupCore
import Foundation
import KeepsakeSupport
import TerminalUI
import XCTest

/// Replaces what differs from run to run in a screen by fixed placeholders, keeping the
/// layout: backup ids (numbered in the order the test made them), dates, durations and
/// rates, the temporary folder's random name and the host name. Stored (compressed) sizes
/// and ratios vary by a few bytes with the ids and paths in the manifest: their digits
/// become `#`, in lines and in the table columns named in `maskedColumns`. A box line whose
/// text got shorter or longer is padded back to its width, so its right border stays put.
struct ScreenNormalizer {
    // MARK: State

    /// The ids the test knows, oldest first: the Nth becomes `YYYYMMDDThhmmssZ-backup#N`.
    var ids: [String] = []
    /// Table columns whose digits are masked (`STORED`, `RATIO`).
    var maskedColumns: [String] = ["STORED", "RATIO"]
    /// Whether to normalise at all (help screens hold no varying parts, only examples that look like them).
    var isEnabled = true

    /// Compares screens as they are.
    static let verbatim = ScreenNormalizer(ids: [], isEnabled: false)

    // MARK: Normalising

    /// `screen` with every varying part replaced.
    func normalize(_ screen: String) -> String {
        guard isEnabled else { return screen }
        let lines = screen.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        return maskingColumns(lines).map(normalizeLine).joined(separator: "\n")
    }

    /// The lines with the digits of `maskedColumns` masked, under each table's header
    /// (the spans come from its rule line).
    private func maskingColumns(_ lines: [String]) -> [String] {
        var lines = lines
        var spans: [Range<Int>] = []
        for index in lines.indices {
            let characters = Array(lines[index])
            if characters.first == "─", index > 0 {
                let header = Array(lines[index - 1])
                spans = Self.segments(of: characters).filter { span in
                    let title = String(header[min(span.lowerBound, header.count)..<min(span.upperBound, header.count)])
                    return maskedColumns.contains(title.trimmingCharacters(in: .whitespaces))
                }
            } else if !spans.isEmpty && characters.first != " " && !characters.isEmpty {
                var masked = characters
                for span in spans {
                    for position in span where position < masked.count && masked[position].isNumber { masked[position] = "#" }
                }
                lines[index] = String(masked)
            } else {
                spans = []
            }
        }
        return lines
    }

    /// The runs of `─` in a table's rule line.
    private static func segments(of rule: [Character]) -> [Range<Int>] {
        var result: [Range<Int>] = []
        var start: Int?
        for (position, character) in (rule + [" "]).enumerated() {
            if character == "─" {
                if start == nil { start = position }
            } else if let first = start {
                result.append(first..<position)
                start = nil
            }
        }
        return result
    }

    private func normalizeLine(_ line: String) -> String {
        var text = line
        for (number, id) in ids.enumerated() {
            text = text.replacingOccurrences(of: id, with: "YYYYMMDDThhmmssZ-backup#\(number + 1)")
        }
        for (pattern, placeholder) in Self.patterns {
            text = text.replacingOccurrences(of: pattern, with: placeholder, options: .regularExpression)
        }
        text = Self.replacingCharacters(of: "(?<=/ks-)[A-Za-z0-9]{1,6}", in: text, with: "X")
        for pattern in Self.maskedPatterns {
            text = Self.maskingDigits(of: pattern, in: text)
        }
        let host = HostIdentity.fileSafeHostName + "_"
        text = text.replacingOccurrences(of: host + "YYYYMMDD", with: "HOST_YYYYMMDD")
        return Self.keepingRightBorder(text, width: DisplayWidth.width(of: line))
    }

    /// The varying parts: ids not made by the test, local times (same width), durations
    /// and rates.
    private static let patterns: [(String, String)] = [
        ("[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}", "YYYYMMDDThhmmssZ-????????"),
        ("[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}", "YYYY-MM-DD hh:mm"),
        ("\\b[0-9]+(\\.[0-9]+)? (s|min [0-9]+ s|h [0-9]+ min) \\([0-9.]+ [KMGTP]?i?B/s\\)", "T.TT s (R B/s)"),
        ("\\b[0-9]+(\\.[0-9]+)? (s|min [0-9]+ s|h [0-9]+ min)\\b", "T.TT s"),
    ]

    /// Stored sizes and ratios outside tables.
    private static let maskedPatterns = [
        "→ [0-9.]+ [KMG]?i?B stored", "ratio [<0-9.]+×", "freeing [0-9.]+ [KMG]?i?B", "Stored: +[0-9.]+ [KMG]?i?B",
    ]

    /// `text` with the digits of every match of `pattern` replaced by `#`.
    private static func maskingDigits(of pattern: String, in text: String) -> String {
        rewriting(pattern, in: text) { String($0.map { $0.isNumber ? "#" : $0 }) }
    }

    /// `text` with every character of every match of `pattern` replaced by `character`
    /// (the temporary folder's random name, whole or cut by a table).
    private static func replacingCharacters(of pattern: String, in text: String, with character: Character) -> String {
        rewriting(pattern, in: text) { String(repeating: character, count: $0.count) }
    }

    private static func rewriting(_ pattern: String, in text: String, _ change: (Substring) -> String) -> String {
        guard let expression = try? NSRegularExpression(pattern: pattern) else { return text }
        var result = text
        for match in expression.matches(in: text, range: NSRange(text.startIndex..., in: text)).reversed() {
            guard let range = Range(match.range, in: result) else { continue }
            result.replaceSubrange(range, with: change(result[range]))
        }
        return result
    }

    /// `text` padded (or its spaces trimmed) before a closing `│` so it is `width` cells
    /// wide again; other lines as they are.
    private static func keepingRightBorder(_ text: String, width: Int) -> String {
        let difference = width - DisplayWidth.width(of: text)
        guard difference != 0, text.hasSuffix("│"), let border = text.lastIndex(of: "│") else { return text }
        var body = String(text[..<border])
        if difference > 0 {
            body += String(repeating: " ", count: difference)
        } else {
            for _ in 0 ..< -difference where body.hasSuffix("  ") { body.removeLast() }
        }
        return body + "│"
    }
}

// MARK: - Assertions

extension InProcessTestCase {
    /// Fails unless `actual`, normalised, is `expected`, showing every differing line and
    /// the whole screen to copy. With `KEEPSAKE_RECORD_SCREENS=DIR` the screen is also
    /// written to `DIR/name.txt`, to read while updating a literal.
    func assertScreen(_ name: String, _ actual: String, _ expected: String, normalizer: ScreenNormalizer = ScreenNormalizer(),
                      file: StaticString = #filePath, line: UInt = #line) {
        let screen = normalizer.normalize(actual)
        if let folder = ProcessInfo.processInfo.environment["KEEPSAKE_RECORD_SCREENS"], !folder.isEmpty {
            try? screen.write(toFile: folder + "/" + name + ".txt", atomically: true, encoding: .utf8)
        }
        guard screen != expected else { return }
        let have = screen.split(separator: "\n", omittingEmptySubsequences: false)
        let want = expected.split(separator: "\n", omittingEmptySubsequences: false)
        var differences: [String] = []
        for index in 0 ..< max(have.count, want.count) {
            let old = index < want.count ? String(want[index]) : "<none>"
            let new = index < have.count ? String(have[index]) : "<none>"
            if old != new { differences.append("line \(index + 1):\n  - \(old)\n  + \(new)") }
        }
        XCTFail("screen '\(name)' differs:\n\(differences.prefix(20).joined(separator: "\n"))\n--- whole screen:\n\(screen)",
                file: file, line: line)
    }
}
