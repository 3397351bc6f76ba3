import Foundation

/// Rows and columns that fit the width: the twin of a table view of backup cells.
///
/// Widths are measured in terminal cells, so Korean, CJK and emoji cells stay aligned.
/// When the table is too wide, flexible columns shrink first (widest first), then the
/// others from the lowest priority up (widest first within a priority), never below
/// their minimum width; cells are
/// truncated with "…" at each column's truncation position (middle suits paths).
/// Without colour the output is greppable: no escape sequences, columns separated by at
/// least two spaces, no trailing spaces.
///
/// ```swift
/// Table(columns: [.init("ID"), .path("PATH"), .number("SIZE")],
///       rows: [["3f9a1c2e", "/home/me/사진_백업_2024.jpg", "1.2 MiB"]])
/// // ID        PATH                            SIZE
/// // ────────  ───────────────────────────  ───────
/// // 3f9a1c2e  /home/me/사진_백업_2024.jpg  1.2 MiB
/// ```
public struct Table: Renderable {

    // MARK: Columns

    /// A column's title and layout rules.
    public struct Column: Sendable, Hashable {
        /// Header text.
        public var title: String
        /// Placement of cells and header inside the column.
        public var alignment: DisplayWidth.Alignment
        /// Where over-long cells are cut.
        public var truncation: DisplayWidth.TruncationPosition
        /// The column never shrinks below this many cells (or its natural width if smaller).
        public var minWidth: Int
        /// The column never grows beyond this many cells.
        public var maxWidth: Int?
        /// Flexible columns give up width before all others.
        public var isFlexible: Bool
        /// Among non-flexible columns, lower priorities shrink first (give key columns
        /// such as sizes a higher priority to keep them whole).
        public var priority: Int
        /// Optional columns are left out (lowest priority first) when even the minimum
        /// widths of all columns do not fit, instead of cutting every line.
        public var isOptional: Bool
        /// Kept whole while optional columns can be left out instead: a number is never cut
        /// (right-aligned columns always are), and a path may ask for it too.
        public var prefersWhole: Bool

        /// Creates a column.
        public init(
            _ title: String,
            alignment: DisplayWidth.Alignment = .left,
            truncation: DisplayWidth.TruncationPosition = .end,
            minWidth: Int = 4,
            maxWidth: Int? = nil,
            flexible: Bool = false,
            priority: Int = 0,
            optional: Bool = false,
            prefersWhole: Bool = false
        ) {
            self.isOptional = optional
            self.prefersWhole = prefersWhole || alignment == .right
            self.title = title
            self.alignment = alignment
            self.truncation = truncation
            self.minWidth = max(1, minWidth)
            self.maxWidth = maxWidth.map { max(1, $0) }
            self.isFlexible = flexible
            self.priority = priority
        }

        /// A right-aligned column for numbers and sizes.
        public static func number(_ title: String, minWidth: Int = 4, priority: Int = 0, optional: Bool = false) -> Column {
            Column(title, alignment: .right, truncation: .end, minWidth: minWidth, priority: priority, optional: optional)
        }

        /// A flexible column truncated in the middle, for paths and file names; with
        /// `prefersWhole`, optional columns are left out before it is cut.
        public static func path(_ title: String, minWidth: Int = 12, prefersWhole: Bool = false) -> Column {
            Column(title, alignment: .left, truncation: .middle, minWidth: minWidth, flexible: true, prefersWhole: prefersWhole)
        }
    }

    // MARK: Cells

    /// One cell: text with a look, or a badge.
    public struct Cell: Sendable, Hashable, ExpressibleByStringLiteral {
        /// The visible text without styling (what is measured and shown without colour).
        public var text: String
        /// How the text looks when colour is on.
        public var look: Look
        /// A badge drawn instead of styled text when colour is on and it fits.
        public var badge: Badge?

        /// A text cell in a theme role.
        public init(_ text: String, role: Theme.Role = .plain) {
            self.text = text
            self.look = .role(role)
            self.badge = nil
        }

        /// A text cell in a fixed style.
        public init(_ text: String, style: Style) {
            self.text = text
            self.look = .style(style)
            self.badge = nil
        }

        /// A plain text cell from a string literal.
        public init(stringLiteral value: String) {
            self.init(value)
        }

