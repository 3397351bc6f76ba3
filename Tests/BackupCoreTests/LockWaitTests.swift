import XCTest
@testable import BackupCore

/// What `--lock-wait` and a profile's `lock-wait` accept.
final class LockWaitTests: KeepsakeTestCase {
    func testSecondsMinutesAndHours() {
        XCTAssertEqual(LockWait.parse("900"), 900)
        XCTAssertEqual(LockWait.parse("90s"), 90)
        XCTAssertEqual(LockWait.parse("15min"), 900)
        XCTAssertEqual(LockWait.parse("2h"), 7200)
        XCTAssertEqual(LockWait.parse(" 0 "), 0)
        XCTAssertEqual(LockWait.parse("24h"), 86_400)
    }

    func testEverythingElseIsRefused() {
        // `m` alone would be months in Keepsake's durations: not a wait.
        for text in ["", "soon", "15m", "-5", "1.5h", "25h", "9999999999", "h", "5 min", "٣٠"] {
            XCTAssertNil(LockWait.parse(text), text)
        }
    }
}
