import Foundation
import XCTest

/// Paths on the command line that are not UTF-8 (a byte 0xff, as a Latin-1 `ÿ` leaves in a
/// name) reach the file system unchanged; other arguments that are not UTF-8 are usage
/// errors that name them.
final class ByteArgumentTests: EndToEndTestCase {
    // MARK: Fixtures

    /// A name with a byte that is not valid UTF-8.
    private static func latin1(_ prefix: String, _ suffix: String = "") -> [UInt8] {
        Array(prefix.utf8) + [0xff] + Array(suffix.utf8)
    }

    private var workBytes: [UInt8] { RawFileSystem.bytes(work) }

    /// `work/src\xff` holding `a\xff.txt`, `plain.txt` and `skip.tmp`; returns its path.
    private func makeSource() throws -> [UInt8] {
        let source = RawFileSystem.join(workBytes, Self.latin1("src"))
        try RawFileSystem.makeDirectory(source)
        try RawFileSystem.writeFile(RawFileSystem.join(source, Self.latin1("a", ".txt")), contents: Array("latin-1 name\n".utf8))
        try RawFileSystem.writeFile(RawFileSystem.join(source, "plain.txt"), contents: Array("plain\n".utf8))
        try RawFileSystem.writeFile(RawFileSystem.join(source, "skip.tmp"), contents: Array("left out\n".utf8))
        return source
    }

    // MARK: Tests

    func testBackupListAndRestoreWithPathsThatAreNotUTF8() throws {
        let source = try makeSource()
        let dest = path("dest")
        // The exclude file's own name is not UTF-8 either.
        let excludeFile = RawFileSystem.join(workBytes, Self.latin1("ex"))
        try RawFileSystem.writeFile(excludeFile, contents: Array("*.tmp\n".utf8))

        let backedUp = try keepsake.run(bytes: [Array("backup".utf8), source, Array("--dest".utf8), Array(dest.utf8),
                                                Array("--exclude-from".utf8), excludeFile, Array("--json".utf8)])
        assertExit(backedUp, 0)
        let id = try XCTUnwrap(try json(backedUp)["id"] as? String)

        // The archive holds the names byte for byte (without the leading '/').
        let relativeSource = Array(source.dropFirst())
        let listed = try listedPaths(id, dest: dest)
        let latinFile = RawFileSystem.join(relativeSource, Self.latin1("a", ".txt"))
        XCTAssertTrue(listed.contains(latinFile), "listed: \(listed.map(RawFileSystem.display))")
        XCTAssertTrue(listed.contains(RawFileSystem.join(relativeSource, "plain.txt")))
        XCTAssertFalse(listed.contains(RawFileSystem.join(relativeSource, "skip.tmp")), "--exclude-from was read")

        // Everything, into a target whose own name is not UTF-8.
        let target = RawFileSystem.join(workBytes, Self.latin1("out"))
        let restored = try keepsake.run(bytes: [Array("restore".utf8), Array(id.utf8), Array("--dest".utf8), Array(dest.utf8),
                                                Array("-C".utf8), target])
        assertExit(restored, 0)
        XCTAssertEqual(try RawFileSystem.readFile(RawFileSystem.join(target, latinFile)), Array("latin-1 name\n".utf8))
        XCTAssertEqual(try RawFileSystem.readFile(RawFileSystem.join(target, RawFileSystem.join(relativeSource, "plain.txt"))),
                       Array("plain\n".utf8))

        // One PATH selection that is not UTF-8, with --target=… written inline.
        let single = RawFileSystem.join(workBytes, Self.latin1("one"))
        let selected = try keepsake.run(bytes: [Array("restore".utf8), Array(id.utf8), latinFile,
                                                Array("--dest".utf8), Array(dest.utf8), Array("--target=".utf8) + single])
        assertExit(selected, 0)
        XCTAssertEqual(try RawFileSystem.readFile(RawFileSystem.join(single, latinFile)), Array("latin-1 name\n".utf8))
        XCTAssertNil(RawFileSystem.lstat(RawFileSystem.join(single, RawFileSystem.join(relativeSource, "plain.txt"))),
                     "only the selected file is restored")
    }

    func testStdinNameThatIsNotUTF8() throws {
        let dest = path("dest")
        let name = Self.latin1("dump", ".sql")
        let backedUp = try keepsake.run(bytes: [Array("backup".utf8), Array("--stdin".utf8), Array("--stdin-name".utf8), name,
                                                Array("--dest".utf8), Array(dest.utf8), Array("--json".utf8)],
                                        stdin: Data("rows\n".utf8))
        assertExit(backedUp, 0)
        let id = try XCTUnwrap(try json(backedUp)["id"] as? String)
        XCTAssertTrue(try listedPaths(id, dest: dest).contains(name))
        let target = path("out")
        assertExit(try run(["restore", id, "--dest", dest, "--target", target]), 0)
        XCTAssertEqual(try RawFileSystem.readFile(RawFileSystem.join(RawFileSystem.bytes(target), name)), Array("rows\n".utf8))
    }

    func testTextArgumentsThatAreNotUTF8AreUsageErrors() throws {
        let source = try makeSource()
        let dest = Array(path("dest").utf8)
        let cases: [(arguments: [[UInt8]], named: String)] = [
            ([Array("backup".utf8), source, Array("--dest".utf8), dest, Array("--tag".utf8), Self.latin1("t")], "--tag <tag>"),
            ([Array("backup".utf8), source, Array("--dest".utf8), dest, Array("--exclude=".utf8) + Self.latin1("x")], "--exclude <pattern>"),
            ([Array("backup".utf8), source, Self.latin1("--de", "st"), dest], "--de\\xffst"),
            ([Array("list".utf8), Self.latin1("2026"), Array("--dest".utf8), dest], "BACKUP"),
            // Destinations are opened by UTF-8 paths for now (see docs/commands.md).
            ([Array("backup".utf8), source, Array("--dest".utf8), dest + [0xff]], "--dest <where>"),
            ([Self.latin1("bac", "kup")], "bac\\xffkup"),
        ]
        for (arguments, named) in cases {
            let outcome = try keepsake.run(bytes: arguments)
            assertExit(outcome, 2)
            XCTAssertTrue(outcome.stderrText.contains(named), "the error names \(named):\n\(outcome)")
            XCTAssertTrue(outcome.stderrText.contains("\\xff"), "the bad byte is shown as \\xff:\n\(outcome)")
            XCTAssertFalse(outcome.stderrText.contains("\u{FFFD}"), "no replacement character:\n\(outcome)")
        }
    }
}
