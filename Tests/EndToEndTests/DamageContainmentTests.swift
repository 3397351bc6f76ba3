import Foundation
import XCTest

/// Damage is contained (issue 25 §2.3): a byte flipped in a zstd archive costs only the
/// entries it spoils. Restore and verify go on at the next intact frame, and take out of the
/// damaged frame whatever still decodes and checks out; every other file comes back byte for
/// byte, every entry not restored is named, and the summary never says every file matched.
///
/// The test judges by its own reading of the archive: it parses the seek table at the
/// archive's end (the zstd seekable format) and the manifest's `at`/`len` itself, decodes
/// the damaged frame alone with the `zstd` program (`--no-check`: what any decoder gets out
/// of it), and
/// compares with the bytes it wrote.
final class DamageContainmentTests: EndToEndTestCase {
    // MARK: Types

    /// One frame of the archive: its bytes in the file, and its part of the tar stream.
    private struct Frame {
        let index: Int
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

    /// What the reference decoder makes of an archive with damaged frames: the pristine tar
    /// stream, and for each damaged frame the bytes `zstd -d --no-check` gives of it alone.
    private struct Reference {
        let pristine: [UInt8]
        let salvaged: [Int: [UInt8]]
        let frames: [Frame]

        /// Whether every byte of `range` comes out of the damaged archive as it went in.
        func intact(_ range: Range<Int64>) -> Bool {
            for frame in frames where frame.decompressed.overlaps(range) || (range.isEmpty && frame.decompressed.contains(range.lowerBound)) {
                guard let decoded = salvaged[frame.index] else { continue }
                let part = range.clamped(to: frame.decompressed)
                let start = Int(part.lowerBound - frame.decompressed.lowerBound)
                let end = Int(part.upperBound - frame.decompressed.lowerBound)
                guard decoded.count >= end,
                      decoded[start..<end].elementsEqual(pristine[Int(part.lowerBound)..<Int(part.upperBound)]) else { return false }
            }
            return true
        }
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

    /// One flipped byte in the middle of the second frame: only the entries it spoils are
    /// named damaged (exit 4), every other file is restored exactly, and the summary says so.
    func testAFlippedByteCostsOnlyTheEntriesItSpoils() throws {
        let id = try backup([source], dest: dest)
        let archive = try onlyArchive(in: dest)
        let frames = try seekTable(of: archive)
        XCTAssertGreaterThanOrEqual(frames.count, 4, "the tree must fill several frames")
        let reference = try damage(archive, frames: frames, at: [frames[1].compressed.lowerBound + frames[1].compressed.count / 2])
        let entries = try manifestEntries(id)
        let spoiled = entries.filter { !reference.intact($0.location ?? 0..<0) }
        let inFrame = entries.filter { $0.location.map { $0.overlaps(frames[1].decompressed) } ?? false }
        XCTAssertLessThan(spoiled.count, inFrame.count, "a byte in a stored block spoils less than its frame")

        let target = path("target")
        let outcome = try run(["restore", id, "--dest", dest, "--target", target, "--json"])
        try assertContained(outcome, reference: reference, entries: entries, target: target)

        // Verify reads around the damage too: only spoiled entries are named, every other file
        // is checked, none is left unchecked; also of the archive file alone.
        try assertVerifyContained(try run(["verify", id, "--dest", dest, "--json"]), reference: reference, entries: entries)
        try assertVerifyContained(try run(["verify", archive, "--json"]), reference: reference, entries: entries)

        // The summary a person reads never says every file matched beside damage.
        let again = try run(["restore", id, "--dest", dest, "--target", path("target-2")])
        assertExit(again, 4)
        XCTAssertFalse(again.stdoutText.contains("every file matched"), "\(again)")
        XCTAssertTrue(again.stdoutText.contains("files restored matched their SHA-256"), "\(again)")
    }

