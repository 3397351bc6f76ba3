import Foundation
import XCTest
@testable import BackupCore

/// The fast manifest line decoder must agree with the general JSON path on every line:
/// the same entry, or the same error, or it hands the line over.
final class ManifestLineDecoderTests: KeepsakeTestCase {
    // MARK: Helpers

    private func fast(_ line: String) throws -> ManifestEntry? {
        let bytes = Array(line.utf8)
        return try bytes.withUnsafeBufferPointer { try ManifestLineDecoder.decode($0, lineNumber: 7) }
    }

    private func general(_ line: String) throws -> ManifestEntry {
        let bytes = Array(line.utf8)
        let value = try bytes.withUnsafeBufferPointer { try JSONParser.parse($0) }
        return try ManifestEntry(json: value, line: 7)
    }

    private func message(_ body: () throws -> Any?) -> String? {
        do {
            _ = try body()
            return nil
        } catch {
            return "\(error)"
        }
    }

    // MARK: Agreement

    func testLinesKeepsakeWritesDecodeFastAndAlike() throws {
        var entries = [
            ManifestEntry(path: Array("home/ann/notes.txt".utf8), type: .file, size: 1234, mode: 0o640, uid: 1000, gid: 100,
                          userName: "ann", groupName: "users", mtimeNanoseconds: 1_700_000_000_123_456_789,
                          ctimeNanoseconds: -5, inode: UInt64.max, device: 65024,
                          sha256: String(repeating: "ab", count: 32), storedIn: BackupID("20261129T162535Z-73787fa1")),
            ManifestEntry(path: Array("srv/link".utf8), type: .symlink, linkTarget: Array("../target dir/é".utf8)),
            ManifestEntry(path: Array("dev/null".utf8), type: .characterDevice, mode: 0o666, rdev: 259),
            ManifestEntry(path: Array("a/b".utf8), type: .hardlink, size: 9, linkTarget: Array("a/c".utf8),
                          sha256: String(repeating: "0", count: 64)),
            ManifestEntry(path: Array("d".utf8), type: .directory, mode: 0o1777, mtimeNanoseconds: Int64.min),
        ]
        entries[0].archiveOffset = 1_536
        entries[0].archiveLength = 2_048
        for entry in entries {
            var writer = JSONWriter()
            entry.write(to: &writer)
            let line = String(decoding: writer.bytes, as: UTF8.self)
            let decoded = try XCTUnwrap(try fast(line), "a line Keepsake writes must take the fast path: \(line)")
            XCTAssertEqual(decoded, entry, line)
            XCTAssertEqual(decoded, try general(line), line)
        }
    }

