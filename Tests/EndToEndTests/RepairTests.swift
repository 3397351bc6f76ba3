import Foundation
import XCTest

/// Lost or damaged manifests beside the archives are rebuilt from the archives' own copies,
/// by `keepsake repair` or automatically by the next backup.
final class RepairTests: EndToEndTestCase {
    // MARK: Setup

    private func twoBackups() throws -> (dest: String, source: String, first: String, second: String) {
        let source = path("src")
        let dest = path("dest")
        try Fixtures.makeTree(at: source, files: ["a.txt": "alpha\n", "b/c.txt": "gamma\n"])
        let first = try backup([source], dest: dest)
        try Fixtures.makeTree(at: source, files: ["a.txt": "alpha, changed\n"])
        let second = try backup([source], dest: dest)
        return (dest, source, first, second)
    }

    private func manifestPath(_ dest: String, _ id: String) throws -> String {
        try sidecarPath(in: dest, id: id)
    }

    // MARK: Tests

    func testRepairRebuildsALostManifestByteForByte() throws {
        let setup = try twoBackups()
        let manifest = try manifestPath(setup.dest, setup.first)
        let original = try Data(contentsOf: URL(fileURLWithPath: manifest))
        try FileManager.default.removeItem(atPath: manifest)
        XCTAssertFalse(try run(["list", "--dest", setup.dest]).stdoutText.contains(setup.first), "no manifest, not listed")

        let repair = try run(["repair", "--dest", setup.dest])
        assertExit(repair, 0)
        XCTAssertTrue(repair.stdoutText.contains("REBUILT") && repair.stdoutText.contains(setup.first), repair.stdoutText)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: manifest)), original, "the rebuilt manifest is the original")
        assertExit(try run(["verify", "--dest", setup.dest]), 0)
        let again = try run(["repair", "--dest", setup.dest])
        assertExit(again, 0)
        XCTAssertTrue(again.stdoutText.contains("nothing to repair"), again.stdoutText)
    }

    /// A backup named that is intact is nothing to do (exit 0); one that is not there is an
    /// error that names it (it used to say "nothing to repair", exit 0).
    func testAnIntactBackupIsNothingToDoAndAnUnknownOneIsAnError() throws {
        let setup = try twoBackups()
        let intact = try run(["repair", setup.first, "--dest", setup.dest])
        assertExit(intact, 0)
        XCTAssertTrue(intact.stdoutText.contains("nothing to repair"), intact.stdoutText)
        let unknown = try run(["repair", "20990101T000000Z-deadbeef", "--dest", setup.dest])
        assertExit(unknown, 1)
        XCTAssertTrue(unknown.stderrText.contains("No backup '20990101T000000Z-deadbeef' in \(setup.dest)"), "\(unknown)")
        XCTAssertFalse(unknown.stdoutText.contains("nothing to repair"), "\(unknown)")
    }

    func testRepairRebuildsADamagedManifestAndLeavesGoodOnesAlone() throws {
        let setup = try twoBackups()
        let damaged = try manifestPath(setup.dest, setup.second)
        let good = try manifestPath(setup.dest, setup.first)
        let goodBefore = try Data(contentsOf: URL(fileURLWithPath: good))
        let original = try Data(contentsOf: URL(fileURLWithPath: damaged))
        try Data("{\"not\": \"a manifest\"}\n".utf8).write(to: URL(fileURLWithPath: damaged))
        let listed = try run(["list", "--dest", setup.dest])
        XCTAssertTrue(listed.stdoutText.contains("unreadable manifest"), listed.stdoutText)
        let verify = try run(["verify", "--dest", setup.dest])
        assertExit(verify, 4)
        XCTAssertTrue(verify.combinedText.contains("keepsake repair"), "verify points at repair:\n\(verify)")

        assertExit(try run(["repair", setup.second, "--dest", setup.dest]), 0)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: damaged)), original)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: good)), goodBefore, "a good manifest is never rewritten")
        assertExit(try run(["verify", "--dest", setup.dest]), 0)
    }

    func testTheNextBackupRebuildsALostManifestInsteadOfDeletingTheArchive() throws {
        let setup = try twoBackups()
        let manifest = try manifestPath(setup.dest, setup.first)
        try FileManager.default.removeItem(atPath: manifest)
        let next = try run(["backup", setup.source, "--dest", setup.dest])
        assertExit(next, 0)
        XCTAssertTrue(next.stderrText.contains("lost its manifest"), next.stderrText)
        XCTAssertTrue(FileManager.default.fileExists(atPath: manifest))
        let target = path("target")
        assertExit(try run(["restore", setup.first, "--dest", setup.dest, "--target", target]), 0)
        XCTAssertEqual(try String(contentsOfFile: restored(setup.source, into: target) + "/a.txt", encoding: .utf8), "alpha\n")
    }

    func testAnArchiveWhoseOwnManifestIsGoneCannotBeRepairedAndSaysSo() throws {
        let setup = try twoBackups()
        let manifest = try manifestPath(setup.dest, setup.first)
        try FileManager.default.removeItem(atPath: manifest)
        let archive = try XCTUnwrap(try names(in: setup.dest).first { $0.contains(setup.first) && $0.hasSuffix(".tar.zst") })
        try Fixtures.truncate(setup.dest + "/" + archive, toFraction: 0.5)
        let repair = try run(["repair", "--dest", setup.dest])
        assertExit(repair, 4)
        XCTAssertTrue(repair.stdoutText.contains("UNRECOVERABLE") && repair.stdoutText.contains(setup.first), repair.stdoutText)
        XCTAssertFalse(FileManager.default.fileExists(atPath: manifest), "nothing is invented")
    }
}
