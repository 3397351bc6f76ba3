import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// A destination or a restore target that runs out of space: a clear error, nothing
/// half-committed, every earlier backup intact, no partial file under a final name.
final class FaultDiskFullTests: FaultTestCase {
    // MARK: Backup into a full destination

    /// Backs up, into a 4 MiB tmpfs that already holds a backup, one incompressible file of
    /// sizes swept across the free space (finely near the edge, where the archive fits but
    /// the manifest or the lock may not), then with the tmpfs filled to the last block.
    /// Each backup that does not fit exits 1 naming the destination and saying there is no
    /// space, lists nothing new and leaves no temporary; the earlier backup verifies every
    /// time and finally restores equal to its source; one that fits commits and verifies.
    func testBackupIntoFullDestinationLeavesEarlierBackupsIntact() throws {
        let dest = path("full-dest")
        try mountTmpfs(at: dest, size: "4m")
        let small = path("small")
        try Fixtures.makeMixedTree(at: small)
        let earlier = try backup([small], dest: dest)
        let free = freeBytes(dest)
        XCTAssertGreaterThan(free, 3 << 20, "the tmpfs should be nearly empty")

        var sizes = [free * 3, free * 2, free + (256 << 10), free + 4096, free]
        sizes += stride(from: 2048, through: 24 * 1024, by: 2048).map { free - $0 }
        sizes += [free - (64 << 10), free / 2]

        var refused = 0
        var fitted = 0
        var clean = 0
        for (index, size) in sizes.enumerated() {
            let failuresBefore = testRun?.failureCount ?? 0
            let source = path("big-\(index)")
            try FaultFixtures.writeIncompressible(source + "/data.bin", size: size, seed: UInt64(500 + index))
            let context = "attempt #\(index + 1): \(size) bytes into \(free) free"
            let outcome = try run(["backup", source, "--dest", dest, "--json"])
            if outcome.exitCode == 0 {
                // It fitted: a complete backup, which is then removed to free the space again.
                fitted += 1
                let id = try XCTUnwrap(try json(outcome)["id"] as? String)
                try assertVerifies(dest, [id], context)
                XCTAssertEqual(Set(try listedIDs(dest)), [earlier, id], context)
                for name in try DestinationState(dest).names where name.contains(id) && name.hasSuffix(".manifest.jsonl.zst") {
                    XCTAssertEqual(unlink(dest + "/" + name), 0)
                }
                for name in try DestinationState(dest).names where name.contains(id) { XCTAssertEqual(unlink(dest + "/" + name), 0) }
            } else {
                refused += 1
                assertDiskFullError(outcome, naming: dest, context)
                XCTAssertEqual(try listedIDs(dest), [earlier], "\(context): nothing new is listed")
            }
            try assertClean(dest, context)
            try assertVerifies(dest, [earlier], context)
            _ = try tool("rm", ["-rf", source])
            if (testRun?.failureCount ?? 0) == failuresBefore { clean += 1 }
        }

        // Filled to the last block: not even the lock fits.
        let filler = dest + "/filler.bin"
        let fill = try tool("dd", ["if=/dev/zero", "of=" + filler, "bs=4096", "status=none"])
        XCTAssertNotEqual(fill.exitCode, 0, "dd should have hit the end of the tmpfs")
        let tiny = path("tiny")
        try Fixtures.makeTree(at: tiny, files: ["a.txt": "a\n"])
        let full = try run(["backup", tiny, "--dest", dest])
        assertExit(full, 1, "a backup into a completely full destination")
        assertDiskFullError(full, naming: dest, "completely full")
        XCTAssertEqual(unlink(filler), 0)
        try assertClean(dest, "after the completely full attempt")

        // The earlier backup is intact, and the next backup works once there is room.
        try assertRestoresEqual(earlier, dest: dest, source: small, expected: small, target: path("restore"))
        let next = try backup([tiny], dest: dest)
        try assertVerifies(dest, [earlier, next])
        try assertClean(dest)

        print("disk full: \(clean)/\(sizes.count) clean (\(refused) refused with exit 1 naming the destination, "
            + "\(fitted) fitted and committed; tmpfs of 4 MiB with \(free) bytes free), completely full: exit \(full.exitCode)")
        XCTAssertEqual(clean, sizes.count)
        XCTAssertGreaterThanOrEqual(refused, 5, "most sizes must not fit")
        XCTAssertGreaterThanOrEqual(fitted, 2, "the smallest sizes must fit")
    }

