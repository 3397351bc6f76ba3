/// Collects every problem with a command's options before anything runs, so the user
/// sees them all at once (the seed's form validation: the action runs only when valid).
struct UsageProblems {
    private var messages: [String] = []
    private let spec: CommandSpec

    /// Problems for `spec`.
    init(_ spec: CommandSpec) {
        self.spec = spec
    }

    /// Records one problem (a whole sentence).
    mutating func add(_ message: String) {
        messages.append(message)
    }

    /// True while no problem is recorded.
    var isEmpty: Bool { messages.isEmpty }

    /// Throws a usage error holding every problem, one line (one `Error:` line) each.
    func throwIfAny() throws {
        guard !messages.isEmpty else { return }
        throw UsageError.custom(messages.joined(separator: "\n"), command: spec)
    }
}
