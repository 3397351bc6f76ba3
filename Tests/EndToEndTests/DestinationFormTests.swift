import Foundation
import XCTest

/// A destination that looks like a URL must be one Keepsake knows: `--dest s3:/b/p` once
/// created a local folder named `s3:` and reported success.
final class DestinationFormTests: EndToEndTestCase {
    // MARK: Tests

    func testURLLikeDestinationsThatAreNoKnownFormAreUsageErrorsAndCreateNothing() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "a\n"])
        let cases: [(dest: String, says: String)] = [
            ("s3:/bucket/prefix", "Did you mean 's3://bucket/prefix'"),
            ("gs://bucket/backups", "'gs://'"),
            ("sftp://host/backups", "rclone:REMOTE:PATH"),
            ("nas:backups", "./nas:backups"),
        ]
        for item in cases {
            for arguments in [["backup", source, "--dest", item.dest], ["list", "--dest", item.dest],
                              ["verify", "--dest", item.dest], ["prune", "--dest", item.dest, "--keep-last", "1"]] {
                let outcome = try run(arguments, currentDirectory: work)
                assertExit(outcome, 2, "\(arguments.joined(separator: " ")) is a usage error")
                XCTAssertTrue(outcome.stderrText.contains("'\(item.dest)'"), "names the value:\n\(outcome)")
                XCTAssertTrue(outcome.stderrText.contains("s3://BUCKET/PREFIX"), "lists the forms:\n\(outcome)")
                XCTAssertTrue(outcome.stderrText.contains(item.says), "\(item.dest): should say \(item.says):\n\(outcome)")
            }
            // From the environment too.
            let fromEnvironment = try run(["list"], environment: ["KEEPSAKE_DEST": item.dest], currentDirectory: work)
            assertExit(fromEnvironment, 2, "KEEPSAKE_DEST=\(item.dest)")
        }
        let made = try RawFileSystem.listDirectory(RawFileSystem.bytes(work)).map { String(decoding: $0, as: UTF8.self) }
        XCTAssertEqual(made.filter { $0.contains(":") }, [], "no local folder was created for a URL-like destination")
    }

    func testFileURLAndDotSlashNamesAreLocalFolders() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "a\n"])
        assertExit(try run(["backup", source, "--dest", "file://" + path("by-url")]), 0)
        XCTAssertEqual(try names(in: path("by-url")).filter { $0.hasSuffix(".manifest.jsonl.zst") }.count, 1)
        assertExit(try run(["backup", source, "--dest", "./s3:odd-but-local"], currentDirectory: work), 0)
        XCTAssertEqual(try names(in: path("s3:odd-but-local")).filter { $0.hasSuffix(".manifest.jsonl.zst") }.count, 1)
    }

    // MARK: S3 endpoints (issue 26 §10)

    /// A password written into an endpoint is refused and never printed, in text or JSON,
    /// from the option, the variable or a profile.
    func testAnEndpointHoldingAUserAndPasswordIsRefusedWithoutShowingThem() throws {
        let endpoint = "http://ana:pa55word-secret@127.0.0.1:8333"
        let config = path("config.toml")
        try "[profiles.p]\nsources = [\"/tmp\"]\ndestination = \"s3://bucket/p\"\ns3-endpoint = \"\(endpoint)\"\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        XCTAssertEqual(chmod(config, 0o600), 0)
        let runs: [(arguments: [String], environment: [String: String?], code: Int32)] = [
            (["list", "--dest", "s3://bucket/p", "--s3-endpoint", endpoint], [:], 2),
            (["list", "--dest", "s3://bucket/p"], ["KEEPSAKE_S3_ENDPOINT": endpoint], 2),
            (["list", "--profile", "p", "--config", config], [:], 1),
        ]
        for item in runs {
            for json in [false, true] {
                let outcome = try run(item.arguments + (json ? ["--json"] : []), environment: item.environment)
                assertExit(outcome, item.code, item.arguments.joined(separator: " "))
                XCTAssertFalse((outcome.stdoutText + outcome.stderrText).contains("pa55word"), "the password is shown:\n\(outcome)")
                XCTAssertTrue((outcome.stdoutText + outcome.stderrText).contains("a user"), "\(outcome)")
            }
        }
    }

    /// Plain http:// to another machine is said once, before anything is sent; to this
    /// machine, or over https, nothing is said. The other machine is an address in a network
    /// namespace of the test's own, where nothing answers.
    func testPlainHTTPToAnotherMachineIsWarnedAbout() throws {
        let keys: [String: String?] = ["AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b", "KEEPSAKE_S3_MAX_ATTEMPTS": "1"]
        for (endpoint, warned) in [("http://192.0.2.1:8333", true), ("https://192.0.2.1:8333", false),
                                   ("http://127.0.0.1:1", false), ("http://[::1]:1", false)] {
            let outcome = try ProcessRunner.run("unshare", ["--net", keepsake.executable, "copy", "--from", "s3://bucket/a",
                                                            "--to", "s3://bucket/b", "--s3-endpoint", endpoint],
                                                environment: keepsake.environment(keys))
            assertExit(outcome, 1, "\(endpoint): nothing answers in the namespace")
            let warnings = outcome.stderrText.components(separatedBy: "is plain http:// on another machine").count - 1
            XCTAssertEqual(warnings, warned ? 1 : 0, "\(endpoint):\n\(outcome)")
        }
    }
}
