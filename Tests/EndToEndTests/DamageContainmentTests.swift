import Foundation
import XCTest

/// Damage is contained (issue 25 §2.3): a byte flipped in a zstd archive costs the entries
/// that lie in the frame it lands in, not the rest of the archive. Restore goes on at the
/// next intact frame; every entry outside the damaged frames comes back byte for byte, every
/// entry in them is named, and the summary never says that every file matched.
///
/// The test judges by its own reading of the archive: it parses the seek table at the
/// archive's end (the zstd seekable format) and the manifest's `at`/`len` itself, and
/// compares with the bytes it wrote.
final class DamageContainmentTests: EndToEndTestCase {
    // MARK: Types

    /// One frame of the archive: its bytes in the file, and its part of the tar stream.
    private struct Frame {
        let compressed: Range<Int>
        let decompressed: Range<Int64>
    }

    /// An entry of the manifest: its archive path, type, where it lies, and where it is stored.
    private struct Entry {
        let path: String
        let type: String
        let location: Range<Int64>?
        let storedIn: String?
    }

    // MARK: State

    private var source = ""
    private var dest = ""
    /// Each file's bytes by its path under `source`.
    private var contents: [String: [UInt8]] = [:]

    override func setUpWithError() throws {
        try super.setUpWithError()
        source = path("src")
        dest = path("dest")
        // 360 incompressible files of 8-64 KiB in six folders: about 13 MiB, four frames.
        var generator = SeededGenerator(seed: 0x25_0203)
        for index in 0..<360 {
            let size = 8192 + Int(generator.next() % 57_344)
            contents["f\(index % 6)/file-\(index).bin"] = Fixtures.pseudoRandomBytes(count: size, seed: UInt64(index) + 1)
        }
        try write(contents)
    }

    // MARK: Tests

    /// One flipped byte in the second frame: the entries of that frame are named damaged
    /// (exit 4), every other file is restored exactly, and the summary says which.
    func testAFlippedByteCostsOnlyTheEntriesOfItsFrame() throws {
        let id = try backup([source], dest: dest)
        let archive = try onlyArchive(in: dest)
        let frames = try seekTable(of: archive)
        XCTAssertGreaterThanOrEqual(frames.count, 4, "the tree must fill several frames")
        try flipByte(in: archive, at: frames[1].compressed.lowerBound + frames[1].compressed.count / 2)

        let target = path("target")
        let outcome = try run(["restore", id, "--dest", dest, "--target", target, "--json"])
        try assertContained(outcome, damagedFrames: [frames[1]], entries: try manifestEntries(id), target: target)

        // Verify reads around the damage too: the same entries are named, every other file
        // is checked, none is left unchecked; also of the archive file alone.
        let entries = try manifestEntries(id)
        try assertVerifyContained(try run(["verify", id, "--dest", dest, "--json"]), damagedFrames: [frames[1]], entries: entries)
        try assertVerifyContained(try run(["verify", archive, "--json"]), damagedFrames: [frames[1]], entries: entries)

        // The summary a person reads never says every file matched beside damage.
        let again = try run(["restore", id, "--dest", dest, "--target", path("target-2")])
        assertExit(again, 4)
        XCTAssertFalse(again.stdoutText.contains("every file matched"), "\(again)")
        XCTAssertTrue(again.stdoutText.contains("files restored matched their SHA-256"), "\(again)")
    }

    /// Flips in two frames, the first among them: verify, a whole restore and a restore of
    /// two folders lose only what those frames held (of the selection).
    func testFlipsInTwoFramesOfAPartialRestoreCostOnlyThoseFrames() throws {
        let id = try backup([source], dest: dest)
        let archive = try onlyArchive(in: dest)
        let frames = try seekTable(of: archive)
        try flipByte(in: archive, at: frames[0].compressed.lowerBound + frames[0].compressed.count * 3 / 4)
        try flipByte(in: archive, at: frames[2].compressed.lowerBound + frames[2].compressed.count / 3)

        let target = path("target")
        let outcome = try run(["restore", id, source + "/f1", source + "/f4", "--dest", dest, "--target", target, "--json"])
        try assertVerifyContained(try run(["verify", id, "--dest", dest, "--json"]), damagedFrames: [frames[0], frames[2]],
                                  entries: try manifestEntries(id))
        // The first frame damaged stops the reader before its first entry: a whole restore
        // still reads around it.
        let whole = path("whole")
        try assertContained(try run(["restore", id, "--dest", dest, "--target", whole, "--json"]),
                            damagedFrames: [frames[0], frames[2]], entries: try manifestEntries(id), target: whole)
        let selected = try manifestEntries(id).filter { entry in
            ["/src/f1", "/src/f4"].contains { entry.path.hasSuffix($0) || entry.path.contains($0 + "/") }
        }
        try assertContained(outcome, damagedFrames: [frames[0], frames[2]], entries: selected, target: target)
    }

