import Foundation
@testable import KeepsakeArchive
import KeepsakeSupport
import XCTest

@testable import BackupCore

/// Keepsake encodes pax headers itself; these tests hold it to the bytes libarchive 3.6's
/// pax writer produced for the same entries (the writer Keepsake used before), entry by
/// entry, and to the two places where it differs on purpose.
final class PaxHeaderEncoderTests: KeepsakeTestCase {
    // MARK: Byte for byte

    func testEdgeCasesEncodeAsLibarchiveDid() throws {
        try assertSameBytes(TarSamples.edgeCases())
    }

    func testRandomEntriesEncodeAsLibarchiveDid() throws {
        var random = SeededBytes(seed: 0x5eed_7a75)
        let samples = (0..<3000).map { _ in TarSamples.randomSample(&random) }
        try assertSameBytes(samples)
    }

    /// Sizes that need the size field's last byte, base 256 or a `size` record: the headers
    /// only (their content would be gigabytes).
    func testLargeSizesEncodeAsLibarchiveDid() throws {
        for size: Int64 in [(1 << 33) - 1, 1 << 33, (1 << 36) - 1, 1 << 36, 1 << 40, Int64.max / 2] {
            for regions: [ArchiveEntryHeader.SparseRegion] in [[], [.init(offset: 0, length: 10), .init(offset: size - 4096, length: 4096)]] {
                let header = ArchiveEntryHeader(path: Array("big/file".utf8), type: .file, size: size, mtimeSeconds: 1,
                                                sparseRegions: regions)
                let reference = try LibarchivePaxReference()
                try reference.writeHeader(header)
                var expected = reference.take()
                if !regions.isEmpty {
                    // libarchive writes a sparse map with the first content (here one byte of the
                    // first run, left out); ours comes with the header.
                    try reference.writeData([0])
                    expected += reference.take().dropLast()
                }
                reference.refuseFurtherOutput()
                var encoder = PaxHeaderEncoder()
                var encoded: [UInt8] = []
                _ = try encoder.encode(header, into: &encoded)
                if encoded != expected {
                    XCTFail("size \(size), \(regions.count) regions: \(firstDifference(encoded, expected))")
                }
            }
        }
    }

    // MARK: On purpose different

    /// A time between -1 and 0 seconds keeps its sign: libarchive wrote -0.5 s as "0.5".
    func testTimeJustBeforeTheEpochKeepsItsSign() throws {
        XCTAssertEqual(String(decoding: PaxHeaderEncoder.timeText(seconds: -1, nanoseconds: 500_000_000), as: UTF8.self), "-0.5")
        XCTAssertEqual(String(decoding: PaxHeaderEncoder.timeText(seconds: -100, nanoseconds: 250_000_000), as: UTF8.self), "-99.75")
        XCTAssertEqual(String(decoding: PaxHeaderEncoder.timeText(seconds: -3, nanoseconds: 0), as: UTF8.self), "-3")
        XCTAssertEqual(String(decoding: PaxHeaderEncoder.timeText(seconds: 7, nanoseconds: 1), as: UTF8.self), "7.000000001")
        let records = try recordsOf(ArchiveEntryHeader(path: Array("old".utf8), type: .file, mtimeSeconds: -1,
                                                       mtimeNanoseconds: 500_000_000))
        XCTAssertTrue(records.contains("14 mtime=-0.5\n"), records)
    }

    /// A name in CESU-8 (a surrogate pair as two three-byte sequences) is not UTF-8: it is
    /// stored as it is, marked binary, where libarchive rewrote it to UTF-8 (so the restored
    /// file had another name).
    func testCESU8NameIsStoredAsItIs() throws {
        let name = Array("cesu-".utf8) + [0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80]
        let records = try recordsOf(ArchiveEntryHeader(path: name, type: .file))
        XCTAssertTrue(records.hasPrefix("21 hdrcharset=BINARY\n"), records)
        var encoder = PaxHeaderEncoder()
        var encoded: [UInt8] = []
        _ = try encoder.encode(ArchiveEntryHeader(path: name, type: .file), into: &encoded)
        XCTAssertNotNil(encoded.firstRange(of: Array("path=".utf8) + name + [0x0a]), "the name's own bytes")
    }