    func testUnusualLinesAreHandedOver() throws {
        let unusual = [
            #"{"path":"a\"b","type":"file"}"#,                        // an escape
            #"{"path_b64":"/w==","type":"file"}"#,                      // a name that is not UTF-8
            #"{"path":"a","type":"file","future_field":true}"#,         // a key it does not know
            #"{"path":"a","type":"file","size":1.0}"#,                  // a fraction
            #"{"path":"a","type":"file","size":1e3}"#,                  // an exponent
            #"{"path":"a","type":"file","path":"b"}"#,                  // a repeated key
            #"{ "path":"a","type":"file"}"#,                            // white space
            #"{"path":"a","type":"file","size":007}"#,                  // leading zeros (not JSON)
            #"{"path":"a","type":"file","inode":99999999999999999999}"#, // too big
            "[1,2]",
            "{}",
            #"{"path":"a\\b","type":"file"}"#,                       // an escaped backslash
            #"{"path":"a\u0041","type":"file"}"#,                      // a \u escape
            "{\"path\":\"a\tb\",\"type\":\"file\"}",                   // a raw control character
            "{\"path\":\"a\u{0}b\",\"type\":\"file\"}",                // a raw NUL
            #"{"path":"a","type":"file"#,                               // a line cut short
            #"{"path":"a"#,                                             // a string that never ends
        ]
        for line in unusual {
            XCTAssertNil(try fast(line), line)
        }
        // Bytes that are not UTF-8 inside a string are the general parser's to refuse.
        let notUTF8 = Array(#"{"path":"a"#.utf8) + [0xFF] + Array(#"b","type":"file"}"#.utf8)
        XCTAssertNil(try notUTF8.withUnsafeBufferPointer { try ManifestLineDecoder.decode($0, lineNumber: 7) })
        // Valid UTF-8 beyond ASCII is read here, whole.
        XCTAssertEqual(try fast(#"{"path":"é/ü","type":"file"}"#)?.path, Array("é/ü".utf8))
        // Those the general parser accepts, it reads as before.
        XCTAssertEqual(try general(unusual[0]).path, Array("a\"b".utf8))
        XCTAssertEqual(try general(unusual[2]).path, Array("a".utf8))
    }

    func testInvalidValuesGiveTheSameMessages() {
        let invalid = [
            #"{"type":"file"}"#,
            #"{"path":"","type":"file"}"#,
            #"{"path":"a","type":"fil"}"#,
            #"{"path":"a"}"#,
            #"{"path":"a","type":"file","size":-1}"#,
            #"{"path":"a","type":"file","mode":"0999"}"#,
            #"{"path":"a","type":"file","mode":"17777"}"#,
            #"{"path":"a","type":"file","uid":-1}"#,
            #"{"path":"a","type":"file","gid":4294967296}"#,
            #"{"path":"a","type":"file","sha256":"ABCD"}"#,
            #"{"path":"a","type":"file","in":"yesterday"}"#,
            #"{"path":"a","type":"symlink"}"#,
            #"{"path":"a","type":"file","at":5}"#,
            #"{"path":"a","type":"file","len":5}"#,
            #"{"path":"a","type":"file","at":-1,"len":5}"#,
            #"{"path":"a","type":"file","at":1,"len":0}"#,
        ]
        for line in invalid {
            let fastMessage = message { try self.fast(line) }
            XCTAssertNotNil(fastMessage, "the fast path must refuse \(line)")
            XCTAssertEqual(fastMessage, message { try self.general(line) }, line)
        }
    }

    func testWholeManifestParsesInPartsWithRightLineNumbers() throws {
        // Over the parallel threshold: 4 MiB of lines, one of them broken near the end.
        let id = try XCTUnwrap(BackupID("20261129T162535Z-73787fa1"))
        let summary = BackupSummary(id: id, created: Date(timeIntervalSince1970: 1_795_919_400), host: "h", user: "u",
                                    sources: ["/x"], tags: [], compression: .zstd, level: 3, toolVersion: "test")
        var text = summary.json.serialized() + "\n"
        let count = 40_000
        for index in 0..<count {
            text += #"{"path":"data/file-\#(index).txt","type":"file","size":\#(index),"mode":"0644","uid":0,"gid":0,"#
                + #""mtime_ns":1,"ctime_ns":1,"inode":\#(index),"dev":1}"# + "\n"
        }
        XCTAssertGreaterThan(text.utf8.count, 4 << 20, "big enough to be parsed in parts")
        let manifest = try Manifest.parse(Array(text.utf8))
        XCTAssertEqual(manifest.entries.count, count)
        XCTAssertEqual(manifest.entries.map(\.size), (0..<count).map(Int64.init), "entries keep their order")

        let broken = text + #"{"path":"late","type":"nope"}"# + "\n"
        XCTAssertThrowsError(try Manifest.parse(Array(broken.utf8))) { error in
            XCTAssertEqual(error as? ManifestError, .invalidLine(line: count + 2, reason: "missing or unknown 'type'"))
        }
    }

    // MARK: Keeping some entries

    func testPeekReadsPathAndTypeOfLinesKeepsakeWrites() {
        func peek(_ line: String) -> (String, EntryType)? {
            let bytes = Array(line.utf8)
            return bytes.withUnsafeBufferPointer { buffer in
                ManifestLineDecoder.peek(buffer).map { (String(decoding: $0.path, as: UTF8.self), $0.type) }
            }
        }
        var writer = JSONWriter()
        ManifestEntry(path: Array("home/ann/é notes.txt".utf8), type: .file, size: 3).write(to: &writer)
        let written = String(decoding: writer.bytes, as: UTF8.self)
        XCTAssertEqual(peek(written)?.0, "home/ann/é notes.txt")
        XCTAssertEqual(peek(written)?.1, .file)
        XCTAssertEqual(peek(#"{"path":"a","type":"dir","size":0}"#)?.1, .directory)
        // Anything else is left to the full decoder.
        XCTAssertNil(peek(#"{"path":"a\"b","type":"file"}"#), "an escape in the path")
        XCTAssertNil(peek(#"{"path_b64":"/w==","type":"file"}"#))
        XCTAssertNil(peek(#"{"type":"file","path":"a"}"#), "another key order")
        XCTAssertNil(peek(#"{"path":"a","type":"folder"}"#), "an unknown type")
        XCTAssertNil(peek(#"{"path":"a"#), "cut short")
        XCTAssertNil(peek(""))
    }

    func testParsingWithAFilterKeepsExactlyTheAcceptedEntries() throws {
        let entries = [
            ManifestEntry(path: Array("keep/a.txt".utf8), type: .file, size: 1),
            ManifestEntry(path: Array("drop/b.txt".utf8), type: .file, size: 2),
            ManifestEntry(path: Array("keep/quo\"te".utf8), type: .file, size: 3),
            ManifestEntry(path: Array("drop/quo\"te".utf8), type: .file, size: 4),
            ManifestEntry(path: [0x6B, 0x65, 0x65, 0x70, 0x2F, 0xFF], type: .file, size: 5),
            ManifestEntry(path: Array("drop/link".utf8), type: .hardlink, linkTarget: Array("drop/b.txt".utf8)),
        ]
        var writer = JSONWriter()
        writer.value(BackupSummary(id: BackupID("20261129T162535Z-73787fa1")!, created: Date(timeIntervalSince1970: 0),
                                   host: "h", user: "u", sources: ["/"], tags: [], compression: .zstd, level: 3,
                                   fileCount: 5, toolVersion: "test").json)
        writer.endLine()
        for entry in entries {
            entry.write(to: &writer)
            writer.endLine()
        }
        let kept = try Manifest.parse(writer.bytes) { path, type in
            type == .hardlink || Array(path).starts(with: Array("keep/".utf8))
        }
        XCTAssertEqual(kept.entries.map(\.size), [1, 3, 5, 0])
        XCTAssertEqual(try Manifest.parse(writer.bytes).entries.count, entries.count)

        // Lines left out are not decoded: damage there does not stop the parse.
        var damaged = writer.bytes
        let text = String(decoding: damaged, as: UTF8.self)
        let line = try XCTUnwrap(text.range(of: #"{"path":"drop/b.txt","type":"file","size":2"#))
        damaged[text.utf8.distance(from: text.utf8.startIndex, to: line.upperBound) - 2] = UInt8(ascii: "#") // the ':' of "size"
        XCTAssertThrowsError(try Manifest.parse(damaged))
        XCTAssertEqual(try Manifest.parse(damaged) { path, _ in Array(path).starts(with: Array("keep/".utf8)) }.entries.count, 3)
    }
}
