import Foundation
import XCTest
@testable import BackupCore

/// The fast manifest line decoder must agree with the general JSON path on every line:
/// the same entry, or the same error, or it hands the line over.
final class ManifestLineDecoderTests: XCTestCase {
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
        ]
        for line in unusual {
            XCTAssertNil(try fast(line), line)
        }
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
}
