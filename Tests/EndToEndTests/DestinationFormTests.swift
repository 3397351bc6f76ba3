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
}
