@testable import KeepsakeCLI
import BackupCore
import XCTest
import KeepsakeSupport

/// Parsing paths, every usage-error message, the error block, and suggestions.
final class ArgumentParserTests: KeepsakeTestCase {

    // MARK: Fixtures

    private static let codecs = ["zstd", "gzip", "xz", "lz4", "none"]

    private let backup = CommandSpec(
        name: "backup",
        abstract: "Back up files or stdin.",
        arguments: [ArgumentSpec(ArgumentKey("PATH"), help: "What to back up.", repeating: true)],
        options: [
            OptionSpec(.dest, short: "d", kind: .value(valueName: "dir"), environment: "KEEPSAKE_DEST", help: "Where backups are kept."),
            OptionSpec(.compression, short: "c", kind: .value(valueName: "codec"), allowedValues: codecs, defaultDescription: "zstd", help: "Codec."),
            OptionSpec(.exclude, kind: .value(valueName: "pattern"), repeatable: true, help: "Skip matches."),
            OptionSpec(.keepLast, kind: .value(valueName: "n"), help: "How many to keep."),
            OptionSpec(.quiet, short: "q", help: "Print nothing but errors."),
            OptionSpec(.verbose, short: "v", help: "Say more."),
            OptionSpec(OptionKey("debug-scan"), help: "Internal.", hidden: true),
            .help,
        ]
    )

    private let restore = CommandSpec(
        name: "restore",
        abstract: "Restore a backup.",
        arguments: [
            ArgumentSpec(ArgumentKey("BACKUP"), help: "The backup id."),
            ArgumentSpec(ArgumentKey("TARGET"), help: "Where to restore.", optional: true),
        ]
    )

    private let copy = CommandSpec(
        name: "copy",
        abstract: "Copy.",
        arguments: [
            ArgumentSpec(ArgumentKey("SRC"), help: "Source.", optional: true),
            ArgumentSpec(ArgumentKey("DEST"), help: "Destination."),
        ]
    )

    /// Parses, failing the test (and returning an empty result) on error.
    private func parse(_ arguments: [String], _ spec: CommandSpec? = nil, file: StaticString = #filePath, line: UInt = #line) -> ParsedArguments {
        do {
            return try ArgumentParser.parse(arguments, for: spec ?? backup)
        } catch {
            XCTFail("unexpected error: \(error.message)", file: file, line: line)
            return ParsedArguments()
        }
    }

    /// The message of the error parsing throws, or `nil` when it succeeds.
    private func message(_ arguments: [String], _ spec: CommandSpec? = nil) -> String? {
        do {
            _ = try ArgumentParser.parse(arguments, for: spec ?? backup)
            return nil
        } catch {
            return error.message
        }
    }

    // MARK: Flags and values

    func testLongAndShortFlags() {
        let long = parse(["--quiet", "a"])
        XCTAssertTrue(long.flag(.quiet))
        XCTAssertFalse(long.flag(.verbose))
        XCTAssertTrue(parse(["-q", "a"]).flag(.quiet))
    }

    func testValueFormsAllAgree() {
        for arguments in [["--dest", "/mnt"], ["--dest=/mnt"], ["-d", "/mnt"]] {
            let parsed = parse(arguments + ["a"])
            XCTAssertEqual(parsed.value(.dest), "/mnt", "\(arguments)")
            XCTAssertEqual(parsed.positionals, ["a"])
        }
    }

    func testEqualsFormKeepsLaterEqualsAndEmptyValue() {
        XCTAssertEqual(parse(["--dest=a=b", "x"]).value(.dest), "a=b")
        XCTAssertEqual(parse(["--dest=", "x"]).value(.dest), "")
    }

    func testEqualsFormAcceptsDashValue() {
        XCTAssertEqual(parse(["--dest=--quiet", "x"]).value(.dest), "--quiet")
    }

    func testNegativeNumberIsAValueAndAPositional() {
        let parsed = parse(["--keep-last", "-5", "-3"])
        XCTAssertEqual(parsed.value(.keepLast), "-5")
        XCTAssertEqual(parsed.positionals, ["-3"])
    }

    func testUndeclaredNamesReadAsNotGiven() {
        let parsed = parse(["a"])
        XCTAssertFalse(parsed.flag(OptionKey("nope")))
        XCTAssertNil(parsed.value(OptionKey("nope")))
        XCTAssertEqual(parsed.values(OptionKey("nope")), [])
    }

    // MARK: Clusters

