import Foundation
import XCTest

/// The end-to-end workflow every remote destination must carry, run by each remote's test
/// class (S3, rclone) against its real server: a full backup, an incremental one, list,
/// verify, a whole restore compared with the source tree, a partial restore that reads only
/// part of the archive, copies out to a local folder and back in, and prune.
struct RemoteWorkflow {
    // MARK: Configuration

    let test: EndToEndTestCase
    /// `--dest` (s3://…, rclone:…).
    let dest: String
    /// What every run needs (credentials, endpoint, rclone's configuration).
    let environment: [String: String?]

    // MARK: Running

    private func run(_ arguments: [String], file: StaticString, line: UInt) throws -> ProcessRunner.Outcome {
        try test.run(arguments + ["--dest", dest], environment: environment)
    }

    /// The whole workflow; returns the ids of the two backups made.
    @discardableResult
    func runAll(file: StaticString = #filePath, line: UInt = #line) throws -> [String] {
        let source = test.path("src")
        try Fixtures.makeMixedTree(at: source)
        try RawFileSystem.writeFile(RawFileSystem.bytes(source + "/big.bin"),
                                    contents: Fixtures.pseudoRandomBytes(count: 12 << 20, seed: 41))

        let first = try test.json(try run(["backup", source, "--json"], file: file, line: line), file: file, line: line)
        XCTAssertEqual(first["kind"] as? String, "full", file: file, line: line)
        XCTAssertEqual(first["destination"] as? String, dest, file: file, line: line)
        try "changed\n".write(toFile: source + "/readme.txt", atomically: true, encoding: .utf8)
        let second = try test.json(try run(["backup", source, "--json"], file: file, line: line), file: file, line: line)
        XCTAssertEqual(second["kind"] as? String, "incremental", "the second backup is incremental", file: file, line: line)
        let ids = [first["id"] as? String ?? "", second["id"] as? String ?? ""]

        let listed = try test.json(try run(["list", "--json"], file: file, line: line), file: file, line: line)
        XCTAssertEqual((listed["backups"] as? [[String: Any]])?.compactMap { $0["id"] as? String }, ids, file: file, line: line)
        let files = try run(["list", "latest"], file: file, line: line)
        XCTAssertTrue(files.stdoutText.contains("readme.txt"), "\(files)", file: file, line: line)

        let verified = try run(["verify"], file: file, line: line)
        test.assertExit(verified, 0, "both backups verify", file: file, line: line)

        let target = test.path("restored")
        test.assertExit(try run(["restore", "latest", "--target", target], file: file, line: line), 0, file: file, line: line)
        try test.assertTreesEqual(expected: source, actual: test.restored(source, into: target), file: file, line: line)

        // One small file: only the frames that hold it are fetched.
        let part = test.path("part")
        let partial = try test.json(try run(["restore", "latest", source + "/docs/deeper/notes.md", "--target", part, "--json"],
                                            file: file, line: line), file: file, line: line)
        XCTAssertEqual(partial["files"] as? Int, 1, file: file, line: line)
        let read = partial["archive_bytes_read"] as? Int ?? Int.max
        XCTAssertLessThan(read, 4 << 20, "a partial restore reads a fraction of the 12 MiB archive", file: file, line: line)
        XCTAssertEqual(try String(contentsOfFile: test.restored(source, into: part) + "/docs/deeper/notes.md", encoding: .utf8),
                       "# notes\n", file: file, line: line)

        // Copied out to a local folder (chains whole, every archive checked) and verified there.
        let local = test.path("copied-out")
        let copied = try test.json(try test.run(["copy", "--from", dest, "--to", local, "--json"], environment: environment),
                                   file: file, line: line)
        XCTAssertEqual(Set((copied["copied"] as? [String]) ?? []), Set(ids), file: file, line: line)
        test.assertExit(try test.run(["verify", "--dest", local]), 0, "the copy verifies", file: file, line: line)
        // And a local backup copied in: skipped when there, copied when not.
        test.assertExit(try test.run(["backup", source, "--dest", local, "--full", "-q"]), 0, file: file, line: line)
        let into = try test.json(try test.run(["copy", "--from", local, "--to", dest, "--json"], environment: environment),
                                 file: file, line: line)
        XCTAssertEqual((into["copied"] as? [String])?.count, 1, "the new one: \(into)", file: file, line: line)
        XCTAssertEqual(Set((into["skipped"] as? [String]) ?? []), Set(ids), file: file, line: line)

        // A fourth backup on a new chain, then keep the last: the first chain goes.
        test.assertExit(try run(["backup", source, "--full", "-q"], file: file, line: line), 0, file: file, line: line)
        let pruned = try test.json(try run(["prune", "--keep-last", "1", "--json"], file: file, line: line), file: file, line: line)
        XCTAssertEqual(Set((pruned["removed"] as? [String]) ?? []).count, 3, "the first chain and the copied-in backup go",
                       file: file, line: line)
        XCTAssertTrue(Set((pruned["removed"] as? [String]) ?? []).isSuperset(of: ids), file: file, line: line)
        let after = try test.json(try run(["list", "--json"], file: file, line: line), file: file, line: line)
        XCTAssertEqual((after["backups"] as? [Any])?.count, 1, file: file, line: line)
        test.assertExit(try run(["verify"], file: file, line: line), 0, file: file, line: line)
        return ids
    }
}
