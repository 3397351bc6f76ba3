import XCTest
@testable import TerminalUI

final class UnitsTests: KeepsakeTestCase {

    func testCounts() {
        XCTAssertEqual(Units.count(0), "0")
        XCTAssertEqual(Units.count(999), "999")
        XCTAssertEqual(Units.count(1000), "1,000")
        XCTAssertEqual(Units.count(1234567), "1,234,567")
        XCTAssertEqual(Units.count(-12345), "-12,345")
    }

    func testCountsWithTheirNoun() {
        XCTAssertEqual(Units.count(0, "file"), "0 files")
        XCTAssertEqual(Units.count(1, "file"), "1 file")
        XCTAssertEqual(Units.count(2, "folder"), "2 folders")
        XCTAssertEqual(Units.count(1204, "file"), "1,204 files")
        XCTAssertEqual(Units.count(1, "copy", plural: "copies"), "1 copy")
        XCTAssertEqual(Units.count(3, "copy", plural: "copies"), "3 copies")
    }

    func testBytes() {
        XCTAssertEqual(Units.bytes(0), "0 B")
        XCTAssertEqual(Units.bytes(1023), "1023 B")
        XCTAssertEqual(Units.bytes(1024), "1.0 KiB")
        XCTAssertEqual(Units.bytes(1536), "1.5 KiB")
        XCTAssertEqual(Units.bytes(Int64(12.3 * 1_048_576)), "12.3 MiB")
        XCTAssertEqual(Units.bytes(Int64(340) << 30), "340 GiB")
        XCTAssertEqual(Units.bytes(Int64(1024 * 1024 - 1)), "1.0 MiB")
        XCTAssertEqual(Units.bytes(Int64.max), "8.0 EiB")
        XCTAssertEqual(Units.bytes(-2048), "-2.0 KiB")
    }

    func testRateAndDuration() {
        XCTAssertEqual(Units.rate(bytesPerSecond: 45e6), "42.9 MiB/s")
        XCTAssertEqual(Units.rate(bytesPerSecond: .nan), "– B/s")
        XCTAssertEqual(Units.duration(7), "0:07")
        XCTAssertEqual(Units.duration(750), "12:30")
        XCTAssertEqual(Units.duration(3725), "1:02:05")
        XCTAssertEqual(Units.duration(-1), "–:––")
        XCTAssertEqual(Units.duration(.infinity), "–:––")
    }
}