    func testClusteredFlags() {
        let parsed = parse(["-qv", "a"])
        XCTAssertTrue(parsed.flag(.quiet))
        XCTAssertTrue(parsed.flag(.verbose))
    }

    func testRepeatedFlagCounts() {
        XCTAssertEqual(parse(["-vv", "-v", "a"]).flagCount(.verbose), 3)
    }

    func testClusterEndingInValueOptionTakesNextArgument() {
        let parsed = parse(["-qd", "/mnt", "a"])
        XCTAssertTrue(parsed.flag(.quiet))
        XCTAssertEqual(parsed.value(.dest), "/mnt")
        XCTAssertEqual(parsed.positionals, ["a"])
    }

    func testValueOptionInsideClusterIsMissingItsValue() {
        XCTAssertEqual(message(["-dq", "/mnt", "a"]), "Missing value for '-d <dir>'.")
    }

    // MARK: Positionals

    func testDoubleDashEndsOptions() {
        let parsed = parse(["-q", "--", "--weird", "-v", "--"])
        XCTAssertEqual(parsed.positionals, ["--weird", "-v", "--"])
        XCTAssertFalse(parsed.flag(.verbose))
        XCTAssertEqual(parsed.arguments(ArgumentKey("PATH")), ["--weird", "-v", "--"])
    }

    func testLoneDashIsPositional() {
        XCTAssertEqual(parse(["-", "--dest", "/mnt"]).positionals, ["-"])
    }

    func testOptionsAnywhereAmongPositionals() {
        let parsed = parse(["--quiet", "a", "-d", "/mnt", "b", "--exclude", "*.tmp", "c", "-v"])
        XCTAssertEqual(parsed.positionals, ["a", "b", "c"])
        XCTAssertEqual(parsed.value(.dest), "/mnt")
        XCTAssertEqual(parsed.values(.exclude), ["*.tmp"])
        XCTAssertTrue(parsed.flag(.quiet))
        XCTAssertTrue(parsed.flag(.verbose))
    }

    func testRepeatedValueOptionLastWinsAndAllAreKept() {
        let parsed = parse(["--dest", "/one", "a", "--dest=/two"])
        XCTAssertEqual(parsed.value(.dest), "/two")
        XCTAssertEqual(parsed.values(.dest), ["/one", "/two"])
    }

    func testRepeatableOptionKeepsOrder() {
        let parsed = parse(["--exclude", "*.o", "a", "--exclude=.git", "--exclude", "node_modules"])
        XCTAssertEqual(parsed.values(.exclude), ["*.o", ".git", "node_modules"])
    }

    func testOptionalAndRequiredArguments() {
        let one = parse(["id1"], restore)
        XCTAssertEqual(one.argument(ArgumentKey("BACKUP")), "id1")
        XCTAssertNil(one.argument(ArgumentKey("TARGET")))
        let two = parse(["id1", "/tmp/out"], restore)
        XCTAssertEqual(two.argument(ArgumentKey("TARGET")), "/tmp/out")
    }

    func testOptionalArgumentBeforeRequiredYieldsToIt() {
        let one = parse(["only"], copy)
        XCTAssertNil(one.argument(ArgumentKey("SRC")))
        XCTAssertEqual(one.argument(ArgumentKey("DEST")), "only")
        let two = parse(["a", "b"], copy)
        XCTAssertEqual(two.argument(ArgumentKey("SRC")), "a")
        XCTAssertEqual(two.argument(ArgumentKey("DEST")), "b")
    }

    // MARK: Help

    func testHelpWinsOverOtherProblems() throws {
        let parsed = try ArgumentParser.parse(["--destt", "--dest", "--help"], for: backup)
        XCTAssertTrue(parsed.flag(.help))
        XCTAssertTrue(try ArgumentParser.parse(["-h"], for: backup).flag(.help))
    }

    func testHelpAfterDoubleDashIsPositional() {
        let parsed = parse(["--", "--help"])
        XCTAssertFalse(parsed.flag(.help))
        XCTAssertEqual(parsed.positionals, ["--help"])
    }

    func testHelpIsUnknownWhenNotDeclared() {
        XCTAssertEqual(message(["--help"], restore), "Unknown option '--help'.")
    }

    // MARK: Error messages

