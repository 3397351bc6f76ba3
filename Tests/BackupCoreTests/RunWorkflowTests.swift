import Foundation
@testable import KeepsakeModel
@testable import KeepsakeStorage
import KeepsakeSupport
import XCTest

@testable import BackupCore

/// `keepsake run`'s steps in core: backup, prune, verify, each failure recorded by step.
final class RunWorkflowTests: KeepsakeTestCase {
    // MARK: Setup

    private var root = ""

    override func setUpWithError() throws {
        try super.setUpWithError()
        root = try makeTemporaryDirectory("workflow")
        try writeFile(root + "/src/a.txt", "alpha\n")
    }

    override func tearDownWithError() throws {
        removeTemporaryDirectory(root)
        try super.tearDownWithError()
    }

    private func request(_ sources: [String]? = nil, tags: [String] = [], full: Bool = false,
                         at seconds: TimeInterval) throws -> BackupRequest {
        BackupRequest(sources: sources ?? [root + "/src"], tags: tags, scan: try noExcludes(), chain: ChainPolicy(forceFull: full),
                      toolVersion: "test", now: Date(timeIntervalSince1970: seconds))
    }

    // MARK: Tests

    func testBackupPruneAndVerifyOfTheNewBackup() throws {
        let storage = LocalFolderBackend(path: root + "/dest")
        let recorder = EventRecorder()
        let workflow = RunWorkflow(storage: storage, events: recorder, cancellation: CancellationFlag())
        let first = workflow.run(try request(at: 1_800_000_000), retention: RetentionPolicy(keepLast: 1))
        XCTAssertTrue(first.failures.isEmpty, "\(first.failures)")
        XCTAssertEqual(first.prune?.removed, [])
        try writeFile(root + "/src/b.txt", "beta\n")
        // A new chain: the first backup is no longer needed, and the policy removes it.
        let second = workflow.run(try request(full: true, at: 1_800_003_600), retention: RetentionPolicy(keepLast: 1))
        XCTAssertTrue(second.failures.isEmpty, "\(second.failures)")
        let newID = try XCTUnwrap(second.backup?.summary.id)
        XCTAssertEqual(second.prune?.kept, [newID])
        XCTAssertEqual(second.prune?.removed, [try XCTUnwrap(first.backup?.summary.id)])
        XCTAssertEqual(second.verify?.id, newID)
        XCTAssertEqual(second.verify?.isIntact, true)
        XCTAssertEqual(second.verify?.filesChecked, 2, "the new backup is verified whole")
        let steps = recorder.messages.filter { $0.hasPrefix("stepFinished") }
        XCTAssertEqual(steps, ["backup", "prune", "verify", "backup", "prune", "verify"].map { "stepFinished(\"\($0)\")" })
    }

    func testAFailedBackupStopsTheRunAndNamesItsStep() throws {
        let storage = LocalFolderBackend(path: root + "/dest")
        let outcome = RunWorkflow(storage: storage, events: nil, cancellation: CancellationFlag())
            .run(try request([root + "/missing"], at: 1_800_000_000), retention: RetentionPolicy(keepLast: 1))
        XCTAssertNil(outcome.backup)
        XCTAssertNil(outcome.prune)
        XCTAssertNil(outcome.verify)
        XCTAssertEqual(outcome.failures.map(\.step), [.backup])
    }

    func testANewBackupTheRetentionPolicyRemovesIsNotVerified() throws {
        let storage = LocalFolderBackend(path: root + "/dest")
        let workflow = RunWorkflow(storage: storage, events: nil, cancellation: CancellationFlag())
        let kept = workflow.run(try request(tags: ["monthly"], at: 1_800_000_000), retention: nil)
        XCTAssertNotNil(kept.verify)
        let outcome = workflow.run(try request(full: true, at: 1_800_003_600), retention: RetentionPolicy(keepTags: [["monthly"]]))
        XCTAssertTrue(outcome.failures.isEmpty, "\(outcome.failures)")
        XCTAssertTrue(outcome.newBackupPruned)
        XCTAssertNil(outcome.verify)
    }
}
