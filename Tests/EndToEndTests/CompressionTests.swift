import Foundation
import XCTest

/// Every codec round trips, makes a file its standard tool accepts, and rejects a level
/// out of range.
// test-tag(threads): compression on worker threads, in the binary
final class CompressionTests: EndToEndTestCase {
    // MARK: Round trips

    func testZstdRoundTrip() throws {
        try assertRoundTrip(codec: "zstd", fileExtension: ".tar.zst", check: ["zstd", "-q", "-t"])
    }

    func testGzipRoundTrip() throws {
        try assertRoundTrip(codec: "gzip", fileExtension: ".tar.gz", check: ["gzip", "-t"])
    }

    func testXzRoundTrip() throws {
        try assertRoundTrip(codec: "xz", fileExtension: ".tar.xz", check: ["xz", "-t"])
    }

    func testLz4RoundTrip() throws {
        try assertRoundTrip(codec: "lz4", fileExtension: ".tar.lz4", check: ["lz4", "-q", "-t"])
    }

    func testNoCompressionRoundTrip() throws {
        try assertRoundTrip(codec: "none", fileExtension: ".tar", check: ["tar", "-tf"])
    }

    func testExplicitLevelsInRange() throws {
        let source = try makeSource()
        for (codec, level) in [("zstd", "19"), ("gzip", "1"), ("xz", "0"), ("lz4", "9")] {
            let dest = path("dest-\(codec)")
            let id = try backup([source], dest: dest, options: ["--compression", codec, "--level", level])
            let listing = try json(try run(["list", "--dest", dest, "--json"]))
            let backups = listing["backups"] as? [[String: Any]] ?? []
            XCTAssertEqual(backups.first?["id"] as? String, id)
            XCTAssertEqual(backups.first?["level"] as? Int, Int(level), "\(codec) level not recorded: \(backups)")
        }
    }

    // MARK: Levels out of range

    func testLevelOutOfRangeIsAUsageError() throws {
        let source = try makeSource()
        let cases: [(codec: String, level: String)] = [
            ("zstd", "0"), ("zstd", "20"), ("gzip", "0"), ("gzip", "10"), ("xz", "10"), ("xz", "-1"),
            ("lz4", "0"), ("lz4", "10"), ("zstd", "fast"),
        ]
        for (codec, level) in cases {
            let dest = path("dest-\(codec)-\(level)")
            let outcome = try run(["backup", source, "--dest", dest, "--compression", codec, "--level", level])
            assertExit(outcome, 2, "--compression \(codec) --level \(level)")
            XCTAssertTrue(outcome.stderrText.contains("'\(level)'"), "the value is not quoted:\n\(outcome)")
            XCTAssertTrue(outcome.stderrText.contains("--level"), "the option is not named:\n\(outcome)")
            XCTAssertFalse(RawFileSystem.exists(dest), "a usage error must not create the destination")
        }
    }

    func testLevelWithoutCompressionIsAUsageError() throws {
        let source = try makeSource()
        let outcome = try run(["backup", source, "--dest", path("dest"), "--compression", "none", "--level", "3"])
        assertExit(outcome, 2)
        XCTAssertTrue(outcome.stderrText.contains("--level"), "\(outcome)")
    }

    func testUnknownCodecIsAUsageError() throws {
        let source = try makeSource()
        let outcome = try run(["backup", source, "--dest", path("dest"), "--compression", "bzip2"])
        assertExit(outcome, 2)
        XCTAssertTrue(outcome.stderrText.contains("'bzip2'") && outcome.stderrText.contains("--compression"), "\(outcome)")
    }

    // MARK: Helpers

    /// A small tree with compressible and incompressible content.
    private func makeSource() throws -> String {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: [
            "text.txt": String(repeating: "compress me please\n", count: 10_000),
            "nested/small.txt": "small\n",
            "empty.txt": "",
        ])
        try RawFileSystem.writeFile(RawFileSystem.bytes(source + "/random.bin"),
                                    contents: Fixtures.pseudoRandomBytes(count: 200_000, seed: 5))
        try RawFileSystem.makeSymlink(RawFileSystem.bytes(source + "/link"), target: Array("text.txt".utf8))
        try Fixtures.stampTimes(root: RawFileSystem.bytes(source))
        return source
    }

    /// Backs up with `codec`, checks the file name and the standard tool's verdict, and
    /// restores an identical tree.
    private func assertRoundTrip(codec: String, fileExtension: String, check: [String],
                                 file: StaticString = #filePath, line: UInt = #line) throws {
        let source = try makeSource()
        let dest = path("dest")
        let made = try run(["backup", source, "--dest", dest, "--compression", codec, "--json"])
        assertExit(made, 0, file: file, line: line)
        let object = try json(made, file: file, line: line)
        XCTAssertEqual(object["compression"] as? String, codec, file: file, line: line)
        let archive = try onlyArchive(in: dest, file: file, line: line)
        XCTAssertTrue(archive.hasSuffix(fileExtension), "\(archive) does not end with \(fileExtension)", file: file, line: line)
        XCTAssertEqual(object["archive"] as? String, (archive as NSString).lastPathComponent, file: file, line: line)

        let verdict = try tool(check[0], Array(check.dropFirst()) + [archive])
        XCTAssertEqual(verdict.exitCode, 0, "\(check[0]) rejects the archive:\n\(verdict)", file: file, line: line)

        let verify = try run(["verify", "--dest", dest])
        assertExit(verify, 0, file: file, line: line)

        let target = path("target")
        assertExit(try run(["restore", "latest", "--dest", dest, "--target", target]), 0, file: file, line: line)
        try assertTreesEqual(expected: source, actual: restored(source, into: target), file: file, line: line)
    }
}