    /// A sparse file whose name is not UTF-8 and is long keeps its name: libarchive wrote the
    /// shortened ustar name into `GNU.sparse.name`, which GNU tar and libarchive restore under.
    func testSparseFileKeepsANameThatIsNotUTF8() throws {
        let path = Array(String(repeating: "n", count: 110).utf8) + [0xff]
        let header = ArchiveEntryHeader(path: path, type: .file, size: 3000, sparseRegions: [.init(offset: 512, length: 100)])
        let records = try recordsOf(header)
        XCTAssertTrue(records.contains("GNU.sparse.name=" + String(repeating: "n", count: 110)), records)
        let (sink, writer) = try memoryWriter()
        try writer.writeHeader(header)
        try [UInt8](repeating: 1, count: 3000).withUnsafeBytes { try writer.writeData($0, path: path) }
        try writer.finish()
        let source = InMemorySource(bytes: sink.bytes)
        let reader = try ArchiveReader(source: source, name: "sparse-name.tar")
        let read = try XCTUnwrap(try reader.nextHeader())
        XCTAssertEqual(read.path, path)
        XCTAssertEqual(try reader.readContent(limit: 1 << 20).filter { $0 != 0 }.count, 100)
    }

    // MARK: The writer around the encoder

    func testWriterRefusesWhatATarCannotHold() throws {
        let writer = try ArchiveWriter(sink: DiscardingSink(), compression: .none, level: nil, threads: 1)
        for (header, what) in [(ArchiveEntryHeader(path: Array("s".utf8), type: .socket), "socket"),
                               (ArchiveEntryHeader(path: [0x61, 0, 0x62], type: .file), "NUL in the name"),
                               (ArchiveEntryHeader(path: Array("l".utf8), type: .symlink, linkTarget: [0x61, 0]), "NUL in the target"),
                               (ArchiveEntryHeader(path: Array("h".utf8), type: .hardlink, linkTarget: []), "hard link to nothing"),
                               (ArchiveEntryHeader(path: [], type: .file), "no name")] {
            XCTAssertThrowsError(try writer.writeHeader(header), what) { error in
                guard case .write? = error as? ArchiveError else { return XCTFail("\(what): \(error)") }
            }
        }
    }

    func testWriterRefusesMoreContentThanTheHeaderSaid() throws {
        let writer = try ArchiveWriter(sink: DiscardingSink(), compression: .none, level: nil, threads: 1)
        try writer.writeHeader(ArchiveEntryHeader(path: Array("four".utf8), type: .file, size: 4))
        try [UInt8]("abc".utf8).withUnsafeBytes { try writer.writeData($0, path: Array("four".utf8)) }
        XCTAssertThrowsError(try [UInt8]("de".utf8).withUnsafeBytes { try writer.writeData($0, path: Array("four".utf8)) }) { error in
            XCTAssertTrue("\(error)".contains("four") && "\(error)".contains("4 bytes"), "\(error)")
        }
    }

    func testWriterRefusesEntriesAfterTheEnd() throws {
        let writer = try ArchiveWriter(sink: DiscardingSink(), compression: .none, level: nil, threads: 1)
        try writer.finish()
        XCTAssertThrowsError(try writer.writeHeader(ArchiveEntryHeader(path: Array("late".utf8), type: .file, size: 1))) { error in
            XCTAssertTrue("\(error)".contains("late"), "\(error)")
        }
        XCTAssertThrowsError(try [UInt8]("x".utf8).withUnsafeBytes { try writer.writeData($0, path: Array("late".utf8)) })
    }