    /// A frame whose header is damaged gives nothing: its entries are lost, the rest is not.
    /// With the first frame's header damaged and a byte flipped in the third, verify, a whole
    /// restore and a restore of two folders lose only those (of the selection).
    func testUndecodableFramesCostTheirEntriesOnly() throws {
        let id = try backup([source], dest: dest)
        let archive = try onlyArchive(in: dest)
        let frames = try seekTable(of: archive)
        // Byte 0 of a frame is its magic number: no decoder reads on.
        let reference = try damage(archive, frames: frames, at: [frames[0].compressed.lowerBound,
                                                                 frames[2].compressed.lowerBound + frames[2].compressed.count / 3])
        let entries = try manifestEntries(id)
        XCTAssertTrue(entries.filter { $0.location.map { $0.overlaps(frames[0].decompressed) } ?? false }
                          .allSatisfy { !reference.intact($0.location ?? 0..<0) }, "nothing of frame 0 decodes")
        try assertVerifyContained(try run(["verify", id, "--dest", dest, "--json"]), reference: reference, entries: entries)

        let whole = path("whole")
        try assertContained(try run(["restore", id, "--dest", dest, "--target", whole, "--json"]),
                            reference: reference, entries: entries, target: whole)

        let selected = entries.filter { entry in
            ["/src/f1", "/src/f4"].contains { entry.path.hasSuffix($0) || entry.path.contains($0 + "/") }
        }
        let target = path("target")
        let outcome = try run(["restore", id, source + "/f1", source + "/f4", "--dest", dest, "--target", target, "--json"])
        try assertContained(outcome, reference: reference, entries: selected, target: target)
    }

    /// Damage in the full backup's archive, restoring the incremental made on it: the
    /// unchanged files it takes from there come back unless the damage spoils them, and the
    /// changed ones come from the incremental's own archive.
    func testDamageInAnEarlierArchiveOfTheChainIsContained() throws {
        let full = try backup([source], dest: dest)
        var changed: [String: [UInt8]] = [:]
        for index in stride(from: 0, to: 360, by: 9) {
            changed["f\(index % 6)/file-\(index).bin"] = Fixtures.pseudoRandomBytes(count: 4096, seed: UInt64(index) + 9_000)
        }
        try write(changed)
        contents.merge(changed) { $1 }
        let incremental = try backup([source], dest: dest)

        let archive = try XCTUnwrap(try names(in: dest).first { $0.contains(full) && $0.hasSuffix(".tar.zst") }.map { dest + "/" + $0 })
        let frames = try seekTable(of: archive)
        // The second frame's header and a byte in the third.
        let reference = try damage(archive, frames: frames, at: [frames[1].compressed.lowerBound,
                                                                 frames[2].compressed.lowerBound + frames[2].compressed.count / 2])
        let entries = try manifestEntries(incremental)
        XCTAssertTrue(entries.contains { $0.storedIn == full }, "the incremental takes unchanged files from the full")

        let target = path("target")
        let outcome = try run(["restore", incremental, "--dest", dest, "--target", target, "--json"])
        // Its own archive is intact: only what it takes from the full can be spoiled.
        try assertContained(outcome, reference: reference, entries: entries, target: target,
                            spoilable: { $0.storedIn == full })
    }

