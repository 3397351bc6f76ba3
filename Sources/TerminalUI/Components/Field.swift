import Foundation

/// A prompt for one value: plain text, validated text, or a secret typed without echo
/// (optionally entered twice); the twin of a custom text field per field type.
///
/// Prompts only run when a person can answer: with `noInput` or without a terminal they
/// throw `PromptError` at once instead of waiting. Empty answers take the default value.
///
/// ```swift
/// let io = TerminalPromptIO()
/// let ctx = caps.renderContext(for: .standardError)
/// let dest = try Field.text("Destination", default: "/mnt/backup").ask(using: io, context: ctx)
/// let days = try Field.validated("Keep days") { Int($0) == nil ? "Enter a whole number." : nil }
///     .ask(using: io, context: ctx, noInput: options.noInput)
/// let secret = try Field.secret("Passphrase", confirm: true).ask(using: io, context: ctx)
/// ```
public struct Field: Sendable {

    // MARK: Types

    /// What is asked for.
    public enum Kind: Sendable, Hashable {
        /// Visible text.
        case text
        /// Hidden text; with `confirm` it must be typed twice the same.
        case secret(confirm: Bool)
    }

    /// Returns `nil` for a valid answer, or a message explaining what is wrong.
    public typealias Validator = @Sendable (String) -> String?

    // MARK: Properties

    /// The question's label, such as "Passphrase".
    public var label: String
    /// Text or secret.
    public var kind: Kind
    /// Used when the answer is empty; shown in brackets (never for secrets).
    public var defaultValue: String?
    /// Checks each answer; the prompt repeats until it passes.
    public var validator: Validator?
    /// The label of the confirmation prompt of a secret.
    public var confirmationLabel: String
    /// Shown when the two secret entries differ.
    public var mismatchMessage: String

    // MARK: Initializers

    /// Creates a field.
    public init(
        _ label: String,
        kind: Kind = .text,
        defaultValue: String? = nil,
        validator: Validator? = nil,
        confirmationLabel: String? = nil,
        mismatchMessage: String = "The entries do not match. Try again."
    ) {
        self.label = label
        self.kind = kind
        self.defaultValue = defaultValue
        self.validator = validator
        self.confirmationLabel = confirmationLabel ?? "Repeat \(label.prefix(1).lowercased() + label.dropFirst())"
        self.mismatchMessage = mismatchMessage
    }

    /// A text prompt.
    public static func text(_ label: String, default defaultValue: String? = nil) -> Field {
        Field(label, kind: .text, defaultValue: defaultValue)
    }

    /// A text prompt that repeats until `validator` returns `nil`.
    public static func validated(
        _ label: String,
        default defaultValue: String? = nil,
        validator: @escaping Validator
    ) -> Field {
        Field(label, kind: .text, defaultValue: defaultValue, validator: validator)
    }

    /// A secret prompt without echo; `confirm` asks a second time.
    public static func secret(_ label: String, confirm: Bool = false, validator: Validator? = nil) -> Field {
        Field(label, kind: .secret(confirm: confirm), validator: validator)
    }

    // MARK: Rendering

    /// The prompt text, such as `Destination [/mnt/backup]: ` (label in the emphasis
    /// style, default muted).
    public func promptText(in context: RenderContext) -> String {
        Self.promptText(label: label, defaultValue: isSecret ? nil : defaultValue, in: context)
    }

    private static func promptText(label: String, defaultValue: String?, in context: RenderContext) -> String {
        var text = context.apply(.emphasis, to: label)
        if let defaultValue, !defaultValue.isEmpty {
            text += " " + context.apply(.muted, to: "[\(defaultValue)]")
        }
        return text + ": "
    }

    private var isSecret: Bool {
        if case .secret = kind { return true }
        return false
    }

    // MARK: Asking

    /// Asks until a valid answer is given.
    ///
    /// - Throws: `PromptError.inputDisabled` when `noInput`, `.notInteractive` when `io`
    ///   is not a terminal, `.endOfInput` when input ends first.
    public func ask(using io: some PromptIO, context: RenderContext, noInput: Bool = false) throws -> String {
        guard !noInput else { throw PromptError.inputDisabled(prompt: label) }
        guard io.isInteractive else { throw PromptError.notInteractive(prompt: label) }

        while true {
            io.write(promptText(in: context))
            guard let line = try io.readLine(echo: !isSecret) else {
                io.write("\n")
                throw PromptError.endOfInput(prompt: label)
            }
            // Secrets are taken verbatim; spaces may be part of a passphrase.
            var answer = isSecret ? line : line.trimmingCharacters(in: .whitespaces)
            if answer.isEmpty, let defaultValue, !isSecret { answer = defaultValue }

            if let problem = validator?(answer) {
                io.write(context.apply(.danger, to: problem) + "\n")
                continue
            }
            if case .secret(confirm: true) = kind {
                io.write(Self.promptText(label: confirmationLabel, defaultValue: nil, in: context))
                guard let again = try io.readLine(echo: false) else {
                    io.write("\n")
                    throw PromptError.endOfInput(prompt: confirmationLabel)
                }
                guard again == answer else {
                    io.write(context.apply(.danger, to: mismatchMessage) + "\n")
                    continue
                }
            }
            return answer
        }
    }
}
