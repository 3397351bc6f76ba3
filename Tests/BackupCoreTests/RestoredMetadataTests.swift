@testable import BackupCore
import Foundation
@testable import KeepsakeArchive
@testable import KeepsakeModel
import XCTest

/// What a restore gives an entry, and that it is given through a descriptor of what the
/// restore made: a name swapped for a symlink (or another file) is left alone.
final class RestoredMetadataTests: KeepsakeTestCase {
    // MARK: Fixtures

    private var folder = ""
    private var folderFD: Int32 = -1

    override func setUpWithError() throws {
        try super.setUpWithError()
        folder = try makeTemporaryDirectory("restored-metadata")
        folderFD = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(folderFD, 0)
    }

    override func tearDown() {
        if folderFD >= 0 { close(folderFD) }
        removeTemporaryDirectory(folder)
        super.tearDown()
    }

    private func request(samePermissions: Bool = true, umask: UInt32 = 0o022, specialFiles: Bool = false) -> RestoreRequest {
        RestoreRequest(target: folder, preserveOwnership: false, restoreSpecialFiles: specialFiles,
                       samePermissions: samePermissions, umask: umask)
    }

    private func mode(_ name: String) -> mode_t? { lstatInfo(folder + "/" + name).map { $0.st_mode & 0o7777 } }

    // MARK: Policy

    func testPermissionsDropSetuidAndApplyTheUmaskUnlessAskedNotTo() {
        XCTAssertEqual(RestoredMetadata.permissions(0o4777, request: request()), 0o777, "setuid needs --same-owner")
        XCTAssertEqual(RestoredMetadata.permissions(0o1777, request: request()), 0o1777, "the sticky bit stays")
        XCTAssertEqual(RestoredMetadata.permissions(0o777, request: request(samePermissions: false, umask: 0o027)), 0o750)
        XCTAssertEqual(RestoredMetadata.permissions(0o644, request: request(samePermissions: false, umask: 0o077)), 0o600)
        var root = RestoreRequest(target: folder, preserveOwnership: true, restoreSpecialFiles: true, samePermissions: true)
        XCTAssertEqual(RestoredMetadata.permissions(0o6755, request: root), 0o6755)
        root.samePermissions = false
        root.umask = 0o022
        XCTAssertEqual(RestoredMetadata.permissions(0o6777, request: root), 0o6755)
    }

    func testOnlyUserAttributesWithoutSameOwner() {
        for name in ["user.note", "user.xdg.origin.url"] {
            XCTAssertTrue(RestoredMetadata.mayRestoreAttribute(name, request: request()), name)
        }
        for name in ["security.capability", "security.selinux", "trusted.overlay.opaque", "system.posix_acl_access", "other.x", "user"] {
            XCTAssertFalse(RestoredMetadata.mayRestoreAttribute(name, request: request()), name)
        }
        let root = RestoreRequest(target: folder, preserveOwnership: true, restoreSpecialFiles: true)
        XCTAssertTrue(RestoredMetadata.mayRestoreAttribute("security.capability", request: root))
    }

    // MARK: Swapped names

    func testANodeSwappedForASymlinkIsNotChangedThrough() throws {
        try writeFile(folder + "/victim", "secret\n")
        XCTAssertEqual(chmod(folder + "/victim", 0o600), 0)
        XCTAssertEqual(symlink(folder + "/victim", folder + "/made"), 0)
        let header = ArchiveEntryHeader(path: Array("pipe".utf8), type: .fifo, permissions: 0o777, mtimeSeconds: 1_000_000)
        var warnings: [PathWarning] = []
        let applied = RestoredMetadata.applyToNode(header, name: Array("made".utf8), parentFD: folderFD, request: request(),
                                                   path: header.path, warnings: &warnings)
        XCTAssertFalse(applied, "a symlink is not the FIFO that was made")
        XCTAssertEqual(mode("victim"), 0o600, "the symlink's target was changed")
        XCTAssertNotEqual(lstatInfo(folder + "/victim")?.st_mtim.tv_sec, 1_000_000)
    }

    func testANodeThatIsStillWhatWasMadeGetsItsMetadata() throws {
        XCTAssertEqual(mkfifo(folder + "/made", 0o600), 0)
        let header = ArchiveEntryHeader(path: Array("pipe".utf8), type: .fifo, permissions: 0o640, mtimeSeconds: 1_000_000,
                                        mtimeNanoseconds: 5)
        var warnings: [PathWarning] = []
        XCTAssertTrue(RestoredMetadata.applyToNode(header, name: Array("made".utf8), parentFD: folderFD, request: request(),
                                                   path: header.path, warnings: &warnings), "\(warnings)")
        XCTAssertEqual(warnings, [])
        XCTAssertEqual(mode("made"), 0o640)
        XCTAssertEqual(lstatInfo(folder + "/made")?.st_mtim.tv_sec, 1_000_000)
        XCTAssertEqual(lstatInfo(folder + "/made")?.st_mtim.tv_nsec, 5)

        XCTAssertEqual(symlink("/nonexistent", folder + "/link"), 0)
        let link = ArchiveEntryHeader(path: Array("link".utf8), type: .symlink, mtimeSeconds: 2_000_000, linkTarget: Array("/nonexistent".utf8))
        XCTAssertTrue(RestoredMetadata.applyToNode(link, name: Array("link".utf8), parentFD: folderFD, request: request(),
                                                   path: link.path, warnings: &warnings), "\(warnings)")
        XCTAssertEqual(lstatInfo(folder + "/link")?.st_mtim.tv_sec, 2_000_000, "the symlink's own time")
    }

    func testAWaitingFileIsFoundByItsIdentityNotItsName() throws {
        try writeFile(folder + "/waiting", "content\n")
        let fd = open(folder + "/waiting", O_RDONLY | O_CLOEXEC)
        let identity = try XCTUnwrap(RestoredMetadata.Identity(fd: fd))
        close(fd)
        let entry = ManifestEntry(path: Array("a".utf8), type: .file, mode: 0o751, mtimeNanoseconds: 3_000_000_000)
        XCTAssertTrue(RestoredMetadata.applyRecordedModeAndTime(entry, name: Array("waiting".utf8), parentFD: folderFD,
                                                                identity: identity, request: request()))
        XCTAssertEqual(mode("waiting"), 0o751)
        XCTAssertEqual(lstatInfo(folder + "/waiting")?.st_mtim.tv_sec, 3)

        // Another file under the same name (or a symlink to one) is refused.
        try writeFile(folder + "/other", "other\n")
        XCTAssertEqual(chmod(folder + "/other", 0o600), 0)
        XCTAssertEqual(rename(folder + "/other", folder + "/waiting"), 0)
        XCTAssertFalse(RestoredMetadata.applyRecordedModeAndTime(entry, name: Array("waiting".utf8), parentFD: folderFD,
                                                                 identity: identity, request: request()))
        XCTAssertEqual(mode("waiting"), 0o600)
        try writeFile(folder + "/victim", "secret\n")
        XCTAssertEqual(chmod(folder + "/victim", 0o600), 0)
        XCTAssertEqual(unlink(folder + "/waiting"), 0)
        XCTAssertEqual(symlink(folder + "/victim", folder + "/waiting"), 0)
        XCTAssertFalse(RestoredMetadata.applyRecordedModeAndTime(entry, name: Array("waiting".utf8), parentFD: folderFD,
                                                                 identity: identity, request: request()))
        XCTAssertEqual(mode("victim"), 0o600, "the mode went through the symlink")
    }
}
