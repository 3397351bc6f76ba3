import Foundation
@testable import KeepsakeArchive
@testable import KeepsakeStorage
import KeepsakeSupport
import XCTest

@testable import BackupCore

/// The seekable zstd writer and the two readers, on real files, checked against the `zstd`
/// command-line tool.
// test-tag(threads): the seekable zstd work pool and parallel frame decoder
final class SeekableZstdTests: KeepsakeTestCase {
    // MARK: Fixtures

    private var folder = ""

    override func setUpWithError() throws {
        folder = NSTemporaryDirectory() + "keepsake-seekable-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// A file sink, so that the real `zstd` tool can read what was written.
    private final class FileSink: ByteSink {
        let handle: FileHandle
        init(path: String) throws {
            _ = FileManager.default.createFile(atPath: path, contents: nil)
            handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        }
        func write(_ buffer: UnsafeRawBufferPointer) throws { try handle.write(contentsOf: Data(buffer)) }
    }

    /// Text-like and random bytes mixed, so frames compress differently.
    private func sample(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var state: UInt64 = 0x1234_5678
        for index in 0..<count {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            bytes[index] = (index / 50_000) % 2 == 0 ? UInt8(97 + (index % 26)) : UInt8(truncatingIfNeeded: state >> 33)
        }
        return bytes
    }

    /// Writes `data` in uneven pieces with small frames and returns the file's path and table.
    private func writeStream(_ data: [UInt8], frameSize: Int = 64 << 10, workers: Int = 2) throws -> (String, SeekTable) {
        let path = folder + "/stream.zst"
        let sink = try FileSink(path: path)
        let writer = try SeekableZstdSink(downstream: sink, level: 3, workers: workers, frameSize: frameSize)
        var offset = 0
        var step = 1
        while offset < data.count {
            let end = min(data.count, offset + step)
            try data[offset..<end].withUnsafeBytes { try writer.write($0) }
            offset = end
            step = step * 3 % 200_003 + 1
        }
        try writer.finish()
        try sink.handle.close()
        return (path, writer.seekTable)
    }

    private func run(_ arguments: [String]) throws -> (status: Int32, output: Data) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, output)
    }

    private func readAll(_ source: ByteSource) throws -> [UInt8] {
        try source.readAll(limit: 1 << 30)
    }

    /// Cuts the stream at `path` (described by `table`) in the middle of frame `index`;
    /// returns that frame.
    private func cut(_ path: String, table: SeekTable, insideFrame index: Int) -> SeekTable.Frame {
        let frame = table.frames[index]
        XCTAssertEqual(truncate(path, off_t(frame.compressedOffset + Int64(frame.compressedSize / 2))), 0)
        return frame
    }

    /// Reads `source` 10,000 bytes at a time until it ends or throws: what it handed out,
    /// and what it threw.
    private func readUntilFailure(_ source: ByteSource) -> (delivered: [UInt8], failure: Error?) {
        var delivered: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 10_000)
        do {
            while true {
                let count = try buffer.withUnsafeMutableBytes { try source.read(into: $0) }
                if count == 0 { return (delivered, nil) }
                delivered += buffer[0..<count]
            }
        } catch {
            return (delivered, error)
        }
    }

    // MARK: Writing

    func testZstdToolReadsTheFramesAndSkipsTheTable() throws {
        let data = sample(1_000_000)
        let (path, table) = try writeStream(data)
        XCTAssertEqual(table.frames.count, (data.count + 65_535) / 65_536)
        XCTAssertEqual(table.decompressedSize, Int64(data.count))
        let decoded = try run(["zstd", "-dc", path])
        XCTAssertEqual(decoded.status, 0)
        XCTAssertEqual(Array(decoded.output), data)
        XCTAssertEqual(try run(["zstd", "-t", "-q", path]).status, 0)
    }

    func testSeekTableIsReadBackFromTheEnd() throws {
        let (path, written) = try writeStream(sample(300_000))
        let file = try FileByteSource(path: path)
        defer { file.close() }
        let table = try XCTUnwrap(try SeekTable.read(streamSize: try file.size()) { try file.bytes(at: $0, count: $1) })
        XCTAssertEqual(table, written)
        XCTAssertEqual(table.frameIndex(containing: 0), 0)
        XCTAssertEqual(table.frameIndex(containing: 65_536), 1)
        XCTAssertEqual(table.frameIndex(containing: 299_999), 4)
        XCTAssertNil(table.frameIndex(containing: 300_000))
    }

    func testGarbageIsNoSeekTable() throws {
        let junk = sample(5_000)
        XCTAssertNil(SeekTable.read(streamSize: Int64(junk.count)) { Array(junk[Int($0)..<(Int($0) + $1)]) })
        // A footer that claims more frames than the stream could hold.
        var forged = [UInt8](repeating: 0, count: 40)
        forged.replaceSubrange(31..<40, with: [0xFF, 0xFF, 0xFF, 0x00, 0x00, 0xB1, 0xEA, 0x92, 0x8F])
        XCTAssertNil(SeekTable.read(streamSize: Int64(forged.count)) { Array(forged[Int($0)..<(Int($0) + $1)]) })
    }

    // MARK: Reading front to back

    func testParallelSourceDecodesEveryFrameInOrder() throws {
        let data = sample(2_000_000)
        let (path, _) = try writeStream(data, workers: 3)
        let source = try DecodedArchiveSource.wrap(try FileByteSource(path: path), name: "stream.zst")
        XCTAssertTrue(source is ParallelZstdSource)
        XCTAssertEqual(try readAll(source), data)
    }

    func testOneLongFrameFromTheZstdToolStreams() throws {
        let data = sample(3_000_000)
        let plain = folder + "/plain"
        try Data(data).write(to: URL(fileURLWithPath: plain))
        XCTAssertEqual(try run(["zstd", "-q", "-3", "--no-content-size", plain, "-o", plain + ".zst"]).status, 0)
        XCTAssertEqual(try run(["zstd", "-q", "-3", plain, "-o", plain + ".sized.zst"]).status, 0)
        for name in [plain + ".zst", plain + ".sized.zst"] {
            let source = try DecodedArchiveSource.wrap(try FileByteSource(path: name), name: name)
            XCTAssertEqual(try readAll(source), data, name)
        }
    }

    func testTruncatedStreamIsDamaged() throws {
        let (path, _) = try writeStream(sample(500_000))
        let size = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        XCTAssertEqual(truncate(path, off_t(size / 2)), 0)
        let source = try DecodedArchiveSource.wrap(try FileByteSource(path: path), name: "cut.zst")
        XCTAssertThrowsError(try readAll(source)) { error in
            guard case ArchiveError.damaged(let archive, let reason) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(archive, "cut.zst")
            XCTAssertTrue(reason.contains("truncated"), reason)
        }
    }

    /// A stream cut inside a later frame hands out every whole frame before the cut, then
    /// throws once, saying which frame could not be read.
    func testTruncatedStreamHandsOutTheFramesBeforeTheCut() throws {
        let data = sample(500_000)
        let (path, table) = try writeStream(data)
        let cutFrame = 5
        let frame = cut(path, table: table, insideFrame: cutFrame)
        let source = try DecodedArchiveSource.wrap(try FileByteSource(path: path), name: "cut.zst")
        let (delivered, failure) = readUntilFailure(source)
        guard case ArchiveError.damaged(_, let reason)? = failure else { return XCTFail("\(String(describing: failure))") }
        XCTAssertEqual(reason, "it ends inside frame \(cutFrame) (truncated)")
        XCTAssertFalse(reason.contains("damaged or not an archive"), reason)
        XCTAssertEqual(delivered, Array(data[0..<Int(frame.decompressedOffset)]), "every frame before the cut, whole")
        XCTAssertEqual((source as? ParallelZstdSource)?.unreadableFrame, cutFrame)
    }

    /// The reader's own damage is thrown as it is, not wrapped in a second "is damaged".
    func testDamageMetOpeningTheReaderIsNotWrappedAgain() throws {
        let (path, _) = try writeStream(sample(500_000))
        XCTAssertEqual(truncate(path, 100), 0)
        XCTAssertThrowsError(try ArchiveReader(source: try FileByteSource(path: path), name: "cut.tar.zst")) { error in
            let text = "\(error)"
            XCTAssertEqual(text.components(separatedBy: "is damaged or not an archive").count, 2, text)
            XCTAssertEqual(text, "cut.tar.zst is damaged or not an archive: it ends inside frame 0 (truncated)")
        }
    }

    func testFlippedByteIsDamaged() throws {
        let (path, table) = try writeStream(sample(500_000))
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        let offset = UInt64(table.frames[2].compressedOffset) + UInt64(table.frames[2].compressedSize / 2)
        try handle.seek(toOffset: offset)
        let byte = try XCTUnwrap(try handle.read(upToCount: 1)).first ?? 0
        try handle.seek(toOffset: offset)
        try handle.write(contentsOf: [byte ^ 0x55])
        try handle.close()
        let source = try DecodedArchiveSource.wrap(try FileByteSource(path: path), name: "flipped.zst")
        XCTAssertThrowsError(try readAll(source)) { error in
            guard case ArchiveError.damaged = error else { return XCTFail("\(error)") }
        }
    }

    /// The seek table carries no checksum of its own: every single-bit flip in it must
    /// still be caught, by checking it against the frames before it (the decoded bytes stay
    /// whole; `verify` reports the problem through `ArchiveReader.readToEnd`).
    // test-tag(plain-only): single-threaded, 83 s under TSan; the seek table's reader is in the archive fuzz target, built with ASan
    func testEveryFlipInTheSeekTableIsDamage() throws {
        let data = sample(300_000)
        let (path, table) = try writeStream(data)
        let original = try Data(contentsOf: URL(fileURLWithPath: path))
        let tableStart = Int(table.compressedSize)
        XCTAssertEqual(original.count - tableStart, 8 + table.frames.count * 8 + 9)
        for offset in tableStart..<original.count {
            for bit in [0, 3, 7] {
                var damaged = original
                damaged[offset] ^= UInt8(1 << bit)
                let file = folder + "/flipped.zst"
                try damaged.write(to: URL(fileURLWithPath: file))
                let source = try DecodedArchiveSource.wrap(try FileByteSource(path: file), name: "flipped.zst")
                // The frames are intact, so reading goes on; the problem is kept for verify.
                do {
                    let decoded = try readAll(source)
                    XCTAssertEqual(decoded, data)
                    XCTAssertNotNil((source as? ParallelZstdSource)?.seekTableProblem,
                                    "a flip of bit \(bit) at table byte \(offset - tableStart) went unnoticed")
                } catch ArchiveError.damaged {
                    // Also fine: a flip in the frame's size can make it end early or late.
                }
            }
        }
    }

    func testNonZstdPassesThroughUnchanged() throws {
        let data = Array("not compressed at all\n".utf8)
        let plain = folder + "/plain.txt"
        try Data(data).write(to: URL(fileURLWithPath: plain))
        let source = try DecodedArchiveSource.wrap(try FileByteSource(path: plain), name: plain)
        XCTAssertEqual(try readAll(source), data)
    }

    // MARK: Reading ranges

    func testRangedSourceReadsOnlyTheFramesItNeeds() throws {
        let data = sample(1_000_000)
        let (path, table) = try writeStream(data)
        let file = try FileByteSource(path: path)
        let ranges: [Range<Int64>] = [70_000..<70_100, 65_000..<66_000, 900_000..<900_010]
        let source = RangedZstdSource(source: file, table: table, ranges: ranges, name: "stream.zst", workers: 2)
        let output = try readAll(source)
        // Merged and sorted, then the two zero blocks that end a tar stream.
        var expected = Array(data[65_000..<66_000]) + Array(data[70_000..<70_100]) + Array(data[900_000..<900_010])
        expected += [UInt8](repeating: 0, count: 1024)
        XCTAssertEqual(output, expected)
        let needed = [0, 1, 13].reduce(0) { $0 + table.frames[$1].compressedSize }
        XCTAssertEqual(source.compressedBytesRead, Int64(needed), "frames 0, 1 and 13 only")
    }

    /// Lent, the ranges come where they lie in their frames, the same bytes as read; the
    /// trailer's zeros come in the scratch, in as many pieces as it takes.
    func testRangedSourceLendsTheSameBytesAsItReads() throws {
        let data = sample(1_000_000)
        let (path, table) = try writeStream(data)
        let ranges: [Range<Int64>] = [10_000..<300_000, 500_000..<500_001, 640_000..<1_000_000]
        let expected = ranges.flatMap { data[Int($0.lowerBound)..<Int($0.upperBound)] } + [UInt8](repeating: 0, count: 1024)
        let source = RangedZstdSource(source: try FileByteSource(path: path), table: table, ranges: ranges,
                                      name: "stream.zst", workers: 2)
        var lent: [UInt8] = []
        var scratch = [UInt8](repeating: 0xFF, count: 300)
        var pieces = 0
        while true {
            let piece = try scratch.withUnsafeMutableBytes { Array(try source.lend(scratch: $0)) }
            if piece.isEmpty { break }
            lent += piece
            pieces += 1
        }
        XCTAssertEqual(lent.count, expected.count)
        XCTAssertTrue(lent == expected, "lent bytes are the ranges, then the trailer")
        XCTAssertGreaterThan(pieces, 5, "a piece per frame, not one buffer's worth")
        let read = try readAll(RangedZstdSource(source: try FileByteSource(path: path), table: table, ranges: ranges,
                                                name: "stream.zst", workers: 1))
        XCTAssertTrue(read == expected, "read bytes are the same")
    }

    /// A ranged read of an archive cut inside a frame it needs hands out what comes before
    /// that frame, then names it, as the whole-stream reader does.
    func testRangedSourceCutInsideAFrameNamesIt() throws {
        let data = sample(500_000)
        let (path, table) = try writeStream(data)
        let cutFrame = 5
        let frame = cut(path, table: table, insideFrame: cutFrame)
        let start = table.frames[2].decompressedOffset + 100
        let source = RangedZstdSource(source: try FileByteSource(path: path), table: table, ranges: [start..<400_000],
                                      name: "cut.zst", workers: 2)
        let (delivered, failure) = readUntilFailure(source)
        guard case ArchiveError.damaged(let archive, let reason)? = failure else { return XCTFail("\(String(describing: failure))") }
        XCTAssertEqual(archive, "cut.zst")
        XCTAssertEqual(reason, "it ends inside frame \(cutFrame) (truncated)")
        // Compared as a count and a flag: a failure here must not print half a megabyte.
        let wanted = Array(data[Int(start)..<Int(frame.decompressedOffset)])
        XCTAssertEqual(delivered.count, wanted.count, "every byte before the frame cut")
        XCTAssertTrue(delivered == wanted, "the bytes before the frame cut, as written")
        XCTAssertEqual(source.unreadableFrame, cutFrame)
    }

    func testRangesAreMergedAndClipped() {
        XCTAssertEqual(RangedZstdSource.merged([10..<20, 0..<5, 5..<8, 15..<30, 90..<200], limit: 100), [0..<8, 10..<30, 90..<100])
        XCTAssertEqual(RangedZstdSource.merged([-5..<3, 200..<300], limit: 100), [0..<3])
    }

    // MARK: Data that does not shrink

    /// Compresses one frame of `input` with a context, adaptively or not.
    private func frame(_ input: [UInt8], level: Int32, fastLevel: Int32?) throws -> [UInt8] {
        let context = try ZstdContext(.compression, level: level)
        var output = [UInt8](repeating: 0, count: ZstdContext.compressBound(input.count))
        let size = try input.withUnsafeBytes { source in
            try output.withUnsafeMutableBytes { target in
                try (fastLevel.map { context.compress(source, into: target, level: level, fastLevel: $0) }
                    ?? context.compress(source, into: target)).get()
            }
        }
        return Array(output[0..<size])
    }

    func testFramesThatDoNotShrinkAreStoredAtTheFastLevelAndOthersAsBefore() throws {
        var generator = SystemRandomNumberGenerator()
        let random = (0..<(1 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let text = Array(String(repeating: "the quick brown fox jumps over the lazy dog ", count: 24_000).utf8)
        let fast = SeekableZstdSink.incompressibleLevel
        // Random bytes: the fast level's frame, byte for byte (and it still round-trips).
        XCTAssertEqual(try frame(random, level: 3, fastLevel: fast), try frame(random, level: fast, fastLevel: nil))
        // Text, and text with random bytes in the middle only: the normal level's frame.
        XCTAssertEqual(try frame(text, level: 3, fastLevel: fast), try frame(text, level: 3, fastLevel: nil))
        let mixed = Array(text[0..<400_000]) + Array(random[0..<300_000]) + Array(text[400_000..<800_000])
        XCTAssertEqual(try frame(mixed, level: 3, fastLevel: fast), try frame(mixed, level: 3, fastLevel: nil))
        // A context that chose the fast level goes back to its own for the next frame.
        let context = try ZstdContext(.compression, level: 3)
        var output = [UInt8](repeating: 0, count: ZstdContext.compressBound(text.count))
        let sizes = try [random, text].map { input in
            try input.withUnsafeBytes { source in
                try output.withUnsafeMutableBytes { try context.compress(source, into: $0, level: 3, fastLevel: fast).get() }
            }
        }
        XCTAssertEqual(sizes[1], try frame(text, level: 3, fastLevel: nil).count)
        // The whole stream decodes with the zstd tool.
        let path = folder + "/adaptive.zst"
        let sink = try FileSink(path: path)
        let writer = try SeekableZstdSink(downstream: sink, level: 3, workers: 2, frameSize: 256 << 10, adaptive: true)
        let data = text + random + text
        try data.withUnsafeBytes { try writer.write($0) }
        try writer.finish()
        try sink.handle.close()
        let decoded = try run(["zstd", "-dc", path])
        XCTAssertEqual(decoded.status, 0)
        XCTAssertEqual(Array(decoded.output), data)
    }
}
