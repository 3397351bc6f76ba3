import Foundation
import XCTest

/// Big files (issue 34, part 2): a file of 1 MiB or more that a backup reads gets a table of
/// its blocks' SHA-256 on its manifest line, made in the same pass as its own SHA-256 and
/// checked here by Python's hashlib against the file itself.
final class BigFileTests: EndToEndTestCase {
    // MARK: Helpers

    /// Prints, for each manifest line with a block table, its path, whether every digest is
    /// the SHA-256 of that block of the file (read from `/` + path) and how many there are;
    /// then what the summary declares and how many digests the lines hold.
    private static let tableCheck = """
    import base64, hashlib, json, subprocess, sys
    text = subprocess.run(["zstd", "-dc", sys.argv[1]], check=True, capture_output=True).stdout
    lines = [json.loads(line) for line in text.splitlines() if line]
    counted = 0
    for entry in lines[1:]:
        table = entry.get("blocks")
        if table is None:
            continue
        size, digests = table["size"], base64.b64decode(table["sha256_b64"])
        with open("/" + entry["path"], "rb") as f:
            data = f.read()
        expected = b"".join(hashlib.sha256(data[i:i + size]).digest() for i in range(0, len(data), size))
        whole = hashlib.sha256(data).hexdigest() == entry["sha256"]
        print(entry["path"].rsplit("/", 1)[1], size, len(digests) // 32, "ok" if digests == expected and whole else "WRONG")
        counted += len(digests) // 32
    print("declared", lines[0].get("block_digests", 0), "counted", counted)
    """

    /// What `tableCheck` says of the manifest of backup `id` in `dest`, line by line.
    private func checkedTables(_ id: String, dest: String, file: StaticString = #filePath, line: UInt = #line) throws -> [String] {
        let manifest = try XCTUnwrap(try names(in: dest).first { $0.contains(id) && $0.hasSuffix(".manifest.jsonl.zst") },
                                     file: file, line: line)
        let outcome = try toolSucceeds("python3", ["-c", BigFileTests.tableCheck, dest + "/" + manifest], file: file, line: line)
        return String(decoding: outcome.stdout, as: UTF8.self).split(separator: "\n").map(String.init)
    }

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
            "big 65536 51 ok", "declared 147 counted 147", "edge 65536 16 ok", "sparse 65536 80 ok",
        ], "every file of 1 MiB or more, and only those, has its table")

        // The next night one block of `big` changes in place: it is read again and has a new
        // table; the files not read point at the first backup and carry none.
        try overwrite(source + "/big", at: 700_000, with: Array(repeating: 0xAB, count: 10))
        let second = try backup([source], dest: dest)
        XCTAssertEqual(try checkedTables(second, dest: dest).sorted(), ["big 65536 51 ok", "declared 51 counted 51"])

        let target = path("out")
        assertExit(try run(["restore", second, "--dest", dest, "--target", target]), 0)
        try assertTreesEqual(expected: source, actual: restored(source, into: target))
        assertExit(try run(["verify", "--dest", dest]), 0)
    }
}
