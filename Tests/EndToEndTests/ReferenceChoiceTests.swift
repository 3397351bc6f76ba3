import Foundation
import XCTest

/// Whether BACKUP means a backup in the destination or an archive file: a backup word
/// (`latest`, an id, an id prefix) or an explicit `--dest` means the destination, a path
/// (`./latest`, `x.tar.zst`) means the file, and a word that is both says so on stderr.
final class ReferenceChoiceTests: EndToEndTestCase {
    // MARK: Fixture

    /// Two backups of two different sources in `dest`, and a work folder `cwd` holding a
    /// copy of the FIRST backup's archive under `fileName`, so picking the wrong one shows.
    private struct Setup {
        let dest: String
        let cwd: String
        let first: (id: String, source: String)
        let second: (id: String, source: String)
    }

    private func makeSetup(fileNamed fileName: (_ first: String, _ second: String) -> String) throws -> (Setup, String) {
        let dest = path("dest")
        var made: [(id: String, source: String)] = []
        for name in ["first", "second"] {
            let source = path(name)
            try RawFileSystem.makeDirectory(RawFileSystem.bytes(source))
            try RawFileSystem.writeFile(RawFileSystem.bytes(source + "/" + name + ".txt"), contents: Array("\(name)\n".utf8))
            made.append((try backup([source], dest: dest), source))
        }
        let cwd = path("cwd")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(cwd))
        let name = fileName(made[0].id, made[1].id)
        let archive = try XCTUnwrap(try names(in: dest).first { $0.contains(made[0].id) && $0.hasSuffix(".tar.zst") })
        try FileManager.default.copyItem(atPath: dest + "/" + archive, toPath: cwd + "/" + name)
        return (Setup(dest: dest, cwd: cwd, first: made[0], second: made[1]), name)
    }

    /// The sources whose files a restore into `target` brought back.
    private func restoredSources(_ setup: Setup, in target: String) -> [String] {
        [setup.first, setup.second].filter { RawFileSystem.exists(restored($0.source, into: target)) }.map(\.source)
    }

    // MARK: Restore

    func testRestoreLatestWithDestMeansTheBackupEvenWithAFileNamedLatest() throws {
        let (setup, _) = try makeSetup { _, _ in "latest" }
        let target = path("target")
        let outcome = try run(["restore", "latest", "--dest", setup.dest, "--target", target], currentDirectory: setup.cwd)
        assertExit(outcome, 0)
        XCTAssertEqual(restoredSources(setup, in: target), [setup.second.source], "the newest backup, not the file:\n\(outcome)")
        XCTAssertTrue(outcome.stderrText.contains("./latest"), "a hint says how to reach the file:\n\(outcome)")

        // Without --dest too: `latest` is a backup word (KEEPSAKE_DEST names the destination).
        let viaEnvironment = path("target-env")
        let quiet = try run(["restore", "latest", "--target", viaEnvironment], environment: ["KEEPSAKE_DEST": setup.dest],
                            currentDirectory: setup.cwd)
        assertExit(quiet, 0)
        XCTAssertEqual(restoredSources(setup, in: viaEnvironment), [setup.second.source])
    }

    func testDotSlashLatestMeansTheFile() throws {
        let (setup, _) = try makeSetup { _, _ in "latest" }
        let target = path("target")
        let outcome = try run(["restore", "./latest", "--dest", setup.dest, "--target", target], currentDirectory: setup.cwd)
        assertExit(outcome, 0)
        XCTAssertEqual(restoredSources(setup, in: target), [setup.first.source], "the file's backup:\n\(outcome)")
        XCTAssertFalse(outcome.stderrText.contains("hint"), "a path is not ambiguous:\n\(outcome)")
    }

    func testIdPrefixThatIsAlsoAFileMeansTheBackup() throws {
        // The file holds the first backup's archive, but is named after the second's id.
        let (setup, name) = try makeSetup { first, second in
            let shared = zip(first, second).prefix { $0 == $1 }.count
            return String(second.prefix(shared + 1))
        }
        let target = path("target")
        let outcome = try run(["restore", name, "--target", target], environment: ["KEEPSAKE_DEST": setup.dest],
                              currentDirectory: setup.cwd)
        assertExit(outcome, 0)
        XCTAssertEqual(restoredSources(setup, in: target), [setup.second.source], "the backup the prefix names:\n\(outcome)")
        XCTAssertTrue(outcome.stderrText.contains("./" + name), "a hint says how to reach the file:\n\(outcome)")

        // list takes the same rule.
        let listed = try run(["list", name, "--dest", setup.dest], currentDirectory: setup.cwd)
        assertExit(listed, 0)
        XCTAssertTrue(listed.stdoutText.contains("second.txt") && !listed.stdoutText.contains("first.txt"), "\(listed)")
        let listedFile = try run(["list", "./" + name], currentDirectory: setup.cwd)
        assertExit(listedFile, 0)
        XCTAssertTrue(listedFile.stdoutText.contains("first.txt") && !listedFile.stdoutText.contains("second.txt"), "\(listedFile)")
    }

    func testListAndVerifyLatestIgnoreAFileNamedLatest() throws {
        let (setup, _) = try makeSetup { _, _ in "latest" }
        // A damaged file: if verify read it, it would report damage (exit 4).
        try RawFileSystem.writeFile(RawFileSystem.bytes(setup.cwd + "/latest"), contents: Array("not an archive".utf8))
        let verified = try run(["verify", "latest", "--dest", setup.dest], currentDirectory: setup.cwd)
        assertExit(verified, 0)
        XCTAssertTrue(verified.stdoutText.contains(setup.second.id), "\(verified)")
        XCTAssertTrue(verified.stderrText.contains("./latest"), "\(verified)")

        let listed = try run(["list", "latest", "--dest", setup.dest], currentDirectory: setup.cwd)
        assertExit(listed, 0)
        XCTAssertTrue(listed.stdoutText.contains("second.txt"), "\(listed)")

        let compared = try run(["diff", setup.first.id, "latest", "--dest", setup.dest], currentDirectory: setup.cwd)
        assertExit(compared, 0)
        XCTAssertTrue(compared.stdoutText.contains("second.txt"), "\(compared)")
    }

    func testAPlainWordThatIsAFileMeansTheFileUnlessDestIsGiven() throws {
        let (setup, name) = try makeSetup { _, _ in "monday" }
        let target = path("target")
        let outcome = try run(["restore", name, "--target", target], environment: ["KEEPSAKE_DEST": setup.dest],
                              currentDirectory: setup.cwd)
        assertExit(outcome, 0)
        XCTAssertEqual(restoredSources(setup, in: target), [setup.first.source], "\(outcome)")

        // An explicit --dest asks for a backup: the error names the word and how to reach the file.
        let explicit = try run(["restore", name, "--dest", setup.dest, "--target", path("target-2")], currentDirectory: setup.cwd)
        assertExit(explicit, 1)
        XCTAssertTrue(explicit.stderrText.contains("'monday'") && explicit.stderrText.contains("./monday"), "\(explicit)")
    }
}
