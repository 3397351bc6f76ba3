import Foundation

/// One or more lines of styled text that word-wrap to the available width.
///
/// ```swift
/// Text("3 files could not be read.", role: .warning)
/// Text(longParagraph, wraps: false)   // truncated with "…" instead of wrapped
/// ```
public struct Text: Renderable {

    // MARK: Properties

    /// The text; `\n` starts a new line.
    public var content: String
    /// How the text looks.
    public var look: Look
    /// Word-wrap (default) or truncate each line to the width.
    public var wraps: Bool

    // MARK: Initializers

    /// Text in a theme role (plain by default).
    public init(_ content: String, role: Theme.Role = .plain, wraps: Bool = true) {
        self.content = content
        self.look = .role(role)
        self.wraps = wraps
    }

    /// Text in a fixed style.
    public init(_ content: String, style: Style, wraps: Bool = true) {
        self.content = content
        self.look = .style(style)
        self.wraps = wraps
    }

    // MARK: Rendering

    /// Wrapped (or truncated) lines, each styled separately.
    public func render(in context: RenderContext) -> [String] {
        let lines: [String]
        if wraps {
            lines = DisplayWidth.wrap(content, width: context.width)
        } else {
            lines = content.split(separator: "\n", omittingEmptySubsequences: false).map {
                DisplayWidth.truncate(String($0), toWidth: context.width)
            }
        }
        let style = look.resolve(in: context.theme)
        return lines.map { context.apply(style, to: $0) }
    }
}