        /// A cell showing a badge (its bracketed form without colour).
        public static func badge(_ badge: Badge) -> Cell {
            var cell = Cell(badge.plainText, role: badge.role)
            cell.badge = badge
            return cell
        }
    }

    // MARK: Properties

    /// The columns, left to right.
    public var columns: [Column]
    /// The rows; missing cells are empty, extra cells are ignored.
    public var rows: [[Cell]]
    /// Spaces between columns (at least 2, so plain output splits cleanly).
    public var columnSpacing: Int
    /// Draw the header row.
    public var showsHeader: Bool
    /// Draw a rule under the header.
    public var showsSeparator: Bool
    /// The glyph the rule is drawn with.
    public var separatorCharacter: Character
    /// How header titles look (the theme's heading style, bold, by default).
    public var headerRole: Theme.Role

    // MARK: Initializers

    /// A table of styled cells.
    public init(
        columns: [Column],
        cells: [[Cell]],
        columnSpacing: Int = 2,
        showsHeader: Bool = true,
        showsSeparator: Bool = true,
        separatorCharacter: Character = "─",
        headerRole: Theme.Role = .heading
    ) {
        self.columns = columns
        self.rows = cells
        self.columnSpacing = max(2, columnSpacing)
        self.showsHeader = showsHeader
        self.showsSeparator = showsSeparator
        self.separatorCharacter = separatorCharacter
        self.headerRole = headerRole
    }

    /// A table of plain strings.
    public init(
        columns: [Column],
        rows: [[String]],
        columnSpacing: Int = 2,
        showsHeader: Bool = true,
        showsSeparator: Bool = true
    ) {
        self.init(
            columns: columns,
            cells: rows.map { $0.map { Cell($0) } },
            columnSpacing: columnSpacing,
            showsHeader: showsHeader,
            showsSeparator: showsSeparator
        )
    }

    // MARK: Layout

    /// The columns shown at `width`: all of them, less the optional ones (lowest
    /// priority first) while the minimum widths do not fit; a column that prefers to stay
    /// whole counts with its whole width.
    func visibleColumns(for width: Int) -> [Int] {
        var visible = Array(columns.indices)
        func minimumTotal() -> Int {
            visible.map { minimumWidth(of: $0) }.reduce(0, +) + columnSpacing * max(0, visible.count - 1)
        }
        // An optional column with nothing in it shows nothing: it goes first.
        visible.removeAll { column in
            columns[column].isOptional && !rows.isEmpty && rows.allSatisfy { column >= $0.count || $0[column].text.isEmpty }
        }
        while minimumTotal() > width {
            let optional = visible.filter { columns[$0].isOptional }
            guard let drop = optional.min(by: { columns[$0].priority < columns[$1].priority }) else { break }
            visible.removeAll { $0 == drop }
        }
        // Still too wide: a whole column of numbers goes rather than numbers being cut
        // (the lowest priority first), as long as one column is left.
        while minimumTotal() > width && visible.count > 1 {
            let whole = visible.filter { columns[$0].prefersWhole && columns[$0].alignment == .right }
            guard let drop = whole.min(by: { columns[$0].priority < columns[$1].priority }) else { break }
            visible.removeAll { $0 == drop }
        }
        return visible
    }

    /// The width of every column when the table may use `width` cells (0 for a column
    /// left out).
    func columnWidths(for width: Int) -> [Int] {
        guard !columns.isEmpty else { return [] }
        let visible = Set(visibleColumns(for: width))
        var widths = columns.indices.map { visible.contains($0) ? naturalWidth(of: $0) : 0 }
        let available = width - columnSpacing * (visible.count - 1)
        var excess = widths.reduce(0, +) - available
        // A column that prefers to stay whole gives up nothing while another can (numbers
        // never do: a cut number reads as another number); only when the rest is at its
        // minimum does it shrink too, since no line may be wider than the context.
        let whole = columns.indices.map { visible.contains($0) ? minimumWidth(of: $0) : 0 }
        let cut = columns.indices.map { visible.contains($0) ? min(naturalWidth(of: $0), columns[$0].minWidth) : 0 }
        for minimums in [whole, cut] {
            // First the flexible columns, always the widest one, so they even out.
            while excess > 0 {
                let candidates = columns.indices.filter { columns[$0].isFlexible && widths[$0] > minimums[$0] }
                guard let widest = candidates.max(by: { widths[$0] < widths[$1] }) else { break }
                widths[widest] -= 1
                excess -= 1
            }
            // Then the rest: lowest priority first, and within a priority the widest column,
            // one cell at a time, so equal columns give up space evenly.
            while excess > 0 {
                let candidates = columns.indices.filter { !columns[$0].isFlexible && widths[$0] > minimums[$0] }
                guard let lowest = candidates.map({ columns[$0].priority }).min() else { break }
                let group = candidates.filter { columns[$0].priority == lowest }
                guard let widest = group.max(by: { widths[$0] < widths[$1] }) else { break }
                widths[widest] -= 1
                excess -= 1
            }
        }
        return widths
    }

