import Foundation
import XCTest

/// Big files (issue 34, part 2): a file of 1 MiB or more that a backup reads gets a table of
/// its blocks' digests (the start of each one's SHA-256) on its manifest line, made in the same pass as its own SHA-256 and
/// checked here by Python's hashlib against the file itself. With `--blocks`, a changed one
/// is stored by its changed blocks: nights of in-place writes, appends, a shrink, a touch and
/// a rewrite each restore exactly (whole, in part, from a lone archive), Python's tarfile
/// rebuilds the file from the archives alone by formats.md's rule, verify and restore name a
/// damaged block, and prune keeps what kept backups take blocks from.
final class BigFileTests: EndToEndTestCase {
    // MARK: Helpers

    /// Prints, for each manifest line with a block table, its path, whether its digests are
    /// the first 16 bytes of those blocks' SHA-256 (the file read from `/` + path): every
    /// block's, or, for a table stored as changes, its own archive's blocks', with the SHA-256
    /// of every block's digest (formats.md's rule); how many it holds, and "changes" for
    /// the latter; then what the summary declares and how many digests the lines hold.
    private static let tableCheck = """
    import base64, hashlib, json, subprocess, sys
    text = subprocess.run(["zstd", "-dc", sys.argv[1]], check=True, capture_output=True).stdout
    lines = [json.loads(line) for line in text.splitlines() if line]
    counted = 0
    for entry in lines[1:]:
        table = entry.get("blocks")
        if table is None:
            continue
        size, digests = table["size"], base64.b64decode(table["digests_b64"])
        with open("/" + entry["path"], "rb") as f:
            data = f.read()
        every = [hashlib.sha256(data[i:i + size]).digest()[:16] for i in range(0, len(data), size)]
        right = hashlib.sha256(data).hexdigest() == entry["sha256"]
        if "digests_sha256" in table:
            own = [i for i, source in enumerate(table["from"]) if "in" not in source]
            mine, block = [], 0
            for count, index in zip(table["runs"][0::2], table["runs"][1::2]):
                if index in own:
                    mine += range(block, block + count)
                block += count
            right = right and digests == b"".join(every[i] for i in mine)
            right = right and hashlib.sha256(b"".join(every)).hexdigest() == table["digests_sha256"]
        else:
            right = right and digests == b"".join(every)
        print(entry["path"].rsplit("/", 1)[1], size, len(digests) // 16, "ok" if right else "WRONG",
              *(["changes"] if "digests_sha256" in table else []))
        counted += len(digests) // 16
    print("format", lines[0]["format"], "declared", lines[0].get("block_digests", 0), "counted", counted)
    """

    /// What `tableCheck` says of the manifest of backup `id` in `dest`, line by line.
    private func checkedTables(_ id: String, dest: String, file: StaticString = #filePath, line: UInt = #line) throws -> [String] {
        let manifest = try XCTUnwrap(try names(in: dest).first { $0.contains(id) && $0.hasSuffix(".manifest.jsonl.zst") },
                                     file: file, line: line)
        let outcome = try toolSucceeds("python3", ["-c", BigFileTests.tableCheck, dest + "/" + manifest], file: file, line: line)
        return String(decoding: outcome.stdout, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    /// Rebuilds the file at archive path `path` of backup `id` in `dest` from the archives
    /// alone, as docs/formats.md says (Python's tarfile, zstd, no Keepsake), and prints
    /// whether it has the SHA-256 its manifest line records.
    private static let rebuild = """
    import base64, glob, hashlib, io, json, subprocess, sys, tarfile
    dest, backup, path = sys.argv[1], sys.argv[2], sys.argv[3]
    def unzstd(name):
        return subprocess.run(["zstd", "-dc", name], check=True, capture_output=True).stdout
    def named(backup_id, ending):
        return glob.glob(dest + "/*_" + backup_id + ending)[0]
    lines = [json.loads(line) for line in unzstd(named(backup, ".manifest.jsonl.zst")).splitlines()]
    entry = [e for e in lines[1:] if e.get("path") == path][-1]
    table, size = entry["blocks"], entry["blocks"]["size"]
    rebuilt = bytearray(entry["size"])
    block = 0
    for count, index in zip(table["runs"][0::2], table["runs"][1::2]):
        source = table["from"][index]
        tar = tarfile.open(fileobj=io.BytesIO(unzstd(named(source.get("in", backup), ".tar.zst"))))
        member = tar.getmember(path if source.get("whole") else ".keepsake/blocks/" + path)
        data = tar.extractfile(member)
        data.seek(block * size)
        start = block * size
        end = min(len(rebuilt), start + count * size)
        rebuilt[start:end] = data.read(end - start).ljust(end - start, b"\\0")
        block += count
    print("rebuilt" if hashlib.sha256(rebuilt).hexdigest() == entry["sha256"] else "WRONG")
    """

    private func writeRandom(_ path: String, count: Int) throws {
        var generator = SystemRandomNumberGenerator()
        try Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }).write(to: URL(fileURLWithPath: path))
    }

