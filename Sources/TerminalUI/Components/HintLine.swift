import Foundation

/// A two-part hint: plain text followed by an emphasised command, such as
/// "To restore it, run **keepsake restore latest**".
///
/// The text wraps; the command is kept whole on the last line when it fits there, and
/// otherwise starts a line of its own. It is never broken, even when wider than the line:
/// a command pasted from a wrapped hint would run without its later words.
///
/// ```swift
/// HintLine("No backups yet. Create one with", command: "keepsake backup ~/Photos")
/// ```
public struct HintLine: Renderable {

    // MARK: Properties

    /// The plain first part.
    public var text: String
    /// The emphasised second part.
    public var command: String
    /// How the first part looks (muted by default).
    public var textRole: Theme.Role
    /// How the command looks (the theme's emphasis, bold, by default).
    public var commandRole: Theme.Role

    /// Creates a hint from its two parts.
    public init(_ text: String, command: String, textRole: Theme.Role = .plain, commandRole: Theme.Role = .emphasis) {
        self.text = text
        self.command = command
        self.textRole = textRole
        self.commandRole = commandRole
    }

    // MARK: Rendering

    /// The hint's lines; the command is never split.
    public func render(in context: RenderContext) -> [String] {
        let width = context.width
        let textLines = text.isEmpty ? [] : DisplayWidth.wrap(text, width: width)
        var lines = textLines.map { context.apply(textRole, to: $0) }
        let commandWidth = DisplayWidth.width(of: command)
        guard !command.isEmpty else { return lines }
        let styledCommand = { (part: String) in context.apply(commandRole, to: part) }

        if let lastPlain = textLines.last, DisplayWidth.width(of: lastPlain) + 1 + commandWidth <= width {
            lines[lines.count - 1] += " " + styledCommand(command)
        } else {
            lines.append(styledCommand(command))
        }
        return lines
    }
}
