import Foundation
@testable import KeepsakeStorage
@testable import KeepsakeRclone
import KeepsakeSupport
import XCTest

@testable import BackupCore

/// The rclone backend against the conformance suite and its own checks, on a real remote of
/// type `local` in a temporary rclone configuration. Another remote (an sftp server) runs
/// the same from a class like this one whose `makeRemote` returns that remote.
final class RcloneConformanceTests: KeepsakeTestCase {
    // MARK: Setup

    private var root = ""
    private var remote = RcloneTestRemote(name: "", configPath: "", basePath: "")

    /// The remote every test of this class runs against.
    private func makeRemote(in root: String) throws -> RcloneTestRemote {
        try RcloneTestRemote.local(in: root)
    }

    override func setUpWithError() throws {
        try super.setUpWithError()
        // As keepsake's main does: a write to an rclone that has ended fails with EPIPE.
        signal(SIGPIPE, SIG_IGN)
        root = try makeTemporaryDirectory("rclone")
        remote = try makeRemote(in: root)
    }

    override func tearDownWithError() throws {
        XCTAssertEqual(RcloneBackendChecks.leftoverChildren(), [], "no rclone is left running")
        removeTemporaryDirectory(root)
        try super.tearDownWithError()
    }

    private var suite: StorageConformanceSuite { remote.conformanceSuite() }
    private var checks: RcloneBackendChecks { RcloneBackendChecks(remote: remote) }

    // MARK: Conformance
    //
    // Every check of the suite, a group per test method (each rclone run costs tens of
    // milliseconds, a lock a second): a failure names the check's line.

    func testConformanceOfStoring() { suite.run(.storing) }
    func testConformanceOfReading() { suite.run(.reading) }
    func testConformanceOfNames() { suite.run(.names) }
    func testConformanceOfLocking() { suite.run(.locking) }

    // MARK: rclone specifics

    func testLocationIsTheAddress() throws { try checks.checkLocationIsTheAddress() }
    func testMissingProgramIsNamed() throws { try checks.checkMissingProgramIsNamed() }
    func testUnknownRemoteIsNamed() throws { try checks.checkUnknownRemoteIsNamed() }
    func testFailedStoreNamesTheObjectAndRclonesReason() throws { try checks.checkFailedStoreNamesTheObjectAndRclonesReason() }
    // test-tag(plain-only): bounds the memory a 50 MiB upload takes; ASan's quarantine of freed memory (256 MiB) makes that meaningless
    func testBigStreamKeepsMemoryBounded() throws { try checks.checkBigStreamKeepsMemoryBounded() }
    func testReplacingAnObjectOfTheSameSizeAndTime() throws { try checks.checkReplacingAnObjectOfTheSameSizeAndTime() }
    func testCancellationStopsTheUpload() throws { try checks.checkCancellationStopsTheUpload() }
    func testListSkipsFoldersAndDotNames() throws { try checks.checkListSkipsFoldersAndDotNames() }
    func testListingIsUsedAgainUntilTheFolderChanges() throws {
        try checks.checkListingIsUsedAgainUntilTheFolderChanges(scratch: root)
    }
    func testObjectGoneAfterOpenIsNotFound() throws { try checks.checkObjectGoneAfterOpenIsNotFound() }
    func testLockRecordAndReleaseOfAReplacedLock() throws { try checks.checkLockRecordAndReleaseOfAReplacedLock() }
    func testUnreadableLockIsHeldUntilOld() throws { try checks.checkUnreadableLockIsHeldUntilOld() }
    func testRemoveLeftoversSparesLiveWriters() throws { try checks.checkRemoveLeftoversSparesLiveWriters() }
    func testConcurrentRunsGetOneLock() throws { try checks.checkConcurrentRunsGetOneLock() }

    // MARK: Parsing rclone's output

    func testModificationTimesWithAndWithoutOffsets() {
        let utc = Timestamp.parseISO8601("2026-12-01T19:47:53Z")
        XCTAssertEqual(RcloneEntry.parseModTime("2026-12-01T19:47:53.915321863Z"), utc)
        XCTAssertEqual(RcloneEntry.parseModTime("2026-12-01T19:47:53Z"), utc)
        XCTAssertEqual(RcloneEntry.parseModTime("2026-12-01T20:47:53.5+01:00"), utc)
        XCTAssertEqual(RcloneEntry.parseModTime("2026-12-01T15:17:53-04:30"), utc)
        for bad in ["", "2026-12-01", "2026-12-01T19:47:53", "2026-12-01T19:47:53+1:00", "2026-12-01T19:47:53.x", "yesterday"] {
            XCTAssertNil(RcloneEntry.parseModTime(bad), bad)
        }
    }

    func testListingsThatAreNotListingsAreRefused() {
        let entries = RcloneEntry.listing(Array(#"[{"Name":"a","Size":3,"IsDir":false},{"Name":"d","Size":-1,"IsDir":true}]"#.utf8))
        XCTAssertEqual(entries?.map(\.name), ["a", "d"])
        XCTAssertEqual(entries?.map(\.size), [3, -1])
        XCTAssertEqual(entries?.map(\.isDirectory), [false, true])
        for bad in ["", "[", "{}", #"[{"Name":"a"}]"#, #"[{"Name":1,"Size":2}]"#, #"[1]"#] {
            XCTAssertNil(RcloneEntry.listing(Array(bad.utf8)), bad)
        }
        XCTAssertNil(RcloneEntry.stat(Array("[]".utf8)))
    }

    func testReasonsDropTimestampsAndRepeatsAndMaskSecrets() {
        let runner = RcloneRunner(program: "rclone", environment: ["RCLONE_CONFIG_PASS": "hunter22", "HOME": "/root"],
                                  destination: "rclone:r:p", cancellation: nil)
        let process = "2026/12/01 19:47:55 ERROR : Attempt 1/1 failed: bad password hunter22\n"
            + "2026/12/01 19:47:55 ERROR : Attempt 1/1 failed: bad password hunter22\n"
            + "2026/12/01 19:47:55 Failed to cat: home /root\n"
        var outcome = RcloneRunner.Outcome(termination: .exited(1), output: [], errorText: process)
        XCTAssertEqual(runner.reason(outcome), "Attempt 1/1 failed: bad password ***; Failed to cat: home /root")
        outcome.errorText = ""
        XCTAssertEqual(runner.reason(outcome), "rclone ended with exit status 1 and gave no reason")
    }
}
