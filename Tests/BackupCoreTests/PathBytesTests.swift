import Foundation
import KeepsakeSupport
import XCTest

@testable import BackupCore

final class PathBytesTests: KeepsakeTestCase {
    // MARK: Helpers

    private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    // MARK: Display

    func testDisplayKeepsValidTextAsIs() {
        XCTAssertEqual(PathBytes.display(bytes("home/ana/Ünïcödé €.txt")), "home/ana/Ünïcödé €.txt")
        XCTAssertEqual(PathBytes.display(bytes("emoji 🎉/x")), "emoji 🎉/x")
        XCTAssertEqual(PathBytes.display([]), "")
    }

    func testDisplayEscapesInvalidBytesAsHex() {
        XCTAssertEqual(PathBytes.display([0x61, 0xff, 0x62]), "a\\xffb")
        XCTAssertEqual(PathBytes.display([0xc3]), "\\xc3", "a truncated sequence")
        XCTAssertEqual(PathBytes.display([0xc3, 0x28]), "\\xc3(", "a bad continuation byte")
        XCTAssertEqual(PathBytes.display([0xc0, 0xaf]), "\\xc0\\xaf", "an overlong encoding")
        XCTAssertEqual(PathBytes.display([0xed, 0xa0, 0x80]), "\\xed\\xa0\\x80", "an encoded surrogate")
        XCTAssertEqual(PathBytes.display(bytes("ok/") + [0x80] + bytes("é")), "ok/\\x80é", "valid text around it is kept")
    }

    func testDisplayEscapesControlCharacters() {
        XCTAssertEqual(PathBytes.display(bytes("line\nbreak")), "line\\nbreak")
        XCTAssertEqual(PathBytes.display(bytes("tab\there")), "tab\\there")
        XCTAssertEqual(PathBytes.display(bytes("esc\u{1b}[31mred")), "esc\\x1b[31mred")
        XCTAssertEqual(PathBytes.display(bytes("del\u{7f}")), "del\\x7f")
        XCTAssertEqual(PathBytes.display(bytes("cr\r")), "cr\\x0d")
        XCTAssertEqual(PathBytes.display([0xff, 0x0a]), "\\xff\\n", "both kinds at once")
    }

    func testDisplayNeverContainsNewlinesOrEscapes() {
        for byte in UInt8.min...UInt8.max {
            let shown = PathBytes.display([0x61, byte, 0x62])
            XCTAssertFalse(shown.contains("\n") || shown.contains("\u{1b}") || shown.contains("\r"), "byte \(byte): \(shown)")
        }
    }

    /// C1 controls (U+0080–U+009F) are control characters too: U+009B is CSI, which some
    /// terminals act on like ESC [.
    func testDisplayEscapesC1ControlCharacters() {
        for scalar in [0x85, 0x9b, 0x9d] as [UInt32] {
            let text = "x" + String(UnicodeScalar(scalar)!) + "31m"
            let shown = PathBytes.display(bytes(text))
            XCTAssertFalse(shown.unicodeScalars.contains { $0.value == scalar },
                           "U+\(String(scalar, radix: 16)) shown raw: \(shown.debugDescription)")
        }
    }

    // MARK: Conversion

    func testValidStringAndFrom() {
        XCTAssertEqual(PathBytes.validString(bytes("é")), "é")
        XCTAssertNil(PathBytes.validString([0xff]))
        XCTAssertEqual(PathBytes.from("a/é"), [0x61, 0x2f, 0xc3, 0xa9])
    }

    func testCStringRoundTrip() throws {
        let raw: [UInt8] = [0x61, 0xff, 0x2f, 0x80]
        let back = try PathBytes.withCString(raw) { PathBytes.fromCString($0) }
        XCTAssertEqual(back, raw)
        XCTAssertNil(PathBytes.fromCString(nil))
    }

    func testTheCStringBridgeRefusesAnEmbeddedNUL() {
        // `..\0/outside` would reach the kernel as `..`: the body must never run.
        var called = false
        XCTAssertThrowsError(try PathBytes.withCString(bytes("..") + [0] + bytes("/outside")) { _ in called = true }) { error in
            XCTAssertTrue(error is PathBytes.EmbeddedNUL, "\(error)")
            XCTAssertTrue("\(error)".contains("NUL"), "\(error)")
        }
        XCTAssertFalse(called)
        errno = 0
        let status = PathBytes.syscall(bytes("..") + [0]) { path -> Int32 in
            called = true
            return mkdir(path, 0o755)
        }
        XCTAssertEqual(status, -1)
        XCTAssertEqual(errno, EINVAL)
        XCTAssertFalse(called, "the system call ran with a truncated path")
    }

    // MARK: Archive paths

