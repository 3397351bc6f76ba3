import XCTest
@testable import TerminalUI

final class FieldTests: KeepsakeTestCase {

    private let context = RenderContext.plain()

    // MARK: Text

    func testTextFieldReadsAndTrims() throws {
        let io = ScriptedPromptIO(lines: ["  /mnt/backup  "])
        XCTAssertEqual(try Field.text("Destination").ask(using: io, context: context), "/mnt/backup")
        XCTAssertEqual(io.output, "Destination:   /mnt/backup  \n")
    }

    func testEmptyAnswerTakesDefault() throws {
        let io = ScriptedPromptIO(lines: [""])
        XCTAssertEqual(try Field.text("Compression", default: "zstd").ask(using: io, context: context), "zstd")
        XCTAssertEqual(io.output, "Compression [zstd]: \n")
    }

    func testPromptTextStyles() {
        let field = Field.text("Name", default: "me")
        XCTAssertEqual(field.promptText(in: context), "Name [me]: ")
        XCTAssertEqual(
            field.promptText(in: RenderContext(colorEnabled: true)),
            "\u{1B}[1mName\u{1B}[0m \u{1B}[2m[me]\u{1B}[0m: "
        )
    }

    // MARK: Validation

    func testValidatedFieldRepeatsUntilValid() throws {
        let field = Field.validated("Keep days") { Int($0) == nil ? "Enter a whole number." : nil }
        let io = ScriptedPromptIO(lines: ["ten", "", "10"])
        XCTAssertEqual(try field.ask(using: io, context: context), "10")
        XCTAssertEqual(io.output, """
            Keep days: ten
            Enter a whole number.
            Keep days: \("")
            Enter a whole number.
            Keep days: 10

            """)
    }

    func testValidationMessageIsColouredWhenEnabled() throws {
        let field = Field.validated("N") { $0 == "ok" ? nil : "bad" }
        let io = ScriptedPromptIO(lines: ["x", "ok"])
        _ = try field.ask(using: io, context: RenderContext(colorEnabled: true))
        XCTAssertTrue(io.output.contains("\u{1B}[31mbad\u{1B}[0m\n"))
    }

    // MARK: Secret

    func testSecretReadsWithoutEchoAndKeepsSpaces() throws {
        let io = ScriptedPromptIO(lines: [" pass phrase "])
        XCTAssertEqual(try Field.secret("Passphrase").ask(using: io, context: context), " pass phrase ")
        XCTAssertEqual(io.secretReadCount, 1)
        XCTAssertEqual(io.output, "Passphrase: \n")
        XCTAssertFalse(io.output.contains("pass phrase"))
    }

    func testSecretConfirmationRetriesOnMismatch() throws {
        let io = ScriptedPromptIO(lines: ["one", "two", "three", "three"])
        XCTAssertEqual(try Field.secret("Passphrase", confirm: true).ask(using: io, context: context), "three")
        XCTAssertEqual(io.secretReadCount, 4)
        XCTAssertEqual(io.output, """
            Passphrase: \("")
            Repeat passphrase: \("")
            The entries do not match. Try again.
            Passphrase: \("")
            Repeat passphrase: \("")

            """)
    }

    func testSecretValidatorRunsBeforeConfirmation() throws {
        let field = Field.secret("Passphrase", confirm: true) { $0.count < 4 ? "Use at least 4 characters." : nil }
        let io = ScriptedPromptIO(lines: ["abc", "abcd", "abcd"])
        XCTAssertEqual(try field.ask(using: io, context: context), "abcd")
        XCTAssertTrue(io.output.contains("Use at least 4 characters."))
    }

    // MARK: Never hang

    func testNoInputThrowsWithoutReading() {
        let io = ScriptedPromptIO(lines: ["unused"])
        XCTAssertThrowsError(try Field.text("Name").ask(using: io, context: context, noInput: true)) { error in
            XCTAssertEqual(error as? PromptError, .inputDisabled(prompt: "Name"))
        }
        XCTAssertEqual(io.output, "")
    }

    func testNonInteractiveThrows() {
        let io = ScriptedPromptIO(lines: ["unused"], isInteractive: false)
        XCTAssertThrowsError(try Field.secret("Passphrase").ask(using: io, context: context)) { error in
            XCTAssertEqual(error as? PromptError, .notInteractive(prompt: "Passphrase"))
            XCTAssertEqual("\(error)", "Cannot ask for 'Passphrase': standard input is not a terminal.")
        }
    }

    func testEndOfInputThrowsInsteadOfLooping() {
        let field = Field.validated("N") { _ in "never valid" }
        XCTAssertThrowsError(try field.ask(using: ScriptedPromptIO(lines: ["a", "b"]), context: context)) { error in
            XCTAssertEqual(error as? PromptError, .endOfInput(prompt: "N"))
        }
        XCTAssertThrowsError(try Field.secret("P", confirm: true).ask(using: ScriptedPromptIO(lines: ["x"]), context: context)) { error in
            XCTAssertEqual(error as? PromptError, .endOfInput(prompt: "Repeat p"))
        }
    }

    func testRealTerminalIOIsNotInteractiveOnPipes() throws {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        defer { close(fds[0]); close(fds[1]) }
        let io = TerminalPromptIO(inputDescriptor: fds[0], output: ConsoleWriter(fileDescriptor: fds[1]))
        XCTAssertFalse(io.isInteractive)
        XCTAssertThrowsError(try Field.text("Name").ask(using: io, context: context)) { error in
            XCTAssertEqual(error as? PromptError, .notInteractive(prompt: "Name"))
        }
    }

    func testErrorDescriptions() {
        XCTAssertEqual(PromptError.inputDisabled(prompt: "X").description, "Cannot ask for 'X': prompts are disabled.")
        XCTAssertEqual(PromptError.endOfInput(prompt: "X").description, "No answer for 'X': input ended.")
        XCTAssertEqual(PromptError.cancelled(prompt: "X").description, "'X' was cancelled.")
        XCTAssertEqual(PromptError.noChoices(prompt: "X").description, "Nothing to choose from for 'X'.")
    }
}