    /// Damage in the full backup's archive, restoring the incremental made on it: the
    /// unchanged files it holds outside the damaged frame come back, and the changed ones
    /// come from the incremental's own archive.
    func testDamageInAnEarlierArchiveOfTheChainIsContained() throws {
        let full = try backup([source], dest: dest)
        var changed: [String: [UInt8]] = [:]
        for index in stride(from: 0, to: 360, by: 9) {
            changed["f\(index % 6)/file-\(index).bin"] = Fixtures.pseudoRandomBytes(count: 4096, seed: UInt64(index) + 9_000)
        }
        try write(changed)
        contents.merge(changed) { $1 }
        let incremental = try backup([source], dest: dest)

        let fullArchive = try names(in: dest).first { $0.contains(full) && $0.hasSuffix(".tar.zst") }.map { dest + "/" + $0 }
        let archive = try XCTUnwrap(fullArchive)
        let frames = try seekTable(of: archive)
        try flipByte(in: archive, at: frames[2].compressed.lowerBound + frames[2].compressed.count / 2)

        let target = path("target")
        let outcome = try run(["restore", incremental, "--dest", dest, "--target", target, "--json"])
        // What the incremental takes from the full's frame 2 is lost (its `at`/`len` are the
        // full archive's); its own archive is intact.
        let entries = try manifestEntries(incremental)
        XCTAssertTrue(entries.contains { $0.storedIn == full }, "the incremental takes unchanged files from the full")
        let lost = entries.filter { $0.storedIn == full && ($0.location.map { touches($0, [frames[2]]) } ?? true) }
        try assertContained(outcome, lostPaths: Set(lost.map(\.path)), entries: entries, target: target)
    }

    // MARK: Checks

    /// The restore's exit code, its `damaged` list and the target, against the entries of
    /// `entries` that lie in `damagedFrames`.
    private func assertContained(_ outcome: ProcessRunner.Outcome, damagedFrames: [Frame], entries: [Entry], target: String,
                                 file: StaticString = #filePath, line: UInt = #line) throws {
        let lost = Set(entries.filter { $0.location.map { touches($0, damagedFrames) } ?? true }.map(\.path))
        try assertContained(outcome, lostPaths: lost, entries: entries, target: target, file: file, line: line)
    }

    private func assertContained(_ outcome: ProcessRunner.Outcome, lostPaths lost: Set<String>, entries: [Entry], target: String,
                                 file: StaticString = #filePath, line: UInt = #line) throws {
        assertExit(outcome, 4, "damage is exit 4", file: file, line: line)
        let report = try json(outcome, file: file, line: line)
        let damaged = Set(((report["damaged"] as? [[String: Any]]) ?? []).compactMap { $0["path"] as? String })
        XCTAssertFalse(lost.isEmpty, "the damage must cost something", file: file, line: line)
        XCTAssertEqual(damaged.subtracting(lost).sorted(), [], "named damaged but outside the damaged frames", file: file, line: line)
        XCTAssertEqual(lost.subtracting(damaged).sorted(), [], "lost but not named", file: file, line: line)

        var restoredFiles = 0
        let prefix = String(source.dropFirst()) + "/"
        for entry in entries where entry.type == "file" {
            let relative = String(entry.path.dropFirst(prefix.count))
            let onDisk = FileManager.default.contents(atPath: restored(source, into: target) + "/" + relative).map(Array.init)
            if lost.contains(entry.path) {
                XCTAssertNil(onDisk, "\(relative) was lost, yet something is in its place", file: file, line: line)
            } else {
                XCTAssertEqual(onDisk, contents[relative], "\(relative) lies in intact frames: it must come back exactly",
                               file: file, line: line)
                restoredFiles += 1
            }
        }
        XCTAssertEqual(report["files"] as? Int, restoredFiles, "the count of files restored", file: file, line: line)
        print("DamageContainmentTests: \(restoredFiles) files restored, \(lost.count) entries lost of \(entries.count)")
    }

