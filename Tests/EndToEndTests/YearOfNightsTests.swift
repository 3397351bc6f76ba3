import Foundation
import XCTest

/// A year of nightly `keepsake run` with its off-site copy in a folder: 400 nights with
/// every mishap, checked every night (`SimulatedYearTestCase` says what is checked).
final class YearOfNightsTests: SimulatedYearTestCase {
    // MARK: Tests

    /// 400 nights, a full backup every 14 (so that chains outlast the daily window and prune
    /// removes backups inside them). A sanitizer makes every process several times slower:
    /// six weeks under one still reach a month's end, weekly rules and three chains.
    func testAYearOfNightlyRunsKeepsEveryPromise() throws {
        try liveTheYear(nights: Self.nights(standard: 400, underSanitizer: 42), offsite: .folder, fullEvery: 14)
    }
}
