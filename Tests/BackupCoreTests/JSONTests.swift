import Foundation
import KeepsakeJSON
import XCTest

@testable import BackupCore

final class JSONTests: KeepsakeTestCase {
    // MARK: Helpers

    private func assertParseError(
        _ text: String, _ kind: JSONParseError.Kind, at offset: Int, maxDepth: Int = JSONParser.defaultMaxDepth,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        assertParseError(Array(text.utf8), kind, at: offset, maxDepth: maxDepth, file: file, line: line)
    }

    private func assertParseError(
        _ bytes: [UInt8], _ kind: JSONParseError.Kind, at offset: Int, maxDepth: Int = JSONParser.defaultMaxDepth,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        do {
            let value = try JSONParser.parse(bytes, maxDepth: maxDepth)
            XCTFail("expected \(kind) but parsed \(value)", file: file, line: line)
        } catch {
            XCTAssertEqual(error.kind, kind, "\(error)", file: file, line: line)
            XCTAssertEqual(error.offset, offset, "\(error)", file: file, line: line)
            XCTAssertTrue(error.description.hasSuffix(" at byte \(offset)"), error.description, file: file, line: line)
        }
    }

    private func written(_ build: (inout JSONWriter) -> Void) -> String {
        var writer = JSONWriter()
        build(&writer)
        return writer.text
    }

    // MARK: Parsing values

    func testParsesScalars() throws {
        XCTAssertEqual(try JSONParser.parse("null"), .null)
        XCTAssertEqual(try JSONParser.parse("true"), .bool(true))
        XCTAssertEqual(try JSONParser.parse(" false\n"), .bool(false))
        XCTAssertEqual(try JSONParser.parse("0"), .int(0))
        XCTAssertEqual(try JSONParser.parse("-0"), .int(0))
        XCTAssertEqual(try JSONParser.parse("42"), .int(42))
        XCTAssertEqual(try JSONParser.parse("-17"), .int(-17))
        XCTAssertEqual(try JSONParser.parse("1.5"), .double(1.5))
        XCTAssertEqual(try JSONParser.parse("-0.25e2"), .double(-25))
        XCTAssertEqual(try JSONParser.parse("1E3"), .double(1000))
        XCTAssertEqual(try JSONParser.parse("1e-2"), .double(0.01))
        XCTAssertEqual(try JSONParser.parse("2e+2"), .double(200))
        XCTAssertEqual(try JSONParser.parse("\"hi\""), .string("hi"))
        XCTAssertEqual(try JSONParser.parse("\"\""), .string(""))
    }

