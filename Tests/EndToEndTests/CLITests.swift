import Foundation
import XCTest

/// The command line itself: help, version, usage errors with suggestions, JSON, quiet,
/// colour, exit codes.
final class CLITests: EndToEndTestCase {
    // MARK: Help and version

    private let commands = ["backup", "list", "restore", "verify", "help"]

    func testHelpOnEveryCommand() throws {
        for command in commands {
            for flag in ["--help", "-h"] {
                let outcome = try run([command, flag])
                assertExit(outcome, 0, "\(command) \(flag)")
                XCTAssertTrue(outcome.stdoutText.contains("USAGE"), "\(command) \(flag) has no USAGE:\n\(outcome)")
                XCTAssertTrue(outcome.stdoutText.contains("keepsake \(command)"), "\(command) \(flag):\n\(outcome)")
            }
        }
    }

    func testHelpCommandExplainsACommand() throws {
        let outcome = try run(["help", "backup"])
        assertExit(outcome, 0)
        XCTAssertTrue(outcome.stdoutText.contains("USAGE"), "\(outcome)")
        for option in ["--dest", "--compression", "--level", "--exclude", "--exclude-from", "--exclude-caches",
                       "--exclude-if-present", "--dry-run", "--stdin", "--stdin-name", "--json", "--quiet", "--color"] {
            XCTAssertTrue(outcome.stdoutText.contains(option), "help backup does not mention \(option)")
        }
        let restore = try run(["help", "restore"])
        for option in ["--target", "--overwrite", "--dry-run"] {
            XCTAssertTrue(restore.stdoutText.contains(option), "help restore does not mention \(option)")
        }
        let unknown = try run(["help", "bakup"])
        assertExit(unknown, 2)
        XCTAssertTrue(unknown.stderrText.contains("Did you mean 'backup'"), "\(unknown)")
    }

    func testTopLevelHelpListsCommandsAndExitCodes() throws {
        // `keepsake` alone prints a short usage instead (UsageOutputTests).
        for arguments in [["--help"], ["-h"], ["help"]] {
            let outcome = try run(arguments)
            assertExit(outcome, 0, "keepsake \(arguments)")
            let text = outcome.stdoutText
            for command in ["backup", "list", "restore", "verify"] {
                XCTAssertTrue(text.contains(command), "top-level help does not list \(command):\n\(outcome)")
            }
            for code in ["0", "1", "2", "3", "4", "5", "130"] {
                let documented = text.split(separator: "\n").contains { line in
                    line.trimmingCharacters(in: .whitespaces).hasPrefix(code + " ")
                }
                XCTAssertTrue(documented, "exit code \(code) is not documented in keepsake \(arguments):\n\(text)")
            }
        }
    }