    /// A lone archive file, without the manifest beside it, damaged long before its end:
    /// restore finds the manifest at the archive's end (through the seek table), checks what
    /// it had placed against it, and reads on around the damage as with the manifest beside.
    func testALoneArchiveFindsItsManifestAtItsEnd() throws {
        let id = try backup([source], dest: dest)
        let entries = try manifestEntries(id)
        let stored = try onlyArchive(in: dest)
        let archive = path("alone/" + URL(fileURLWithPath: stored).lastPathComponent)
        try FileManager.default.createDirectory(atPath: path("alone"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: stored, toPath: archive)
        let frames = try seekTable(of: archive)
        let reference = try damage(archive, frames: frames, at: [frames[1].compressed.lowerBound + frames[1].compressed.count / 2,
                                                                 frames[2].compressed.lowerBound])

        let target = path("target")
        let outcome = try run(["restore", archive, "--target", target, "--json"], environment: ["KEEPSAKE_DEST": path("none")])
        try assertContained(outcome, reference: reference, entries: entries, target: target)
        let report = try json(outcome)
        XCTAssertEqual(report["unverified_files"] as? Int, 0, "the manifest found at the end checked them: \(outcome)")
        XCTAssertEqual(report["verified"] as? Bool, true, "\(outcome)")
        XCTAssertEqual(try names(in: restored(source, into: target) + "/f0").filter { !$0.hasSuffix(".bin") }, [],
                       "nothing is left under a temporary name")

        // Verify of the archive alone does the same.
        try assertVerifyContained(try run(["verify", archive, "--json"], environment: ["KEEPSAKE_DEST": path("none")]),
                                  reference: reference, entries: entries)
    }

    /// The manifest beside the archive damaged (its entry lines; the summary line, in a
    /// frame of its own, intact): restore goes on with the copy inside the archive, brings
    /// back every file checked against it, and still says the backup is damaged (exit 4).
    func testADamagedManifestBesideTheArchiveCostsNoFile() throws {
        let id = try backup([source], dest: dest)
        let sidecar = try sidecarPath(in: dest, id: id)
        let size = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: sidecar)[.size] as? Int)
        try Fixtures.flipByte(in: sidecar, at: size - 64)
        XCTAssertNotEqual(try tool("zstd", ["-t", sidecar]).exitCode, 0, "the manifest must be damaged")

        let target = path("target")
        let outcome = try run(["restore", id, "--dest", dest, "--target", target, "--json"])
        assertExit(outcome, 4)
        let report = try json(outcome)
        XCTAssertEqual((report["damaged"] as? [Any])?.count, 0, "\(outcome)")
        XCTAssertEqual(report["files"] as? Int, contents.count, "\(outcome)")
        XCTAssertEqual(report["unverified_files"] as? Int, 0, "checked against the manifest inside: \(outcome)")
        XCTAssertTrue((report["archive_problem"] as? String)?.contains("run 'keepsake repair'") ?? false, "\(outcome)")
        for (relative, bytes) in contents {
            XCTAssertEqual(FileManager.default.contents(atPath: restored(source, into: target) + "/" + relative).map(Array.init), bytes,
                           relative)
        }
        let text = try run(["restore", id, "--dest", dest, "--target", path("target-2")])
        XCTAssertTrue(text.stdoutText.contains("nothing lost, but the backup is damaged"), "\(text)")
    }

