import Foundation
import XCTest

/// An archive copied out of its destination restores and lists on its own, checked
/// against the manifest inside it (or the copy beside it).
final class LoneArchiveTests: EndToEndTestCase {
    // MARK: Tests

    func testLoneArchiveRestoresWithoutDestinationVerifiedByInnerManifest() throws {
        let (source, id, archive) = try makeBackup()
        let lone = path("elsewhere")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(lone))
        let copy = lone + "/" + (archive as NSString).lastPathComponent
        try FileManager.default.copyItem(atPath: archive, toPath: copy)
        XCTAssertEqual(try names(in: lone).count, 1, "only the archive, no manifest beside it")

        let target = path("target")
        let restore = try run(["restore", copy, "--target", target, "--json"], environment: noDestination)
        assertExit(restore, 0)
        let object = try json(restore)
        XCTAssertEqual(object["backup_id"] as? String, id, "the id comes from the manifest inside the archive")
        XCTAssertEqual(object["verified"] as? Bool, true, "files must be verified against the inner manifest:\n\(restore)")
        XCTAssertEqual(object["plain_tarball"] as? Bool, false)
        XCTAssertEqual(object["unverified_files"] as? Int, 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: target))
        XCTAssertFalse(RawFileSystem.exists(path("no-destination")), "a file restore must not create a destination")
        XCTAssertFalse(RawFileSystem.exists(path("no-xdg")), "a file restore must not touch the default destination")

        let text = try run(["restore", copy, "--target", path("target-text")], environment: noDestination)
        assertExit(text, 0)
        XCTAssertTrue(text.stdoutText.contains("SHA-256"), "the summary should say every file was checked:\n\(text)")
    }

    func testLoneArchiveWithSidecarManifest() throws {
        let (source, id, archive) = try makeBackup()
        let lone = path("usb")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(lone))
        let sidecar = archive.replacingOccurrences(of: ".tar.zst", with: ".manifest.jsonl.zst")
        XCTAssertTrue(RawFileSystem.exists(sidecar), "no manifest beside the archive at \(sidecar)")
        for file in [archive, sidecar] {
            try FileManager.default.copyItem(atPath: file, toPath: lone + "/" + (file as NSString).lastPathComponent)
        }
        let copy = lone + "/" + (archive as NSString).lastPathComponent
        let target = path("target")
        let restore = try run(["restore", copy, "--target", target, "--json"], environment: noDestination)
        assertExit(restore, 0)
        let object = try json(restore)
        XCTAssertEqual(object["backup_id"] as? String, id)
        XCTAssertEqual(object["verified"] as? Bool, true)
        try assertTreesEqual(expected: source, actual: restored(source, into: target))
    }

    func testListAndVerifyLoneArchive() throws {
        let (source, _, archive) = try makeBackup()
        let lone = path("elsewhere")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(lone))
        let copy = lone + "/copy.tar.zst"
        try FileManager.default.copyItem(atPath: archive, toPath: copy)

        let listed = Set(try listedPaths(copy, dest: nil).map(RawFileSystem.display))
        let prefix = String(source.dropFirst())
        for relative in ["", "/readme.txt", "/docs/report final.txt", "/docs/사진_백업.txt", "/empty", "/data-copy.bin"] {
            XCTAssertTrue(listed.contains(prefix + relative), "list FILE misses \(prefix + relative): \(listed.sorted())")
        }
        XCTAssertFalse(listed.contains { $0.hasPrefix(".keepsake") }, "Keepsake's own entries are not user files")

        let verify = try run(["verify", copy], environment: noDestination)
        assertExit(verify, 0)
    }

    // MARK: Helpers

    /// Environment with a destination that does not exist.
    private var noDestination: [String: String?] {
        ["KEEPSAKE_DEST": path("no-destination"), "XDG_DATA_HOME": path("no-xdg")]
    }

    /// A mixed tree backed up with zstd: (source, id, archive path).
    private func makeBackup() throws -> (String, String, String) {
        let source = path("src")
        try Fixtures.makeMixedTree(at: source)
        let dest = path("dest")
        let id = try backup([source], dest: dest)
        return (source, id, try onlyArchive(in: dest))
    }
}
