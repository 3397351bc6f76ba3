import Foundation

/// Somewhere text is written: a file descriptor (`ConsoleWriter`), or a buffer a test
/// reads back. Components, progress and prompts write through it, so whoever runs the
/// program decides where its output goes.
///
/// ```swift
/// func greet(on output: some TextOutput) {
///     output.writeLine("Hello")
/// }
/// ```
public protocol TextOutput: Sendable {
    // MARK: Writing

    /// Writes all of `text`. Returns `false` if the output failed (for example the reader
    /// went away); output is best effort, so callers usually ignore it.
    @discardableResult
    func write(_ text: String) -> Bool

    // MARK: Facts

    /// Whether the output is a terminal a person is looking at (prompts need one).
    var isTerminal: Bool { get }

    /// The file descriptor written to, when the output is one (a redirected stdout may be
    /// a file whose mode matters); nil for outputs that are not (a test's capture).
    var underlyingDescriptor: Int32? { get }
}

// MARK: - Conveniences

extension TextOutput {
    /// None by default.
    public var underlyingDescriptor: Int32? { nil }

    /// Writes `text` followed by a newline.
    @discardableResult
    public func writeLine(_ text: String) -> Bool {
        write(text + "\n")
    }

    /// Renders `component` and writes its lines, each ending in a newline.
    @discardableResult
    public func write(_ component: some Renderable, in context: RenderContext) -> Bool {
        write(component.renderString(in: context))
    }
}
