import Foundation
@testable import KeepsakeArchive
import KeepsakeJSON
@testable import KeepsakeModel
import XCTest

@testable import BackupCore

// test-tag(threads): manifests decoded in parallel
final class ManifestTests: KeepsakeTestCase {
    // MARK: Fixtures

    private let sha = String(repeating: "0123456789abcdef", count: 4)
    private let otherSHA = String(repeating: "fedcba9876543210", count: 4)
    private let id = BackupID("20261129T023000Z-3f9a1c2e")!

    private func summary(archive: BackupSummary.ArchiveFacts? = nil) -> BackupSummary {
        BackupSummary(id: id, created: Date(timeIntervalSince1970: 1_795_919_400), host: "box", user: "ana",
                      sources: ["/home/ana", "/etc"], tags: ["daily", "ünïcode"], compression: .zstd, level: 3,
                      fileCount: 10, directoryCount: 4, symlinkCount: 2, hardlinkCount: 1, otherCount: 3,
                      originalBytes: 123_456_789, warningCount: 5, toolVersion: "keepsake 0.1.0", archive: archive)
    }

    /// A valid summary line, as text.
    private var summaryLine: String { summary().json.serialized() }

    /// One manifest entry line as the engine writes it.
    private func line(_ entry: ManifestEntry) -> [UInt8] {
        var writer = JSONWriter()
        entry.write(to: &writer)
        return writer.bytes
    }

    @discardableResult
    private func roundTrip(_ entry: ManifestEntry, file: StaticString = #filePath, line lineNumber: UInt = #line) throws -> ManifestEntry {
        let bytes = line(entry)
        let value = try JSONParser.parse(bytes)
        let decoded = try ManifestEntry(json: value, line: 7)
        XCTAssertEqual(decoded, entry, String(decoding: bytes, as: UTF8.self), file: file, line: lineNumber)
        return decoded
    }

