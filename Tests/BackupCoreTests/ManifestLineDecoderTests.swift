import Foundation
@testable import KeepsakeArchive
import KeepsakeJSON
@testable import KeepsakeModel
import KeepsakeSupport
import XCTest

@testable import BackupCore

/// The fast manifest line decoder must agree with the general JSON path on every line:
/// the same entry, or the same error, or it hands the line over.
// test-tag(threads): manifest lines decoded in parallel
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

    func testLinesWithSeveralFaultsGiveTheSameFirstMessage() {
        // Each parser used to throw at the first fault it met, in its own order: these lines
        // got different messages (the decoder named the key it read first).
        let cases = [
            (#"{"path":"a","type":"file","sha256":"ABCD","mode":"0999"}"#, "'mode' must be octal like \"0644\""),
            (#"{"in":"yesterday","path":"","type":"file"}"#, "empty 'path'"),
            (#"{"path":"a","type":"file","uid":-1,"at":5}"#, "missing 'len'"),
            (#"{"path":"a","type":"fil","size":-1,"mode":"9"}"#, "missing or unknown 'type'"),
            (#"{"path":"a","type":"symlink","gid":-1}"#, "'gid' is out of range"),
        ]
        for (line, reason) in cases {
            let expected = "\(ManifestError.invalidLine(line: 7, reason: reason))"
            XCTAssertEqual(message { try self.fast(line) }, expected, line)
            XCTAssertEqual(message { try self.general(line) }, expected, line)
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

    // MARK: Many lines, stored straight from the line

    /// Seeded entries of every shape Keepsake writes: owners that change and come back,
    /// folders left and met again, names beyond ASCII, links, devices, digests, holders,
    /// archive locations, numbers at their limits.
    private func variedEntries(_ count: Int, seed: UInt64) -> [ManifestEntry] {
        var random = SeededBytes(seed: seed)
        let owners = ["root", "ann", "bob", "éva", "a-very-long-user-name-of-thirty-two"]
        let folders = ["", "etc", "etc/ssh", "home/ann", "home/ann/é dir", "srv/data/deep/er/still"]
        let holders = ["20261101T000000Z-00000001", "20261102T000000Z-0000abcd"].compactMap { BackupID($0) }
        let numbers: [Int64] = [0, 1, 9, 10, 99_999, 999_999_999_999_999_999, 1_000_000_000_000_000_000, Int64.max, -1, Int64.min]
        let hex = Array("0123456789abcdef".utf8)
        return (0..<count).map { index in
            let folder = folders[random.below(folders.count)]
            let name = "f\(index)" + (random.below(4) == 0 ? "-ü" : "")
            let type = EntryType.allCases[random.below(EntryType.allCases.count)]
            var entry = ManifestEntry(
                path: Array((folder.isEmpty ? name : folder + "/" + name).utf8), type: type,
                size: abs(numbers[random.below(numbers.count)] / 2), mode: UInt32(random.below(0o10000)),
                uid: UInt32(random.below(3) == 0 ? Int(UInt32.max) : random.below(70_000)), gid: UInt32(random.below(70_000)),
                userName: random.below(5) == 0 ? nil : owners[random.below(owners.count)],
                groupName: random.below(5) == 0 ? nil : owners[random.below(owners.count)],
                mtimeNanoseconds: numbers[random.below(numbers.count)], ctimeNanoseconds: numbers[random.below(numbers.count)],
                inode: random.below(4) == 0 ? UInt64.max : UInt64(random.below(1 << 30)), device: UInt64(random.below(1 << 20)),
                rdev: type == .characterDevice || type == .blockDevice ? UInt64(1 + random.below(1 << 16)) : 0,
                linkTarget: type == .symlink || type == .hardlink ? Array("../target \(index)".utf8) : nil,
                sha256: type == .file || type == .hardlink
                    ? String(decoding: (0..<64).map { _ in hex[random.below(16)] }, as: UTF8.self) : nil,
                storedIn: random.below(3) == 0 ? holders[random.below(holders.count)] : nil)
            if random.below(2) == 0 {
                entry.archiveOffset = Int64(512 * random.below(1 << 20))
                entry.archiveLength = Int64(512 * (1 + random.below(100)))
            }
            return entry
        }
    }

    func testAWholeManifestStoredFromItsLinesEqualsItsEntries() throws {
        let entries = variedEntries(3_000, seed: 16)
        var writer = JSONWriter()
        writer.value(BackupSummary(id: BackupID("20261129T162535Z-73787fa1")!, created: Date(timeIntervalSince1970: 0),
                                   host: "h", user: "u", sources: ["/"], tags: [], compression: .zstd, level: 3,
                                   fileCount: Int64(entries.count), toolVersion: "test").json)
        writer.endLine()
        for entry in entries {
            entry.write(to: &writer)
            writer.endLine()
        }
        // Stored from the decoded lines, it holds what storing the entries themselves holds.
        let parsed = try Manifest.parse(writer.bytes)
        XCTAssertEqual(parsed.entries.count, entries.count)
        for (index, (got, wanted)) in zip(parsed.entries, entries).enumerated() {
            XCTAssertEqual(got, wanted, "entry \(index)")
        }
        XCTAssertEqual(parsed.entries, ManifestEntries(entries))
        XCTAssertEqual(parsed.entries.holdingBackups, ManifestEntries(entries).holdingBackups)
        // With a filter, the entries it accepts, in order.
        let kept = try Manifest.parse(writer.bytes) { path, _ in Array(path).starts(with: Array("home/ann".utf8)) }
        XCTAssertEqual(Array(kept.entries), entries.filter { $0.path.starts(with: Array("home/ann".utf8)) })
    }

    func testKeysInAnyOrderDecodeAlike() throws {
        var random = SeededBytes(seed: 61)
        for entry in variedEntries(300, seed: 7) {
            var writer = JSONWriter()
            entry.write(to: &writer)
            guard case .object(let object) = try writer.bytes.withUnsafeBufferPointer({ try JSONParser.parse($0) }) else {
                return XCTFail("a written line is an object")
            }
            // The same pairs, shuffled: no longer in the order Keepsake writes them in.
            var pairs = Array(object)
            for index in pairs.indices.reversed() where index > 0 { pairs.swapAt(index, random.below(index + 1)) }
            let line = "{" + pairs.map { JSONValue.string($0.key).serialized() + ":" + $0.value.serialized() }
                .joined(separator: ",") + "}"
            XCTAssertEqual(try fast(line), entry, line)
            XCTAssertEqual(try general(line), entry, line)
        }
    }

    func testDigestsAreReadFromEveryByteTheWayTheGeneralParserReadsThem() {
        // Each byte value at the start, the middle and the end of a digest: lowercase hex
        // digits are read, anything else is refused, as the general parser refuses it.
        for byte in UInt8.min...UInt8.max {
            for place in [0, 31, 63] {
                var digits = Array(repeating: UInt8(ascii: "7"), count: 64)
                digits[place] = byte
                let valid = (48...57).contains(byte) || (97...102).contains(byte)
                let decoded = digits.withUnsafeBufferPointer { HexEncoding.digest(fromHex: $0) }
                XCTAssertEqual(decoded != nil, valid, "byte \(byte) at \(place)")
                guard valid, byte < 0x80 else { continue }
                let text = String(decoding: digits, as: UTF8.self)
                let entry = ManifestEntry(path: Array("a".utf8), type: .file, sha256: text)
                XCTAssertEqual(ManifestEntries([entry])[0].sha256, text)
            }
        }
        XCTAssertNil(Array(repeating: UInt8(ascii: "a"), count: 63).withUnsafeBufferPointer { HexEncoding.digest(fromHex: $0) })
        // Every byte value encodes as printf's %02x does, and a digest's words come back.
        let everyByte = (0...255).map { UInt8($0) }
        XCTAssertEqual(HexEncoding.encode(everyByte), everyByte.map { String(format: "%02x", $0) }.joined())
        XCTAssertEqual(HexEncoding.encode([]), "")
        var random = SeededBytes(seed: 64)
        for _ in 0..<200 {
            let bytes = (0..<32).map { _ in UInt8(random.below(256)) }
            let text = HexEncoding.encode(bytes)
            let words = Array(text.utf8).withUnsafeBufferPointer { HexEncoding.digest(fromHex: $0) }
            XCTAssertEqual(words.map { HexEncoding.hex(ofDigest: $0) }, text)
        }
    }

    func testNumbersAtTheirLimitsDecodeAlike() throws {
        for inode in ["0", "9", "9999999999999999999", "10000000000000000000", "18446744073709551615"] {
            let line = #"{"path":"a","type":"file","inode":"# + inode + "}"
            XCTAssertEqual(try fast(line)?.inode, UInt64(inode), line)
            XCTAssertEqual(try general(line).inode, UInt64(inode), line)
        }
        for time in ["-9223372036854775808", "9223372036854775807", "-1", "1000000000000000000"] {
            let line = #"{"path":"a","type":"file","mtime_ns":"# + time + "}"
            XCTAssertEqual(try fast(line)?.mtimeNanoseconds, Int64(time), line)
        }
        // One past the limits: handed over, and the general parser says what is wrong.
        for line in [#"{"path":"a","type":"file","inode":18446744073709551616}"#,
                     #"{"path":"a","type":"file","mtime_ns":9223372036854775808}"#,
                     #"{"path":"a","type":"file","mtime_ns":-9223372036854775809}"#] {
            XCTAssertNil(try fast(line), line)
        }
        for mode in ["0", "7", "0644", "7777", "0000000644", "+644"] {
            let line = #"{"path":"a","type":"file","mode":""# + mode + #""}"#
            XCTAssertEqual(message { try self.fast(line) }, message { try self.general(line) }, line)
            XCTAssertEqual(try fast(line)?.mode, try general(line).mode, line)
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
