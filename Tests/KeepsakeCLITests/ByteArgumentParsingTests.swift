@testable import KeepsakeCLI
import XCTest

/// Arguments as bytes: paths keep every byte, text that is not UTF-8 is a usage error.
final class ByteArgumentParsingTests: KeepsakeTestCase {
    // MARK: Fixtures

    private let spec = CommandSpec(
        name: "restore", abstract: "",
        arguments: [ArgumentSpec(ArgumentKey("BACKUP"), help: ""), ArgumentSpec(ArgumentKey("PATH"), help: "", optional: true, repeating: true, takesPath: true)],
        options: [OptionSpec(.target, short: "C", kind: .value(valueName: "dir"), help: "", takesPath: true),
                  OptionSpec(.tag, kind: .value(valueName: "tag"), help: "")]
    )

    private func argument(_ prefix: String, _ suffix: String = "") -> CommandLineArgument {
        CommandLineArgument(bytes: Array(prefix.utf8) + [0xff] + Array(suffix.utf8))
    }

    private func message(_ arguments: [CommandLineArgument]) -> String? {
        do {
            _ = try ArgumentParser.parse(arguments, for: spec)
            return nil
        } catch {
            return error.message
        }
    }

    // MARK: Tests

    func testPathsKeepTheirBytes() throws {
        let parsed = try ArgumentParser.parse([CommandLineArgument("latest"), argument("a"), argument("--target=t"),
                                               CommandLineArgument("-C"), argument("u")], for: spec)
        XCTAssertEqual(parsed.argumentPaths(ArgumentKey("PATH")), [Array("a".utf8) + [0xff]])
        XCTAssertEqual(parsed.paths(.target), [Array("t".utf8) + [0xff], Array("u".utf8) + [0xff]])
        XCTAssertEqual(parsed.path(.target), Array("u".utf8) + [0xff])
        XCTAssertEqual(parsed.value(.target), "u\\xff", "the text shows the byte")
        XCTAssertEqual(parsed.argument(ArgumentKey("BACKUP")), "latest")
    }

    func testTextThatIsNotUTF8IsAUsageErrorNamingIt() {
        XCTAssertEqual(message([CommandLineArgument("latest"), CommandLineArgument("--tag"), argument("t")]),
                       "The value 't\\xff' given for '--tag <tag>' is not valid UTF-8. Only paths may hold other bytes; give this one as UTF-8 text.")
        XCTAssertEqual(message([argument("late", "st")]),
                       "The value 'late\\xffst' given for 'BACKUP' is not valid UTF-8. Only paths may hold other bytes; give this one as UTF-8 text.")
        XCTAssertEqual(message([CommandLineArgument("latest"), argument("--tar", "get=x")]), "Unknown option '--tar\\xffget'.")
        XCTAssertEqual(message([CommandLineArgument("latest"), argument("-")]), "Unknown option '-\\xff'.")
    }
}
