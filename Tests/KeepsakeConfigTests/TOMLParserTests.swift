import Foundation
import KeepsakeConfig
import KeepsakeTOML
import XCTest

final class TOMLParserTests: KeepsakeTestCase {
    // MARK: Helpers

    /// Parses `text` both as a String and as bytes, and checks both agree.
    private func parse(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> TOMLTable {
        let table = try TOMLParser.parse(text)
        XCTAssertEqual(try TOMLParser.parse(bytes: Array(text.utf8)), table, file: file, line: line)
        return table
    }

    /// Asserts that `text` fails (as a String and as bytes) with `kind` at `line`:`column`, with
    /// a message containing `fragment`.
    private func assertError(
        _ text: String, _ kind: TOMLError.Kind, _ line: Int, _ column: Int, _ fragment: String = "",
        file: StaticString = #filePath, line testLine: UInt = #line
    ) {
        assertError(bytes: Array(text.utf8), kind, line, column, fragment, file: file, line: testLine)
        do {
            let table = try TOMLParser.parse(text)
            XCTFail("expected \(kind) but parsed \(table)", file: file, line: testLine)
        } catch {
            XCTAssertEqual(error.kind, kind, "\(error)", file: file, line: testLine)
            XCTAssertEqual(error.line, line, "\(error)", file: file, line: testLine)
            XCTAssertEqual(error.column, column, "\(error)", file: file, line: testLine)
        }
    }

    private func assertError(
        bytes: [UInt8], _ kind: TOMLError.Kind, _ line: Int, _ column: Int, _ fragment: String = "",
        file: StaticString = #filePath, line testLine: UInt = #line
    ) {
        do {
            let table = try TOMLParser.parse(bytes: bytes)
            XCTFail("expected \(kind) but parsed \(table)", file: file, line: testLine)
        } catch {
            XCTAssertEqual(error.kind, kind, "\(error)", file: file, line: testLine)
            XCTAssertEqual(error.line, line, "\(error)", file: file, line: testLine)
            XCTAssertEqual(error.column, column, "\(error)", file: file, line: testLine)
            XCTAssertTrue(fragment.isEmpty || error.message.contains(fragment), "\(error) lacks \(fragment)", file: file, line: testLine)
            XCTAssertEqual(error.description, "line \(line), column \(column): \(error.message)", file: file, line: testLine)
        }
    }

    private func assertPosition(
        _ table: TOMLTable?, _ key: String, _ line: Int, _ column: Int,
        file: StaticString = #filePath, line testLine: UInt = #line
    ) {
        guard let position = table?.position(of: key) else {
            return XCTFail("no position for \(key)", file: file, line: testLine)
        }
        XCTAssertEqual(position.line, line, "line of \(key)", file: file, line: testLine)
        XCTAssertEqual(position.column, column, "column of \(key)", file: file, line: testLine)
    }

    private func assertOrigin(
        _ table: TOMLTable?, _ line: Int, _ column: Int, file: StaticString = #filePath, line testLine: UInt = #line
    ) {
        guard let origin = table?.origin else { return XCTFail("no origin", file: file, line: testLine) }
        XCTAssertEqual(origin.line, line, "origin line", file: file, line: testLine)
        XCTAssertEqual(origin.column, column, "origin column", file: file, line: testLine)
    }

    // MARK: Layout

    func testEmptyBlankAndCommentOnlyDocuments() throws {
        XCTAssertEqual(try parse(""), [:])
        XCTAssertEqual(try parse("\n\n  \n\t\n"), [:])
        XCTAssertEqual(try parse("# only a comment"), [:])
        XCTAssertEqual(try parse("# one\n   # two\n\n#three"), [:])
    }

    func testCommentsAfterValuesAndHeaders() throws {
        let table = try parse("a = 1 # one\n[t] # table\nb = \"#not a comment\" #comment")
        XCTAssertEqual(table, ["a": 1, "t": ["b": "#not a comment"]])
    }

    func testCRLFLineEnds() throws {
        let table = try parse("a = 1\r\n\r\n# c\r\n[t]\r\nb = 'x' # c\r\nc = [\r\n 1,\r\n 2,\r\n]\r\n")
        XCTAssertEqual(table, ["a": 1, "t": ["b": "x", "c": [1, 2]]])
        assertPosition(table, "t", 4, 1)
        assertPosition(table["t"]?.tableValue, "c", 6, 1)
    }

    func testByteOrderMarkIsSkipped() throws {
        let table = try TOMLParser.parse(bytes: [0xEF, 0xBB, 0xBF] + Array("a = 1".utf8))
        XCTAssertEqual(table, ["a": 1])
        assertPosition(table, "a", 1, 1)
        XCTAssertEqual(try TOMLParser.parse("\u{FEFF}a = 1"), ["a": 1])
    }

    // MARK: Keys

    func testBareQuotedAndDottedKeys() throws {
        let table = try parse("""
            bare_key-1 = 1
            1234 = 2
            "quoted key" = 3
            'literal "key"' = 4
            "" = 5
            "escaped \\u00e9 \\"q\\"" = 6
            a.b.c = 7
            a . b . d = 8
            site."google.com" = true
            'x'.y = 9
            """)
        XCTAssertEqual(table.keys, ["bare_key-1", "1234", "quoted key", "literal \"key\"", "", "escaped é \"q\"", "a", "site", "x"])
        XCTAssertEqual(table["bare_key-1"], 1)
        XCTAssertEqual(table["1234"], 2)
        XCTAssertEqual(table["quoted key"], 3)
        XCTAssertEqual(table["literal \"key\""], 4)
        XCTAssertEqual(table[""], 5)
        XCTAssertEqual(table["escaped é \"q\""], 6)
        XCTAssertEqual(table["a"], ["b": ["c": 7, "d": 8]])
        XCTAssertEqual(table["site"], ["google.com": true])
        XCTAssertEqual(table["x"], ["y": 9])
    }

    func testDottedKeysCanExtendTheirOwnTables() throws {
        let table = try parse("""
            [fruit]
            apple.color = "red"
            apple.taste.sweet = true
            apple.taste.sour = false
            """)
        XCTAssertEqual(table, ["fruit": ["apple": ["color": "red", "taste": ["sweet": true, "sour": false]]]])
    }

    // MARK: Tables

    func testTableHeaders() throws {
        let table = try parse("""
            top = 0
            [name]
            a = 1
            [a.b]
            c = 2
            [profiles.home]
            d = 3
            [profiles."my laptop"]
            e = 4
            [ spaced . 'header' ]
            f = 5
            [empty]
            """)
        XCTAssertEqual(table, [
            "top": 0,
            "name": ["a": 1],
            "a": ["b": ["c": 2]],
            "profiles": ["home": ["d": 3], "my laptop": ["e": 4]],
            "spaced": ["header": ["f": 5]],
            "empty": [:],
        ])
        XCTAssertEqual(table.keys, ["top", "name", "a", "profiles", "spaced", "empty"])
        XCTAssertEqual(table["profiles"]?.tableValue?.keys, ["home", "my laptop"])
    }

    func testImplicitParentTableCanBeDefinedOnceLater() throws {
        let table = try parse("[a.b]\nx = 1\n\n[a]\ny = 2\n")
        XCTAssertEqual(table, ["a": ["b": ["x": 1], "y": 2]])
        // The key's position moves to the header that defines it.
        assertPosition(table, "a", 4, 1)
        assertOrigin(table["a"]?.tableValue, 4, 1)
        assertPosition(table["a"]?.tableValue, "b", 1, 1)
    }

    func testHeaderMayAddSubTableToDottedTable() throws {
        let table = try parse("""
            [fruit]
            apple.color = "red"
            [fruit.apple.texture]
            smooth = true
            """)
        XCTAssertEqual(table, ["fruit": ["apple": ["color": "red", "texture": ["smooth": true]]]])
    }

    func testArraysOfTables() throws {
        let table = try parse("""
            [[hooks]]
            name = "one"
            [hooks.env]
            A = "1"

            [[hooks]]
            name = "two"
            run.when = "after"

            [[hooks]]

            [[profiles.home.jobs]]
            x = 1
            [[profiles.home.jobs]]
            x = 2
            """)
        XCTAssertEqual(table["hooks"], [
            ["name": "one", "env": ["A": "1"]],
            ["name": "two", "run": ["when": "after"]],
            [:],
        ])
        XCTAssertEqual(table["profiles"]?["home"]?["jobs"], [["x": 1], ["x": 2]])
        assertPosition(table, "hooks", 1, 1)
        let hooks = table["hooks"]?.arrayValue ?? []
        XCTAssertEqual(hooks.count, 3)
        if hooks.count == 3 {
            assertOrigin(hooks[0].tableValue, 1, 1)
            assertOrigin(hooks[1].tableValue, 6, 1)
            assertOrigin(hooks[2].tableValue, 10, 1)
            assertPosition(hooks[0].tableValue, "env", 3, 1)
            assertPosition(hooks[1].tableValue, "run", 8, 1)
        }
    }

    func testSubTablesOfEachArrayElementAndOfDottedTables() throws {
        let table = try parse("""
            a.x = 1
            [a.b]
            y = 2
            [[list]]
            [list.sub]
            n = 1
            [[list]]
            [list.sub]
            n = 2
            """)
        XCTAssertEqual(table, [
            "a": ["x": 1, "b": ["y": 2]],
            "list": [["sub": ["n": 1]], ["sub": ["n": 2]]],
        ])
    }

    // MARK: Strings

    func testBasicStringsAndEscapes() throws {
        let table = try parse(#"""
            plain = "hello, world"
            empty = ""
            escapes = "b\b t\t n\n f\f r\r q\" s\\ end"
            unicode = "\u00e9\u0041 \U0001F600 \u0000"
            raw = "tab	inside"
            utf8 = "naïve ☃"
            """#)
        XCTAssertEqual(table["plain"], "hello, world")
        XCTAssertEqual(table["empty"], "")
        XCTAssertEqual(table["escapes"], "b\u{08} t\t n\n f\u{0C} r\r q\" s\\ end")
        XCTAssertEqual(table["unicode"], "éA 😀 \u{0}")
        XCTAssertEqual(table["raw"], "tab\tinside")
        XCTAssertEqual(table["utf8"], "naïve ☃")
    }

    func testLiteralStrings() throws {
        let table = try parse(#"""
            path = 'C:\Users\nodejs\templates'
            quoted = '<\i\c*\s*>'
            with_double = 'Tom "Dubs" Preston'
            empty = ''
            """#)
        XCTAssertEqual(table["path"], #"C:\Users\nodejs\templates"#)
        XCTAssertEqual(table["quoted"], #"<\i\c*\s*>"#)
        XCTAssertEqual(table["with_double"], #"Tom "Dubs" Preston"#)
        XCTAssertEqual(table["empty"], "")
    }

    func testMultilineBasicStrings() throws {
        let text = "a = \"\"\"\nRoses are red\nViolets are blue\"\"\"\n"
            + "b = \"\"\"one\\\n     two \\\n\n   three\"\"\"\n"
            + "c = \"\"\"\\\n  The quick \\\r\n  fox.\\\n  \"\"\"\n"
            + "d = \"\"\"Here are two quotes: \"\". Three: \"\"\\\".\"\"\"\n"
            + "e = \"\"\"ends with quotes\"\"\"\"\"\n"
            + "f = \"\"\"\"one quote\"\"\"\"\n"
            + "g = \"\"\"crlf\r\nline\ttab \\u00e9\"\"\"\n"
            + "h = \"\"\"\"\"\"\n"
            + "i = \"\"\"\\   \n  trimmed after spaces\"\"\"\n"
        let table = try parse(text)
        XCTAssertEqual(table["a"], "Roses are red\nViolets are blue")
        XCTAssertEqual(table["b"], "onetwo three")
        XCTAssertEqual(table["c"], "The quick fox.")
        XCTAssertEqual(table["d"], "Here are two quotes: \"\". Three: \"\"\".")
        XCTAssertEqual(table["e"], "ends with quotes\"\"")
        XCTAssertEqual(table["f"], "\"one quote\"")
        XCTAssertEqual(table["g"], "crlf\nline\ttab é")
        XCTAssertEqual(table["h"], "")
        XCTAssertEqual(table["i"], "trimmed after spaces")
    }

    func testMultilineLiteralStrings() throws {
        let text = "regex = '''I [dw]on't need \\d{2} apples'''\n"
            + "lines = '''\nThe first newline is\ntrimmed in raw strings.\n   All other whitespace\n   is preserved. \\\n'''\n"
            + "quotes = ''''That,' she said, 'is still pointless.''''\n"
            + "crlf = '''a\r\nb'''\n"
        let table = try parse(text)
        XCTAssertEqual(table["regex"], "I [dw]on't need \\d{2} apples")
        XCTAssertEqual(table["lines"], "The first newline is\ntrimmed in raw strings.\n   All other whitespace\n   is preserved. \\\n")
        XCTAssertEqual(table["quotes"], "'That,' she said, 'is still pointless.'")
        XCTAssertEqual(table["crlf"], "a\nb")
    }

    // MARK: Numbers and booleans

    func testIntegers() throws {
        let table = try parse("""
            a = 99
            b = +42
            c = 0
            d = -17
            e = 1_000
            f = 5_349_221
            g = 1_2_3_4_5
            h = 0xDEADBEEF
            i = 0xdead_beef
            j = 0o755
            k = 0b1101_0110
            l = 9223372036854775807
            m = -9223372036854775808
            n = 0x7FFFFFFFFFFFFFFF
            o = -0
            p = +0
            q = 0x00ff
            """)
        XCTAssertEqual(table["a"], 99)
        XCTAssertEqual(table["b"], 42)
        XCTAssertEqual(table["c"], 0)
        XCTAssertEqual(table["d"], -17)
        XCTAssertEqual(table["e"], 1000)
        XCTAssertEqual(table["f"], 5_349_221)
        XCTAssertEqual(table["g"], 12345)
        XCTAssertEqual(table["h"], 0xDEADBEEF)
        XCTAssertEqual(table["i"], 0xDEADBEEF)
        XCTAssertEqual(table["j"], 0o755)
        XCTAssertEqual(table["k"], 0b1101_0110)
        XCTAssertEqual(table["l"], .integer(.max))
        XCTAssertEqual(table["m"], .integer(.min))
        XCTAssertEqual(table["n"], .integer(.max))
        XCTAssertEqual(table["o"], 0)
        XCTAssertEqual(table["p"], 0)
        XCTAssertEqual(table["q"], 255)
    }

    func testFloats() throws {
        let table = try parse("""
            a = +1.0
            b = 3.1415
            c = -0.01
            d = 5e+22
            e = 1e06
            f = -2E-2
            g = 6.626e-34
            h = 224_617.445_991_228
            i = 0.0
            j = -0.0
            k = 0e0
            l = 1.7976931348623157e308
            m = 1e-400
            """)
        XCTAssertEqual(table["a"], .float(1.0))
        XCTAssertEqual(table["b"], .float(3.1415))
        XCTAssertEqual(table["c"], .float(-0.01))
        XCTAssertEqual(table["d"], .float(5e22))
        XCTAssertEqual(table["e"], .float(1e6))
        XCTAssertEqual(table["f"], .float(-0.02))
        XCTAssertEqual(table["g"], .float(6.626e-34))
        XCTAssertEqual(table["h"], .float(224_617.445_991_228))
        XCTAssertEqual(table["i"], .float(0))
        XCTAssertEqual(table["j"]?.doubleValue?.sign, .minus)
        XCTAssertEqual(table["k"], .float(0))
        XCTAssertEqual(table["l"], .float(.greatestFiniteMagnitude))
        XCTAssertEqual(table["m"], .float(0))
    }

    func testBooleans() throws {
        XCTAssertEqual(try parse("t = true\nf = false"), ["t": true, "f": false])
    }

    // MARK: Arrays and inline tables

    func testArrays() throws {
        let table = try parse("""
            empty = []
            spaced = [ ]
            ints = [1, 2, 3]
            strings = ["red", 'yellow', \"\"\"green\"\"\"]
            nested = [[1, 2], ["a", 'b', "c"], []]
            mixed = [0.1, 2, "three", true, { x = 1 }, [4]]
            trailing = [1, 2,]
            multi = [
              # leading comment
              "a", # after a
              "b"
              , "c"   # comma first

              , # before close
            ]
            tables = [ { name = "a" }, { name = "b" } ]
            """)
        XCTAssertEqual(table["empty"], [])
        XCTAssertEqual(table["spaced"], [])
        XCTAssertEqual(table["ints"], [1, 2, 3])
        XCTAssertEqual(table["strings"], ["red", "yellow", "green"])
        XCTAssertEqual(table["nested"], [[1, 2], ["a", "b", "c"], []])
        XCTAssertEqual(table["mixed"], [0.1, 2, "three", true, ["x": 1], [4]])
        XCTAssertEqual(table["trailing"], [1, 2])
        XCTAssertEqual(table["multi"], ["a", "b", "c"])
        XCTAssertEqual(table["tables"], [["name": "a"], ["name": "b"]])
    }

    func testInlineTables() throws {
        let table = try parse("""
            empty = {}
            spaced = {   }
            name = { first = "Tom", last = "Preston-Werner" }
            point = {x=1,y=2}
            dotted = { type.name = "pug", type.size = 3, "quoted key" = true }
            nested = { a = { b = { c = [1, { d = 'e' }] } } }
            spans = { list = [
              1,
              2,
            ] }
            """)
        XCTAssertEqual(table["empty"], [:])
        XCTAssertEqual(table["spaced"], [:])
        XCTAssertEqual(table["name"], ["first": "Tom", "last": "Preston-Werner"])
        XCTAssertEqual(table["point"], ["x": 1, "y": 2])
        XCTAssertEqual(table["dotted"], ["type": ["name": "pug", "size": 3], "quoted key": true])
        XCTAssertEqual(table["nested"], ["a": ["b": ["c": [1, ["d": "e"]]]]])
        XCTAssertEqual(table["spans"], ["list": [1, 2]])
        XCTAssertEqual(table["name"]?.tableValue?.keys, ["first", "last"])
        assertOrigin(table["name"]?.tableValue, 3, 8)
        assertPosition(table["name"]?.tableValue, "last", 3, 25)
    }

    // MARK: Positions

    func testPositionsOfKeysAndTables() throws {
        let table = try parse("""
            # comment
            name = "x"
              indented = 1
            [profiles.home]
            retention.keep-daily = 7
            "quoted" = 1
            \ttab = 2
            "é" = 3
            [ profiles.work ]
            [[hooks]]
            """)
        assertPosition(table, "name", 2, 1)
        assertPosition(table, "indented", 3, 3)
        assertPosition(table, "profiles", 4, 1)
        assertPosition(table, "hooks", 10, 1)
        XCTAssertNil(table.origin)
        XCTAssertNil(table.position(of: "missing"))
        let profiles = table["profiles"]?.tableValue
        assertPosition(profiles, "home", 4, 1)
        assertPosition(profiles, "work", 9, 1)
        let home = profiles?["home"]?.tableValue
        assertOrigin(home, 4, 1)
        assertPosition(home, "retention", 5, 1)
        assertPosition(home, "quoted", 6, 1)
        assertPosition(home, "tab", 7, 2)
        assertPosition(home, "é", 8, 1)
        assertOrigin(home?["retention"]?.tableValue, 5, 1)
        assertPosition(home?["retention"]?.tableValue, "keep-daily", 5, 11)
    }

    func testColumnsCountUnicodeScalars() throws {
        let table = try parse("\"日本語\" = 1\nx = \"é\"; y = 2".replacingOccurrences(of: "; ", with: "\n"))
        assertPosition(table, "y", 3, 1)
        assertError("\"日本語\" = 1 2", .trailingContent, 1, 11)
        assertError("a = \"é😀\" x", .trailingContent, 1, 10)
    }

    func testHandBuiltTablesHaveNoPositions() {
        let table: TOMLTable = ["a": 1]
        XCTAssertNil(table.position(of: "a"))
        XCTAssertNil(table.origin)
    }

    // MARK: A realistic configuration

    func testRealisticConfiguration() throws {
        let text = """
            # Keepsake configuration
            default-profile = "home"

            [profiles.home]
            sources = [
                "/home/ana/Documents",
                "/home/ana/Pictures",   # photos too
            ]
            excludes = ["*.tmp", "node_modules/", ".cache/"]
            destination = "/mnt/backup/keepsake"
            compression = "zstd"
            level = 3

            [profiles.home.retention]
            keep-daily = 7
            keep-weekly = 4
            keep-monthly = 12

            [profiles.home.hooks]
            before = "systemctl --user stop syncthing"
            after = 'systemctl --user start syncthing'

            [profiles."work laptop"]
            sources = ["/home/ana/work"]
            excludes = []
            destination = "/media/ana/USB/backups"
            compression = "xz"
            retention = { keep-daily = 14, keep-weekly = 8 }
            hooks.before = \"\"\"
            pg_dump shop > /tmp/shop.sql
            \"\"\"
            hooks.after = "rm /tmp/shop.sql"
            """
        let config = try parse(text)
        XCTAssertEqual(config.keys, ["default-profile", "profiles"])
        XCTAssertEqual(config["default-profile"]?.stringValue, "home")
        let profiles = try XCTUnwrap(config["profiles"]?.tableValue)
        XCTAssertEqual(profiles.keys, ["home", "work laptop"])

        let home = try XCTUnwrap(profiles["home"]?.tableValue)
        XCTAssertEqual(home.keys, ["sources", "excludes", "destination", "compression", "level", "retention", "hooks"])
        XCTAssertEqual(home["sources"]?.arrayValue?.compactMap(\.stringValue), ["/home/ana/Documents", "/home/ana/Pictures"])
        XCTAssertEqual(home["excludes"], ["*.tmp", "node_modules/", ".cache/"])
        XCTAssertEqual(home["destination"]?.stringValue, "/mnt/backup/keepsake")
        XCTAssertEqual(home["compression"]?.stringValue, "zstd")
        XCTAssertEqual(home["level"]?.intValue, 3)
        let retention = try XCTUnwrap(home["retention"]?.tableValue)
        XCTAssertEqual(retention["keep-daily"]?.intValue, 7)
        XCTAssertEqual(retention["keep-weekly"]?.intValue, 4)
        XCTAssertEqual(retention["keep-monthly"]?.intValue, 12)
        XCTAssertEqual(home["hooks"], ["before": "systemctl --user stop syncthing", "after": "systemctl --user start syncthing"])

        let work = try XCTUnwrap(profiles["work laptop"]?.tableValue)
        XCTAssertEqual(work["sources"], ["/home/ana/work"])
        XCTAssertEqual(work["excludes"]?.arrayValue, [])
        XCTAssertEqual(work["destination"], "/media/ana/USB/backups")
        XCTAssertEqual(work["compression"], "xz")
        XCTAssertEqual(work["retention"], ["keep-daily": 14, "keep-weekly": 8])
        XCTAssertEqual(work["hooks"]?["before"], "pg_dump shop > /tmp/shop.sql\n")
        XCTAssertEqual(work["hooks"]?["after"], "rm /tmp/shop.sql")

        // Positions, as later validation reports them.
        assertPosition(config, "default-profile", 2, 1)
        assertPosition(profiles, "home", 4, 1)
        assertPosition(profiles, "work laptop", 23, 1)
        assertPosition(home, "sources", 5, 1)
        assertPosition(home, "retention", 14, 1)
        assertPosition(retention, "keep-daily", 15, 1)
        assertPosition(work, "retention", 28, 1)
        assertPosition(work["retention"]?.tableValue, "keep-weekly", 28, 32)
        assertPosition(work, "hooks", 29, 1)
        assertPosition(work["hooks"]?.tableValue, "after", 32, 7)

        // The same text with CRLF line ends parses the same, at the same positions.
        let crlf = try parse(text.replacingOccurrences(of: "\n", with: "\r\n"))
        XCTAssertEqual(crlf, config)
        assertPosition(crlf["profiles"]?["home"]?["retention"]?.tableValue, "keep-daily", 15, 1)
    }

    // MARK: Errors: keys and equals

    func testMissingEquals() {
        assertError("sources \"x\"", .missingEquals, 1, 9, "expected '=' after key 'sources'")
        assertError("name\nx = 1", .missingEquals, 1, 5, "found end of line")
        assertError("name", .missingEquals, 1, 5, "found end of file")
        assertError("a.b 1", .missingEquals, 1, 5, "after key 'a.b'")
        assertError("[t]\n\"my key\" : 1", .missingEquals, 2, 10, "after key '\"my key\"'")
        assertError("a = { b : 1 }", .missingEquals, 1, 9, "after key 'b'")
    }

    func testErrorDescriptionWithFile() {
        let text = String(repeating: "# line\n", count: 11) + "sources \"/home\"\n"
        do {
            _ = try TOMLParser.parse(text)
            XCTFail("expected an error")
        } catch {
            XCTAssertEqual(error.line, 12)
            XCTAssertEqual(error.column, 9)
            XCTAssertEqual(error.description(file: "config.toml"), "config.toml:12:9: expected '=' after key 'sources', found '\"'")
            XCTAssertEqual(error.description, "line 12, column 9: expected '=' after key 'sources', found '\"'")
        }
    }

    func testBadKeys() {
        assertError("= 1", .unexpectedCharacter, 1, 1, "expected a key, found '='")
        assertError("a. = 1", .unexpectedCharacter, 1, 4, "expected a key, found '='")
        assertError("a.", .unexpectedCharacter, 1, 3, "expected a key, found end of file")
        assertError("é = 1", .unexpectedCharacter, 1, 1, "'é' (U+00E9)")
        assertError("\"\"\"k\"\"\" = 1", .unexpectedCharacter, 1, 1, "multi-line string can't be a key")
        assertError("a b = 1", .missingEquals, 1, 3)
    }

    // MARK: Errors: duplicates and redefinitions

    func testDuplicateKeys() {
        assertError("a = 1\nb = 2\na = 3", .duplicateKey, 3, 1, "duplicate key 'a' (first defined at line 1, column 1)")
        assertError("a.b = 1\na.b = 2", .duplicateKey, 2, 1, "duplicate key 'a.b'")
        assertError("[t]\nx = 1\n  \"x\" = 2", .duplicateKey, 3, 3, "duplicate key 'x'")
        assertError("a = { b = 1, b = 2 }", .duplicateKey, 1, 14, "duplicate key 'b'")
        assertError("a = [{ b = 1 }, { c.d = 1, c.d = 2 }]", .duplicateKey, 1, 28, "duplicate key 'c.d'")
    }

    func testRedefinedTables() {
        assertError("[a]\nx = 1\n[a]", .tableRedefined, 3, 1, "table [a] is defined twice (first at line 1, column 1)")
        assertError("[a.b]\n[a.b]", .tableRedefined, 2, 1, "table [a.b] is defined twice")
        assertError("[a.b]\n[a]\n[a]", .tableRedefined, 3, 1)
        assertError("[fruit]\napple.color = 1\n[fruit.apple]", .tableRedefined, 3, 1, "already defined by dotted keys (line 2, column 1)")
        assertError("[[a]]\n[a]", .tableRedefined, 2, 1, "array of tables")
        assertError("[profiles.\"my laptop\"]\n[profiles.'my laptop']", .tableRedefined, 2, 1, "[profiles.\"my laptop\"]")
    }

    func testKeysUsedAsValueAndTable() {
        assertError("a = 1\n[a]", .keyConflict, 2, 1, "'a' is already defined as an integer (line 1, column 1), not a table")
        assertError("a = 1\n[a.b]", .keyConflict, 2, 1, "not a table")
        assertError("a = 'x'\na.b = 2", .keyConflict, 2, 1, "'a' is already defined as a string")
        assertError("[a.b]\n[a]\nb = 1", .keyConflict, 3, 1, "'b' is already defined as a table (line 1, column 1)")
        assertError("a.b = 1\na = 2", .keyConflict, 2, 1, "already defined as a table")
        assertError("a = {x = 1}\n[a]", .keyConflict, 2, 1, "inline table")
        assertError("a = {x = 1}\na.y = 2", .keyConflict, 2, 1, "inline table")
        assertError("a = {x = 1}\n[a.b]", .keyConflict, 2, 1, "inline table")
        assertError("a = [1]\n[[a]]", .keyConflict, 2, 1, "already defined as an array")
        assertError("[a]\n[[a]]", .keyConflict, 2, 1, "not an array of tables")
        assertError("[a.b.c]\nz = 9\n[a]\nb.c.t = 1", .keyConflict, 4, 1, "table 'b' is defined by a header (line 1, column 1)")
        assertError("[[x.a]]\n[x]\na.b = 1", .keyConflict, 3, 1, "'a' is an array of tables (line 1, column 1)")
        assertError("a.b = 1\n[[a]]", .keyConflict, 2, 1, "not an array of tables")
        assertError("a = 1\na.b.c = 2", .keyConflict, 2, 1, "'a' is already defined as an integer")
    }

    // MARK: Errors: strings

    func testUnterminatedStrings() {
        assertError("a = \"abc", .unterminatedString, 1, 5, "no closing '\"'")
        assertError("a = \"abc\nb = 1", .unterminatedString, 1, 5)
        assertError("a = 'abc\nb = 1", .unterminatedString, 1, 5, "no closing \"'\"")
        assertError("x = 1\na = \"\"\"abc\n\n", .unterminatedString, 2, 5, "no closing \"\"\"")
        assertError("a = '''x''", .unterminatedString, 1, 5, "no closing '''")
        assertError("a = \"x\\", .unterminatedString, 1, 5)
        assertError("a = \"\"\"x\\  ", .unterminatedString, 1, 5)
        assertError("[\"unclosed]\n", .unterminatedString, 1, 2)
    }

    func testBadEscapes() {
        assertError(#"a = "x\qy""#, .invalidEscape, 1, 7, #"invalid escape '\q'"#)
        assertError(#"a = "\e""#, .invalidEscape, 1, 6, #"'\e'"#)
        assertError(#"a = "\x41""#, .invalidEscape, 1, 6)
        assertError(#"a = "\u12""#, .invalidEscape, 1, 6, "must be followed by 4 hex digits")
        assertError(#"a = "\U0001F60""#, .invalidEscape, 1, 6, "must be followed by 8 hex digits")
        assertError(#"a = "\uD800""#, .invalidEscape, 1, 6, #"'\uD800': not a Unicode scalar value"#)
        assertError(#"a = "\U00110000""#, .invalidEscape, 1, 6, "not a Unicode scalar value")
        assertError("a = \"x\\ y\"", .invalidEscape, 1, 7, "followed by ' '")
        assertError("a = \"\"\"\\  x\"\"\"", .invalidEscape, 1, 8, "must end the line")
        assertError(#"a = """ok\zno""""#, .invalidEscape, 1, 10)
    }

    func testControlCharacters() {
        assertError("a = \"x\u{01}\"", .controlCharacter, 1, 7, "U+0001 must be written as an escape")
        assertError("a = 'x\u{7F}'", .controlCharacter, 1, 7, "U+007F")
        assertError("a = \"\"\"x\n\u{1B}\"\"\"", .controlCharacter, 2, 1, "U+001B")
        assertError("# bad \u{7F} comment", .controlCharacter, 1, 7, "not allowed in a comment")
        assertError("a = 1\rb = 2", .controlCharacter, 1, 6, "carriage return")
        assertError("a = \"\"\"x\ry\"\"\"", .controlCharacter, 1, 9, "carriage return")
        assertError("a = [1,\r2]", .controlCharacter, 1, 8)
    }

    // MARK: Errors: numbers and unsupported values

    func testInvalidNumbers() {
        assertError("a = 012", .invalidNumber, 1, 5, "invalid number '012': leading zeros are not allowed")
        assertError("a = -01.5", .invalidNumber, 1, 5, "leading zeros")
        assertError("a = 1__2", .invalidNumber, 1, 5, "'_' must be between digits")
        assertError("a = 1_", .invalidNumber, 1, 5, "'_' must be between digits")
        assertError("a = _1", .invalidNumber, 1, 5, "'_' must be between digits")
        assertError("a = 1_.5", .invalidNumber, 1, 5, "'_'")
        assertError("a = 1.", .invalidNumber, 1, 5, "after '.'")
        assertError("a = 1.e5", .invalidNumber, 1, 5, "after '.'")
        assertError("a = .5", .invalidNumber, 1, 5, "expected a digit, found '.'")
        assertError("a = 1e", .invalidNumber, 1, 5, "in the exponent")
        assertError("a = 1e+", .invalidNumber, 1, 5, "in the exponent")
        assertError("a = 1.2.3", .invalidNumber, 1, 5, "unexpected '.'")
        assertError("a = 12abc", .invalidNumber, 1, 5, "unexpected 'a'")
        assertError("a = 0x", .invalidNumber, 1, 5, "expected a digit")
        assertError("a = 0xG1", .invalidNumber, 1, 5, "expected a digit, found 'G'")
        assertError("a = 0b102", .invalidNumber, 1, 5, "'2' is not a base-2 digit")
        assertError("a = 0o8", .invalidNumber, 1, 5)
        assertError("a = +0x1", .invalidNumber, 1, 5, "can't have a sign")
        assertError("a = 0X1F", .invalidNumber, 1, 5)
        assertError("a = -", .invalidNumber, 1, 5)
        assertError("a = 1e400", .invalidNumber, 1, 5, "too large for a float")
        assertError("a = [1, 2_]", .invalidNumber, 1, 9)
    }

    func testIntegerOverflow() {
        assertError("a = 9223372036854775808", .integerOverflow, 1, 5, "integer 9223372036854775808 does not fit in 64 bits")
        assertError("a = -9223372036854775809", .integerOverflow, 1, 5)
        assertError("a = 99999999999999999999999999999", .integerOverflow, 1, 5)
        assertError("a = 0x8000000000000000", .integerOverflow, 1, 5, "0x7FFFFFFFFFFFFFFF")
        assertError("a = 0b" + String(repeating: "1", count: 64), .integerOverflow, 1, 5)
        assertError("x = 1\n  a = { b = 10_000_000_000_000_000_000 }", .integerOverflow, 2, 13)
    }

    func testUnsupportedValues() {
        assertError("d = 1979-05-27T07:32:00Z", .unsupported, 1, 5, "dates and times are not supported in this subset")
        assertError("d = 1979-05-27 07:32:00", .unsupported, 1, 5, "dates and times")
        assertError("d = 1979-05-27", .unsupported, 1, 5, "dates and times")
        assertError("t = 07:32:00", .unsupported, 1, 5, "dates and times")
        assertError("x = inf", .unsupported, 1, 5, "inf and nan are not supported in this subset")
        assertError("x = +inf", .unsupported, 1, 5, "inf and nan")
        assertError("x = -nan", .unsupported, 1, 5, "inf and nan")
        assertError("x = [1.0, nan]", .unsupported, 1, 11, "inf and nan")
    }

    // MARK: Errors: structure

    func testUnexpectedCharacters() {
        assertError("a = @", .unexpectedCharacter, 1, 5, "expected a value, found '@'")
        assertError("a = \nb = 1", .unexpectedCharacter, 1, 5, "expected a value, found end of line")
        assertError("a =", .unexpectedCharacter, 1, 4, "expected a value, found end of file")
        assertError("a = home", .unexpectedCharacter, 1, 5, "found 'home' (strings must be in quotes)")
        assertError("a = True", .unexpectedCharacter, 1, 5, "booleans are written 'true' and 'false'")
        assertError("a = truex", .unexpectedCharacter, 1, 5, "'truex'")
        assertError("[a", .unexpectedCharacter, 1, 3, "expected ']' to close the header [a], found end of file")
        assertError("[a]]", .trailingContent, 1, 4)
        assertError("[[a]", .unexpectedCharacter, 1, 4, "expected ']]' to close the header [[a]]")
        assertError("[[a] ]", .unexpectedCharacter, 1, 4, "expected ']]'")
        assertError("[]", .unexpectedCharacter, 1, 2, "expected a key, found ']'")
        assertError("[a.]", .unexpectedCharacter, 1, 4, "expected a key")
        assertError("a = [1,,2]", .unexpectedCharacter, 1, 8, "expected a value, found ','")
        assertError("a = [,]", .unexpectedCharacter, 1, 6, "expected a value, found ','")
        assertError("a = [1 2]", .unexpectedCharacter, 1, 8, "expected ',' or ']' after an array element (the array opened at line 1, column 5), found '2'")
        assertError("sources = [\"a\"\nexcludes = []", .unexpectedCharacter, 2, 1, "the array opened at line 1, column 11")
        assertError("a = {b = 1,}", .unexpectedCharacter, 1, 12, "trailing comma")
        assertError("a = { b = 1 c = 2 }", .unexpectedCharacter, 1, 13, "expected ',' or '}' in an inline table, found 'c'")
        assertError("a = { , }", .unexpectedCharacter, 1, 7, "expected a key")
        assertError("a = }", .unexpectedCharacter, 1, 5)
    }

    func testUnterminatedArraysAndInlineTables() {
        assertError("a = [1, 2", .unterminatedArray, 1, 5, "unterminated array: no closing ']'")
        assertError("a = [\n  1,\n  2\n", .unterminatedArray, 1, 5)
        assertError("x = 0\na = [[1, 2], [3\n", .unterminatedArray, 2, 14)
        assertError("a = [ # comment ]\n", .unterminatedArray, 1, 5)
        assertError("a = { b = 1", .unterminatedInlineTable, 1, 5, "unterminated inline table")
        assertError("a = { b = 1,\n c = 2 }", .unterminatedInlineTable, 1, 5, "must be on one line")
        assertError("a = {\n}", .unterminatedInlineTable, 1, 5)
        assertError("a = { b = 1 # c }", .unexpectedCharacter, 1, 13, "found '#'")
    }

    func testTrailingContent() {
        assertError("a = 1 2", .trailingContent, 1, 7, "unexpected '2' after the value of 'a'; expected the end of the line")
        assertError("a = \"x\" y", .trailingContent, 1, 9)
        assertError("a = 'x''y'", .trailingContent, 1, 8, "unexpected \"'\" after the value of 'a'")
        assertError("a = 1 # ok\nb = 2 3", .trailingContent, 2, 7, "after the value of 'b'")
        assertError("[t] x = 1", .trailingContent, 1, 5, "after the table header [t]")
        assertError("[[t]] # ok\n[[t]] x", .trailingContent, 2, 7, "after the table header [[t]]")
        assertError("a = [1] ]", .trailingContent, 1, 9)
        assertError("a = {} {}", .trailingContent, 1, 8)
        assertError("a = 1, b = 2", .trailingContent, 1, 6)
        assertError("a = \"\"\"x\"\"\"\"\"\"", .trailingContent, 1, 14, "'\"'")
        assertError("a.b = true false", .trailingContent, 1, 12, "after the value of 'a.b'")
    }

    func testInvalidUTF8() {
        assertError(bytes: Array("a = \"".utf8) + [0xFF] + Array("\"".utf8), .invalidUTF8, 1, 6, "byte 0xFF")
        assertError(bytes: Array("# é\nk = 1\n".utf8) + [0xC3], .invalidUTF8, 3, 1)
        assertError(bytes: Array("a = 'é".utf8) + [0xC0, 0x80, 0x27], .invalidUTF8, 1, 7, "0xC0")  // overlong
        assertError(bytes: Array("a = '".utf8) + [0xED, 0xA0, 0x80, 0x27], .invalidUTF8, 1, 6)  // surrogate
        assertError(bytes: Array("a = '".utf8) + [0xF4, 0x90, 0x80, 0x80, 0x27], .invalidUTF8, 1, 6)  // above U+10FFFF
        assertError(bytes: Array("a = '".utf8) + [0xE2, 0x82], .invalidUTF8, 1, 6)  // cut short
        assertError(bytes: [0x80], .invalidUTF8, 1, 1)
        // Valid multi-byte text is fine.
        XCTAssertEqual(try TOMLParser.parse(bytes: Array("a = '€𝄞'".utf8)), ["a": "€𝄞"])
    }

    // MARK: Hostile input

    func testDeeplyNestedArraysFailCleanly() {
        let depth = 10_000
        // The 65th '[' (column 5 + 64) is one level too deep.
        assertError("a = " + String(repeating: "[", count: depth), .tooDeep, 1, 69, "more than 64 levels")
        assertError("a = " + String(repeating: "[", count: depth) + String(repeating: "]", count: depth), .tooDeep, 1, 69)
        // Exactly the limit is fine.
        let deepest = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        XCTAssertNoThrow(try TOMLParser.parse("a = " + deepest))
    }

    func testDeeplyNestedInlineTablesAndKeysFailCleanly() {
        assertError("a = " + String(repeating: "{b=", count: 10_000), .tooDeep, 1, 5 + 3 * 64)
        let dotted = "a" + String(repeating: ".a", count: 10_000) + " = 1"
        assertError(dotted, .tooDeep, 1, 1 + 2 * 64)
        let header = "[a" + String(repeating: ".a", count: 10_000) + "]"
        assertError(header, .tooDeep, 1, 2 + 2 * 64)
        // Levels add up across headers, dotted keys and values.
        let mixed = "[" + Array(repeating: "t", count: 60).joined(separator: ".") + "]\nb.c.d.e = [[1]]"
        assertError(mixed, .tooDeep, 2, 12)
    }

    func testDeepestAllowedInputIsSafeOnASmallStack() {
        // 512 KiB is the stack of a secondary thread on some systems; parse, compare and free
        // the deepest documents the limit allows there (debug builds have the largest frames).
        let arrays = "a = " + String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        let inline = "a = " + String(repeating: "{b=", count: 64) + "1" + String(repeating: "}", count: 64)
        let header = "[" + Array(repeating: "t", count: 60).joined(separator: ".") + "]\nb.c.d = [[1]]"
        let done = expectation(description: "thread finished")
        let thread = Thread {
            for text in [arrays, inline, header] {
                let first = try? TOMLParser.parse(text)
                XCTAssertNotNil(first)
                XCTAssertEqual(first, try? TOMLParser.parse(text))
            }
            done.fulfill()
        }
        thread.stackSize = 512 * 1024
        thread.start()
        wait(for: [done], timeout: 60)
    }

    func testMegabyteStrings() throws {
        let big = String(repeating: "x", count: 1_000_000)
        XCTAssertEqual(try TOMLParser.parse("a = \"\(big)\"")["a"]?.stringValue?.count, 1_000_000)
        XCTAssertEqual(try TOMLParser.parse("a = '\(big)'")["a"]?.stringValue?.count, 1_000_000)
        XCTAssertEqual(try TOMLParser.parse("a = \"\"\"\n\(big)\"\"\"")["a"]?.stringValue?.count, 1_000_000)
        let escaped = String(repeating: "\\n", count: 500_000)
        XCTAssertEqual(try TOMLParser.parse(bytes: Array("a = \"\(escaped)\"".utf8))["a"]?.stringValue?.count, 500_000)
        // And an error after it still has the right column.
        assertError("a = \"\(big)\" x", .trailingContent, 1, 1_000_008)
    }

    func testVeryLongLinesAndManyKeys() throws {
        let elements = (0..<100_000).map(String.init).joined(separator: ", ")
        let table = try TOMLParser.parse("a = [\(elements)]\nb = 1")
        XCTAssertEqual(table["a"]?.arrayValue?.count, 100_000)
        XCTAssertEqual(table["a"]?.arrayValue?.last, 99_999)
        assertPosition(table, "b", 2, 1)

        let pairs = (0..<20_000).map { "k\($0) = \($0)" }.joined(separator: ", ")
        let inline = try TOMLParser.parse("t = { \(pairs) }")
        XCTAssertEqual(inline["t"]?.tableValue?.count, 20_000)
        assertPosition(inline["t"]?.tableValue, "k1", 1, 15)

        let comment = "# " + String(repeating: "c", count: 1_000_000) + "\nz = true"
        assertPosition(try TOMLParser.parse(comment), "z", 2, 1)

        let lines = (0..<20_000).map { "[t\($0)]\nkey = \($0)" }.joined(separator: "\n")
        let many = try TOMLParser.parse(lines)
        XCTAssertEqual(many.count, 20_000)
        assertPosition(many, "t19999", 39_999, 1)
        assertPosition(many["t19999"]?.tableValue, "key", 40_000, 1)
    }

    func testOnlyBrackets() {
        assertError(String(repeating: "[", count: 10_000), .unexpectedCharacter, 1, 3, "expected a key, found '['")
        assertError(String(repeating: "\"", count: 10_001), .unexpectedCharacter, 1, 1)
        assertError("a = " + String(repeating: "\"", count: 10_001), .trailingContent, 1, 13)
    }

    // MARK: Values and tables

    func testValueAccessors() {
        let string: TOMLValue = "s"
        let integer: TOMLValue = 7
        let float: TOMLValue = 2.5
        let bool: TOMLValue = true
        let array: TOMLValue = [1, "x"]
        let table: TOMLValue = ["k": 1]
        XCTAssertEqual(string.stringValue, "s")
        XCTAssertNil(integer.stringValue)
        XCTAssertEqual(integer.intValue, 7)
        XCTAssertNil(float.intValue)
        XCTAssertEqual(float.doubleValue, 2.5)
        XCTAssertEqual(integer.doubleValue, 7)
        XCTAssertNil(string.doubleValue)
        XCTAssertEqual(bool.boolValue, true)
        XCTAssertNil(integer.boolValue)
        XCTAssertEqual(array.arrayValue, [1, "x"])
        XCTAssertNil(table.arrayValue)
        XCTAssertEqual(table.tableValue, ["k": 1])
        XCTAssertNil(array.tableValue)
        XCTAssertEqual(table["k"], 1)
        XCTAssertNil(array["k"])
        XCTAssertEqual([string, integer, float, bool, array, table].map(\.typeName),
                       ["string", "integer", "float", "boolean", "array", "table"])
    }

    func testTableEqualityIgnoresOrderAndPositions() throws {
        XCTAssertEqual(try TOMLParser.parse("a = 1\nb = 2"), try TOMLParser.parse("\n\nb = 2\na = 1"))
        XCTAssertNotEqual(try TOMLParser.parse("a = 1"), try TOMLParser.parse("a = 2"))
        XCTAssertNotEqual(try TOMLParser.parse("a = 1"), try TOMLParser.parse("a = 1\nb = 1"))
        XCTAssertNotEqual(try TOMLParser.parse("a = 1\nc = 1"), try TOMLParser.parse("a = 1\nb = 1"))
        XCTAssertNotEqual(TOMLValue.integer(1), TOMLValue.float(1))
        let built = TOMLTable([("x", 1), ("y", 2), ("x", 3)])
        XCTAssertEqual(built.keys, ["x", "y"])
        XCTAssertEqual(built["x"], 3)
        XCTAssertTrue(TOMLTable().isEmpty)
    }

    func testErrorsAreValues() {
        let error = TOMLError(kind: .duplicateKey, line: 3, column: 5, message: "duplicate key 'a'")
        XCTAssertEqual(error, TOMLError(kind: .duplicateKey, line: 3, column: 5, message: "duplicate key 'a'"))
        XCTAssertEqual(error.description, "line 3, column 5: duplicate key 'a'")
        XCTAssertEqual(error.description(file: "config.toml"), "config.toml:3:5: duplicate key 'a'")
        XCTAssertEqual("\(error)", "line 3, column 5: duplicate key 'a'")
    }
}
