import Foundation
@testable import KeepsakeModel
import XCTest
@testable import BackupCore

final class DurationSpecTests: KeepsakeTestCase {
    // MARK: Fixtures

    private static let utc: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .gmt
        return calendar
    }()

    private func date(
        _ year: Int, _ month: Int, _ day: Int, _ hour: Int = 0, calendar: Calendar = DurationSpecTests.utc,
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> Date {
        let components = DateComponents(year: year, month: month, day: day, hour: hour)
        return try XCTUnwrap(calendar.date(from: components), "\(components)", file: file, line: line)
    }

    private func parse(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> DurationSpec {
        do {
            return try DurationSpec(parsing: text)
        } catch {
            XCTFail("\(text) should parse: \(error)", file: file, line: line)
            throw error
        }
    }

    private func error(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> DurationSpecError? {
        do {
            let spec = try DurationSpec(parsing: text)
            XCTFail("'\(text)' should be rejected, got \(spec)", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }

    // MARK: Parsing

    func testTheDocumentedFormsParse() throws {
        XCTAssertEqual(try parse("7d"), DurationSpec(days: 7))
        XCTAssertEqual(try parse("2w"), DurationSpec(days: 14))
        XCTAssertEqual(try parse("36h"), DurationSpec(hours: 36))
        XCTAssertEqual(try parse("1y6m"), DurationSpec(years: 1, months: 6))
        XCTAssertEqual(try parse("30d12h"), DurationSpec(days: 30, hours: 12))
        XCTAssertEqual(try parse("2y5m7d3h"), DurationSpec(years: 2, months: 5, days: 7, hours: 3))
    }

    func testMIsMonthsNotMinutes() throws {
        XCTAssertEqual(try parse("90m"), DurationSpec(months: 90))
    }

    func testWeeksAndDaysAddUpAndUnitsMayComeInAnyOrder() throws {
        XCTAssertEqual(try parse("1w3d"), DurationSpec(days: 10))
        XCTAssertEqual(try parse("3d1w"), DurationSpec(days: 10))
        XCTAssertEqual(try parse("12h1y"), DurationSpec(years: 1, hours: 12))
    }

    func testSurroundingWhiteSpaceAndLeadingZerosAreAccepted() throws {
        XCTAssertEqual(try parse("  7d\n"), DurationSpec(days: 7))
        XCTAssertEqual(try parse("007d"), DurationSpec(days: 7))
        XCTAssertEqual(try parse("0y7d"), DurationSpec(days: 7), "a zero part next to a non-zero one is fine")
    }

    func testTheLargestNumberIsAccepted() throws {
        XCTAssertEqual(try parse("1000000h").hours, 1_000_000)
    }

    // MARK: Errors

    func testUnknownUnitNamesTextAndUnits() {
        XCTAssertEqual(error("7x")?.kind, .unknownUnit("x"))
        XCTAssertEqual(
            error("7x")?.description,
            "'7x' is not a duration: unknown unit 'x'; use y, m, w, d or h (e.g. 7d, 2w, 1y6m)"
        )
    }

    func testUpperCaseUnitsGetAHint() {
        XCTAssertEqual(error("7D")?.kind, .unknownUnit("D"))
        XCTAssertEqual(
            error("7D")?.description,
            "'7D' is not a duration: unknown unit 'D' (units are lower-case); use y, m, w, d or h (e.g. 7d, 2w, 1y6m)"
        )
    }

    func testEachKindOfMistake() {
        let cases: [(String, DurationSpecError.Kind)] = [
            ("", .empty),
            ("   ", .empty),
            ("7", .missingUnit(number: "7")),
            ("1d12", .missingUnit(number: "12")),
            ("d", .missingNumber(unit: "d")),
            ("7dd", .missingNumber(unit: "d")),
            ("7min", .unknownUnit("i")),
            ("1d 2h", .unexpectedCharacter(" ")),
            ("1.5d", .missingUnit(number: "1")),
            ("+7d", .unexpectedCharacter("+")),
            ("-7d", .negative),
            ("7d-1h", .negative),
            ("1d2d", .repeatedUnit("d")),
            ("1w2w", .repeatedUnit("w")),
            ("0d", .zero),
            ("0y0m0w0d0h", .zero),
            ("1000001d", .tooLarge(number: "1000001")),
            ("99999999999999999999999d", .tooLarge(number: "99999999999999999999999")),
            ("٣d", .unexpectedCharacter("٣")),
        ]
        for (text, kind) in cases {
            XCTAssertEqual(error(text)?.kind, kind, "'\(text)'")
            XCTAssertEqual(error(text)?.text, text)
        }
    }

    func testEveryMessageNamesTheText() {
        for text in ["", "7", "d", "1d 2h", "-7d", "1d2d", "0d", "1000001d"] {
            let message = error(text)?.description ?? ""
            XCTAssertTrue(message.hasPrefix("'\(text)' is not a duration: "), message)
        }
        XCTAssertEqual(error("7")?.description,
                       "'7' is not a duration: the number 7 has no unit; use y, m, w, d or h (e.g. 7d, 2w, 1y6m)")
        XCTAssertEqual(error("1d2d")?.description,
                       "'1d2d' is not a duration: the unit 'd' appears more than once; give each unit once (e.g. 1y6m)")
    }

    // MARK: Description

    func testDescriptionIsCanonical() throws {
        XCTAssertEqual(try parse("7d").description, "7d")
        XCTAssertEqual(try parse("2w").description, "14d")
        XCTAssertEqual(try parse("12h1y").description, "1y12h")
        XCTAssertEqual(try parse("2y5m7d3h").description, "2y5m7d3h")
        XCTAssertEqual(DurationSpec().description, "0h")
        XCTAssertEqual(try parse(try parse("1y6m30d12h").description), try parse("1y6m30d12h"))
    }

    func testMemberwiseInitClampsNegativeParts() {
        XCTAssertEqual(DurationSpec(years: -1, months: 2, days: -3, hours: 4), DurationSpec(months: 2, hours: 4))
        XCTAssertTrue(DurationSpec(days: -1).isZero)
    }

    // MARK: Arithmetic

    func testSubtractDaysAndHours() throws {
        let newest = try date(2024, 3, 5, 23)
        XCTAssertEqual(try parse("2d").subtract(from: newest, calendar: Self.utc), try date(2024, 3, 3, 23))
        XCTAssertEqual(try parse("36h").subtract(from: newest, calendar: Self.utc), try date(2024, 3, 4, 11))
        XCTAssertEqual(try parse("1w").subtract(from: newest, calendar: Self.utc), try date(2024, 2, 27, 23))
        XCTAssertEqual(try parse("1y6m").subtract(from: newest, calendar: Self.utc), try date(2022, 9, 5, 23))
    }

    func testMonthsClampToTheEndOfAShorterMonth() throws {
        let endOfMarch = try date(2024, 3, 31, 12)
        XCTAssertEqual(try parse("1m").subtract(from: endOfMarch, calendar: Self.utc), try date(2024, 2, 29, 12))
        XCTAssertEqual(try parse("1y1m").subtract(from: endOfMarch, calendar: Self.utc), try date(2023, 2, 28, 12))
    }

    func testDaysAreWallClockDaysButHoursAreElapsedHours() throws {
        guard let berlinZone = TimeZone(identifier: "Europe/Berlin") else {
            throw XCTSkip("no time zone data for Europe/Berlin")
        }
        var berlin = Calendar(identifier: .gregorian)
        berlin.timeZone = berlinZone
        // Clocks went forward on 2024-03-31 at 02:00 local time: that day had 23 hours.
        let after = try date(2024, 4, 1, 12, calendar: berlin)
        XCTAssertEqual(try parse("2d").subtract(from: after, calendar: berlin), try date(2024, 3, 30, 12, calendar: berlin))
        XCTAssertEqual(try parse("48h").subtract(from: after, calendar: berlin), try date(2024, 3, 30, 11, calendar: berlin))
    }

    func testSubtractBeyondTheCalendarGivesAnEarlyDate() throws {
        let spec = try parse("1000000y")
        let result = spec.subtract(from: try date(2024, 1, 1), calendar: Self.utc)
        XCTAssertLessThan(result, try date(1, 1, 1))
    }
}
