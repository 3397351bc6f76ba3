import Foundation

/// Aligned "label: value" rows, handy for summaries.
///
/// ```swift
/// KeyValueList([("Source", "/home/me/Photos"), ("Files", "1,204"), ("Status", "OK")])
/// // Source: /home/me/Photos
/// // Files:  1,204
/// // Status: OK
/// ```
public struct KeyValueList: Renderable {

    // MARK: Items

    /// One row.
    public struct Item: Sendable, Hashable {
        /// The label on the left (drawn muted).
        public var key: String
        /// The value on the right; wraps under itself when long.
        public var value: String
        /// How the value looks.
        public var valueRole: Theme.Role

        /// Creates a row.
        public init(_ key: String, _ value: String, valueRole: Theme.Role = .plain) {
            self.key = key
            self.value = value
            self.valueRole = valueRole
        }
    }

    // MARK: Properties

    /// The rows, in order.
    public var items: [Item]
    /// Written right after each label.
    public var separator: String
    /// How labels look.
    public var keyRole: Theme.Role

    /// Creates a list from rows.
    public init(items: [Item], separator: String = ":", keyRole: Theme.Role = .muted) {
        self.items = items
        self.separator = separator
        self.keyRole = keyRole
    }

    /// Creates a list from (label, value) pairs.
    public init(_ pairs: [(String, String)], separator: String = ":", keyRole: Theme.Role = .muted) {
        self.init(items: pairs.map { Item($0.0, $0.1) }, separator: separator, keyRole: keyRole)
    }

    // MARK: Rendering

    /// Rows with values aligned in one column; labels longer than half the width are
    /// truncated, and values wrap with a hanging indent. A value holding a word too long
    /// for the value column (a file name) goes under its label, indented by two, so the
    /// word is cut only when it is wider than the whole line.
    public func render(in context: RenderContext) -> [String] {
        guard !items.isEmpty else { return [] }
        let separatorWidth = DisplayWidth.width(of: separator)
        let longest = items.map { DisplayWidth.width(of: $0.key) }.max() ?? 0
        // The label column may take at most half the line so values stay readable.
        let keyWidth = max(1, min(longest, context.width / 2 - separatorWidth))
        let valueColumn = keyWidth + separatorWidth + 1
        let valueWidth = max(1, context.width - valueColumn)

        var lines: [String] = []
        for item in items {
            let key = DisplayWidth.truncate(item.key, toWidth: keyWidth) + separator
            let label = context.apply(keyRole, to: key)
            let gap = DisplayWidth.spaces(valueColumn - DisplayWidth.width(of: key))
            let longestWord = item.value.split(separator: " ").map { DisplayWidth.width(of: String($0)) }.max() ?? 0
            if longestWord > valueWidth && valueWidth < context.width - 2 {
                lines.append(label)
                lines += DisplayWidth.wrap(item.value, width: context.width - 2).map {
                    "  " + context.apply(item.valueRole, to: $0)
                }
                continue
            }
            let valueLines = DisplayWidth.wrap(item.value, width: valueWidth)
            for (index, valueLine) in valueLines.enumerated() {
                let value = context.apply(item.valueRole, to: valueLine)
                if index == 0 {
                    // No trailing spaces when the value is empty.
                    lines.append(valueLine.isEmpty ? label : label + gap + value)
                } else {
                    lines.append(DisplayWidth.spaces(valueColumn) + value)
                }
            }
        }
        return lines
    }
}