    func testInvalidValueMessage() {
        let expected = "The value 'zz' is invalid for '--compression <codec>'. Use one of: zstd, gzip, xz, lz4, none."
        XCTAssertEqual(message(["--compression", "zz", "a"]), expected)
        XCTAssertEqual(message(["--compression=zz", "a"]), expected)
        XCTAssertEqual(
            message(["-c", "zz", "a"]),
            "The value 'zz' is invalid for '-c <codec>'. Use one of: zstd, gzip, xz, lz4, none."
        )
        XCTAssertEqual(parse(["-c", "xz", "a"]).value(.compression), "xz")
    }

    func testUnknownOptionWithSuggestion() {
        XCTAssertEqual(message(["--destt", "/mnt", "a"]), "Unknown option '--destt'. Did you mean '--dest'?")
        XCTAssertEqual(message(["--destt=/mnt", "a"]), "Unknown option '--destt'. Did you mean '--dest'?")
        XCTAssertEqual(message(["--qiuet", "a"]), "Unknown option '--qiuet'. Did you mean '--quiet'?")
    }

    func testUnknownOptionUniquePrefixSuggestion() {
        XCTAssertEqual(message(["--comp", "a"]), "Unknown option '--comp'. Did you mean '--compression'?")
    }

    func testUnknownOptionWithoutSuggestion() {
        XCTAssertEqual(message(["--frobnicate", "a"]), "Unknown option '--frobnicate'.")
    }

    func testHiddenOptionParsesButIsNeverSuggested() {
        XCTAssertTrue(parse(["--debug-scan", "a"]).flag(OptionKey("debug-scan")))
        XCTAssertEqual(message(["--debug-scn", "a"]), "Unknown option '--debug-scn'.")
    }

    func testUnknownShortOption() {
        XCTAssertEqual(message(["-x", "a"]), "Unknown option '-x'.")
        XCTAssertEqual(message(["-qx", "a"]), "Unknown option '-qx'.")
    }

    func testSingleDashLongOptionSuggestsDoubleDash() {
        XCTAssertEqual(message(["-dest", "/mnt", "a"]), "Unknown option '-dest'. Did you mean '--dest'?")
    }

    func testMissingValueAtEnd() {
        XCTAssertEqual(message(["a", "--dest"]), "Missing value for '--dest <dir>'.")
        XCTAssertEqual(message(["a", "-d"]), "Missing value for '-d <dir>'.")
    }

    func testValueThatLooksLikeAnOptionIsMissing() {
        XCTAssertEqual(message(["--dest", "--quiet", "a"]), "Missing value for '--dest <dir>'.")
        XCTAssertEqual(message(["--dest", "-q", "a"]), "Missing value for '--dest <dir>'.")
        XCTAssertEqual(message(["--dest", "--", "a"]), "Missing value for '--dest <dir>'.")
    }

    func testLoneDashIsAValue() {
        XCTAssertEqual(parse(["--dest", "-", "a"]).value(.dest), "-")
    }

    func testFlagGivenAValue() {
        XCTAssertEqual(message(["--quiet=yes", "a"]), "The flag '--quiet' does not take a value.")
        XCTAssertEqual(message(["--quiet=", "a"]), "The flag '--quiet' does not take a value.")
    }

    func testMissingRequiredArgument() {
        XCTAssertEqual(message(["--quiet"]), "Missing expected argument 'PATH...'.")
        XCTAssertEqual(message([], restore), "Missing expected argument 'BACKUP'.")
        XCTAssertEqual(message([], copy), "Missing expected argument 'DEST'.")
    }

    func testTooManyArguments() {
        XCTAssertEqual(message(["id", "/out", "extra", "more"], restore), "Unexpected argument 'extra'.")
    }

    func testErrorCarriesReasonAndCommand() {
        do {
            _ = try ArgumentParser.parse(["--dest"], for: backup)
            XCTFail("expected an error")
        } catch {
            XCTAssertEqual(error.reason, .missingValue(option: "--dest <dir>"))
            XCTAssertEqual(error.commandName, "backup")
            XCTAssertEqual(error.synopsis, "[options] PATH...")
            XCTAssertEqual("\(error)", "Missing value for '--dest <dir>'.")
        }
    }

    // MARK: Error block

    func testErrorLinesForCommand() {
        let error = UsageError(.missingValue(option: "--dest <dir>"), command: backup)
        XCTAssertEqual(error.lines(), [
            "Error: Missing value for '--dest <dir>'.",
            "",
            "Usage: keepsake backup [options] PATH...",
            "See 'keepsake backup --help'.",
        ])
    }