    /// Overwrites `bytes` at `offset` of the file at `path`, in place.
    private func overwrite(_ path: String, at offset: UInt64, with bytes: [UInt8]) throws {
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.seek(toOffset: offset)
        try handle.write(contentsOf: Data(bytes))
    }

    // MARK: Tests

    func testEveryBigFileReadGetsATableOfItsBlocksThatPythonChecks() throws {
        let source = path("src"), dest = path("dest")
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        try writeRandom(source + "/big", count: 3_300_000)
        try writeRandom(source + "/edge", count: 1 << 20)
        try writeRandom(source + "/under", count: (1 << 20) - 1)
        try Data("small".utf8).write(to: URL(fileURLWithPath: source + "/small"))
        // 5 MiB with four bytes of data in the middle: holes read as zeros.
        try toolSucceeds("truncate", ["-s", "5M", source + "/sparse"])
        try overwrite(source + "/sparse", at: 2_000_000, with: Array("data".utf8))

        let first = try backup([source], dest: dest)
        XCTAssertEqual(try checkedTables(first, dest: dest).sorted(), [
            "big 4096 806 ok", "edge 4096 256 ok", "format 1 declared 2342 counted 2342", "sparse 4096 1280 ok",
        ], "every file of 1 MiB or more, and only those, has its table")

        // The next night one block of `big` changes in place: it is read again and has a new
        // table; the files not read point at the first backup and carry none. With
        // `--no-blocks` it is stored whole.
        try overwrite(source + "/big", at: 700_000, with: Array(repeating: 0xAB, count: 10))
        let second = try backup([source], dest: dest, options: ["--no-blocks"])
        XCTAssertEqual(try checkedTables(second, dest: dest).sorted(), ["big 4096 806 ok", "format 1 declared 806 counted 806"],
                       "a manifest without files stored by blocks stays in the format older versions read")
        // By default, by its changed block, its table stored as changes (the one digest of
        // the block it stores, and the SHA-256 of all 806): the manifest says format 3.
        try overwrite(source + "/big", at: 1_700_000, with: Array(repeating: 0xCD, count: 10))
        let third = try backup([source], dest: dest)
        XCTAssertEqual(try checkedTables(third, dest: dest).sorted(), ["big 4096 1 ok changes", "format 3 declared 1 counted 1"])
        // The night after, the other 805 digests are gathered from where their blocks are
        // (the second backup's whole table), so again only the changed block is stored.
        try overwrite(source + "/big", at: 100_000, with: Array(repeating: 0xEF, count: 10))
        let fourth = try backup([source], dest: dest)
        XCTAssertEqual(try checkedTables(fourth, dest: dest).sorted(), ["big 4096 1 ok changes", "format 3 declared 1 counted 1"])
        let both = try run(["backup", source, "--dest", dest, "--blocks", "--no-blocks"])
        assertExit(both, 2)
        XCTAssertTrue(both.stderrText.contains("--no-blocks"), both.stderrText)

        for id in [second, third, fourth] {
            let target = path("out-\(id)")
            assertExit(try run(["restore", id, "--dest", dest, "--target", target]), 0)
            XCTAssertTrue(try RawFileSystem.filesEqual(RawFileSystem.bytes(source + "/under"), RawFileSystem.bytes(restored(source, into: target) + "/under")))
        }
        try assertTreesEqual(expected: source, actual: restored(source, into: path("out-\(fourth)")))
        assertExit(try run(["verify", "--dest", dest]), 0)
    }

