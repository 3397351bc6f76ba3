import Foundation
import XCTest

/// Reading files ahead on several threads (`backup --readers N`): the archive, its manifest
/// and its checksums come out as they do from one reader, whatever the number of readers.
// test-tag(threads): files read ahead by 1, 2 and 8 reader threads
final class ReadAheadTests: EndToEndTestCase {
    // MARK: Same archive, any number of readers

    func testTheArchiveIsTheSameWithOneReaderOrMany() throws {
        let source = path("source")
        _ = try Fixtures.makeAwkwardTree(at: source)
        // Many small files and a few big ones, so reading runs ahead of writing and the
        // bytes read ahead reach their limit.
        for folder in 0..<7 { try FileManager.default.createDirectory(atPath: source + "/many/\(folder)", withIntermediateDirectories: true) }
        for index in 0..<300 {
            try RawFileSystem.writeFile(RawFileSystem.bytes(source + "/many/\(index % 7)/file-\(index).txt"),
                                        contents: Array(String(repeating: "line \(index)\n", count: index % 50 + 1).utf8))
        }
        for index in 0..<3 {
            try RawFileSystem.writeFile(RawFileSystem.bytes(source + "/big-\(index).bin"),
                                        contents: Fixtures.pseudoRandomBytes(count: 20 << 20, seed: UInt64(40 + index)))
        }
        var listings: [String] = []
        var checksums: [String] = []
        var manifests: [String] = []
        for readers in ["1", "2", "8"] {
            let dest = path("dest-\(readers)")
            try backup([source], dest: dest, options: ["--readers", readers])
            let archive = try onlyArchive(in: dest)
            // Every entry but Keepsake's own (they carry the backup's time).
            listings.append(try toolSucceeds("tar", ["--zstd", "-tvf", archive, "--full-time"]).stdoutText
                .split(separator: "\n").filter { !$0.contains(" .keepsake/") }.joined(separator: "\n"))
            checksums.append(try toolSucceeds("tar", ["--zstd", "-xOf", archive, ".keepsake/SHA256SUMS"]).stdoutText)
            // The entry lines; the summary line names the backup and its time.
            manifests.append(try sidecarText(try sidecarPath(in: dest)).split(separator: "\n").dropFirst().joined(separator: "\n"))
            let target = path("restored-\(readers)")
            // (--same-owner keeps the tree's owners and its setuid bit, as root.)
            assertExit(try run(["restore", "latest", "--dest", dest, "--target", target, "--same-owner"]), 0)
            try assertTreesEqual(expected: source, actual: restored(source, into: target))
        }
        XCTAssertFalse(manifests[0].isEmpty)
        for index in 1..<3 {
            let first = listings[0].split(separator: "\n"), other = listings[index].split(separator: "\n")
            XCTAssertEqual(first, other, "tar listing with \(["1", "2", "8"][index]) readers: "
                + "\(Set(first).symmetricDifference(Set(other)).sorted())")
            XCTAssertEqual(checksums[index], checksums[0], "SHA256SUMS with \(["1", "2", "8"][index]) readers")
            XCTAssertEqual(manifests[index], manifests[0], "manifest with \(["1", "2", "8"][index]) readers")
        }
    }

    func testABadReadersValueIsAUsageError() throws {
        for value in ["0", "65", "many"] {
            let outcome = try run(["backup", path("nothing"), "--dest", path("dest"), "--readers", value])
            assertExit(outcome, 2)
            XCTAssertTrue(outcome.stderrText.contains("--readers <n>"), outcome.stderrText)
        }
    }
}