    /// Parses a manifest whose entry lines follow a valid summary line; expects a
    /// `ManifestError` and returns it.
    private func manifestError(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> ManifestError? {
        manifestError(bytes: Array(text.utf8), file: file, line: line)
    }

    private func manifestError(bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) -> ManifestError? {
        do {
            let manifest = try Manifest.parse(bytes)
            XCTFail("expected a ManifestError, parsed \(manifest.entries.count) entries", file: file, line: line)
            return nil
        } catch let error as ManifestError {
            return error
        } catch {
            XCTFail("expected a ManifestError, got \(type(of: error)): \(error)", file: file, line: line)
            return nil
        }
    }

    /// Expects `.invalidLine` at `expectedLine` whose reason names every one of `words`.
    private func assertInvalidLine(_ entryLine: String, at expectedLine: Int = 2, naming words: [String],
                                   file: StaticString = #filePath, line: UInt = #line) {
        var text = summaryLine + "\n"
        for _ in 2..<expectedLine { text += "{\"path\":\"filler\",\"type\":\"dir\"}\n" }
        text += entryLine + "\n"
        guard let error = manifestError(text, file: file, line: line) else { return }
        guard case .invalidLine(let reported, let reason) = error else {
            XCTFail("expected invalidLine, got \(error)", file: file, line: line)
            return
        }
        XCTAssertEqual(reported, expectedLine, "\(error)", file: file, line: line)
        for word in words {
            XCTAssertTrue(reason.contains(word), "'\(reason)' does not name \(word)", file: file, line: line)
        }
        XCTAssertTrue(error.description.contains("line \(expectedLine)"), error.description, file: file, line: line)
    }

    // MARK: Entry round trips

    func testEveryEntryTypeRoundTrips() throws {
        for type in EntryType.allCases {
            var entry = ManifestEntry(path: Array("home/ana/\(type.rawValue)".utf8), type: type, size: 0, mode: 0o755,
                                      uid: 1000, gid: 100, userName: "ana", groupName: "users",
                                      mtimeNanoseconds: 1_700_000_000_123_456_789, ctimeNanoseconds: 1_700_000_001_000_000_000,
                                      inode: 424_242, device: 2049)
            switch type {
            case .file:
                entry.size = 1234
                entry.sha256 = sha
            case .hardlink:
                entry.size = 1234
                entry.sha256 = sha
                entry.linkTarget = Array("home/ana/file".utf8)
            case .symlink:
                entry.linkTarget = Array("../target with space".utf8)
            case .characterDevice, .blockDevice:
                entry.rdev = 0x0801
            case .directory, .fifo, .socket:
                break
            }
            let decoded = try roundTrip(entry)
            XCTAssertEqual(decoded.type, type)
        }
    }

    func testEntryTypeNamesAreTheManifestWords() {
        XCTAssertEqual(EntryType.allCases.map(\.rawValue),
                       ["file", "dir", "symlink", "hardlink", "fifo", "chardev", "blockdev", "socket"])
    }

    func testNonUTF8PathGoesToPathB64AndComesBack() throws {
        let path: [UInt8] = Array("home/ana/".utf8) + [0xff, 0xfe, 0x41, 0x80]
        let entry = ManifestEntry(path: path, type: .file, size: 3, sha256: sha)
        let text = String(decoding: line(entry), as: UTF8.self)
        XCTAssertTrue(text.contains("\"path_b64\":\"\(Data(path).base64EncodedString())\""), text)
        XCTAssertFalse(text.contains("\"path\":"), text)
        let decoded = try roundTrip(entry)
        XCTAssertEqual(decoded.path, path)
        XCTAssertEqual(decoded.displayPath, "home/ana/\\xff\\xfeA\\x80")
    }

    func testNonUTF8LinkTargetGoesToLinkB64AndComesBack() throws {
        let target: [UInt8] = [0x2e, 0x2e, 0x2f, 0xc3, 0x28]
        let entry = ManifestEntry(path: Array("a/link".utf8), type: .symlink, linkTarget: target)
        let text = String(decoding: line(entry), as: UTF8.self)
        XCTAssertTrue(text.contains("\"link_b64\":"), text)
        XCTAssertTrue(text.contains("\"path\":\"a/link\""), text)
        XCTAssertEqual(try roundTrip(entry).linkTarget, target)
    }

    func testUTF8NamesWithControlCharactersAndQuotesRoundTrip() throws {
        let path = Array("a/line\nbreak \"quoted\" \\ tab\t ünï €".utf8)
        let entry = ManifestEntry(path: path, type: .file, size: 1, sha256: otherSHA)
        let bytes = line(entry)
        XCTAssertFalse(bytes.contains(UInt8(ascii: "\n")), "an entry must stay on one line")
        XCTAssertEqual(try roundTrip(entry).path, path)
    }

    func testSpecialModeBitsAndExtremeTimesRoundTrip() throws {
        let entry = ManifestEntry(path: Array("bin/su".utf8), type: .file, size: 0, mode: 0o7755, uid: UInt32.max,
                                  gid: 0, mtimeNanoseconds: -1_000_000_001, ctimeNanoseconds: Int64.max,
                                  sha256: sha)
        let text = String(decoding: line(entry), as: UTF8.self)
        XCTAssertTrue(text.contains("\"mode\":\"7755\""), text)
        try roundTrip(entry)
        XCTAssertEqual(ManifestEntry.octal(0o644), "0644")
        XCTAssertEqual(ManifestEntry.octal(0o7), "0007")
        XCTAssertEqual(ManifestEntry.octal(0o100644), "0644", "file-type bits are not part of the mode")
    }

    /// Inode and device numbers are unsigned 64-bit; file systems such as overlayfs (xino)
    /// and some network file systems hand out inodes above 2^63.
    func testFullRangeInodeAndDeviceNumbersRoundTrip() throws {
        for big in [UInt64(Int64.max), UInt64(Int64.max) + 2, UInt64.max] {
            let entry = ManifestEntry(path: Array("f".utf8), type: .characterDevice, inode: big, device: big, rdev: big)
            XCTAssertNoThrow(try roundTrip(entry), "inode/dev/rdev \(big)")
        }
    }

    func testOptionalFieldsAreLeftOutWhenAbsent() throws {
        let entry = ManifestEntry(path: Array("d".utf8), type: .directory)
        let text = String(decoding: line(entry), as: UTF8.self)
        for key in ["\"user\"", "\"group\"", "\"rdev\"", "\"link\"", "\"sha256\""] {
            XCTAssertFalse(text.contains(key), "\(key) in \(text)")
        }
        try roundTrip(entry)
    }

    func testMinimalEntryGetsDefaults() throws {
        let entry = try ManifestEntry(json: try JSONParser.parse("{\"path\":\"x\",\"type\":\"file\"}"), line: 2)
        XCTAssertEqual(entry, ManifestEntry(path: Array("x".utf8), type: .file, size: 0, mode: 0o644))
    }

    // MARK: Summary round trips

    func testSummaryRoundTripsWithoutArchiveFacts() throws {
        let original = summary()
        let text = original.json.serialized()
        XCTAssertTrue(text.hasPrefix("{\"keepsake\":\"manifest\",\"format\":1,"), text)
        XCTAssertFalse(text.contains("\"archive\""), text)
        let decoded = try Manifest.parseSummary(Array((text + "\n").utf8))
        XCTAssertEqual(decoded, original)
        XCTAssertNil(decoded.archive)
        XCTAssertEqual(decoded.entryCount, 20)
    }

    func testSummaryRoundTripsWithArchiveFacts() throws {
        let facts = BackupSummary.ArchiveFacts(name: "box_\(id.rawValue).tar.zst", size: 98_765, sha256: otherSHA)
        let original = summary(archive: facts)
        let decoded = try BackupSummary(json: try JSONParser.parse(original.json.serialized()))
        XCTAssertEqual(decoded, original)
        XCTAssertEqual(decoded.archive, facts)
    }

    func testSummaryWithoutLevelAndWithEmptyListsRoundTrips() throws {
        let original = BackupSummary(id: id, created: Date(timeIntervalSince1970: 0), host: "", user: "", sources: [],
                                     tags: [], compression: .none, level: nil, toolVersion: "")
        XCTAssertEqual(try BackupSummary(json: try JSONParser.parse(original.json.serialized())), original)
    }

    func testSummaryWithBadArchiveFactsIsRefused() throws {
        var value = summary().json
        guard case .object(var object) = value else { return XCTFail("summary is not an object") }
        object["archive"] = .object(JSONObject([("name", .string("a.tar")), ("size", .int(-1)), ("sha256", .string(sha))]))
        value = .object(object)
        XCTAssertThrowsError(try BackupSummary(json: value)) { error in
            guard case ManifestError.invalidLine(1, let reason)? = error as? ManifestError else {
                return XCTFail("\(error)")
            }
            XCTAssertTrue(reason.contains("archive"), reason)
        }
    }

    func testSummaryNamingAnArchiveOutsideTheDestinationIsRefused() throws {
        for name in ["../../etc/shadow", "/etc/shadow", "sub/a.tar.zst", "..", ".", "", "a\u{0}.tar"] {
            var value = summary().json
            guard case .object(var object) = value else { return XCTFail("summary is not an object") }
            object["archive"] = .object(JSONObject([("name", .string(name)), ("size", .int(1)), ("sha256", .string(sha))]))
            value = .object(object)
            XCTAssertThrowsError(try BackupSummary(json: value), name) { error in
                guard case ManifestError.invalidLine(1, let reason)? = error as? ManifestError else { return XCTFail("\(error)") }
                XCTAssertTrue(reason.contains("archive"), reason)
            }
        }
    }

    // MARK: Whole manifests

    func testParseMultiLineManifest() throws {
        let entries = [
            ManifestEntry(path: Array("home".utf8), type: .directory, mode: 0o755),
            ManifestEntry(path: Array("home/a.txt".utf8), type: .file, size: 5, sha256: sha),
            ManifestEntry(path: Array("home/b".utf8), type: .hardlink, size: 5, linkTarget: Array("home/a.txt".utf8), sha256: sha),
            ManifestEntry(path: Array("home/l".utf8), type: .symlink, linkTarget: Array("a.txt".utf8)),
            ManifestEntry(path: [0x68, 0x6f, 0x6d, 0x65, 0x2f, 0xff], type: .fifo),
        ]
        var bytes = Array((summaryLine + "\n").utf8)
        for entry in entries {
            bytes += line(entry)
            bytes.append(UInt8(ascii: "\n"))
        }
        let manifest = try Manifest.parse(bytes)
        XCTAssertEqual(manifest.summary, summary())
        XCTAssertEqual(Array(manifest.entries), entries)
        XCTAssertEqual(manifest.index().count, entries.count)
        XCTAssertEqual(manifest.index()[PathKey(Array("home/l".utf8))]?.linkTarget, Array("a.txt".utf8))

        // No trailing newline and blank lines in between are fine too.
        var loose = Array((summaryLine + "\n\n").utf8)
        loose += line(entries[0]) + [10, 10] + line(entries[1])
        XCTAssertEqual(Array(try Manifest.parse(loose).entries), Array(entries[0...1]))
    }

    func testSummaryOnlyManifestHasNoEntries() throws {
        let manifest = try Manifest.parse(Array((summaryLine + "\n").utf8))
        XCTAssertTrue(manifest.entries.isEmpty)
    }

    func testLaterDuplicateWinsInIndex() throws {
        let first = ManifestEntry(path: Array("x".utf8), type: .file, size: 1, sha256: sha)
        let second = ManifestEntry(path: Array("x".utf8), type: .file, size: 2, sha256: otherSHA)
        let manifest = Manifest(summary: summary(), entries: [first, second])
        XCTAssertEqual(manifest.index()[PathKey(Array("x".utf8))], second)
    }

    // MARK: Hostile entry lines

    func testInvalidJSONNamesTheLine() {
        assertInvalidLine("{\"path\":\"a\",", at: 2, naming: ["not JSON"])
        assertInvalidLine("{\"path\": nope}", at: 4, naming: ["not JSON"])
        assertInvalidLine("\u{1}", at: 3, naming: ["not JSON"])
        assertInvalidLine(String(repeating: "[", count: 100_000), at: 2, naming: ["not JSON"])
        assertInvalidLine("{\"path\":\"a\",\"type\":\"file\"} trailing", at: 2, naming: ["not JSON"])
    }

    func testNonObjectEntryIsRefused() {
        assertInvalidLine("[1,2,3]", at: 2, naming: ["object"])
        assertInvalidLine("\"just a string\"", at: 3, naming: ["object"])
    }

    func testWrongTypesNameTheField() {
        assertInvalidLine("{\"path\":\"a\",\"type\":\"file\",\"size\":\"x\"}", at: 2, naming: ["'size'"])
        assertInvalidLine("{\"path\":\"a\",\"type\":\"file\",\"size\":1.5}", at: 3, naming: ["'size'"])
        assertInvalidLine("{\"path\":\"a\",\"type\":\"file\",\"uid\":\"root\"}", at: 2, naming: ["'uid'"])
        assertInvalidLine("{\"path\":\"a\",\"type\":\"file\",\"gid\":-1}", at: 2, naming: ["'gid'"])
        assertInvalidLine("{\"path\":\"a\",\"type\":\"file\",\"mtime_ns\":true}", at: 2, naming: ["'mtime_ns'"])
        assertInvalidLine("{\"path\":\"a\",\"type\":\"file\",\"inode\":-5}", at: 2, naming: ["'inode'"])
        assertInvalidLine("{\"path\":\"a\",\"type\":\"file\",\"sha256\":42}", at: 2, naming: ["'sha256'"])
        assertInvalidLine("{\"path\":7,\"type\":\"file\"}", at: 2, naming: ["'path'"])
        assertInvalidLine("{\"path\":\"a\",\"type\":[\"file\"]}", at: 2, naming: ["'type'"])
    }

    /// A mode given as a JSON number instead of an octal string must not be silently
    /// replaced by 0644.
    func testModeOfWrongTypeIsRefused() {
        assertInvalidLine("{\"path\":\"a\",\"type\":\"file\",\"mode\":420}", at: 2, naming: ["'mode'"])
        assertInvalidLine("{\"path\":\"a\",\"type\":\"file\",\"mode\":null}", at: 2, naming: ["'mode'"])
    }

    func testNegativeSizeIsRefused() {
        assertInvalidLine("{\"path\":\"a\",\"type\":\"file\",\"size\":-1}", at: 2, naming: ["'size'", "negative"])
    }

    func testHugeNumbersAreRefusedWithoutCrashing() {
        // Beyond Double: the JSON parser itself refuses the number.
        // The field cannot be named then, but the byte offset of the number is.
        assertInvalidLine("{\"path\":\"a\",\"type\":\"file\",\"size\":1e400}", at: 2, naming: ["out of range", "at byte 33"])
        // More than 20 digits.
        assertInvalidLine("{\"path\":\"a\",\"type\":\"file\",\"size\":99999999999999999999999}", at: 3,
                          naming: ["out of range", "at byte 33"])
        // Within Double but beyond Int64: the field is named.
        assertInvalidLine("{\"path\":\"a\",\"type\":\"file\",\"size\":99999999999999999999}", at: 2, naming: ["'size'"])
        assertInvalidLine("{\"path\":\"a\",\"type\":\"file\",\"size\":1e300}", at: 2, naming: ["'size'"])
        assertInvalidLine("{\"path\":\"a\",\"type\":\"file\",\"mtime_ns\":-1e30}", at: 2, naming: ["'mtime_ns'"])
        assertInvalidLine("{\"path\":\"a\",\"type\":\"file\",\"uid\":4294967296}", at: 2, naming: ["'uid'"])
        assertInvalidLine("{\"path\":\"a\",\"type\":\"file\",\"inode\":1e20}", at: 2, naming: ["'inode'"])
    }

    func testMissingPathOrTypeIsRefused() {
        assertInvalidLine("{\"type\":\"file\"}", at: 2, naming: ["'path'"])
        assertInvalidLine("{\"path\":\"\",\"type\":\"file\"}", at: 2, naming: ["'path'"])
        assertInvalidLine("{\"path_b64\":\"\",\"type\":\"file\"}", at: 2, naming: ["'path'"])
        assertInvalidLine("{\"path\":\"a\"}", at: 3, naming: ["'type'"])
        assertInvalidLine("{\"path\":\"a\",\"type\":\"symlink\"}", at: 2, naming: ["'link'"])
        assertInvalidLine("{\"path\":\"a\",\"type\":\"hardlink\"}", at: 2, naming: ["'link'"])
    }

    func testUnknownTypeIsRefused() {
        assertInvalidLine("{\"path\":\"a\",\"type\":\"whiteout\"}", at: 2, naming: ["'type'"])
        assertInvalidLine("{\"path\":\"a\",\"type\":\"File\"}", at: 2, naming: ["'type'"])
        assertInvalidLine("{\"path\":\"a\",\"type\":\"directory\"}", at: 2, naming: ["'type'"])
    }

    func testBadModeIsRefused() {
        for mode in ["999", "", "0o644", "-644", "17777", "rwxr-xr-x", "0x1ff"] {
            assertInvalidLine("{\"path\":\"a\",\"type\":\"file\",\"mode\":\"\(mode)\"}", at: 2, naming: ["'mode'"])
        }
    }

    func testBadSHA256IsRefused() {
        let cases = [String(sha.dropLast()), sha + "0", sha.uppercased(), String(sha.dropLast()) + "g", ""]
        for digest in cases {
            assertInvalidLine("{\"path\":\"a\",\"type\":\"file\",\"sha256\":\"\(digest)\"}", at: 2, naming: ["'sha256'"])
        }
    }

    func testBadBase64IsRefused() {
        assertInvalidLine("{\"path_b64\":\"!!!not base64\",\"type\":\"file\"}", at: 2, naming: ["'path_b64'"])
        assertInvalidLine("{\"path\":\"l\",\"type\":\"symlink\",\"link_b64\":\"%%\"}", at: 2, naming: ["'link_b64'"])
    }

    func testANULByteInAPathOrLinkIsADamagedManifest() {
        // `..\u0000` passes a check for `..` and becomes `..` in a C string.
        let nul = Data("..\u{0}/outside".utf8).base64EncodedString()
        assertInvalidLine(#"{"path":"..\u0000/outside/victim","type":"hardlink","link":"a"}"#, naming: ["'path'", "NUL"])
        assertInvalidLine(#"{"path_b64":"\#(nul)","type":"file"}"#, naming: ["'path'", "NUL"])
        assertInvalidLine(#"{"path":"l","type":"symlink","link":"a\u0000b"}"#, naming: ["'link'", "NUL"])
        assertInvalidLine(#"{"path":"h","type":"hardlink","link_b64":"\#(nul)"}"#, naming: ["'link'", "NUL"])
        // A raw NUL byte is not JSON at all.
        var bytes = Array((summaryLine + "\n").utf8)
        bytes += Array(#"{"path":".."#.utf8) + [0] + Array(#"/x","type":"file"}"#.utf8) + [10]
        guard let error = manifestError(bytes: bytes) else { return }
        guard case .invalidLine(2, _) = error else { return XCTFail("\(error)") }
    }

    func testANULByteIsRefusedWhenOnlySomeEntriesAreKept() {
        // A partial restore judges lines from their start; a NUL in a kept line is still found.
        let text = summaryLine + "\n" + #"{"path":"sel/..\u0000/..\u0000/outside/victim","type":"hardlink","link":"b"}"# + "\n"
        XCTAssertThrowsError(try Manifest.parse(Array(text.utf8), keeping: { path, _ in path.starts(with: Array("sel".utf8)) })) { error in
            XCTAssertTrue("\(error)".contains("NUL"), "\(error)")
        }
    }

    func testInvalidUTF8InALineIsRefused() {
        var bytes = Array((summaryLine + "\n").utf8)
        bytes += Array("{\"path\":\"".utf8) + [0xff, 0xfe] + Array("\",\"type\":\"file\"}\n".utf8)
        guard let error = manifestError(bytes: bytes) else { return }
        guard case .invalidLine(2, _) = error else { return XCTFail("\(error)") }
    }

    // MARK: Hostile summaries

    func testEmptyFileIsNotAManifest() {
        for text in ["", "\n", "\n\n\n"] {
            guard let error = manifestError(text) else { continue }
            guard case .notAManifest(let reason) = error else { XCTFail("\(error)"); continue }
            XCTAssertTrue(reason.contains("empty"), reason)
        }
    }

    func testGarbageFirstLineIsNotAManifest() {
        for text in ["garbage\n", "\u{0}\u{1}\u{2}", "{\"keepsake\":\"manifest\"\n"] {
            guard let error = manifestError(text) else { continue }
            guard case .notAManifest = error else { XCTFail("\(error)"); continue }
        }
        XCTAssertThrowsError(try Manifest.parseSummary(Array("PK\u{3}\u{4}".utf8))) { error in
            guard case ManifestError.notAManifest? = error as? ManifestError else { return XCTFail("\(error)") }
        }
    }

    func testSummaryWithoutKeepsakeMarkerIsNotAManifest() throws {
        for replacement in ["", "\"keepsake\":\"backup\",", "\"keepsake\":1,"] {
            let text = summaryLine.replacingOccurrences(of: "\"keepsake\":\"manifest\",", with: replacement) + "\n"
            XCTAssertNotEqual(text, summaryLine + "\n")
            guard let error = manifestError(text) else { continue }
            guard case .notAManifest = error else { XCTFail("\(error)"); continue }
        }
        guard let error = manifestError("[1]\n") else { return }
        guard case .notAManifest = error else { return XCTFail("\(error)") }
    }

    func testFutureFormatVersionIsUnsupported() {
        // 3 (block tables stored as changes) is the newest read.
        let newest = summaryLine.replacingOccurrences(of: "\"format\":1,", with: "\"format\":3,")
        XCTAssertEqual(try Manifest.parse(Array((newest + "\n").utf8)).summary.format, 3)
        let future = summaryLine.replacingOccurrences(of: "\"format\":1,", with: "\"format\":4,")
        XCTAssertEqual(manifestError(future + "\n"), .unsupportedFormat(4))
        XCTAssertTrue(ManifestError.unsupportedFormat(4).description.contains("upgrade"))
        let farFuture = summaryLine.replacingOccurrences(of: "\"format\":1,", with: "\"format\":99999999999,")
        XCTAssertEqual(manifestError(farFuture + "\n"), .unsupportedFormat(Int(99_999_999_999)))
    }

    func testMissingOrZeroFormatIsRefusedNamingIt() {
        let missing = summaryLine.replacingOccurrences(of: "\"format\":1,", with: "")
        guard let error = manifestError(missing + "\n") else { return }
        guard case .invalidLine(1, let reason) = error else { return XCTFail("\(error)") }
        XCTAssertTrue(reason.contains("'format'"), reason)

    }

    /// Format 0 or below is not "newer than this keepsake": it must not tell people to upgrade.
    func testFormatBelowOneIsInvalidNotNewer() {
        for version in ["0", "-1"] {
            let text = summaryLine.replacingOccurrences(of: "\"format\":1,", with: "\"format\":\(version),")
            guard let error = manifestError(text + "\n") else { continue }
            guard case .invalidLine(1, let reason) = error else { XCTFail("format \(version): \(error)"); continue }
            XCTAssertTrue(reason.contains("'format'"), reason)
        }
    }

    func testBadSummaryFieldsAreNamed() {
        let cases: [(String, String, String)] = [
            ("\"id\":\"\(id.rawValue)\"", "\"id\":\"nope\"", "'id'"),
            ("\"created\":\"2026-11-29T02:30:00Z\"", "\"created\":\"yesterday\"", "'created'"),
            ("\"compression\":\"zstd\"", "\"compression\":\"rar\"", "'compression'"),
            ("\"files\":10", "\"files\":-10", "'files'"),
            ("\"bytes\":123456789", "\"bytes\":\"many\"", "'bytes'"),
            ("\"sources\":[\"/home/ana\",\"/etc\"]", "\"sources\":[1]", "'sources'"),
            ("\"tags\":[\"daily\",\"ünïcode\"]", "\"tags\":\"daily\"", "'tags'"),
        ]
        for (original, replacement, field) in cases {
            XCTAssertTrue(summaryLine.contains(original), "fixture lacks \(original): \(summaryLine)")
            let text = summaryLine.replacingOccurrences(of: original, with: replacement) + "\n"
            guard let error = manifestError(text) else { continue }
            guard case .invalidLine(1, let reason) = error else { XCTFail("\(field): \(error)"); continue }
            XCTAssertTrue(reason.contains(field), "'\(reason)' does not name \(field)")
        }
    }

    func testHugeSummaryCountsDoNotCrash() {
        for number in ["1e400", "99999999999999999999999", "1e300", "-1"] {
            let text = summaryLine.replacingOccurrences(of: "\"files\":10", with: "\"files\":\(number)") + "\n"
            guard let error = manifestError(text) else { continue }
            switch error {
            case .notAManifest, .invalidLine(1, _): break
            default: XCTFail("\(number): \(error)")
            }
        }
    }

    func testErrorDescriptionsNameTheLine() {
        XCTAssertEqual(ManifestError.invalidLine(line: 12, reason: "missing 'type'").description,
                       "Manifest line 12: missing 'type'")
        XCTAssertTrue(ManifestError.notAManifest(reason: "it is empty").description.contains("it is empty"))
    }
}
