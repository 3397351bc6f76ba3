@testable import KeepsakeCLI
import BackupCore
import XCTest
import KeepsakeSupport

/// The test clock: `KEEPSAKE_NOW` in a debug build, the real time otherwise.
final class CommandClockTests: KeepsakeTestCase {
    func testADebugBuildTakesTheInstantAndRejectsAnythingElseNamingTheVariable() throws {
        // The tests always run a debug build; a release build never reads the variable.
        XCTAssertTrue(CommandClock.honoursVariable)
        let date = try CommandClock.now(environment: ["KEEPSAKE_NOW": "2027-03-01T02:00:00Z"], command: nil)
        XCTAssertEqual(Timestamp.iso8601(date), "2027-03-01T02:00:00Z")
        for bad in ["tomorrow", "2027-03-01 02:00:00", "2027-13-01T02:00:00Z", "1800000000"] {
            XCTAssertThrowsError(try CommandClock.now(environment: ["KEEPSAKE_NOW": bad], command: nil), bad) { error in
                let message = (error as? UsageError)?.message ?? ""
                XCTAssertTrue(message.contains("'\(bad)'") && message.contains("KEEPSAKE_NOW"), message)
            }
        }
    }

    func testWithoutTheVariableItIsNow() throws {
        for environment in [[:], ["KEEPSAKE_NOW": ""]] {
            let now = try CommandClock.now(environment: environment, command: nil)
            XCTAssertLessThan(abs(now.timeIntervalSinceNow), 60)
        }
    }
}