    /// Content that stops short is stored as zeros to the size the header gave, as
    /// libarchive did, so the archive stays readable; the same for a sparse file's runs.
    func testContentThatStopsShortIsPaddedWithZeros() throws {
        let dense = ArchiveEntryHeader(path: Array("short".utf8), type: .file, size: 1000)
        let sparse = ArchiveEntryHeader(path: Array("holes".utf8), type: .file, size: 300_000,
                                        sparseRegions: [.init(offset: 100_000, length: 100), .init(offset: 299_990, length: 10)])
        for (header, written) in [(dense, 10), (sparse, 100_050), (sparse, 0)] {
            let reference = try LibarchivePaxReference()
            let (sink, writer) = try memoryWriter()
            let content = [UInt8](repeating: 0x41, count: written)
            try reference.writeHeader(header)
            try writer.writeHeader(header)
            if written > 0 {
                try reference.writeData(content)
                try content.withUnsafeBytes { try writer.writeData($0, path: header.path) }
            }
            try reference.finish()
            try writer.finish()
            if written > 0 {
                XCTAssertEqual(sink.bytes, reference.take(), "\(PathBytes.display(header.path)) after \(written) bytes")
            } else {
                // libarchive wrote a sparse map only with content, so its archive was short; ours has it.
                XCTAssertEqual(sink.bytes.count % 512, 0)
                XCTAssertGreaterThan(sink.bytes.count, reference.take().count)
            }
            XCTAssertEqual(writer.position, Int64(sink.bytes.count))
        }
    }

    // MARK: Comparing

    /// Writes every sample through both writers and compares, entry by entry, then the end.
    private func assertSameBytes(_ samples: [TarSamples.Sample], file: StaticString = #filePath, line: UInt = #line) throws {
        let reference = try LibarchivePaxReference()
        let (sink, writer) = try memoryWriter()
        var mismatches = 0
        for (index, sample) in samples.enumerated() {
            try reference.writeHeader(sample.header)
            try reference.writeData(sample.content)
            try reference.finishEntry()
            try writer.writeHeader(sample.header)
            try sample.content.withUnsafeBytes { try writer.writeData($0, path: sample.header.path) }
            try writer.finishEntry()
            try writer.flush()
            let expected = reference.take()
            let actual = sink.take()
            if actual != expected {
                mismatches += 1
                if mismatches <= 5 {
                    XCTFail("entry \(index) \(describe(sample.header)): \(firstDifference(actual, expected))", file: file, line: line)
                }
            }
        }
        try reference.finish()
        try writer.finish()
        XCTAssertEqual(sink.take(), reference.take(), "end of archive", file: file, line: line)
        XCTAssertEqual(mismatches, 0, "entries that differ", file: file, line: line)
    }

    private func firstDifference(_ actual: [UInt8], _ expected: [UInt8]) -> String {
        let index = (0..<min(actual.count, expected.count)).first { actual[$0] != expected[$0] } ?? min(actual.count, expected.count)
        let around = { (bytes: [UInt8]) in
            String(decoding: bytes[max(0, index - 40)..<min(bytes.count, index + 40)].map { $0 == 0 ? UInt8(ascii: "~") : $0 },
                   as: UTF8.self)
        }
        return "\(actual.count) bytes against \(expected.count), first difference at \(index) (block \(index / 512), offset \(index % 512)):\n ours: \(around(actual))\n libarchive: \(around(expected))"
    }

    private func describe(_ header: ArchiveEntryHeader) -> String {
        "\(header.type) \(PathBytes.display(header.path)) (\(header.path.count) bytes) link \(header.linkTarget.map(PathBytes.display) ?? "-") size \(header.size) uid \(header.uid) gid \(header.gid) user \(header.userName ?? "-") group \(header.groupName ?? "-") mtime \(header.mtimeSeconds).\(header.mtimeNanoseconds) rdev \(header.rdev) xattrs \(header.xattrs.count) regions \(header.sparseRegions)"
    }

    private func recordsOf(_ header: ArchiveEntryHeader) throws -> String {
        var encoder = PaxHeaderEncoder()
        var encoded: [UInt8] = []
        _ = try encoder.encode(header, into: &encoded)
        guard encoded.count > 512, encoded[156] == UInt8(ascii: "x") else { return "" }
        return String(decoding: encoded[512..<(encoded.count - 512)].filter { $0 != 0 }, as: UTF8.self)
    }

    private func memoryWriter() throws -> (InMemorySink, ArchiveWriter) {
        let sink = InMemorySink()
        return (sink, try ArchiveWriter(sink: sink, compression: .none, level: nil, threads: 1))
    }
}