    func testArchivePathRefusesNULAbsoluteParentAndEmpty() {
        func refusal(_ path: [UInt8]) -> String? {
            if case .failure(let refusal) = ArchivePath.components(of: path) { return refusal.reason }
            return nil
        }
        XCTAssertEqual(refusal(bytes("..") + [0] + bytes("/outside/victim")), "path contains a NUL byte")
        XCTAssertEqual(refusal(bytes("sel/..") + [0] + bytes("/..") + [0] + bytes("/x")), "path contains a NUL byte")
        XCTAssertEqual(refusal(bytes("a") + [0]), "path contains a NUL byte")
        XCTAssertEqual(refusal(bytes("a/../b")), "path contains '..'")
        XCTAssertEqual(refusal(bytes("..")), "path contains '..'")
        XCTAssertEqual(refusal(bytes("/etc/passwd")), "absolute path")
        XCTAssertEqual(refusal([]), "empty path")
        XCTAssertEqual(refusal(bytes("././/")), "empty path")
        XCTAssertNil(refusal(bytes("a/..b/...")), "names that only start with dots are fine")
        XCTAssertNil(refusal([0x61, 0xff, 0x2f, 0x0a]), "any byte but NUL is a valid name")
        if case .success(let parts) = ArchivePath.components(of: bytes("./a//b/./c/")) {
            XCTAssertEqual(parts, [bytes("a"), bytes("b"), bytes("c")])
        } else {
            XCTFail("a harmless path was refused")
        }
        XCTAssertTrue(ArchivePath.isStorable([0x61, 0xff]))
        XCTAssertFalse(ArchivePath.isStorable([0x61, 0]))
    }

    // MARK: Composition

    func testJoin() {
        XCTAssertEqual(PathBytes.join(bytes("a"), bytes("b")), bytes("a/b"))
        XCTAssertEqual(PathBytes.join(bytes("a/"), bytes("b")), bytes("a/b"), "no doubled slash")
        XCTAssertEqual(PathBytes.join(bytes("/"), bytes("etc")), bytes("/etc"))
        XCTAssertEqual(PathBytes.join([], bytes("b")), bytes("b"))
        XCTAssertEqual(PathBytes.join(bytes("a"), []), bytes("a/"))
        XCTAssertEqual(PathBytes.join([0xff], [0xfe]), [0xff, 0x2f, 0xfe])
    }

    func testComponentsDropDotAndEmpty() {
        XCTAssertEqual(PathBytes.components(bytes("/a//b/./c/")), [bytes("a"), bytes("b"), bytes("c")])
        XCTAssertEqual(PathBytes.components(bytes("./a")), [bytes("a")])
        XCTAssertEqual(PathBytes.components(bytes("a/../b")), [bytes("a"), bytes(".."), bytes("b")], "'..' is kept")
        XCTAssertEqual(PathBytes.components(bytes(".hidden/..x")), [bytes(".hidden"), bytes("..x")])
        XCTAssertEqual(PathBytes.components(bytes("/")), [])
        XCTAssertEqual(PathBytes.components(bytes(".")), [])
        XCTAssertEqual(PathBytes.components([]), [])
    }

    func testLastComponent() {
        XCTAssertEqual(PathBytes.lastComponent(bytes("/a/b/")), bytes("b"))
        XCTAssertEqual(PathBytes.lastComponent(bytes("name")), bytes("name"))
        XCTAssertEqual(PathBytes.lastComponent(bytes("/")), bytes("/"))
    }

    // MARK: Containment

    func testIsSameOrBelow() {
        XCTAssertTrue(PathBytes.isSameOrBelow(bytes("a/b"), bytes("a/b")))
        XCTAssertTrue(PathBytes.isSameOrBelow(bytes("a/b/c"), bytes("a/b")))
        XCTAssertTrue(PathBytes.isSameOrBelow(bytes("a/b/c"), bytes("a/b/")), "a trailing slash on the prefix")
        XCTAssertTrue(PathBytes.isSameOrBelow(bytes("/a/b"), bytes("/")))
        XCTAssertTrue(PathBytes.isSameOrBelow(bytes("x"), []), "everything is below the empty prefix")
        XCTAssertFalse(PathBytes.isSameOrBelow(bytes("a/bc"), bytes("a/b")), "a common prefix is not containment")
        XCTAssertFalse(PathBytes.isSameOrBelow(bytes("a"), bytes("a/b")))
        XCTAssertFalse(PathBytes.isSameOrBelow(bytes("b/a"), bytes("a")))
        XCTAssertFalse(PathBytes.isSameOrBelow(bytes("/ab"), bytes("/a")))
        XCTAssertTrue(PathBytes.isSameOrBelow([0x61, 0x2f, 0xff], [0x61]))
    }

    func testOnlyDotsAndSlashesNameTheTargetItself() {
        for path in [".", "./", ".//.", "./././"] {
            XCTAssertTrue(ArchivePath.namesTheTarget(Array(path.utf8)), path)
        }
        for path in ["", "/", "/.", "..", "./..", "a", "./a", ".a", "./\u{0}"] {
            XCTAssertFalse(ArchivePath.namesTheTarget(Array(path.utf8)), path)
        }
    }
}