    func testParsesContainers() throws {
        let value = try JSONParser.parse(#" { "b" : [1, 2.5, "x", null, true, {}, []], "a": {"n": -1} } "#)
        XCTAssertEqual(value, .object(JSONObject([
            ("b", .array([.int(1), .double(2.5), .string("x"), .null, .bool(true), .object(JSONObject()), .array([])])),
            ("a", .object(JSONObject([("n", .int(-1))]))),
        ])))
        XCTAssertEqual(value.objectValue?.keys, ["b", "a"], "keys keep document order")
        XCTAssertEqual(value["a"]?["n"]?.int64Value, -1)
        XCTAssertEqual(value["b"]?[2]?.stringValue, "x")
        XCTAssertNil(value["b"]?[7])
        XCTAssertNil(value["missing"])
        XCTAssertEqual(try JSONParser.parse("[[[]]]"), [[[]]])
    }

    func testIntegerLimits() throws {
        XCTAssertEqual(try JSONParser.parse("9223372036854775807"), .int(Int64.max))
        XCTAssertEqual(try JSONParser.parse("-9223372036854775808"), .int(Int64.min))
        XCTAssertEqual(try JSONParser.parse("9223372036854775808"), .uint(9_223_372_036_854_775_808), "inode numbers above Int64 stay exact")
        XCTAssertEqual(try JSONParser.parse("-9223372036854775809"), .double(-0x1p63))
        XCTAssertEqual(try JSONParser.parse("18446744073709551615"), .uint(UInt64.max))
        XCTAssertEqual(try JSONParser.parse("18446744073709551616"), .double(0x1p64), "beyond UInt64: a double")
        XCTAssertEqual(try JSONParser.parse("99999999999999999999"), .double(1e20), "20 digits: still a number")
        XCTAssertEqual(try JSONParser.parse("-99999999999999999999"), .double(-1e20))
        assertParseError("123456789012345678901", .numberOutOfRange, at: 0)
        assertParseError("[-123456789012345678901]", .numberOutOfRange, at: 1)
    }

    func testDuplicateKeysLastWins() throws {
        let value = try JSONParser.parse(#"{"a":1,"b":2,"a":3}"#)
        XCTAssertEqual(value.objectValue?.keys, ["a", "b"])
        XCTAssertEqual(value["a"], .int(3))
    }

    // MARK: Strings

    func testStringEscapes() throws {
        XCTAssertEqual(try JSONParser.parse(#""a\"b\\c\/d\b\f\n\r\t""#), .string("a\"b\\c/d\u{8}\u{c}\n\r\t"))
        XCTAssertEqual(try JSONParser.parse(#""\u0041\u00e9\u20AC\u0000""#), .string("Aé€\u{0}"))
        XCTAssertEqual(try JSONParser.parse(#""\ud83d\ude00""#), .string("😀"))
        XCTAssertEqual(try JSONParser.parse(#""x\uD834\uDD1Ey""#), .string("x𝄞y"))
    }

    func testUnicodeStrings() throws {
        let samples = ["한국어 텍스트", "😀👨‍👩‍👧‍👦🇰🇷", "mixed ascii 와 emoji 🎉 and \"quotes\"", "\u{10FFFF}", "e\u{301}"]
        for sample in samples {
            let json = "\"" + sample.replacingOccurrences(of: "\"", with: "\\\"") + "\""
            XCTAssertEqual(try JSONParser.parse(json), .string(sample))
            XCTAssertEqual(try JSONParser.parse(JSONValue.string(sample).serialized()), .string(sample))
        }
        // Other Unicode is written as UTF-8, not as \u escapes.
        XCTAssertEqual(JSONValue.string("한🎉").serialized(), "\"한🎉\"")
    }

    func testStringErrors() {
        assertParseError(#"{"key": "abc"#, .unterminatedString, at: 8)
        assertParseError(#""abc\"#, .unterminatedString, at: 0)
        assertParseError(#"["a\"]"#, .unterminatedString, at: 1)
        assertParseError(#""a\x""#, .invalidEscape, at: 2)
        assertParseError(#""\u12""#, .invalidEscape, at: 1)
        assertParseError(#""\u12G4""#, .invalidEscape, at: 1)
        assertParseError("\"\\u", .invalidEscape, at: 1)
        assertParseError("\"a\nb\"", .controlCharacter, at: 2)
        assertParseError("\"a\tb\"", .controlCharacter, at: 2)
        assertParseError("\"\u{1}\"", .controlCharacter, at: 1)
        assertParseError("\"ab\\n\u{1f}\"", .controlCharacter, at: 5)
    }

    func testLoneSurrogates() {
        assertParseError(#""\ud800""#, .loneSurrogate, at: 1)
        assertParseError(#""ab\ud800x""#, .loneSurrogate, at: 3)
        assertParseError(#""\ud800\u0041""#, .loneSurrogate, at: 1)
        assertParseError(#""\ud800\ud800""#, .loneSurrogate, at: 1)
        assertParseError(#""\udc00""#, .loneSurrogate, at: 1)
        assertParseError(#""\ude00\ud83d""#, .loneSurrogate, at: 1)
    }

    func testInvalidUTF8IsRejected() {
        let quote = UInt8(ascii: "\"")
        assertParseError([quote, 0xff, quote], .invalidUTF8, at: 1)
        assertParseError([quote, 0x61, 0xc3, quote], .invalidUTF8, at: 2)         // truncated é
        assertParseError([quote, 0xc0, 0xaf, quote], .invalidUTF8, at: 1)         // overlong '/'
        assertParseError([quote, 0xed, 0xa0, 0x80, quote], .invalidUTF8, at: 1)   // encoded surrogate
        assertParseError([quote, 0xf4, 0x90, 0x80, 0x80, quote], .invalidUTF8, at: 1) // above U+10FFFF
        assertParseError([quote, 0xe2, 0x82], .invalidUTF8, at: 1)                // cut off at the end
        assertParseError([quote, 0x5c, 0x6e, 0x80, quote], .invalidUTF8, at: 3)   // after an escape
        assertParseError([0xef, 0xbb, 0xbf] + Array("{}".utf8), .unexpectedCharacter, at: 0) // BOM
    }

    func testLongString() throws {
        let long = String(repeating: "abcdefgh", count: 131_072) // 1 MiB
        XCTAssertEqual(try JSONParser.parse("\"" + long + "\"").stringValue?.utf8.count, 1 << 20)
        let escaped = String(repeating: "a\\n", count: 200_000)
        XCTAssertEqual(try JSONParser.parse("[\"" + escaped + "\"]")[0]?.stringValue?.utf8.count, 400_000)
        assertParseError("\"" + long, .unterminatedString, at: 0)
    }

    // MARK: Structure errors

    func testStructureErrors() {
        assertParseError("", .unexpectedEnd, at: 0)
        assertParseError("   ", .unexpectedEnd, at: 3)
        assertParseError("[1, 2", .unexpectedEnd, at: 5)
        assertParseError("[1,", .unexpectedEnd, at: 3)
        assertParseError(#"{"a""#, .unexpectedEnd, at: 4)
        assertParseError(#"{"a":"#, .unexpectedEnd, at: 5)
        assertParseError("{", .unexpectedEnd, at: 1)
        assertParseError("[1,]", .unexpectedCharacter, at: 3)
        assertParseError("[1 2]", .unexpectedCharacter, at: 3)
        assertParseError(#"{"a":1,}"#, .unexpectedCharacter, at: 7)
        assertParseError(#"{"a" 1}"#, .unexpectedCharacter, at: 5)
        assertParseError("{a:1}", .unexpectedCharacter, at: 1)
        assertParseError(#"{"a":1]"#, .unexpectedCharacter, at: 6)
        assertParseError("[1}", .unexpectedCharacter, at: 2)
        assertParseError("'a'", .unexpectedCharacter, at: 0)
        assertParseError("NaN", .unexpectedCharacter, at: 0)
        assertParseError("[1] // comment", .trailingData, at: 4)
        assertParseError("1 2", .trailingData, at: 2)
        assertParseError("{} {}", .trailingData, at: 3)
        assertParseError("nul", .invalidLiteral, at: 0)
        assertParseError("[truex]", .unexpectedCharacter, at: 5)
        assertParseError("[tru]", .invalidLiteral, at: 1)
        assertParseError("fals", .invalidLiteral, at: 0)
    }

    func testNumberErrors() {
        assertParseError("01", .invalidNumber, at: 0)
        assertParseError("-01", .invalidNumber, at: 0)
        assertParseError("[00]", .invalidNumber, at: 1)
        assertParseError("-", .invalidNumber, at: 1)
        assertParseError("-a", .invalidNumber, at: 1)
        assertParseError("1.", .invalidNumber, at: 2)
        assertParseError("1.e5", .invalidNumber, at: 2)
        assertParseError("1e", .invalidNumber, at: 2)
        assertParseError("1e+", .invalidNumber, at: 3)
        assertParseError(".5", .unexpectedCharacter, at: 0)
        assertParseError("+1", .unexpectedCharacter, at: 0)
        assertParseError("0x10", .trailingData, at: 1)
        assertParseError("1e400", .numberOutOfRange, at: 0)
        assertParseError("[-1e400]", .numberOutOfRange, at: 1)
    }

    func testErrorMessages() {
        XCTAssertThrowsError(try JSONParser.parse(#"{"path": "unterminated"#)) { error in
            XCTAssertEqual("\(error)", "unterminated string at byte 9")
        }
        XCTAssertThrowsError(try JSONParser.parse("[1 x]")) { error in
            XCTAssertEqual("\(error)", "unexpected character 'x', expected ',' or ']' at byte 3")
        }
        XCTAssertThrowsError(try JSONParser.parse("\"\\q\"")) { error in
            XCTAssertEqual("\(error)", "invalid escape '\\q' at byte 1")
        }
        XCTAssertThrowsError(try JSONParser.parse("12345678901234567890123")) { error in
            XCTAssertEqual("\(error)", "number out of range (more than 20 digits) at byte 0")
        }
    }

    // MARK: Hostile input

    func testDeepNestingIsAnErrorNotACrash() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        assertParseError(deep, .tooDeep, at: 64)
        let objects = String(repeating: #"{"a":"#, count: 100_000)
        assertParseError(objects, .tooDeep, at: 64 * 5)
        // A huge limit is capped, since deep values recurse when freed or compared.
        assertParseError(deep, .tooDeep, at: JSONParser.depthCeiling, maxDepth: 200_000)
    }

    // test-tag(plain-only): asserts a parse fits a 512 KiB stack, which a sanitizer's larger frames cannot (Fuzz/README.md)
    func testDeepestAllowedValueIsSafeOnASmallStack() {
        // 512 KiB is the stack of a secondary thread on Linux; parse, compare, print and free
        // a value at the depth ceiling there.
        let depth = JSONParser.depthCeiling
        let text = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        let done = expectation(description: "thread finished")
        let thread = Thread {
            let first = try? JSONParser.parse(text, maxDepth: depth)
            let second = try? JSONParser.parse(text, maxDepth: depth)
            XCTAssertNotNil(first)
            XCTAssertEqual(first, second)
            XCTAssertEqual(first?.serialized(), text)
            XCTAssertEqual(first?.serialized(pretty: true).filter { $0 == "[" }.count, depth)
            done.fulfill()
        }
        thread.stackSize = 512 * 1024
        thread.start()
        wait(for: [done], timeout: 60)
    }

    func testDepthLimitBoundary() throws {
        let ok = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        XCTAssertNoThrow(try JSONParser.parse(ok))
        let tooDeep = "[" + ok + "]"
        assertParseError(tooDeep, .tooDeep, at: 64)
        XCTAssertEqual(try JSONParser.parse("[[1]]", maxDepth: 2), [[1]])
        assertParseError("[[1]]", .tooDeep, at: 1, maxDepth: 1)
        assertParseError("{}", .tooDeep, at: 0, maxDepth: 0)
        XCTAssertEqual(try JSONParser.parse("7", maxDepth: 0), 7)
    }

    func testHugeNumbersDoNotHang() {
        let digits = String(repeating: "9", count: 1_000_000)
        assertParseError(digits, .numberOutOfRange, at: 0)
        assertParseError("0." + digits, .numberOutOfRange, at: 0)
        assertParseError("1e" + digits, .numberOutOfRange, at: 0)
    }

    func testLargeArrayIsLinear() throws {
        let elements = Array(repeating: "1", count: 200_000).joined(separator: ",")
        XCTAssertEqual(try JSONParser.parse("[" + elements + "]").arrayValue?.count, 200_000)
        var members: [String] = []
        for index in 0..<50_000 { members.append("\"k\(index)\":\(index)") }
        let object = try JSONParser.parse("{" + members.joined(separator: ",") + "}")
        XCTAssertEqual(object.objectValue?.count, 50_000)
        XCTAssertEqual(object["k49999"], .int(49_999))
        // Many nested containers inside one big one: the outer array must not be copied
        // each time an inner one closes.
        let nested = "[" + Array(repeating: #"[1,{"a":[2]}]"#, count: 100_000).joined(separator: ",") + "]"
        let parsed = try JSONParser.parse(nested)
        XCTAssertEqual(parsed.arrayValue?.count, 100_000)
        XCTAssertEqual(parsed[99_999]?[1]?["a"]?[0], 2)
    }

    // MARK: Input forms

    func testInputForms() throws {
        let text = #"{"a":[1,"é"]}"#
        let expected = try JSONParser.parse(text)
        XCTAssertEqual(try JSONParser.parse(Array(text.utf8)), expected)
        XCTAssertEqual(try JSONParser.parse(Data(text.utf8)), expected)
        XCTAssertEqual(try JSONParser.parse(Array(("  " + text).utf8)[2...]), expected)
        XCTAssertEqual(try JSONParser.parse(text.utf8), expected)
        let viaRaw = try Array(text.utf8).withUnsafeBytes { try JSONParser.parse($0) }
        XCTAssertEqual(viaRaw, expected)
        // A collection without contiguous storage is copied first.
        XCTAssertEqual(try JSONParser.parse(text.utf8.lazy.map { $0 }), expected)
    }

    // MARK: Value model

    func testAccessors() {
        XCTAssertEqual(JSONValue.int(5).int64Value, 5)
        XCTAssertEqual(JSONValue.double(5).int64Value, 5)
        XCTAssertNil(JSONValue.double(5.5).int64Value)
        XCTAssertNil(JSONValue.double(1e19).int64Value)
        XCTAssertNil(JSONValue.double(.nan).int64Value)
        XCTAssertEqual(JSONValue.double(1e19).uint64Value, 10_000_000_000_000_000_000)
        XCTAssertEqual(JSONValue.int(7).uint64Value, 7)
        XCTAssertNil(JSONValue.int(-7).uint64Value)
        XCTAssertNil(JSONValue.double(-1).uint64Value)
        XCTAssertEqual(JSONValue.int(3).doubleValue, 3)
        XCTAssertEqual(JSONValue.double(0.5).doubleValue, 0.5)
        XCTAssertNil(JSONValue.string("3").int64Value)
        XCTAssertEqual(JSONValue.bool(true).boolValue, true)
        XCTAssertNil(JSONValue.int(1).boolValue)
        XCTAssertEqual(JSONValue.string("s").stringValue, "s")
        XCTAssertNil(JSONValue.null.stringValue)
        XCTAssertTrue(JSONValue.null.isNull)
        XCTAssertEqual(JSONValue.array([1]).arrayValue, [1])
        XCTAssertNil(JSONValue.array([1])["key"])
        XCTAssertNil(JSONValue.object(JSONObject())[0])
        XCTAssertEqual(JSONValue.object(["k": "v"]).objectValue?["k"], "v")
    }

    func testObjectKeepsInsertionOrder() {
        var object = JSONObject([("z", 1), ("a", 2)])
        object["m"] = 3
        object["z"] = 10
        XCTAssertEqual(object.keys, ["z", "a", "m"])
        XCTAssertEqual(object.values, [10, 2, 3])
        XCTAssertEqual(object.count, 3)
        object["a"] = nil
        XCTAssertEqual(object.keys, ["z", "m"])
        XCTAssertEqual(JSONValue.object(object).serialized(), #"{"z":10,"m":3}"#)
        XCTAssertNotEqual(JSONObject([("a", 1), ("b", 2)]), JSONObject([("b", 2), ("a", 1)]), "order matters")
        XCTAssertEqual(Array(object.map(\.key)), ["z", "m"])
    }

    func testLargeObjectIndex() {
        var object = JSONObject()
        for index in 0..<100 { object["k\(index)"] = .int(Int64(index)) }
        XCTAssertEqual(object["k73"], 73)
        object["k73"] = "replaced"
        object["k10"] = nil
        XCTAssertEqual(object["k73"], "replaced")
        XCTAssertNil(object["k10"])
        XCTAssertEqual(object["k99"], 99)
        XCTAssertEqual(object.count, 99)
        XCTAssertEqual(object.keys[10], "k11")
        var small = JSONObject()
        for index in 0..<100 { small["k\(index)"] = 1 }
        for index in 0..<90 { small["k\(index)"] = nil }
        XCTAssertEqual(small.keys.first, "k90")
        XCTAssertEqual(small["k95"], 1)
    }

    // MARK: Serializing

    func testSerializedCompactAndPretty() {
        let value: JSONValue = ["name": "x", "list": [1, 2.5, nil, true], "empty": [:], "none": []]
        XCTAssertEqual(value.serialized(), #"{"name":"x","list":[1,2.5,null,true],"empty":{},"none":[]}"#)
        XCTAssertEqual(value.serialized(pretty: true), """
        {
          "name": "x",
          "list": [
            1,
            2.5,
            null,
            true
          ],
          "empty": {},
          "none": []
        }
        """)
        XCTAssertEqual(JSONValue.int(3).serialized(pretty: true), "3")
    }

    func testRoundTrips() throws {
        let values: [JSONValue] = [
            .null, true, false, 0, -1, .int(Int64.max), .int(Int64.min),
            0.1, -2.5, 1e300, .double(.leastNonzeroMagnitude), 1e20, 123456.789, -0.0,
            "", "plain", "tab\there", "quote\" backslash\\ slash/", "\u{0}\u{1}\u{1f}\u{7f}", "한국어 😀",
            [], [:], [1, [2, [3, ["deep"]]]],
            ["k": ["nested": [1, "two", nil]], "unicode key é": "v", "": "empty key"],
        ]
        for value in values {
            let compact = value.serialized()
            XCTAssertEqual(try JSONParser.parse(compact), value, compact)
            XCTAssertEqual(try JSONParser.parse(value.serialized(pretty: true)), value)
        }
        XCTAssertEqual(try JSONParser.parse(JSONValue.double(-0.0).serialized()).doubleValue?.sign, .minus)
    }

    func testDoublesRoundTripExactly() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let bits = generator.next() as UInt64
            let value = Double(bitPattern: bits)
            guard value.isFinite else { continue }
            let text = JSONValue.double(value).serialized()
            guard case .double(let parsed) = try JSONParser.parse(text) else {
                XCTFail("\(text) did not parse as a double")
                continue
            }
            XCTAssertEqual(parsed.bitPattern, value.bitPattern, text)
        }
    }

    // MARK: Writer

    func testWriterCommasAndNesting() {
        let text = written { writer in
            writer.beginObject()
            writer.key("a"); writer.int(1)
            writer.key("b"); writer.beginArray()
            writer.string("x"); writer.null(); writer.bool(false); writer.uint(UInt64.max)
            writer.beginObject(); writer.endObject()
            writer.beginArray(); writer.endArray()
            writer.endArray()
            writer.key("c"); writer.double(0.5)
            writer.key("d"); writer.value(["n": [1, 2]])
            writer.endObject()
        }
        XCTAssertEqual(text, #"{"a":1,"b":["x",null,false,18446744073709551615,{},[]],"c":0.5,"d":{"n":[1,2]}}"#)
    }

    func testWriterIntegers() {
        XCTAssertEqual(written { $0.int(0) }, "0")
        XCTAssertEqual(written { $0.int(-5) }, "-5")
        XCTAssertEqual(written { $0.int(Int64.max) }, "9223372036854775807")
        XCTAssertEqual(written { $0.int(Int64.min) }, "-9223372036854775808")
        XCTAssertEqual(written { $0.uint(10) }, "10")
        XCTAssertEqual(written { $0.uint(UInt64.max) }, "18446744073709551615")
    }

    func testWriterDoubles() throws {
        XCTAssertEqual(written { $0.double(.nan) }, "null")
        XCTAssertEqual(written { $0.double(.infinity) }, "null")
        XCTAssertEqual(written { $0.double(-.infinity) }, "null")
        XCTAssertEqual(written { $0.double(1) }, "1.0")
        XCTAssertEqual(written { $0.double(0.1) }, "0.1")
        XCTAssertEqual(try JSONParser.parse(written { $0.double(1e100) }), .double(1e100))
        XCTAssertEqual(JSONValue.array([.double(.nan)]).serialized(), "[null]")
    }

    func testEscaping() {
        var bytes: [UInt8] = []
        JSONWriter.appendEscaped("a\"b\\c\nd\te\r\u{8}\u{c}\u{0}\u{1f}\u{7f}é😀/", to: &bytes)
        XCTAssertEqual(String(decoding: bytes, as: UTF8.self), #"a\"b\\c\nd\te\r\b\f\u0000\u001f"# + "\u{7f}é😀/")
        XCTAssertEqual(written { $0.string("line\nbreak") }, #""line\nbreak""#)
        XCTAssertEqual(written { $0.beginObject(); $0.key("k\"ey"); $0.string("v"); $0.endObject() }, #"{"k\"ey":"v"}"#)
    }

    func testWriterJSONLinesAndReset() throws {
        var writer = JSONWriter()
        for index in 0..<3 {
            writer.beginObject()
            writer.key("i"); writer.int(Int64(index))
            writer.endObject()
            writer.endLine()
        }
        XCTAssertEqual(writer.text, "{\"i\":0}\n{\"i\":1}\n{\"i\":2}\n")
        writer.reset()
        XCTAssertTrue(writer.bytes.isEmpty)
        writer.beginArray(); writer.int(1); writer.endArray()
        XCTAssertEqual(writer.text, "[1]")
    }

    // MARK: Manifest-sized work

    func testManifestLinesParseAtSpeed() throws {
        var writer = JSONWriter(capacity: 1 << 24)
        let lineCount = 100_000
        for index in 0..<lineCount {
            writer.beginObject()
            writer.key("path"); writer.string("home/user/projects/keepsake/Sources/File\(index) é.swift")
            writer.key("type"); writer.string("file")
            writer.key("size"); writer.int(Int64(index) * 4_096)
            writer.key("mode"); writer.string("0644")
            writer.key("uid"); writer.int(1_000)
            writer.key("gid"); writer.int(1_000)
            writer.key("mtime_ns"); writer.int(1_700_000_000_123_456_789 + Int64(index))
            writer.key("inode"); writer.uint(UInt64(index) + 1_000_000)
            writer.key("sha256"); writer.string(String(repeating: "ab", count: 32))
            writer.endObject()
            writer.endLine()
        }
        let bytes = writer.bytes
        var parsed = 0
        var totalSize: Int64 = 0
        var lineStart = 0
        let start = Date()
        try bytes.withUnsafeBufferPointer { buffer in
            for index in buffer.indices where buffer[index] == UInt8(ascii: "\n") {
                let line = UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: buffer[lineStart..<index]))
                let value = try JSONParser.parse(line)
                totalSize += value["size"]?.int64Value ?? 0
                parsed += 1
                lineStart = index + 1
            }
        }
        let elapsed = Date().timeIntervalSince(start)
        XCTAssertEqual(parsed, lineCount)
        XCTAssertEqual(totalSize, Int64(lineCount) * Int64(lineCount - 1) / 2 * 4_096)
        // Informational only: no timing assertion.
        print("parsed \(lineCount) manifest lines (\(bytes.count) bytes) in \(String(format: "%.2f", elapsed)) s")
    }

    // MARK: Streamed objects

    func testAStreamedObjectIsTheTextOfTheWholeObject() {
        let elements: [JSONValue] = [
            .object(JSONObject([("path", "a/b"), ("size", 3), ("tags", .array(["x", "[]"]))])),
            .object(JSONObject()),
            .array([]),
            "plain [] text",
            .object(JSONObject([("nested", .object(JSONObject([("deep", .array([1, 2]))])))])),
        ]
        let leading = JSONObject([("backup", .object(JSONObject([("id", "20261129T023000Z-3f9a1c2e"), ("list", .array([]))]))),
                                  ("count", 5)])
        // Members after the array (an exit code), and a leading one holding the very text
        // the stream stands in for the array with.
        let trailing = JSONObject([("exit_code", 0), ("after", .array([]))])
        var tricky = leading
        tricky["name"] = "\u{1}streamed array\u{1}"
        for (leading, trailing) in [(leading, JSONObject()), (tricky, trailing)] {
            for count in [0, 1, 2, elements.count] {
                for pretty in [false, true] {
                    var text = ""
                    var document = StreamedJSONObject(leading: leading, arrayKey: "entries", trailing: trailing, pretty: pretty) {
                        text += $0
                    }
                    for element in elements.prefix(count) { document.append(element) }
                    document.finish()
                    var whole = leading
                    whole["entries"] = .array(Array(elements.prefix(count)))
                    for (key, value) in zip(trailing.keys, trailing.values) { whole[key] = value }
                    XCTAssertEqual(text, JSONValue.object(whole).serialized(pretty: pretty), "\(count) elements, pretty \(pretty)")
                }
            }
        }
    }
}