    /// How narrow `column` may get: its whole width when it prefers to stay whole.
    private func minimumWidth(of column: Int) -> Int {
        columns[column].prefersWhole ? naturalWidth(of: column) : min(naturalWidth(of: column), columns[column].minWidth)
    }

    private func naturalWidth(of column: Int) -> Int {
        var width = showsHeader ? DisplayWidth.width(of: columns[column].title) : 0
        for row in rows where column < row.count {
            width = max(width, DisplayWidth.width(of: DisplayWidth.singleLine(row[column].text)))
        }
        if let maxWidth = columns[column].maxWidth { width = min(width, maxWidth) }
        return max(1, width)
    }

    // MARK: Rendering

    /// Header, rule and rows; no line is wider than the context.
    public func render(in context: RenderContext) -> [String] {
        guard !columns.isEmpty else { return [] }
        let widths = columnWidths(for: context.width)
        var lines: [String] = []

        if showsHeader {
            let titles = columns.map { Cell($0.title, role: headerRole) }
            lines.append(line(for: titles, widths: widths, in: context))
            if showsSeparator {
                let rule = widths.filter { $0 > 0 }.map { String(repeating: String(separatorCharacter), count: $0) }
                    .joined(separator: DisplayWidth.spaces(columnSpacing))
                lines.append(context.apply(context.theme.border, to: rule))
            }
        }
        for row in rows {
            lines.append(line(for: row, widths: widths, in: context))
        }
        // Last resort when even the minimum widths do not fit: cut the lines (the rule
        // plainly: an ellipsis there would read as a cut value).
        return lines.enumerated().map { index, line in
            guard showsHeader && showsSeparator && index == 1, DisplayWidth.width(of: line) > context.width else {
                return DisplayWidth.truncate(line, toWidth: context.width)
            }
            let rule = widths.filter { $0 > 0 }.map { String(repeating: String(separatorCharacter), count: $0) }
                .joined(separator: DisplayWidth.spaces(columnSpacing))
            return context.apply(context.theme.border, to: String(rule.prefix(context.width)))
        }
    }

    private func line(for row: [Cell], widths: [Int], in context: RenderContext) -> String {
        let texts = columns.indices.map { $0 < row.count && widths[$0] > 0 ? DisplayWidth.singleLine(row[$0].text) : "" }
        // Trailing empty cells write nothing, so lines carry no trailing spaces.
        guard let last = texts.lastIndex(where: { !$0.isEmpty }) else { return "" }
        var pieces: [String] = []
        for index in 0...last where widths[index] > 0 {
            let column = columns[index]
            let width = widths[index]
            let cut = DisplayWidth.truncate(texts[index], toWidth: width, position: column.truncation)
            var shown = cut
            if index < row.count, context.colorEnabled {
                let cell = row[index]
                if let badge = cell.badge, cut == texts[index] {
                    shown = badge.text(in: context)
                } else {
                    shown = context.apply(cell.look.resolve(in: context.theme), to: cut)
                }
            }
            let missing = width - DisplayWidth.width(of: cut)
            let isLast = index == last
            switch column.alignment {
            case .left:
                pieces.append(isLast ? shown : shown + DisplayWidth.spaces(missing))
            case .right:
                pieces.append(DisplayWidth.spaces(missing) + shown)
            case .center:
                let before = missing / 2
                let after = isLast ? 0 : missing - before
                pieces.append(DisplayWidth.spaces(before) + shown + DisplayWidth.spaces(after))
            }
        }
        return pieces.joined(separator: DisplayWidth.spaces(columnSpacing))
    }
}