    func testVersion() throws {
        let outcome = try run(["--version"])
        assertExit(outcome, 0)
        XCTAssertNotNil(outcome.stdoutText.range(of: #"^keepsake \d+\.\d+\.\d+\n?$"#, options: .regularExpression),
                        "unexpected version output:\n\(outcome)")
    }

    // MARK: Usage errors

    func testUnknownCommandSuggestsTheNearMiss() throws {
        let outcome = try run(["bakup", "."])
        assertExit(outcome, 2)
        XCTAssertTrue(outcome.stderrText.contains("'bakup'"), "the token is quoted:\n\(outcome)")
        XCTAssertTrue(outcome.stderrText.contains("Did you mean 'backup'"), "\(outcome)")
        XCTAssertEqual(outcome.stdout.count, 0, "errors go to stderr")
    }

    func testUnknownOptionSuggestsTheNearMiss() throws {
        let outcome = try run(["backup", path("src"), "--destt", path("dest")])
        assertExit(outcome, 2)
        XCTAssertTrue(outcome.stderrText.contains("'--destt'"), "the token is quoted:\n\(outcome)")
        XCTAssertTrue(outcome.stderrText.contains("Did you mean '--dest'"), "\(outcome)")
        XCTAssertTrue(outcome.stderrText.contains("keepsake backup --help"), "points to help:\n\(outcome)")
        XCTAssertFalse(RawFileSystem.exists(path("dest")))
    }

    func testBadValuesAreQuoted() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "a\n"])
        let codec = try run(["backup", source, "--dest", path("dest"), "--compression", "zz"])
        assertExit(codec, 2)
        XCTAssertTrue(codec.stderrText.contains("'zz'") && codec.stderrText.contains("--compression"), "\(codec)")
        let color = try run(["list", "--dest", path("dest"), "--color", "sometimes"])
        assertExit(color, 2)
        XCTAssertTrue(color.stderrText.contains("'sometimes'"), "\(color)")
        let missing = try run(["backup", "--dest", path("dest")])
        assertExit(missing, 2, "backup without a path")
        let both = try run(["backup", source, "--stdin", "--dest", path("dest")], stdin: Data("x".utf8))
        assertExit(both, 2, "paths and --stdin together")
        let restore = try run(["restore"])
        assertExit(restore, 2, "restore without a backup")
    }

    func testFailuresExit1WithAMessage() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "a\n"])
        let dest = path("dest")
        try backup([source], dest: dest)
        let unknown = try run(["restore", "19990101", "--dest", dest, "--target", path("target")])
        assertExit(unknown, 1)
        XCTAssertTrue(unknown.stderrText.contains("19990101"), "\(unknown)")
        let missingSource = try run(["backup", path("no-such-folder"), "--dest", dest])
        assertExit(missingSource, 1)
        XCTAssertTrue(missingSource.stderrText.contains("no-such-folder"), "\(missingSource)")
        let json = try self.json(try run(["restore", "19990101", "--dest", dest, "--target", path("t"), "--json"]))
        XCTAssertEqual(json["exit_code"] as? Int, 1)
        XCTAssertNotNil(json["error"] as? String)
    }

    // MARK: Machine and quiet output

    func testJSONOutputsParse() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "a\n", "b/c.txt": "c\n"])
        let dest = path("dest")

        let made = try run(["backup", source, "--dest", dest, "--json", "--tag", "nightly"])
        assertExit(made, 0)
        let backup = try json(made)
        let id = try XCTUnwrap(backup["id"] as? String)
        XCTAssertNotNil(id.range(of: #"^\d{8}T\d{6}Z-[0-9a-f]{8}$"#, options: .regularExpression), "unexpected id \(id)")
        XCTAssertEqual(backup["tags"] as? [String], ["nightly"])
        XCTAssertEqual(backup["files"] as? Int, 2)
        XCTAssertEqual(backup["exit_code"] as? Int, 0)
        XCTAssertTrue((backup["archive"] as? String ?? "").contains(id), "the archive name holds the id")

        let list = try json(try run(["list", "--dest", dest, "--json"]))
        XCTAssertEqual((list["backups"] as? [[String: Any]])?.first?["id"] as? String, id)
        let files = try json(try run(["list", "latest", "--dest", dest, "--json"]))
        XCTAssertEqual((files["entries"] as? [Any])?.count, 4)
        let verify = try json(try run(["verify", "--dest", dest, "--json"]))
        XCTAssertEqual(verify["intact"] as? Int, 1)
        XCTAssertEqual(verify["damaged"] as? Int, 0)
        let restore = try json(try run(["restore", "latest", "--dest", dest, "--target", path("target"), "--json"]))
        XCTAssertEqual(restore["files"] as? Int, 2)
        let dry = try json(try run(["backup", source, "--dest", dest, "--json", "--dry-run"]))
        XCTAssertEqual(dry["dry_run"] as? Bool, true)
    }

    func testQuietPrintsNothingOnSuccess() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "a\n"])
        let dest = path("dest")
        for arguments in [["backup", source, "--dest", dest, "--quiet"],
                          ["verify", "--dest", dest, "--quiet"],
                          ["restore", "latest", "--dest", dest, "--target", path("target"), "--quiet"],
                          ["backup", source, "--dest", dest, "-q"]] {
            let outcome = try run(arguments)
            assertExit(outcome, 0, "\(arguments)")
            XCTAssertEqual(outcome.stdoutText, "", "--quiet printed on stdout:\n\(outcome)")
        }
    }

    // MARK: Colour

    func testPlainOutputHasNoEscapes() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "a\n"])
        let dest = path("dest")
        // Not a terminal, NO_COLOR unset, a colourful TERM: still no escape sequences.
        let environment: [String: String?] = ["NO_COLOR": nil, "TERM": "xterm-256color"]
        for arguments in [["backup", source, "--dest", dest],
                          ["list", "--dest", dest],
                          ["list", "latest", "--dest", dest, "--long"],
                          ["verify", "--dest", dest],
                          ["restore", "latest", "--dest", dest, "--target", path("target")],
                          ["backup", "--help"],
                          ["--help"],
                          ["bakup"]] {
            let outcome = try run(arguments, environment: environment)
            XCTAssertFalse(outcome.stdout.contains(0x1b), "ESC on stdout of \(arguments):\n\(outcome)")
            XCTAssertFalse(outcome.stderr.contains(0x1b), "ESC on stderr of \(arguments):\n\(outcome)")
        }
    }

    func testColorAlwaysStyles() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "a\n"])
        let dest = path("dest")
        try backup([source], dest: dest)
        for environment in [["NO_COLOR": nil, "TERM": "xterm-256color"], [:]] as [[String: String?]] {
            let list = try run(["list", "--dest", dest, "--color", "always"], environment: environment)
            assertExit(list, 0)
            XCTAssertTrue(list.stdout.contains(0x1b), "--color always gives no ESC on list (\(environment)):\n\(list)")
            let verify = try run(["verify", "--dest", dest, "--color", "always"], environment: environment)
            assertExit(verify, 0)
            XCTAssertTrue(verify.stdout.contains(0x1b), "--color always gives no ESC on verify:\n\(verify)")
        }
        let never = try run(["list", "--dest", dest, "--color", "never"], environment: ["NO_COLOR": nil])
        XCTAssertFalse(never.stdout.contains(0x1b))
    }

    // MARK: Destination

    func testDefaultDestinationIsUnderXDGDataHome() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "a\n"])
        let outcome = try run(["backup", source])
        assertExit(outcome, 0)
        let expected = keepsake.home + "/xdg-data/keepsake/backups"
        XCTAssertTrue(outcome.stdoutText.contains(expected), "the summary says where the backup went:\n\(outcome)")
        XCTAssertEqual(try names(in: expected).filter { $0.hasSuffix(".manifest.jsonl.zst") }.count, 1)

        let fromEnvironment = path("env-dest")
        assertExit(try run(["backup", source], environment: ["KEEPSAKE_DEST": fromEnvironment]), 0)
        XCTAssertEqual(try names(in: fromEnvironment).filter { $0.hasSuffix(".manifest.jsonl.zst") }.count, 1)
    }

    /// A malformed --s3-endpoint is a usage error (exit 2) whatever the destination; one in
    /// KEEPSAKE_S3_ENDPOINT is too, once an s3:// destination needs it.
    func testAMalformedS3EndpointIsAUsageError() throws {
        let dest = path("dest")
        for bad in ["localhost:8333", "http://a b", "http://127.0.0.1:99999"] {
            let outcome = try run(["list", "--dest", dest, "--s3-endpoint", bad])
            assertExit(outcome, 2, bad)
            XCTAssertTrue(outcome.stderrText.contains("'--s3-endpoint <url>'"), "\(outcome)")
        }
        let fromEnvironment = try run(["list", "--dest", "s3://bucket/p"], environment: ["KEEPSAKE_S3_ENDPOINT": "ftp://h"])
        assertExit(fromEnvironment, 2)
        XCTAssertTrue(fromEnvironment.stderrText.contains("KEEPSAKE_S3_ENDPOINT"), "\(fromEnvironment)")
    }
}
