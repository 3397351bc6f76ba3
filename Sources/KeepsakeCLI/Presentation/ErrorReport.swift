import BackupCore
import KeepsakeConfig
import KeepsakeJSON
import TerminalUI

/// A failure as the user is told it: one `Error:` line per problem, lines shown under them
/// as they are (a usage line, an example to copy), the exit code, and the JSON object
/// `{"error": …, "exit_code": N}` for `--json`. Every error a command prints is built here
/// and rendered by `lines(in:)`.
struct ErrorReport {
    // MARK: Contents

    /// One line of the report.
    enum Line: Equatable {
        /// A problem: labelled `Error:`, wrapped under its text on a terminal.
        case problem(String)
        /// Shown as it is (indented details, a blank line, the usage line).
        case detail(String)
    }

    /// The lines, in order.
    private(set) var lines: [Line]
    /// How the command ends.
    let code: ExitCode
    /// The `error` of the JSON object.
    private(set) var message: String

    // MARK: Init

    /// The report of a thrown error, its exit code from `ExitCode(for:)`.
    init(_ error: Error) {
        code = ExitCode(for: error)
        switch error {
        case let usage as UsageError:
            lines = usage.problems.map(Line.problem) + [.detail("")] + usage.usageLines().map(Line.detail)
            message = usage.message
        case let config as ConfigError:
            // Every problem of the file is one line; a missing file's message goes on with an example to copy.
            let text = config.description.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            lines = config.kind == .fileMissing
                ? text.enumerated().map { $0.offset == 0 ? .problem($0.element) : .detail($0.element) }
                : text.filter { !$0.isEmpty }.map(Line.problem)
            message = config.description
        default:
            var text = "\(error)"
            if !text.hasSuffix(".") { text += "." }
            lines = [.problem(text)]
            message = text
        }
    }

    /// A failure that is not a thrown error (a step of `run`, a search that found nothing):
    /// the first line is the problem, indented lines under it details.
    init(_ message: String, code: ExitCode) {
        self.code = code
        self.message = message
        lines = message.split(separator: "\n", omittingEmptySubsequences: false).enumerated().map { index, line in
            index == 0 || !line.hasPrefix(" ") ? .problem(String(line)) : .detail(String(line))
        }
    }

    /// The report with the commands its problems name completed (`PasteableCommands`).
    func completing(_ pasteable: PasteableCommands) -> ErrorReport {
        var report = self
        report.lines = lines.map { line in
            if case .problem(let text) = line { return .problem(pasteable.complete(text)) }
            return line
        }
        report.message = pasteable.complete(message)
        return report
    }

    // MARK: Rendering

    /// The text for standard error: on a terminal each problem wrapped at word boundaries
    /// to its width (never inside a command it names), the later lines under the message; one line each when stderr is not a
    /// terminal (a log keeps each error on one line, for grep).
    func lines(in context: RenderContext, wraps: Bool) -> [String] {
        let label = "Error:"
        let indent = String(repeating: " ", count: label.count + 1)
        return lines.flatMap { line -> [String] in
            switch line {
            case .detail(let text):
                return [DisplayWidth.singleLine(text)]
            case .problem(let given):
                // A server's message or a lock record's field may hold terminal escapes.
                let text = DisplayWidth.singleLine(given)
                // A command it names stays whole on one line, to be pasted.
                let wrapped = wraps ? DisplayWidth.wrap(text, width: max(context.width, 30), firstPrefix: label + " ", restPrefix: indent,
                                                        keepingWhole: PasteableCommands.spans(in: text))
                                    : [label + " " + text]
                // Style the label once the layout is fixed on plain text.
                return wrapped.enumerated().map { index, line in
                    index == 0 ? context.apply(.danger, to: label) + line.dropFirst(label.count) : line
                }
            }
        }
    }

    /// `{"error": …, "exit_code": N}`.
    var json: JSONValue {
        .object(JSONObject([("error", .string(message)), ("exit_code", .int(Int64(code.rawValue)))]))
    }
}
