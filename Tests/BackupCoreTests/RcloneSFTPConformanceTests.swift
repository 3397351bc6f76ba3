import Foundation
import KeepsakeTestSupport
import XCTest
@testable import BackupCore

/// The rclone backend against the conformance suite over a real network protocol: rclone's
/// sftp backend talking to OpenSSH's sshd on a loopback port (a throwaway host key and user
/// key), as a NAS or a rented server would be reached.
// test-tag(plain-only): rclone and sshd do the work; Keepsake's side of it is RcloneConformanceTests
final class RcloneSFTPConformanceTests: KeepsakeTestCase {
    // MARK: Setup

    private var server: SSHServer?
    private var remote = RcloneTestRemote(name: "", configPath: "", basePath: "")

    override func setUpWithError() throws {
        try super.setUpWithError()
        // As keepsake's main does: a write to an rclone that has ended fails with EPIPE.
        signal(SIGPIPE, SIG_IGN)
        let started = try SSHServer()
        server = started
        let config = try started.rcloneConfig(remoteName: "keepsake-sftp")
        remote = RcloneTestRemote(name: config.remoteName, configPath: config.file.path, basePath: started.folder.path + "/remote")
    }

    override func tearDownWithError() throws {
        XCTAssertEqual(RcloneBackendChecks.leftoverChildren(), [], "no rclone is left running")
        server?.stop()
        server = nil
        try super.tearDownWithError()
    }

    private var suite: StorageConformanceSuite { remote.conformanceSuite() }

    // MARK: Conformance

    func testConformanceOverSFTP() { suite.run() }
}