    /// A file inside the archive holding a decoy manifest entry (a tar stream of
    /// `.keepsake/manifest.jsonl`, the manifest of another backup, and the end-of-archive
    /// blocks) is never taken for the archive's own when its real manifest is damaged: the
    /// decoy cannot know the id the backup drew after reading it.
    func testADecoyManifestInsideAFileIsNotTakenForTheArchives() throws {
        let earlier = try backup([source], dest: dest)
        let decoyText = try sidecarText(try sidecarPath(in: dest, id: earlier))
        let decoy = path("decoy.jsonl")
        try Data(decoyText.utf8).write(to: URL(fileURLWithPath: decoy))
        try FileManager.default.createDirectory(atPath: source + "/a0", withIntermediateDirectories: true)
        let script = """
            import sys, tarfile
            with tarfile.open(sys.argv[2], "w", format=tarfile.USTAR_FORMAT) as out:
                out.add(sys.argv[1], arcname=".keepsake/manifest.jsonl")
            """
        try toolSucceeds("python3", ["-c", script, decoy, source + "/a0/decoy.tar"])
        // A full backup: the decoy in its first frame, the real manifest in its last.
        let id = try backup([source], dest: dest, options: ["--full"])
        XCTAssertNotEqual(id, earlier)
        let stored = try XCTUnwrap(try names(in: dest).first { $0.contains(id) && $0.hasSuffix(".tar.zst") })
        let archive = path("alone/" + stored)
        try FileManager.default.createDirectory(atPath: path("alone"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: dest + "/" + stored, toPath: archive)
        let frames = try seekTable(of: archive)
        XCTAssertGreaterThanOrEqual(frames.count, 4)
        // The last frame, which holds the real manifest, undecodable.
        _ = try damage(archive, frames: frames, at: [frames[frames.count - 1].compressed.lowerBound])

        let outcome = try run(["restore", archive, "--target", path("target"), "--json"], environment: ["KEEPSAKE_DEST": path("none")])
        assertExit(outcome, 4)
        let report = try json(outcome)
        XCTAssertNotEqual(report["backup_id"] as? String, earlier, "the decoy was taken for the manifest: \(outcome)")
        XCTAssertEqual(report["verified"] as? Bool, false, "nothing vouches for the files: \(outcome)")
    }

    /// The manifest is not trusted either: entries of the damaged frame whose `at`/`len` lie
    /// (a terabyte long, past the end of the stream) cost themselves, never a crash or a
    /// terabyte of memory, and the rest is restored as before.
    func testLyingOffsetsInTheManifestCostOnlyTheirEntries() throws {
        let id = try backup([source], dest: dest)
        let archive = try onlyArchive(in: dest)
        let frames = try seekTable(of: archive)
        let sidecar = try sidecarPath(in: dest, id: id)
        let lines = try sidecarText(sidecar).split(separator: "\n").map(String.init)
        var lied: [String] = []
        var edited: [String] = [lines[0]]
        for line in lines.dropFirst() {
            let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let at = (object["at"] as? NSNumber)?.int64Value ?? -1
            guard lied.count < 2, object["type"] as? String == "file", frames[1].decompressed.contains(at) else {
                edited.append(line)
                continue
            }
            lied.append(try XCTUnwrap(object["path"] as? String))
            edited.append(lied.count == 1 ? line.replacingOccurrences(of: "\"len\":\((object["len"] as? NSNumber)?.int64Value ?? 0)",
                                                                      with: "\"len\":1099511627776")
                                          : line.replacingOccurrences(of: "\"at\":\(at)", with: "\"at\":999999999999"))
        }
        XCTAssertEqual(lied.count, 2)
        try writeSidecar(sidecar, edited.joined(separator: "\n") + "\n")
        _ = try damage(archive, frames: frames, at: [frames[1].compressed.lowerBound + frames[1].compressed.count / 2])

        let target = path("target")
        let outcome = try run(["restore", id, "--dest", dest, "--target", target, "--json"])
        assertExit(outcome, 4)
        let named = Set((((try json(outcome))["damaged"] as? [[String: Any]]) ?? []).compactMap { $0["path"] as? String })
        XCTAssertTrue(named.isSuperset(of: lied), "the entries whose offsets lie are named: \(outcome)")
        XCTAssertLessThan(named.count, 10, "\(outcome)")
        XCTAssertEqual(try json(outcome)["files"] as? Int, contents.count - named.count, "\(outcome)")
    }

    // MARK: Checks

    /// The restore's exit code, its `damaged` list and the target: every entry the reference
    /// decoder gives intact is restored (files byte for byte), every file is restored exactly
    /// or named, and only entries the damage spoils (of those `spoilable`) are named.
    private func assertContained(_ outcome: ProcessRunner.Outcome, reference: Reference, entries: [Entry], target: String,
                                 spoilable: (Entry) -> Bool = { _ in true },
                                 file: StaticString = #filePath, line: UInt = #line) throws {
        assertExit(outcome, 4, "damage is exit 4", file: file, line: line)
        let report = try json(outcome, file: file, line: line)
        let named = Set(((report["damaged"] as? [[String: Any]]) ?? []).compactMap { $0["path"] as? String })
        let spoiled = Set(entries.filter { spoilable($0) && !reference.intact($0.location ?? 0..<0) }.map(\.path))
        XCTAssertEqual(named.subtracting(spoiled).sorted(), [], "named damaged, yet intact in the archive", file: file, line: line)

        var restoredFiles = 0
        let prefix = String(source.dropFirst()) + "/"
        for entry in entries where entry.type == "file" {
            let relative = String(entry.path.dropFirst(prefix.count))
            let onDisk = FileManager.default.contents(atPath: restored(source, into: target) + "/" + relative).map(Array.init)
            if onDisk == contents[relative] {
                restoredFiles += 1
            } else {
                XCTAssertNil(onDisk, "\(relative) is in the target with other content", file: file, line: line)
                XCTAssertTrue(named.contains(entry.path), "\(relative) is neither restored nor named", file: file, line: line)
                XCTAssertTrue(spoiled.contains(entry.path), "\(relative) is intact in the archive but was not restored",
                              file: file, line: line)
            }
        }
        XCTAssertEqual(report["files"] as? Int, restoredFiles, "the count of files restored", file: file, line: line)
        print("DamageContainmentTests: \(restoredFiles) files restored; \(named.count) entries named lost, "
            + "\(spoiled.count) spoiled, of \(entries.count)")
    }

    /// Verify's report of the damaged backup: exit 4, only spoiled entries named, every
    /// other file checked, nothing left unchecked.
    private func assertVerifyContained(_ outcome: ProcessRunner.Outcome, reference: Reference, entries: [Entry],
                                       file: StaticString = #filePath, line: UInt = #line) throws {
        assertExit(outcome, 4, "verify of a damaged backup", file: file, line: line)
        let report = try XCTUnwrap((try json(outcome, file: file, line: line)["backups"] as? [[String: Any]])?.first,
                                   file: file, line: line)
        let spoiled = Set(entries.filter { !reference.intact($0.location ?? 0..<0) }.map(\.path))
        let problems = (report["damaged_files"] as? [[String: Any]]) ?? []
        let named = Set(problems.compactMap { $0["path"] as? String })
        XCTAssertEqual(named.subtracting(spoiled).sorted(), [], "verify named damaged, yet intact in the archive", file: file, line: line)
        // Every file is read, but those whose bytes the damage took (the others are hashed,
        // and named when their content differs).
        let unread = Set(problems.filter { ($0["reason"] as? String)?.hasPrefix("it lies in a damaged part") ?? false }
            .compactMap { $0["path"] as? String })
        XCTAssertEqual(report["files_checked"] as? Int, entries.filter { $0.type == "file" && !unread.contains($0.path) }.count,
                       "every file not lost is checked", file: file, line: line)
        XCTAssertEqual(report["entries_unchecked"] as? Int, 0, "\(outcome)", file: file, line: line)
        XCTAssertEqual(report["intact"] as? Bool, false, file: file, line: line)
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
            frames.append(Frame(index: index, compressed: compressed..<(compressed + size),
                                decompressed: decompressed..<(decompressed + plain)))
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

    /// Flips one byte at each of `offsets` of `archive` and returns what the reference
    /// decoder makes of it: the tar stream decoded before, and each damaged frame decoded
    /// alone by `zstd -d --no-check` as far as it goes.
    private func damage(_ archive: String, frames: [Frame], at offsets: [Int]) throws -> Reference {
        let pristine = Array(try toolSucceeds("zstd", ["-dc", archive]).stdout)
        var bytes = try Data(contentsOf: URL(fileURLWithPath: archive))
        for offset in offsets { bytes[offset] ^= 0x20 }
        try bytes.write(to: URL(fileURLWithPath: archive))
        var salvaged: [Int: [UInt8]] = [:]
        for frame in frames where offsets.contains(where: frame.compressed.contains) {
            let alone = path("frame-\(frame.index).zst")
            try bytes.subdata(in: frame.compressed).write(to: URL(fileURLWithPath: alone))
            // --no-check: all the frame's bytes that decode, though its checksum disagrees.
            salvaged[frame.index] = Array(try tool("zstd", ["-dc", "--no-check", alone]).stdout)
        }
        return Reference(pristine: pristine, salvaged: salvaged, frames: frames)
    }
}
