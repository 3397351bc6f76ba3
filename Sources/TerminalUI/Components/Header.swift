import Foundation

/// A bold title over a muted subtitle, shown atop interactive commands.
///
/// ```swift
/// Header(title: "Restore", subtitle: "Choose a backup to restore from", symbol: "◆")
/// ```
public struct Header: Renderable {

    // MARK: Properties

    /// The title, drawn in the theme's heading style.
    public var title: String
    /// An optional subtitle, drawn muted and word-wrapped.
    public var subtitle: String?
    /// An optional mark before the title (a small "logo"), drawn in the accent style.
    public var symbol: String?

    /// Creates a header.
    public init(title: String, subtitle: String? = nil, symbol: String? = nil) {
        self.title = title
        self.subtitle = subtitle
        self.symbol = symbol
    }

    // MARK: Rendering

    /// The title line (wrapped if long) followed by the subtitle lines.
    public func render(in context: RenderContext) -> [String] {
        var lines: [String] = []
        if let symbol, !symbol.isEmpty {
            // Keep the title aligned under itself when it wraps.
            let indent = DisplayWidth.width(of: symbol) + 1
            let titleLines = DisplayWidth.wrap(title, width: max(1, context.width - indent))
            for (index, line) in titleLines.enumerated() {
                let lead = index == 0 ? context.apply(.accent, to: symbol) + " " : DisplayWidth.spaces(indent)
                lines.append(lead + context.apply(.heading, to: line))
            }
        } else {
            lines = DisplayWidth.wrap(title, width: context.width).map { context.apply(.heading, to: $0) }
        }
        if let subtitle, !subtitle.isEmpty {
            lines += DisplayWidth.wrap(subtitle, width: context.width).map { context.apply(.muted, to: $0) }
        }
        return lines
    }
}