    /// Verify's report of the damaged backup: exit 4, the entries in `damagedFrames` named
    /// (and nothing else), every other file checked, nothing left unchecked.
    private func assertVerifyContained(_ outcome: ProcessRunner.Outcome, damagedFrames: [Frame], entries: [Entry],
                                       file: StaticString = #filePath, line: UInt = #line) throws {
        assertExit(outcome, 4, "verify of a damaged backup", file: file, line: line)
        let report = try XCTUnwrap((try json(outcome, file: file, line: line)["backups"] as? [[String: Any]])?.first,
                                   file: file, line: line)
        let lost = Set(entries.filter { $0.location.map { touches($0, damagedFrames) } ?? true }.map(\.path))
        let named = Set(((report["damaged_files"] as? [[String: Any]]) ?? []).compactMap { $0["path"] as? String })
        XCTAssertEqual(named.subtracting(lost).sorted(), [], "verify named damaged outside the damaged frames", file: file, line: line)
        XCTAssertEqual(lost.subtracting(named).sorted(), [], "verify did not name these lost entries", file: file, line: line)
        XCTAssertEqual(report["files_checked"] as? Int, entries.filter { $0.type == "file" && !lost.contains($0.path) }.count,
                       "every file outside the damage is checked", file: file, line: line)
        XCTAssertEqual(report["entries_unchecked"] as? Int, 0, "\(outcome)", file: file, line: line)
        XCTAssertEqual(report["intact"] as? Bool, false, file: file, line: line)
    }

    /// Whether `range` of the tar stream overlaps any of `frames`.
    private func touches(_ range: Range<Int64>, _ frames: [Frame]) -> Bool {
        frames.contains { $0.decompressed.overlaps(range) || (range.isEmpty && $0.decompressed.contains(range.lowerBound)) }
    }

    // MARK: Reading the backup (independently of Keepsake)

    /// The frames the seek table at the end of `archive` lists (zstd seekable format:
    /// entries of compressed and decompressed size, then frame count, descriptor, magic).
    private func seekTable(of archive: String, file: StaticString = #filePath, line: UInt = #line) throws -> [Frame] {
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: archive)))
        func word(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24 }
        XCTAssertEqual(word(bytes.count - 4), 0x8F92_EAB1, "no seek table at the end of \(archive)", file: file, line: line)
        XCTAssertEqual(bytes[bytes.count - 5], 0, "a seek table without per-frame checksums", file: file, line: line)
        let count = word(bytes.count - 9)
        let start = bytes.count - 9 - 8 * count
        var frames: [Frame] = []
        var compressed = 0
        var decompressed: Int64 = 0
        for index in 0..<count {
            let (size, plain) = (word(start + 8 * index), Int64(word(start + 8 * index + 4)))
            frames.append(Frame(compressed: compressed..<(compressed + size), decompressed: decompressed..<(decompressed + plain)))
            compressed += size
            decompressed += plain
        }
        XCTAssertEqual(compressed, start - 8, "the frames end where the table's skippable frame starts", file: file, line: line)
        return frames
    }

    /// The entry lines of backup `id`'s manifest, read with `zstd -dc`.
    private func manifestEntries(_ id: String) throws -> [Entry] {
        let lines = try sidecarText(try sidecarPath(in: dest, id: id)).split(separator: "\n").dropFirst()
        return try lines.map { line in
            let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let at = (object["at"] as? NSNumber)?.int64Value
            let length = (object["len"] as? NSNumber)?.int64Value
            return Entry(path: try XCTUnwrap(object["path"] as? String), type: try XCTUnwrap(object["type"] as? String),
                         location: at.flatMap { at in length.map { at..<(at + $0) } }, storedIn: object["in"] as? String)
        }
    }

    // MARK: Making and damaging

    private func write(_ files: [String: [UInt8]]) throws {
        for (relative, bytes) in files {
            let file = source + "/" + relative
            try FileManager.default.createDirectory(atPath: (file as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: file))
        }
    }

    private func flipByte(in archive: String, at offset: Int) throws {
        var bytes = try Data(contentsOf: URL(fileURLWithPath: archive))
        bytes[offset] ^= 0x20
        try bytes.write(to: URL(fileURLWithPath: archive))
    }
}
