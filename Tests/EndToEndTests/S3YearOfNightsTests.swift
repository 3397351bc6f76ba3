import Foundation
import KeepsakeTestSupport
import XCTest

/// Nightly `keepsake run` whose off-site copy goes to S3 (SeaweedFS on loopback, with keys
/// it enforces, held by the profile as a cron job's would be), with every mishap of
/// `SimulatedYearTestCase`: a run killed in the middle of its copy must leave nothing in
/// the bucket that the next run does not clean up (no lock, no unfinished upload).
final class S3YearOfNightsTests: SimulatedYearTestCase {
    // MARK: Setup

    private var server: SeaweedServer?

    override func tearDownWithError() throws {
        server?.stop()
        server = nil
        try super.tearDownWithError()
    }

    // MARK: Tests

    /// 120 nights in the suite (every mishap has met the S3 copy by night 57, the killed
    /// run three times), with the default chain of 30 backups. `KEEPSAKE_TEST_LONG=1`
    /// lives 1,000 nights, nearly three years (see docs/development.md).
    func testNightlyRunsCopyingToS3KeepEveryPromise() throws {
        let long = ProcessInfo.processInfo.environment["KEEPSAKE_TEST_LONG"] == "1"
        let started = try SeaweedServer(buckets: ["offsite"], access: .enforcedWithRandomKeys())
        server = started
        try liveTheYear(nights: Self.nights(standard: long ? 1000 : 120, underSanitizer: 28),
                        offsite: .s3(started, bucket: "offsite"), fullEvery: 30)
    }
}
