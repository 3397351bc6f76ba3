import Foundation
import TerminalUI

/// A `TextOutput` that keeps what is written, for tests that run code writing to standard
/// output or error in process. Thread-safe: progress is written from engine threads.
public final class CapturedOutput: TextOutput, @unchecked Sendable {
    // MARK: State

    private let lock = NSLock()
    private var written = ""
    /// Whether to pass for a terminal (prompts check it).
    public let isTerminal: Bool

    /// An empty buffer, a terminal or not.
    public init(isTerminal: Bool = false) {
        self.isTerminal = isTerminal
    }

    // MARK: TextOutput

    /// Keeps `text`.
    @discardableResult
    public func write(_ text: String) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        written += text
        return true
    }

    // MARK: Reading

    /// Everything written so far.
    public var text: String {
        lock.lock()
        defer { lock.unlock() }
        return written
    }

}
