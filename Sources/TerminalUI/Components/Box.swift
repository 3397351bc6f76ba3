import Foundation

/// Text or components inside a border with insets, the twin of a message bubble: padded,
/// rounded or square corners, word-wrapped, width-aware with wide characters.
///
/// The box shrink-wraps its content (or spans the whole width with `fillsWidth`), and an
/// optional title sits in the top border.
///
/// ```swift
/// Box("Backup 20261129T023000Z finished in 42 s.", title: "Done")
/// // ╭─ Done ────────────────────────────────────╮
/// // │ Backup 20261129T023000Z finished in 42 s. │
/// // ╰───────────────────────────────────────────╯
/// Box(content: [Header(title: "Keepsake"), KeyValueList([("Files", "12")])], corners: .square)
/// ```
public struct Box: Renderable {

    // MARK: Options

    /// The corner glyphs.
    public enum Corners: Sendable, Hashable, CaseIterable {
        /// ╭╮╰╯
        case rounded
        /// ┌┐└┘
        case square

        var glyphs: (topLeft: String, topRight: String, bottomLeft: String, bottomRight: String) {
            switch self {
            case .rounded: return ("╭", "╮", "╰", "╯")
            case .square: return ("┌", "┐", "└", "┘")
            }
        }
    }

    /// Space between the border and the content: lines above/below, cells left/right.
    public struct Insets: Sendable, Hashable {
        /// Blank lines under the top border.
        public var top: Int
        /// Cells after the left border.
        public var leading: Int
        /// Blank lines above the bottom border.
        public var bottom: Int
        /// Cells before the right border.
        public var trailing: Int

        /// Creates insets; negative values count as zero.
        public init(top: Int = 0, leading: Int = 1, bottom: Int = 0, trailing: Int = 1) {
            self.top = max(0, top)
            self.leading = max(0, leading)
            self.bottom = max(0, bottom)
            self.trailing = max(0, trailing)
        }

        /// One cell left and right, no blank lines: the default.
        public static let standard = Insets()
        /// No space at all.
        public static let none = Insets(top: 0, leading: 0, bottom: 0, trailing: 0)

        /// `vertical` blank lines and `horizontal` cells on each side.
        public static func symmetric(vertical: Int = 0, horizontal: Int = 1) -> Insets {
            Insets(top: vertical, leading: horizontal, bottom: vertical, trailing: horizontal)
        }
    }

    // MARK: Properties

    /// The components inside, top to bottom.
    public var content: [any Renderable]
    /// Optional title drawn in the top border.
    public var title: String?
    /// Corner style.
    public var corners: Corners
    /// Space between border and content.
    public var insets: Insets
    /// Span the whole available width instead of shrink-wrapping the content.
    public var fillsWidth: Bool
    /// How the border looks (the theme's border style by default).
    public var borderLook: Look?
    /// How the title looks.
    public var titleRole: Theme.Role

    // MARK: Initializers

    /// A box around components.
    public init(
        title: String? = nil,
        corners: Corners = .rounded,
        insets: Insets = .standard,
        fillsWidth: Bool = false,
        borderLook: Look? = nil,
        titleRole: Theme.Role = .heading,
        content: [any Renderable]
    ) {
        self.content = content
        self.title = title
        self.corners = corners
        self.insets = insets
        self.fillsWidth = fillsWidth
        self.borderLook = borderLook
        self.titleRole = titleRole
    }

    /// A box around word-wrapped text (`\n` starts a new paragraph).
    public init(
        _ text: String,
        title: String? = nil,
        corners: Corners = .rounded,
        insets: Insets = .standard,
        fillsWidth: Bool = false
    ) {
        self.init(title: title, corners: corners, insets: insets, fillsWidth: fillsWidth, content: [Text(text)])
    }

    /// A box around several lines of text, each wrapped on its own.
    public init(
        lines: [String],
        title: String? = nil,
        corners: Corners = .rounded,
        insets: Insets = .standard,
        fillsWidth: Bool = false
    ) {
        self.init(title: title, corners: corners, insets: insets, fillsWidth: fillsWidth, content: lines.map { Text($0) })
    }

    // MARK: Rendering

    /// The bordered block; every line has the same display width.
    public func render(in context: RenderContext) -> [String] {
        let total = context.width
        // Too narrow for two borders and one cell of content: show the content bare.
        guard total >= 3 else {
            return content.flatMap { $0.render(in: context) }.map { DisplayWidth.truncate($0, toWidth: total) }
        }
        // Give up horizontal insets before squeezing the content to nothing.
        var leading = insets.leading
        var trailing = insets.trailing
        if total - 2 - leading - trailing < 1 {
            leading = 0
            trailing = 0
        }
        let maxContent = total - 2 - leading - trailing
        let inner = context.withWidth(maxContent)
        let lines = content.flatMap { $0.render(in: inner) }.map { DisplayWidth.truncate($0, toWidth: maxContent) }

        var contentWidth = fillsWidth ? maxContent : (lines.map(DisplayWidth.width(of:)).max() ?? 0)
        var interior = contentWidth + leading + trailing

        // The title needs "─ title ─" in the top border; widen the box for it if possible.
        var shownTitle: String?
        if let title, !title.isEmpty {
            let wanted = DisplayWidth.width(of: title) + 4
            if interior < wanted {
                interior = min(wanted, total - 2)
                contentWidth = interior - leading - trailing
            }
            if interior - 4 >= 1 {
                shownTitle = DisplayWidth.truncate(title, toWidth: interior - 4)
            }
        }

        let border = (borderLook ?? .style(context.theme.border)).resolve(in: context.theme)
        let paint = { (text: String) in context.apply(border, to: text) }
        let glyphs = corners.glyphs
        let side = paint("│")

        var result: [String] = []
        if let shownTitle {
            let titleWidth = DisplayWidth.width(of: shownTitle)
            // A wide character may leave the truncated title one cell short; the rule absorbs it.
            let rule = String(repeating: "─", count: max(0, interior - titleWidth - 3))
            result.append(
                paint(glyphs.topLeft + "─") + " " + context.apply(titleRole, to: shownTitle) + " "
                    + paint(rule + glyphs.topRight)
            )
        } else {
            result.append(paint(glyphs.topLeft + String(repeating: "─", count: interior) + glyphs.topRight))
        }
        let blank = side + DisplayWidth.spaces(interior) + side
        result += Array(repeating: blank, count: insets.top)
        let lead = DisplayWidth.spaces(leading)
        let trail = DisplayWidth.spaces(trailing)
        for line in lines {
            result.append(side + lead + DisplayWidth.pad(line, toWidth: contentWidth) + trail + side)
        }
        result += Array(repeating: blank, count: insets.bottom)
        result.append(paint(glyphs.bottomLeft + String(repeating: "─", count: interior) + glyphs.bottomRight))
        return result
    }
}
