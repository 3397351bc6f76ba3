import Foundation
import Glibc

/// Prompts on a real terminal: reads answers from a descriptor with `read(2)`, shows
/// prompts through a `TextOutput` (standard error, as a rule), switches modes with
/// `TerminalMode`.
///
/// ```swift
/// let io = TerminalPromptIO.controllingTerminal(output: ConsoleWriter.standardError)
/// let name = try Field.text("Name").ask(using: io, context: caps.renderContext(for: .standardError))
/// ```
public struct TerminalPromptIO: PromptIO, Sendable {

    // MARK: Properties

    /// Where answers are read from.
    public let inputDescriptor: Int32
    /// Where prompts are shown.
    public let output: any TextOutput

    /// Reads from `inputDescriptor` and shows prompts on `output`.
    public init(inputDescriptor: Int32, output: any TextOutput) {
        self.inputDescriptor = inputDescriptor
        self.output = output
    }

    /// Reads from the process's controlling terminal (`/dev/tty`, opened once), so a
    /// command whose standard input is data (`backup --stdin`) can still ask; standard
    /// input when there is no such terminal.
    public static func controllingTerminal(output: any TextOutput) -> TerminalPromptIO {
        TerminalPromptIO(inputDescriptor: controllingTerminalDescriptor, output: output)
    }

    /// `/dev/tty`, open for the life of the process, or standard input.
    private static let controllingTerminalDescriptor: Int32 = {
        let descriptor = open("/dev/tty", O_RDWR | O_CLOEXEC)
        return descriptor >= 0 ? descriptor : 0
    }()

    // MARK: PromptIO

    /// True when both the input descriptor and the output are terminals.
    public var isInteractive: Bool {
        isatty(inputDescriptor) == 1 && output.isTerminal
    }

    /// Writes to the output.
    public func write(_ text: String) {
        output.write(text)
    }

    /// Reads a line byte by byte (no stdio buffer, so nothing is read past the line).
    public func readLine(echo: Bool) throws -> String? {
        if echo { return try readRawLine() }
        return try TerminalMode.noEcho.run(on: inputDescriptor) { try readRawLine() }
    }

    /// Runs `body` in raw mode.
    public func withRawInput<T>(_ body: () throws -> T) throws -> T {
        try TerminalMode.raw.run(on: inputDescriptor, body)
    }

    /// Reads up to 32 bytes: one key press, or one whole escape sequence.
    public func readKeyBytes() throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 32)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(inputDescriptor, $0.baseAddress, $0.count) }
            if count >= 0 { return Array(buffer.prefix(count)) }
            if errno != EINTR { throw PromptError.terminalUnavailable(reason: String(cString: strerror(errno))) }
        }
    }

    // MARK: Reading

    private func readRawLine() throws -> String? {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let count = Glibc.read(inputDescriptor, &byte, 1)
            if count < 0 {
                if errno == EINTR { continue }
                throw PromptError.terminalUnavailable(reason: String(cString: strerror(errno)))
            }
            if count == 0 {
                // End of input: a partial line still counts as an answer.
                return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
            }
            if byte == 0x0A { break }
            bytes.append(byte)
        }
        if bytes.last == 0x0D { bytes.removeLast() }
        return String(decoding: bytes, as: UTF8.self)
    }
}