    // MARK: Restore into a full target

    /// Restores a backup of about 4 MiB (eight 512 KiB incompressible files and 60 small
    /// ones) into tmpfs targets of 64 KiB to 8 MiB. Each restore that does not fit exits
    /// non-zero with a message saying there is no space and naming the target; whatever it
    /// placed under final names is complete and correct, and no temporary is left. The one
    /// that fits restores the whole tree.
    func testRestoreIntoFullTargetLeavesNoPartialFile() throws {
        let source = path("src")
        for index in 0..<8 {
            try FaultFixtures.writeIncompressible(source + "/big/part-\(index).bin", size: 512 << 10, seed: UInt64(700 + index))
        }
        for index in 0..<60 {
            try Fixtures.makeTree(at: source, files: ["notes/folder-\(index % 6)/note-\(index).txt": "note \(index)\n"])
        }
        let dest = path("dest")
        let id = try backup([source], dest: dest)

        let sizes = ["64k", "256k", "1m", "1536k", "2m", "3m", "3900k", "8m"]
        var stopped = 0
        var fitted = 0
        var clean = 0
        var placed: [String] = []
        for (index, size) in sizes.enumerated() {
            let failuresBefore = testRun?.failureCount ?? 0
            let target = path("target-\(index)")
            try mountTmpfs(at: target, size: size)
            let context = "restore into a \(size) target"
            let outcome = try run(["restore", id, "--dest", dest, "--target", target])
            if outcome.exitCode == 0 {
                fitted += 1
                try assertTreesEqual(expected: source, actual: restored(source, into: target))
            } else {
                stopped += 1
                assertExit(outcome, 1, "\(context): a full target is a failure (exit 1)")
                let message = outcome.stderrText.lowercased()
                XCTAssertTrue(message.contains("no space"), "\(context): the message must say there is no space:\n\(outcome)")
                XCTAssertTrue(outcome.stderrText.contains(target), "\(context): the message must name the target:\n\(outcome)")
            }
            let correct = try assertOnlyCorrectFiles(target: target, restoredRoot: restored(source, into: target), source: source,
                                                     context)
            placed.append("\(size): \(correct)")
            unmountTmpfs(target)
            if (testRun?.failureCount ?? 0) == failuresBefore { clean += 1 }
        }
        print("restore into a full target: \(clean)/\(sizes.count) clean (\(stopped) stopped with exit 1, \(fitted) fitted; "
            + "complete files placed per target size: \(placed.joined(separator: ", ")))")
        XCTAssertEqual(clean, sizes.count)
        XCTAssertGreaterThanOrEqual(stopped, 6)
        XCTAssertEqual(fitted, 1, "only the 8 MiB target holds the backup")
    }

    // MARK: Helpers

    /// Fails unless `outcome` is exit 1 with a message saying there is no space and naming
    /// `dest`.
    private func assertDiskFullError(_ outcome: ProcessRunner.Outcome, naming dest: String, _ context: String,
                                     file: StaticString = #filePath, line: UInt = #line) {
        assertExit(outcome, 1, "\(context): a full destination is a failure (exit 1)", file: file, line: line)
        let text = outcome.combinedText
        XCTAssertTrue(text.lowercased().contains("no space"), "\(context): the message must say there is no space:\n\(outcome)",
                      file: file, line: line)
        XCTAssertTrue(text.contains(dest), "\(context): the message must name the destination:\n\(outcome)", file: file, line: line)
    }
}