    func testErrorLinesForCommandWithoutOptionsOrArguments() {
        let error = UsageError(.unexpectedArgument("x"), command: CommandSpec(name: "list", abstract: "List."))
        XCTAssertEqual(error.lines(programName: "ks"), [
            "Error: Unexpected argument 'x'.",
            "",
            "Usage: ks list",
            "See 'ks list --help'.",
        ])
    }

    func testUnknownCommand() {
        let known = ["backup", "list", "restore", "verify"]
        let error = UsageError.unknownCommand("bakup", known: known)
        XCTAssertEqual(error.lines(), [
            "Error: Unknown command 'bakup'. Did you mean 'backup'?",
            "",
            "Usage: keepsake <command> [options]",
            "See 'keepsake --help'.",
        ])
        XCTAssertEqual(UsageError.unknownCommand("zzz", known: known).message, "Unknown command 'zzz'.")
    }

    func testCustomMessage() {
        let error = UsageError.custom("The value '0' is invalid for '--keep-last <n>': it must be at least 1.", command: backup)
        XCTAssertEqual(error.lines().first, "Error: The value '0' is invalid for '--keep-last <n>': it must be at least 1.")
    }

    // MARK: Suggestions

    func testSuggestionByEditDistance() {
        let commands = ["backup", "list", "restore", "verify", "prune"]
        XCTAssertEqual(Suggestion.nearest(to: "bakup", among: commands), "backup")
        XCTAssertEqual(Suggestion.nearest(to: "bcakup", among: commands), "backup")
        XCTAssertEqual(Suggestion.nearest(to: "bkup", among: commands), "backup")
        XCTAssertEqual(Suggestion.nearest(to: "lst", among: commands), "list")
        XCTAssertEqual(Suggestion.nearest(to: "RESTOR", among: commands), "restore")
        XCTAssertEqual(Suggestion.nearest(to: "verfiy", among: commands), "verify")
    }

    func testNoSuggestionWhenNothingIsClose() {
        let commands = ["backup", "list", "restore"]
        XCTAssertNil(Suggestion.nearest(to: "x", among: commands))
        XCTAssertNil(Suggestion.nearest(to: "zzzzzz", among: commands))
        XCTAssertNil(Suggestion.nearest(to: "", among: commands))
        XCTAssertNil(Suggestion.nearest(to: "bakup", among: []))
        // Two-letter names need an exact match: one edit is half the word.
        XCTAssertNil(Suggestion.nearest(to: "xy", among: ["xz"]))
    }

    func testSuggestionPrefersSmallestDistanceThenOrder() {
        XCTAssertEqual(Suggestion.nearest(to: "dest", among: ["test", "dest"]), "dest")
        XCTAssertEqual(Suggestion.nearest(to: "cast", among: ["cost", "cart"]), "cost")
    }

    func testSuggestionByUniquePrefix() {
        XCTAssertEqual(Suggestion.nearest(to: "comp", among: ["color", "compression"]), "compression")
        XCTAssertEqual(Suggestion.nearest(to: "destination", among: ["dest", "quiet"]), "dest")
        XCTAssertNil(Suggestion.nearest(to: "c", among: ["color", "compression"]))
    }

    func testDistanceIsBounded() {
        XCTAssertEqual(Suggestion.distance("kitten", "sitting", limit: 3), 3)
        XCTAssertNil(Suggestion.distance("kitten", "sitting", limit: 2))
        XCTAssertEqual(Suggestion.distance("ab", "ba", limit: 2), 1)
        XCTAssertEqual(Suggestion.distance("", "abc", limit: 3), 3)
        XCTAssertNil(Suggestion.distance("a", "abcd", limit: 2))
        XCTAssertEqual(Suggestion.distance("same", "same", limit: 0), 0)
    }

    // MARK: Keys

    /// Options are declared by key: each command has each key and short name once, and the
    /// key is what the user types after the dashes.
    func testEveryCommandDeclaresEachOptionOnceByItsKey() {
        XCTAssertEqual(OptionKey.dryRun.name, "dry-run")
        XCTAssertEqual(OptionKey.s3Endpoint.description, "--s3-endpoint")
        for command in CommandRegistry.all {
            let options = command.spec.options
            XCTAssertEqual(Set(options.map(\.key)).count, options.count, "a key twice in \(command.spec.name)")
            let shorts = options.compactMap(\.short)
            XCTAssertEqual(Set(shorts).count, shorts.count, "a short name twice in \(command.spec.name)")
            XCTAssertTrue(options.contains { $0.key == .json } && options.contains { $0.key == .help }, command.spec.name)
        }
    }
}
