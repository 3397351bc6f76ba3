import Foundation
import XCTest

/// Tables as a person reads them at 80 and 50 columns: numbers are never cut (a column
/// goes instead), `find` keeps the path whole before its other columns, `list` shows that
/// a backup has several sources, and `list ID --long` lines up with short hashes.
final class TableOutputTests: EndToEndTestCase {
    // MARK: Tests

    func testListAndFindAtNarrowWidths() throws {
        let first = path("alpha"), second = path("beta")
        try Fixtures.makeTree(at: first, files: ["notes/report-2026.txt": "report\n"])
        try Fixtures.makeTree(at: second, files: ["b.txt": "b\n"])
        let dest = path("dest")
        let id = try backup([first, second], dest: dest)

        for width in [80, 50] {
            let list = try run(["list", "--dest", dest], environment: ["COLUMNS": "\(width)"])
            assertExit(list, 0)
            let lines = list.stdoutText.split(separator: "\n").map(String.init)
            XCTAssertTrue(lines.allSatisfy { DisplayWidthProbe.cells($0) <= width }, "\(width):\n\(list)")
            XCTAssertFalse(list.stdoutText.contains("…\n") && lines.first?.hasSuffix("…") == true,
                           "no column cut to an ellipsis:\n\(list)")
            XCTAssertTrue(lines.last?.contains(id) == true, "\(list)")
            if width == 80 { XCTAssertTrue(list.stdoutText.contains("(2) /tmp/"), "several sources are counted:\n\(list)") }
            for number in ["SIZE", "STORED"] where lines.first?.contains(number) == true {
                XCTAssertFalse(lines.dropFirst(2).contains { $0.hasSuffix("…") }, "a number cut at \(width):\n\(list)")
            }

            let find = try run(["find", "report-2026.txt", "--dest", dest], environment: ["COLUMNS": "\(width)"])
            assertExit(find, 0)
            let header = find.stdoutText.split(separator: "\n").first.map(String.init) ?? ""
            if width == 80 {
                XCTAssertTrue(find.stdoutText.contains(String(first.dropFirst()) + "/notes/report-2026.txt"),
                              "the path stays whole at 80:\n\(find)")
            } else {
                // Too long for 50 columns even alone: every other column went before it was cut.
                XCTAssertEqual(header.split(separator: " ").map(String.init), ["BACKUP", "PATH"], "\(find)")
                XCTAssertTrue(find.stdoutText.contains("…") && find.stdoutText.contains("2026.txt\n"), "cut in the middle:\n\(find)")
            }
        }
    }

    func testLongListingLinesUpAndShortensHashesUnlessWide() throws {
        let source = path("src")
        try Fixtures.makeTree(at: source, files: ["small.txt": "a\n", "big.txt": String(repeating: "x", count: 123_456)])
        let dest = path("dest")
        let id = try backup([source], dest: dest)
        let long = try run(["list", id, "--long", "--dest", dest])
        assertExit(long, 0)
        let lines = long.stdoutText.split(separator: "\n").map(String.init)
        let files = lines.filter { $0.hasPrefix("-") }
        XCTAssertEqual(files.count, 2, "\(long)")
        // The path starts in the same column on every line.
        let starts = Set(lines.compactMap { line in line.range(of: " tmp/").map { line.distance(from: line.startIndex, to: $0.lowerBound) } })
        XCTAssertEqual(starts.count, 1, "columns line up:\n\(long)")
        XCTAssertTrue(files.allSatisfy { $0.range(of: #"  [0-9a-f]{12}  "#, options: .regularExpression) != nil }, "\(long)")
        XCTAssertFalse(long.stdoutText.range(of: "[0-9a-f]{64}", options: .regularExpression) != nil, "short hashes:\n\(long)")
        let wide = try run(["list", id, "--long", "--wide", "--dest", dest])
        XCTAssertNotNil(wide.stdoutText.range(of: "[0-9a-f]{64}", options: .regularExpression), "--wide keeps them whole:\n\(wide)")
    }
}

/// Display width of plain text as a terminal shows it: wide (CJK) characters take two cells.
private enum DisplayWidthProbe {
    static func cells(_ text: String) -> Int {
        text.unicodeScalars.reduce(0) { total, scalar in
            let value = scalar.value
            let wide = (0x1100...0x115F).contains(value) || (0x2E80...0xA4CF).contains(value) || (0xAC00...0xD7A3).contains(value)
                || (0xF900...0xFAFF).contains(value) || (0xFF00...0xFF60).contains(value) || (0x1F300...0x1FAFF).contains(value)
            return total + (wide ? 2 : 1)
        }
    }
}
