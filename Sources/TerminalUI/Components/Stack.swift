import Foundation

/// Components drawn one below the other, in array order.
///
/// ```swift
/// Stack([Header(title: "Keepsake"), Box("Ready"), HintLine("Run", command: "keepsake backup")], spacing: 1)
/// ```
public struct Stack: Renderable {

    // MARK: Properties

    /// The components, top to bottom.
    public var children: [any Renderable]
    /// Blank lines between consecutive non-empty children.
    public var spacing: Int

    /// Creates a vertical stack.
    public init(_ children: [any Renderable], spacing: Int = 0) {
        self.children = children
        self.spacing = max(0, spacing)
    }

    // MARK: Rendering

    /// Each child's lines, separated by `spacing` blank lines; children that render
    /// nothing take no space.
    public func render(in context: RenderContext) -> [String] {
        var lines: [String] = []
        for child in children {
            let childLines = child.render(in: context)
            guard !childLines.isEmpty else { continue }
            if !lines.isEmpty {
                lines += Array(repeating: "", count: spacing)
            }
            lines += childLines
        }
        return lines
    }
}