    func testNightsOfChangingBigFilesStoredByBlocksRestoreExactly() throws {
        let source = path("src"), dest = path("dest")
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        try writeRandom(source + "/image", count: 3_000_000)
        try writeRandom(source + "/log", count: 1_500_000)
        try writeRandom(source + "/db", count: 2 << 20)
        try Data("small".utf8).write(to: URL(fileURLWithPath: source + "/small"))
        XCTAssertEqual(RawFileSystem.setXattr(RawFileSystem.bytes(source + "/image"), name: "user.test", value: Array("v1".utf8)), 0)
        var generator = SystemRandomNumberGenerator()
        func random(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) } }
        func append(_ name: String, _ count: Int) throws {
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: source + "/" + name))
            defer { try? handle.close() }
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(random(count)))
        }
        var nights: [(id: String, copy: String, stored: Int)] = []
        func night(_ number: Int) throws {
            let outcome = try run(["backup", source, "--dest", dest, "--json", "--blocks"])
            assertExit(outcome, 0, "night \(number)")
            let summary = try json(outcome)
            let copy = path("nights/\(number)")
            try toolSucceeds("mkdir", ["-p", path("nights")])
            try toolSucceeds("cp", ["-a", source, copy])
            nights.append((summary["id"] as? String ?? "", copy, summary["new_bytes"] as? Int ?? -1))
        }
        try night(1)
        for number in 2...8 {
            switch number {
            case 4: try toolSucceeds("truncate", ["-s", "2500000", source + "/image"]) // shrinks
            case 6: try toolSucceeds("touch", [source + "/image"]) // only its time changes
            case 7: try writeRandom(source + "/db", count: 2 << 20) // rewritten whole
            default:
                // A run of 100 KB rewritten in place somewhere.
                try overwrite(source + "/image", at: UInt64(Int.random(in: 0..<2_000_000, using: &generator)), with: random(100_000))
            }
            if number == 3 {
                XCTAssertEqual(RawFileSystem.setXattr(RawFileSystem.bytes(source + "/image"), name: "user.test", value: Array("v3".utf8)), 0)
            }
            // A second name: the log is stored whole again (a hard link cannot point into blocks).
            if number == 8 { try toolSucceeds("ln", [source + "/log", source + "/log-link"]) }
            try append("log", 20_000 + number * 1000)
            if number != 5 {
                // Three scattered 4 KiB pages, as a database writes them.
                for _ in 0..<3 { try overwrite(source + "/db", at: UInt64(Int.random(in: 0..<512, using: &generator) * 4096), with: random(4096)) }
            }
            try night(number)
        }
        // What each night stored: a few blocks, not the 7 MB of big files; night 7 the rewritten database whole.
        for (number, stored) in nights.map(\.stored).enumerated().dropFirst() where number + 1 < 7 {
            XCTAssertLessThan(stored, 1_200_000, "night \(number + 1) stores its changed blocks")
        }
        XCTAssertGreaterThan(nights[6].stored, 2 << 20, "a file with no block the same is stored whole")
        XCTAssertGreaterThan(nights[7].stored, 1_500_000, "so is one that got a second name")
        // Every big file's table is carried, each is the file's: the log's whole (stored
        // whole, with a second name), the others' stored as changes; older versions are told
        // to stay away, and the summary declares what the lines hold.
        let checked = try checkedTables(nights[7].id, dest: dest)
        let logBlocks = try Int((XCTUnwrap(RawFileSystem.lstat(source + "/log")).st_size + 4095) / 4096)
        XCTAssertEqual(checked.filter { $0.hasPrefix("log ") }, ["log 4096 \(logBlocks) ok"])
        XCTAssertEqual(checked.filter { $0.hasPrefix("image ") || $0.hasPrefix("db ") }.map { $0.hasSuffix(" ok changes") }, [true, true],
                       "\(checked)")
        let counted = checked.dropLast().compactMap { Int($0.split(separator: " ")[2]) }.reduce(0, +)
        XCTAssertEqual(checked.last, "format 3 declared \(counted) counted \(counted)")

        for (number, night) in nights.enumerated() {
            let target = path("restore-\(number + 1)")
            let restore = try run(["restore", night.id, "--dest", dest, "--target", target])
            assertExit(restore, 0, "night \(number + 1)")
            try assertTreesEqual(expected: night.copy, actual: restored(source, into: target))
        }
        // In part: the image alone, as night 5 had it.
        let part = path("part")
        assertExit(try run(["restore", nights[4].id, "--dest", dest, "--target", part, String(source.dropFirst()) + "/image"]), 0)
        XCTAssertTrue(try RawFileSystem.filesEqual(RawFileSystem.bytes(nights[4].copy + "/image"), RawFileSystem.bytes(restored(source, into: part) + "/image")))
        // From the last archive alone, its chain's archives beside it.
        let lone = try XCTUnwrap(try names(in: dest).first { $0.contains(nights[7].id) && $0.hasSuffix(".tar.zst") })
        let fromFile = path("from-file")
        assertExit(try run(["restore", dest + "/" + lone, "--target", fromFile]), 0)
        try assertTreesEqual(expected: nights[7].copy, actual: restored(source, into: fromFile))
        // Python's tarfile and zstd rebuild each big file from the archives by formats.md's rule.
        for name in ["image", "db"] {
            let outcome = try toolSucceeds("python3", ["-c", BigFileTests.rebuild, dest, nights[7].id, String(source.dropFirst()) + "/" + name])
            XCTAssertEqual(String(decoding: outcome.stdout, as: UTF8.self), "rebuilt\n", name)
        }
        let verify = try run(["verify", "--dest", dest])
        assertExit(verify, 0)
    }

    func testADamagedBlockIsNamedAndEarlierNightsStillRestore() throws {
        let source = path("src"), dest = path("dest")
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        try writeRandom(source + "/image", count: 2_000_000)
        let first = try backup([source], dest: dest, options: ["--blocks", "--compression", "none"])
        try overwrite(source + "/image", at: 1_000_000, with: Array(repeating: 0x5A, count: 70_000))
        let second = try backup([source], dest: dest, options: ["--blocks", "--compression", "none"])
        // One byte of the changed blocks, in the second archive (an uncompressed tar).
        let archive = dest + "/" + (try XCTUnwrap(try names(in: dest).first { $0.contains(second) && $0.hasSuffix(".tar") }))
        var bytes = try Data(contentsOf: URL(fileURLWithPath: archive))
        let marker = try XCTUnwrap(bytes.range(of: Data(repeating: 0x5A, count: 70_000)), "the changed blocks are in the archive")
        bytes[marker.lowerBound + 1234] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: archive))

        let verify = try run(["verify", second, "--dest", dest])
        assertExit(verify, 4)
        XCTAssertTrue(verify.stdoutText.contains("does not match its digest"), verify.stdoutText)
        let restore = try run(["restore", second, "--dest", dest, "--target", path("out")])
        assertExit(restore, 4)
        XCTAssertTrue(restore.stderrText.contains("image"), restore.stderrText)
        XCTAssertFalse(RawFileSystem.exists(restored(source, into: path("out")) + "/image"), "a damaged file is never placed")
        let earlier = try run(["restore", first, "--dest", dest, "--target", path("first")])
        assertExit(earlier, 0)
        XCTAssertEqual(try RawFileSystem.readFile(RawFileSystem.bytes(restored(source, into: path("first")) + "/image")).count, 2_000_000)
    }

    /// Ten nights of a changing big file stored by blocks, pruned each night to the last
    /// three: the kept set is the policy's, the blocks kept backups take from removed ones
    /// move into supplements (block entries of their own, valid tar), every kept backup
    /// restores exactly, whole and in part, also from a folder holding only its archives and
    /// supplements; verify passes; and the destination holds far less than a whole copy a
    /// kept backup. The file is sparse: the blocks of its hole come from the first night.
    func testNightlyPrunesMoveTheBlocksKeptBackupsTakeIntoSupplements() throws {
        let source = path("src"), dest = path("dest")
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        let imageSize = 1_500_000
        try writeRandom(source + "/image", count: imageSize)
        // A hole at its end (a sparse file): blocks of zeros kept backups take from the first.
        try toolSucceeds("truncate", ["-s", "2100000", source + "/image"])
        var ids: [String] = []
        var copies: [String: String] = [:]
        for night in 1...10 {
            if night > 1 {
                // In-place runs at offsets that move each night, an append on night 6, a note edited.
                try overwrite(source + "/image", at: UInt64((night * 170_000) % 1_300_000), with: Array(repeating: UInt8(night), count: 40_000))
                try overwrite(source + "/image", at: UInt64((night * 610_000) % 1_400_000), with: Array(repeating: UInt8(night + 100), count: 3_000))
                if night == 6 {
                    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: source + "/image"))
                    try handle.seekToEnd()
                    try handle.write(contentsOf: Data(repeating: 9, count: 70_000))
                    try handle.close()
                }
            }
            try Data("night \(night)".utf8).write(to: URL(fileURLWithPath: source + "/note"))
            let id = try backup([source], dest: dest, options: ["--blocks"])
            if night > 1 {
                // By its changed blocks every night: its last table (stored as changes) made
                // whole from where its blocks are, after the prunes from supplements too.
                let archive = try XCTUnwrap(try names(in: dest).first { $0.contains(id) && $0.hasSuffix(".tar.zst") })
                let listing = try toolSucceeds("tar", ["--zstd", "-tf", dest + "/" + archive]).stdoutText
                XCTAssertTrue(listing.contains(".keepsake/blocks/"), "night \(night) stores the image by blocks: \(listing)")
            }
            ids.append(id)
            copies[id] = path("copy-\(night)")
            try toolSucceeds("cp", ["-a", source, path("copy-\(night)")])
            guard night >= 3 else { continue }
            assertExit(try run(["prune", "--dest", dest, "--keep-last", "3", "--quiet"]), 0, "night \(night)")
            let listed = ((try json(try run(["list", "--dest", dest, "--json"])))["backups"] as? [[String: Any]] ?? [])
                .compactMap { $0["id"] as? String }
            XCTAssertEqual(Set(listed), Set(ids.suffix(3)), "night \(night): the backups kept are the policy's")
            for kept in ids.suffix(3) {
                let target = path("out-\(night)-\(kept)")
                assertExit(try run(["restore", kept, "--dest", dest, "--target", target, "--quiet"]), 0, "night \(night), \(kept)")
                try assertTreesEqual(expected: copies[kept] ?? "", actual: restored(source, into: target))
            }
            if night % 3 == 0 { assertExit(try run(["verify", "--dest", dest, "--quiet"]), 0, "night \(night)") }
        }
        // The supplements hold blocks in entries of their own, which tar reads.
        let supplements = try names(in: dest).filter { $0.hasSuffix(".supplement.tar.zst") }
        XCTAssertFalse(supplements.isEmpty)
        var blockEntries: [String] = []
        for supplement in supplements {
            let listing = try toolSucceeds("tar", ["--zstd", "-tf", dest + "/" + supplement]).stdoutText
            blockEntries += listing.split(separator: "\n").map(String.init).filter { $0.hasPrefix(".keepsake/blocks/") }
        }
        XCTAssertFalse(blockEntries.isEmpty, "blocks moved into supplements")
        XCTAssertTrue(blockEntries.allSatisfy { $0.hasSuffix("/image") }, "\(blockEntries)")
        let stored = try names(in: dest).reduce(Int64(0)) { total, name in
            total + ((try? FileManager.default.attributesOfItem(atPath: dest + "/" + name)[.size] as? Int64) ?? 0)
        }
        XCTAssertLessThan(stored, Int64(imageSize) * 2, "three kept nights of a 1.5 MB file, not three whole copies")

        // A partial restore, and one from a folder with only the kept archives and supplements.
        let newest = ids[ids.count - 1]
        assertExit(try run(["restore", newest, "--dest", dest, "--target", path("part"), String(source.dropFirst()) + "/image"]), 0)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: restored(source, into: path("part")) + "/image")),
                       try Data(contentsOf: URL(fileURLWithPath: (copies[newest] ?? "") + "/image")))
        let lone = path("usb")
        try FileManager.default.createDirectory(atPath: lone, withIntermediateDirectories: true)
        for name in try names(in: dest) where name.hasSuffix(".tar.zst") || name.hasSuffix(".supplement.jsonl.zst") {
            try FileManager.default.copyItem(atPath: dest + "/" + name, toPath: lone + "/" + name)
        }
        let archive = try XCTUnwrap(try names(in: dest).first { $0.contains(newest) && $0.hasSuffix(".tar.zst") })
        assertExit(try run(["restore", lone + "/" + archive, "--target", path("from-usb"), "--quiet"],
                           environment: ["KEEPSAKE_DEST": path("no-such-destination")]), 0)
        try assertTreesEqual(expected: copies[newest] ?? "", actual: restored(source, into: path("from-usb")))

        // Copied to another destination, the supplements come along.
        let copy = path("copy-dest")
        assertExit(try run(["copy", newest, "--from", dest, "--to", copy, "--quiet"]), 0)
        assertExit(try run(["restore", newest, "--dest", copy, "--target", path("from-copy"), "--quiet"]), 0)
        try assertTreesEqual(expected: copies[newest] ?? "", actual: restored(source, into: path("from-copy")))

        // Down to the newest alone: its supplement holds every block it takes.
        assertExit(try run(["prune", "--dest", dest, "--keep-last", "1", "--quiet"]), 0)
        assertExit(try run(["restore", newest, "--dest", dest, "--target", path("last"), "--quiet"]), 0)
        try assertTreesEqual(expected: copies[newest] ?? "", actual: restored(source, into: path("last")))
        assertExit(try run(["verify", "--dest", dest, "--quiet"]), 0)
    }

    /// A backup encrypted to a public key cannot read its chain back (only this host's
    /// cached copies of its newest manifests), so its tables hold every digest: night after
    /// night, past the cache's six manifests, a big file is still stored by its changed
    /// block, and the newest night restores exactly.
    func testAChainEncryptedToAPublicKeyStoresItsBigFileByBlocksEveryNight() throws {
        let source = path("src"), dest = path("dest"), identity = path("identity.txt")
        let made = try run(["keygen", "--output", identity])
        assertExit(made, 0)
        let recipient = made.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        try writeRandom(source + "/image", count: 3_000_000)
        var last = ""
        for night in 1...9 {
            if night > 1 { try overwrite(source + "/image", at: UInt64(night * 300_000), with: Array(repeating: UInt8(night), count: 10)) }
            let outcome = try run(["backup", source, "--dest", dest, "--json", "--recipient", recipient])
            assertExit(outcome, 0, "night \(night)")
            let summary = try json(outcome)
            last = try XCTUnwrap(summary["id"] as? String)
            if night > 1 {
                XCTAssertLessThan(summary["new_bytes"] as? Int ?? .max, 200_000, "night \(night) stores the changed block")
            }
        }
        assertExit(try run(["restore", last, "--dest", dest, "--target", path("out"), "--identity", identity, "--quiet"]), 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: path("out")))
    }

    /// A flipped byte in a supplement's block entry: verify names the supplement (exit 4), a
    /// restore names the file damaged and does not place it (exit 4); the next night's prune
    /// leaves the supplement in place (nothing else holds its blocks) and still frees the rest.
    func testADamagedBlockInASupplementIsNamedAndLeftInPlace() throws {
        let source = path("src"), dest = path("dest")
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        try writeRandom(source + "/image", count: 1_500_000)
        var ids: [String] = []
        for night in 1...4 {
            if night > 1 { try overwrite(source + "/image", at: UInt64(night * 200_000), with: Array(repeating: UInt8(night), count: 30_000)) }
            ids.append(try backup([source], dest: dest, options: ["--blocks"]))
        }
        assertExit(try run(["prune", "--dest", dest, "--keep-last", "1", "--quiet"]), 0)
        let supplement = try XCTUnwrap(try names(in: dest).first { $0.hasSuffix(".supplement.tar.zst") })
        try Fixtures.flipByte(in: dest + "/" + supplement)

        let verified = try run(["verify", "--dest", dest])
        assertExit(verified, 4)
        XCTAssertTrue((verified.stdoutText + verified.stderrText).contains(supplement), "\(verified)")
        let restore = try run(["restore", ids[3], "--dest", dest, "--target", path("out"), "--json"])
        let object = try json(restore)
        XCTAssertEqual(object["exit_code"] as? Int, 4, "\(object)")
        XCTAssertTrue("\(object["damaged"] ?? "")".contains("image"), "\(object)")
        XCTAssertFalse(RawFileSystem.exists(restored(source, into: path("out")) + "/image"), "never placed when not whole")

        try overwrite(source + "/image", at: 1_000_000, with: Array(repeating: 9, count: 30_000))
        let next = try backup([source], dest: dest, options: ["--blocks"])
        let pruned = try run(["prune", "--dest", dest, "--keep-last", "1"])
        assertExit(pruned, 0)
        XCTAssertTrue(pruned.stderrText.contains(supplement) && pruned.stderrText.contains("keepsake verify"), "\(pruned)")
        XCTAssertTrue(try names(in: dest).contains(supplement), "left in place")
        let listed = ((try json(try run(["list", "--dest", dest, "--json"])))["backups"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
        XCTAssertEqual(listed, [next])
    }

    /// A big file more than half of which changed is read again and stored whole (the
    /// changed blocks' spool in `$TMPDIR` holds at most half a file): its own
    /// entry in the archive, no block entry, a table on its line, and it restores exactly.
    func testAFileMoreThanHalfChangedIsReadAgainAndStoredWhole() throws {
        let source = path("src"), dest = path("dest")
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        try writeRandom(source + "/image", count: 2_000_000)
        _ = try backup([source], dest: dest, options: ["--blocks"])
        var generator = SystemRandomNumberGenerator()
        try overwrite(source + "/image", at: 100_000, with: (0..<1_200_000).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let outcome = try run(["backup", source, "--dest", dest, "--json", "--blocks"])
        assertExit(outcome, 0)
        let summary = try json(outcome)
        let id = try XCTUnwrap(summary["id"] as? String)
        XCTAssertGreaterThanOrEqual(summary["new_bytes"] as? Int ?? 0, 2_000_000, "stored whole: \(summary)")
        let archive = try XCTUnwrap(try names(in: dest).first { $0.contains(id) && $0.hasSuffix(".tar.zst") })
        let listing = try toolSucceeds("tar", ["--zstd", "-tf", dest + "/" + archive]).stdoutText
        XCTAssertTrue(listing.contains(String(source.dropFirst()) + "/image\n"), listing)
        XCTAssertFalse(listing.contains(".keepsake/blocks/"), listing)
        XCTAssertEqual(try checkedTables(id, dest: dest), ["image 4096 489 ok", "format 1 declared 489 counted 489"],
                       "its table, made in the second read, and no block entry")
        assertExit(try run(["restore", id, "--dest", dest, "--target", path("out")]), 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: path("out")))
    }

    /// The changed blocks are spooled in `$TMPDIR` up to a quarter of the room there (and half
    /// the file): with `$TMPDIR` a 4 MiB tmpfs, a change of 1.4 MB of a 3 MB file is read again
    /// and stored whole; with room, the same change is stored by its blocks. Either way the
    /// file restores exactly, and the tmpfs is left as it was.
    func testTheChangedBlocksTakeAtMostAQuarterOfTheRoomInTMPDIR() throws {
        let source = path("src"), dest = path("dest"), small = path("small-tmp")
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        try mountTmpfs(at: small, size: "4m")
        try writeRandom(source + "/image", count: 3_000_000)
        _ = try backup([source], dest: dest)
        var generator = SystemRandomNumberGenerator()
        func change(at offset: UInt64) throws {
            // 342 blocks of 4 KiB (1.4 MB): more than a quarter of 4 MiB, less than half the file.
            try overwrite(source + "/image", at: offset, with: (0..<1_400_000).map { _ in UInt8.random(in: 0...255, using: &generator) })
        }
        func stored(_ environment: [String: String?]) throws -> (id: String, listing: String) {
            let outcome = try run(["backup", source, "--dest", dest, "--json"], environment: environment)
            assertExit(outcome, 0)
            let id = try XCTUnwrap(try json(outcome)["id"] as? String)
            let archive = try XCTUnwrap(try names(in: dest).first { $0.contains(id) && $0.hasSuffix(".tar.zst") })
            return (id, try toolSucceeds("tar", ["--zstd", "-tf", dest + "/" + archive]).stdoutText)
        }

        try change(at: 100_000)
        let cramped = try stored(["TMPDIR": small])
        XCTAssertFalse(cramped.listing.contains(".keepsake/blocks/"), "stored whole: \(cramped.listing)")
        XCTAssertTrue(cramped.listing.contains(String(source.dropFirst()) + "/image\n"), cramped.listing)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: small), [], "nothing left in the tmpfs")
        XCTAssertEqual(try checkedTables(cramped.id, dest: dest).first, "image 4096 733 ok", "its table, made in the second read")

        try change(at: 24 * 65_536)
        let roomy = try stored([:])
        XCTAssertTrue(roomy.listing.contains(".keepsake/blocks/" + String(source.dropFirst()) + "/image\n"),
                      "stored by blocks: \(roomy.listing)")
        XCTAssertEqual(try checkedTables(roomy.id, dest: dest).first, "image 4096 342 ok changes", "the 342 blocks it stores")
        assertExit(try run(["restore", roomy.id, "--dest", dest, "--target", path("out")]), 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: path("out")))
    }

    /// A file of 4 GiB (sparse, so the test is quick) has the largest table: 524,288 blocks
    /// of 8 KiB, a manifest line of 11 MB. Its backups, whole and by blocks, restore and verify: the
    /// room its summary declares for the digests is allowed by every reader (the one restore
    /// uses once allowed only its entries' room, and refused every file of 3.3 GiB or more).
    // test-tag(plain-only): reads 4 GiB of holes four times; the readers' limits are the same code under the sanitizers (BlockTableTests)
    func testAFileOf4GiBWithTheLargestTableRestoresAndVerifies() throws {
        let source = path("src"), dest = path("dest"), image = path("src") + "/disk.img"
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        XCTAssertTrue(FileManager.default.createFile(atPath: image, contents: nil))
        XCTAssertEqual(truncate(image, 4 << 30), 0)
        try overwrite(image, at: 3 << 30, with: Array("the one written part".utf8))
        let first = try backup([source], dest: dest)
        try overwrite(image, at: 1 << 30, with: Array("a change a night later".utf8))
        let second = try backup([source], dest: dest)
        for id in [first, second] {
            assertExit(try run(["verify", id, "--dest", dest]), 0)
        }
        let outcome = try run(["restore", second, "--dest", dest, "--target", path("out"), "--json"])
        assertExit(outcome, 0)
        XCTAssertEqual(try json(outcome)["exit_code"] as? Int, 0)
        _ = try toolSucceeds("cmp", [image, restored(source, into: path("out")) + "/disk.img"])
    }

    func testALoneArchiveWithoutTheOneHoldingItsOtherBlocksNamesIt() throws {
        let source = path("src"), dest = path("dest")
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        try writeRandom(source + "/image", count: 1_500_000)
        try Data("note".utf8).write(to: URL(fileURLWithPath: source + "/note"))
        let first = try backup([source], dest: dest, options: ["--blocks"])
        try overwrite(source + "/image", at: 100_000, with: Array(repeating: 7, count: 1000))
        try Data("note, edited".utf8).write(to: URL(fileURLWithPath: source + "/note"))
        let second = try backup([source], dest: dest, options: ["--blocks"])
        let firstArchive = try XCTUnwrap(try names(in: dest).first { $0.contains(first) && $0.hasSuffix(".tar.zst") })
        let secondArchive = try XCTUnwrap(try names(in: dest).first { $0.contains(second) && $0.hasSuffix(".tar.zst") })
        let lone = path("usb")
        try FileManager.default.createDirectory(atPath: lone, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: dest + "/" + secondArchive, toPath: lone + "/" + secondArchive)
        let away: [String: String?] = ["KEEPSAKE_DEST": path("no-such-destination")]

        let outcome = try run(["restore", lone + "/" + secondArchive, "--target", path("out"), "--json"], environment: away)
        let object = try json(outcome)
        XCTAssertEqual(object["exit_code"] as? Int, 3, "an archive to bring, not damage: \(object)")
        XCTAssertTrue((object["damaged"] as? [Any] ?? [0]).isEmpty, "\(object)")
        let missing = object["missing_archives"] as? [[String: Any]] ?? []
        XCTAssertEqual(missing.first?["file"] as? String, firstArchive, "\(object)")
        XCTAssertEqual(missing.first?["paths"] as? [String], [String(source.dropFirst()) + "/image"], "\(object)")
        let root = restored(source, into: path("out"))
        XCTAssertEqual(try String(contentsOfFile: root + "/note", encoding: .utf8), "note, edited", "its own files are restored")
        XCTAssertFalse(RawFileSystem.exists(root + "/image"), "a file it cannot put together is not placed")

        try FileManager.default.copyItem(atPath: dest + "/" + firstArchive, toPath: lone + "/" + firstArchive)
        assertExit(try run(["restore", lone + "/" + secondArchive, "--target", path("whole")], environment: away), 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: path("whole")))
    }
}
