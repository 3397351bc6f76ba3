import KeepsakeSupport

/// Parses the subset of TOML 1.0 that Keepsake's configuration file uses.
///
/// ## Accepted subset
///
/// - **Text**: UTF-8; invalid UTF-8 is an error, and a leading byte order mark is skipped.
///   Lines end with LF or CRLF (a lone CR is an error). Whitespace is space and tab.
///   Blank lines are ignored.
/// - **Comments**: `#` to the end of the line, anywhere outside a string. Control characters
///   other than tab are not allowed in a comment.
/// - **Keys**: bare keys of `A-Z a-z 0-9 _ -`; quoted keys `"..."` (with the escapes of basic
///   strings) and `'...'`; dotted keys `a.b.c = 1` (spaces around the dots are allowed), which
///   create the tables `a` and `a.b`. Keys are compared exactly, without Unicode normalization.
/// - **Tables**: `[name]`, `[a.b]`, `[profiles.home]`, `[profiles."my laptop"]`. A header
///   creates missing parent tables, and a later header may define such a parent once.
///   Arrays of tables: each `[[hooks]]` header appends a table to the array `hooks`, and
///   `[hooks.sub]` after it adds to the last one.
/// - **Strings**: basic `"..."` with the escapes `\b \t \n \f \r \" \\ \uXXXX \UXXXXXXXX`
///   (the code must be a Unicode scalar value); literal `'...'` (no escapes); multi-line basic
///   `"""..."""`, where a newline right after the opening quotes is dropped and a `\` at the
///   end of a line drops itself, the line break and all whitespace up to the next other
///   character; multi-line literal `'''...'''`. CRLF inside a multi-line string becomes LF.
///   No string may hold a raw control character other than tab (and, in multi-line strings,
///   line breaks); basic strings can hold the others as escapes.
/// - **Integers**: decimal with an optional `+` or `-`, `_` only between digits, no leading
///   zeros (`1_000`, `-17`, `0`); unsigned hexadecimal `0xDEAD_beef`, octal `0o755` and binary
///   `0b1010`. Every integer must fit in `Int64`.
/// - **Floats**: decimal with a fraction (`3.14`), an exponent (`5e-3`, `1E6`), or both, with
///   `_` only between digits and digits on both sides of the `.`. The value must be finite as a
///   `Double`. `inf` and `nan` are rejected ("inf and nan are not supported in this subset").
/// - **Booleans**: `true`, `false`.
/// - **Arrays**: `[1, "two", 3.0]`; may span lines, hold comments, end with a comma, and mix
///   types.
/// - **Inline tables**: `{ a = 1, b.c = "x" }` on one line (a value inside, such as an array,
///   may still span lines), without a trailing comma; they can't be added to later.
/// - **Not supported**: offset date-times, local date-times, local dates and local times, which
///   are rejected ("dates and times are not supported in this subset").
/// - **Errors**: anything else, among them a duplicate key, a table defined twice, a key used
///   both as a value and as a table, and arrays and tables nested deeper than 64 levels
///   (`maxDepth`). Every error carries a 1-based line and column; columns count Unicode
///   scalars, a tab counting as one.
///
/// Each table records where each of its keys was defined (`TOMLTable.position(of:)`): the
/// start of the key in `key = value` (for a dotted key, of that part), or the `[` of the header
/// that defined or first created a table.
public enum TOMLParser {
    // MARK: Limits

    /// How deeply tables and arrays may nest below the root table. Each table of a header or
    /// dotted key counts one level, an array of tables two (the array and its element), each
    /// array or inline table value one.
    public static let maxDepth = 64

    // MARK: Entry points

    /// Parses a TOML document.
    public static func parse(_ text: String) throws(TOMLError) -> TOMLTable {
        // A String always holds valid UTF-8, so there is nothing to validate.
        var reader = TOMLReader(bytes: Array(text.utf8))
        return try reader.parseDocument()
    }

    /// Parses a TOML document from its UTF-8 bytes (for example a whole file's contents).
    public static func parse(bytes: [UInt8]) throws(TOMLError) -> TOMLTable {
        var reader = TOMLReader(bytes: bytes)
        try reader.validateUTF8()
        return try reader.parseDocument()
    }
}

// MARK: - Document tree

/// A table while it is being built. A class, so the section being filled stays reachable
/// from both its parent and the reader.
private final class TableNode {
    /// How the table came to be; this decides what may still add to it.
    enum Kind {
        /// The document itself.
        case root
        /// Defined by its own `[header]`, or an element of an array of tables.
        case header
        /// Created as the parent in a longer header (`a` by `[a.b]`); a header may define it once.
        case implicit
        /// Created by a dotted key (`a` by `a.b = 1`); more dotted keys and sub-table headers may
        /// add to it, but it can't get a header of its own.
        case dotted
        /// An inline table being read; sealed once its `}` is read.
        case inline
    }

    var kind: Kind
    let depth: Int
    var origin: TOMLTable.Position?
    private(set) var keys: [String] = []
    private(set) var entries: [String: TableEntry] = [:]

    init(kind: Kind, depth: Int, origin: TOMLTable.Position?) {
        self.kind = kind
        self.depth = depth
        self.origin = origin
    }

    func entry(_ key: String) -> TableEntry? { entries[key] }

    func insert(_ key: String, _ item: TableItem, at position: TOMLTable.Position) {
        keys.append(key)
        entries[key] = TableEntry(item: item, position: position)
    }

    /// Moves an implicitly created table's key position to the header that defines it.
    func reposition(_ key: String, to position: TOMLTable.Position) {
        entries[key]?.position = position
    }

    /// The finished table (recursion is bounded by `TOMLParser.maxDepth`).
    func table() -> TOMLTable {
        var members: [String: TOMLTable.Member] = [:]
        members.reserveCapacity(entries.count)
        for (key, entry) in entries {
            members[key] = TOMLTable.Member(value: entry.item.value(), position: entry.position)
        }
        return TOMLTable(keys: keys, members: members, origin: origin)
    }
}

/// An array of tables (`[[name]]`) while it is being built; never empty.
private final class TableArrayNode {
    let depth: Int
    private var earlier: [TableNode] = []
    /// The element the most recent `[[name]]` header opened.
    private(set) var last: TableNode

    init(depth: Int, first: TableNode) {
        self.depth = depth
        self.last = first
    }

    func append(_ element: TableNode) {
        earlier.append(last)
        last = element
    }

    func value() -> TOMLValue {
        .array((earlier + [last]).map { .table($0.table()) })
    }
}

/// What a key holds while the document is being built.
private enum TableItem {
    /// A finished value (inline tables and arrays included: they can't be extended).
    case value(TOMLValue)
    /// A table that headers or dotted keys may still add to.
    case table(TableNode)
    /// An array of tables that `[[name]]` headers may still append to.
    case tableArray(TableArrayNode)

    func value() -> TOMLValue {
        switch self {
        case .value(let value): return value
        case .table(let node): return .table(node.table())
        case .tableArray(let array): return array.value()
        }
    }
}

/// A key's item and where the key was defined.
private struct TableEntry {
    var item: TableItem
    var position: TOMLTable.Position
}

// MARK: - Reader

/// The parsing state over one input; only lives inside a `parse` call.
///
/// Bytes are spelled as hex literals in the hot loops (0x22 is `"`, 0x27 `'`, 0x5C `\`,
/// 0x0A LF, 0x0D CR, 0x09 tab, 0x20 space, 0x23 `#`, 0x3D `=`, 0x2E `.`, 0x2C `,`,
/// 0x5B `[`, 0x5D `]`, 0x7B `{`, 0x7D `}`).
private struct TOMLReader {
    /// One part of a (possibly dotted) key, and the offset where it starts.
    struct KeyPart {
        let name: String
        let offset: Int
    }

    let bytes: [UInt8]
    /// Where the text starts: 3 with a byte order mark, else 0.
    let textStart: Int
    /// The next byte to read.
    var index: Int

    // The last position computed, so computing positions in increasing order costs time
    // linear in the input.
    private var markOffset: Int
    private var markLine = 1
    private var markColumn = 1

    init(bytes: [UInt8]) {
        self.bytes = bytes
        let hasBOM = bytes.count >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF
        textStart = hasBOM ? 3 : 0
        index = textStart
        markOffset = textStart
    }

    // MARK: Bytes

    /// The byte `ahead` bytes after the current one, or nil past the end.
    func peek(_ ahead: Int = 0) -> UInt8? {
        let offset = index + ahead
        return offset < bytes.count ? bytes[offset] : nil
    }

    private static func isBareKeyByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x5F, 0x2D: return true  // A-Z a-z 0-9 _ -
        default: return false
        }
    }

    /// Bytes that may make up an unquoted value: numbers, booleans, and (to reject them whole)
    /// dates, times, `inf`, `nan` and unquoted words.
    private static func isValueTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x5F, 0x2D, 0x2B, 0x2E, 0x3A: return true  // + . :
        default: return false
        }
    }

    private static func isControl(_ byte: UInt8) -> Bool {
        (byte < 0x20 && byte != 0x09) || byte == 0x7F
    }

    mutating func skipWhitespace() {
        while let byte = peek(), byte == 0x20 || byte == 0x09 { index += 1 }
    }

    /// At a CR: consumes CR LF, or fails on a lone CR.
    mutating func consumeCarriageReturn() throws(TOMLError) {
        guard peek(1) == 0x0A else {
            throw fail(.controlCharacter, "a carriage return (CR) must be followed by a line feed (LF)", at: index)
        }
        index += 2
    }

    /// At a `#`: skips the comment, stopping before the line break.
    mutating func skipComment() throws(TOMLError) {
        index += 1
        while let byte = peek(), byte != 0x0A, byte != 0x0D {
            if Self.isControl(byte) {
                throw fail(.controlCharacter, "control character \(Self.unicodeName(UInt32(byte))) is not allowed in a comment", at: index)
            }
            index += 1
        }
    }

    /// Skips whitespace, line breaks and comments (between array elements).
    mutating func skipWhitespaceCommentsAndNewlines() throws(TOMLError) {
        while let byte = peek() {
            switch byte {
            case 0x20, 0x09, 0x0A: index += 1
            case 0x0D: try consumeCarriageReturn()
            case 0x23: try skipComment()
            default: return
            }
        }
    }

    // MARK: Positions and errors

    /// The 1-based line and column (in Unicode scalars) of `offset`.
    mutating func position(at offset: Int) -> TOMLTable.Position {
        if offset < markOffset {
            markOffset = textStart
            markLine = 1
            markColumn = 1
        }
        let end = min(offset, bytes.count)
        var cursor = markOffset
        while cursor < end {
            let byte = bytes[cursor]
            if byte == 0x0A {
                markLine += 1
                markColumn = 1
            } else if byte & 0xC0 != 0x80 {
                markColumn += 1
            }
            cursor += 1
        }
        markOffset = end
        return TOMLTable.Position(line: markLine, column: markColumn)
    }

    mutating func fail(_ kind: TOMLError.Kind, _ message: String, at offset: Int) -> TOMLError {
        let position = position(at: offset)
        return TOMLError(kind: kind, line: position.line, column: position.column, message: message)
    }

    /// "U+0001" for messages.
    static func unicodeName(_ value: UInt32) -> String {
        let hex = String(value, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }

    /// What is at `offset`, for messages: "'x'", "end of line", "end of file", "'é' (U+00E9)".
    func describe(at offset: Int) -> String {
        guard offset < bytes.count else { return "end of file" }
        let byte = bytes[offset]
        switch byte {
        case 0x0A, 0x0D: return "end of line"
        case 0x27: return "\"'\""
        case 0x20...0x7E: return "'\(Character(Unicode.Scalar(byte)))'"
        case 0x00...0x1F, 0x7F: return "control character \(Self.unicodeName(UInt32(byte)))"
        default:
            var iterator = bytes[offset...].makeIterator()
            var decoder = UTF8()
            if case .scalarValue(let scalar) = decoder.decode(&iterator) {
                return "'\(scalar)' (\(Self.unicodeName(scalar.value)))"
            }
            return "byte 0x" + String(byte, radix: 16, uppercase: true)
        }
    }

    /// A key as written, for messages: `profiles."my laptop".retention`.
    static func display(_ parts: ArraySlice<KeyPart>) -> String {
        parts.map { part in
            if !part.name.isEmpty, part.name.utf8.allSatisfy(isBareKeyByte) { return part.name }
            var quoted = "\""
            for scalar in part.name.unicodeScalars {
                switch scalar {
                case "\"": quoted += "\\\""
                case "\\": quoted += "\\\\"
                default:
                    if scalar.value < 0x20 || scalar.value == 0x7F {
                        quoted += "\\u" + String(unicodeName(scalar.value).dropFirst(2))
                    } else {
                        quoted.unicodeScalars.append(scalar)
                    }
                }
            }
            return quoted + "\""
        }.joined(separator: ".")
    }

    /// "line 3, column 1", for messages pointing at an earlier definition.
    static func place(_ position: TOMLTable.Position) -> String {
        "line \(position.line), column \(position.column)"
    }

    // MARK: UTF-8

    /// Fails at the first byte that does not start a well-formed UTF-8 sequence.
    mutating func validateUTF8() throws(TOMLError) {
        var offset = textStart
        let count = bytes.count
        while offset < count {
            let lead = bytes[offset]
            if lead < 0x80 {
                offset += 1
                continue
            }
            let length = UTF8Sequence.length(in: bytes, at: offset, end: count)
            let valid = length > 0
            guard valid else {
                let hex = String(lead, radix: 16, uppercase: true)
                throw fail(.invalidUTF8, "invalid UTF-8 (a sequence starting with byte 0x\(hex))", at: offset)
            }
            offset += length
        }
    }

    // MARK: Document

    mutating func parseDocument() throws(TOMLError) -> TOMLTable {
        let root = TableNode(kind: .root, depth: 0, origin: nil)
        var section = root
        while true {
            skipWhitespace()
            guard let byte = peek() else { break }
            switch byte {
            case 0x0A:
                index += 1
                continue
            case 0x0D:
                try consumeCarriageReturn()
                continue
            case 0x23:
                try skipComment()
                continue
            case 0x5B:
                let (table, header) = try parseHeader(root: root)
                section = table
                try expectLineEnd(after: "the table header \(header)")
            default:
                let key = try parseKeyValue(into: section)
                try expectLineEnd(after: "the value of '\(Self.display(key[...]))'")
            }
        }
        return root.table()
    }

    /// After a value or header: optional whitespace and comment, then a line break or the end.
    mutating func expectLineEnd(after what: @autoclosure () -> String) throws(TOMLError) {
        skipWhitespace()
        if peek() == 0x23 { try skipComment() }
        switch peek() {
        case nil, 0x0A: return
        case 0x0D: try consumeCarriageReturn()
        default:
            throw fail(.trailingContent, "unexpected \(describe(at: index)) after \(what()); expected the end of the line", at: index)
        }
    }

    // MARK: Keys

    mutating func parseKey() throws(TOMLError) -> [KeyPart] {
        var parts = [try parseKeyPart()]
        while true {
            let beforeSpace = index
            skipWhitespace()
            guard peek() == 0x2E else {
                index = beforeSpace
                return parts
            }
            index += 1
            skipWhitespace()
            parts.append(try parseKeyPart())
        }
    }

    mutating func parseKeyPart() throws(TOMLError) -> KeyPart {
        let start = index
        guard let byte = peek() else {
            throw fail(.unexpectedCharacter, "expected a key, found end of file", at: start)
        }
        if byte == 0x22 || byte == 0x27 {
            if peek(1) == byte && peek(2) == byte {
                throw fail(.unexpectedCharacter, "a multi-line string can't be a key", at: start)
            }
            let name = byte == 0x22 ? try parseBasicString() : try parseLiteralString()
            return KeyPart(name: name, offset: start)
        }
        guard Self.isBareKeyByte(byte) else {
            throw fail(.unexpectedCharacter, "expected a key, found \(describe(at: start))", at: start)
        }
        while let next = peek(), Self.isBareKeyByte(next) { index += 1 }
        return KeyPart(name: String(decoding: bytes[start..<index], as: UTF8.self), offset: start)
    }

    // MARK: Tables

    /// At a `[`: reads a `[table]` or `[[array]]` header and returns the table it opens, and
    /// the header as written for messages.
    mutating func parseHeader(root: TableNode) throws(TOMLError) -> (TableNode, String) {
        let start = index
        let isArray = peek(1) == 0x5B
        index += isArray ? 2 : 1
        skipWhitespace()
        let key = try parseKey()
        skipWhitespace()
        let name = Self.display(key[...])
        let header = isArray ? "[[\(name)]]" : "[\(name)]"
        if isArray {
            guard peek() == 0x5D, peek(1) == 0x5D else {
                throw fail(.unexpectedCharacter, "expected ']]' to close the header [[\(name)]], found \(describe(at: index))", at: index)
            }
            index += 2
        } else {
            guard peek() == 0x5D else {
                throw fail(.unexpectedCharacter, "expected ']' to close the header [\(name)], found \(describe(at: index))", at: index)
            }
            index += 1
        }
        return (try defineTable(key, isArray: isArray, headerOffset: start, root: root), header)
    }

    /// Finds or creates the table a header names, enforcing TOML's rules on redefinition.
    mutating func defineTable(
        _ key: [KeyPart], isArray: Bool, headerOffset: Int, root: TableNode
    ) throws(TOMLError) -> TableNode {
        let headerPosition = position(at: headerOffset)
        var node = root
        for (number, part) in key.enumerated() {
            let isLast = number == key.count - 1
            let path = Self.display(key[...number])
            guard let existing = node.entry(part.name) else {
                // A new table (or array of tables) from here on.
                let depth = node.depth + 1
                if depth + (isLast && isArray ? 1 : 0) > TOMLParser.maxDepth {
                    throw tooDeep(at: part.offset)
                }
                if isLast && isArray {
                    let element = TableNode(kind: .header, depth: depth + 1, origin: headerPosition)
                    node.insert(part.name, .tableArray(TableArrayNode(depth: depth, first: element)), at: headerPosition)
                    return element
                }
                let child = TableNode(kind: isLast ? .header : .implicit, depth: depth, origin: headerPosition)
                node.insert(part.name, .table(child), at: headerPosition)
                node = child
                continue
            }
            let earlier = Self.place(existing.position)
            switch existing.item {
            case .value(let value):
                if case .table = value {
                    throw fail(.keyConflict, "'\(path)' is an inline table (\(earlier)) and can't be added to by a table header", at: headerOffset)
                }
                throw fail(.keyConflict, "'\(path)' is already defined as \(Self.article(value.typeName)) (\(earlier)), not a table", at: headerOffset)
            case .table(let table):
                guard isLast else {
                    node = table
                    continue
                }
                if isArray {
                    throw fail(.keyConflict, "'\(path)' is already defined as a table (\(earlier)), not an array of tables", at: headerOffset)
                }
                switch table.kind {
                case .implicit:
                    table.kind = .header
                    table.origin = headerPosition
                    node.reposition(part.name, to: headerPosition)
                    return table
                case .dotted:
                    throw fail(.tableRedefined, "table '\(path)' is already defined by dotted keys (\(earlier))", at: headerOffset)
                case .header, .root, .inline:
                    throw fail(.tableRedefined, "table [\(path)] is defined twice (first at \(earlier))", at: headerOffset)
                }
            case .tableArray(let array):
                guard isLast else {
                    node = array.last
                    continue
                }
                guard isArray else {
                    throw fail(.tableRedefined, "'\(path)' is already defined as an array of tables (\(earlier)); it can't also be [\(path)]", at: headerOffset)
                }
                let element = TableNode(kind: .header, depth: array.depth + 1, origin: headerPosition)
                array.append(element)
                return element
            }
        }
        return node  // Not reached: a key has at least one part, and the last one returns.
    }

    /// "a string", "an integer", "an array", ... for messages.
    static func article(_ typeName: String) -> String {
        let vowel = typeName.first.map { "aeiou".contains($0) } ?? false
        return (vowel ? "an " : "a ") + typeName
    }

    mutating func tooDeep(at offset: Int) -> TOMLError {
        fail(.tooDeep, "tables and arrays are nested more than \(TOMLParser.maxDepth) levels deep", at: offset)
    }

    // MARK: Key/value pairs

    // `parseKeyValue`, `parseValue`, `parseArray` and `parseInlineTable` recurse into each
    // other, so they hold no messages themselves: every error is built by a separate function,
    // which keeps their stack frames small even in debug builds.

    /// Reads `key = value` into `table` and returns the key, for messages.
    mutating func parseKeyValue(into table: TableNode) throws(TOMLError) -> [KeyPart] {
        let keyStart = index
        let key = try parseKey()
        skipWhitespace()
        guard peek() == 0x3D else { throw missingEquals(after: key) }
        index += 1
        skipWhitespace()
        let (node, name, position) = try resolveKey(key, keyStart: keyStart, in: table)
        let value = try parseValue(depth: node.depth + 1)
        node.insert(name, .value(value), at: position)
        return key
    }

    mutating func missingEquals(after key: [KeyPart]) -> TOMLError {
        fail(.missingEquals, "expected '=' after key '\(Self.display(key[...]))', found \(describe(at: index))", at: index)
    }

    /// Walks (creating as needed) the tables of a dotted key from `table`, and checks that the
    /// last part is still free. Returns the table to put the value in, the last part's name,
    /// and its position.
    mutating func resolveKey(
        _ key: [KeyPart], keyStart: Int, in table: TableNode
    ) throws(TOMLError) -> (TableNode, String, TOMLTable.Position) {
        var node = table
        for (number, part) in key.enumerated() {
            let path = Self.display(key[...number])
            guard let existing = node.entry(part.name) else {
                let partPosition = position(at: part.offset)
                if number == key.count - 1 { return (node, part.name, partPosition) }
                guard node.depth + 1 <= TOMLParser.maxDepth else { throw tooDeep(at: part.offset) }
                let child = TableNode(kind: .dotted, depth: node.depth + 1, origin: partPosition)
                node.insert(part.name, .table(child), at: partPosition)
                node = child
                continue
            }
            let earlier = Self.place(existing.position)
            if number == key.count - 1 {
                if case .value = existing.item {
                    throw fail(.duplicateKey, "duplicate key '\(path)' (first defined at \(earlier))", at: keyStart)
                }
                throw fail(.keyConflict, "'\(path)' is already defined as a table (\(earlier))", at: keyStart)
            }
            switch existing.item {
            case .table(let child) where child.kind == .dotted:
                node = child
            case .table:
                throw fail(.keyConflict, "table '\(path)' is defined by a header (\(earlier)); dotted keys can't add to it", at: keyStart)
            case .tableArray:
                throw fail(.keyConflict, "'\(path)' is an array of tables (\(earlier)); dotted keys can't add to it", at: keyStart)
            case .value(.table):
                throw fail(.keyConflict, "'\(path)' is an inline table (\(earlier)) and can't be added to", at: keyStart)
            case .value(let value):
                throw fail(.keyConflict, "'\(path)' is already defined as \(Self.article(value.typeName)) (\(earlier)), not a table", at: keyStart)
            }
        }
        // Not reached: a key has at least one part, and the last one returns or throws.
        throw fail(.unexpectedCharacter, "expected a key, found \(describe(at: keyStart))", at: keyStart)
    }

    // MARK: Values

    /// Reads one value; `depth` is the nesting level an array or inline table here would have.
    mutating func parseValue(depth: Int) throws(TOMLError) -> TOMLValue {
        switch peek() {
        case 0x22?, 0x27?:
            return .string(try parseStringValue())
        case 0x5B?:
            return try parseArray(depth: depth)
        case 0x7B?:
            return try parseInlineTable(depth: depth)
        case let byte? where Self.isValueTokenByte(byte):
            return try parseUnquotedValue()
        default:
            throw expectedValue()
        }
    }

    /// At a `"` or `'`: reads a string of any of the four kinds.
    mutating func parseStringValue() throws(TOMLError) -> String {
        let quote = bytes[index]
        if peek(1) == quote && peek(2) == quote { return try parseMultilineString(quote: quote) }
        return quote == 0x22 ? try parseBasicString() : try parseLiteralString()
    }

    mutating func expectedValue() -> TOMLError {
        fail(.unexpectedCharacter, "expected a value, found \(describe(at: index))", at: index)
    }

    /// At a `[`: reads an array.
    mutating func parseArray(depth: Int) throws(TOMLError) -> TOMLValue {
        let open = index
        guard depth <= TOMLParser.maxDepth else { throw tooDeep(at: open) }
        index += 1
        var elements: [TOMLValue] = []
        while true {
            try skipWhitespaceCommentsAndNewlines()
            switch peek() {
            case nil:
                throw unterminatedArray(open: open)
            case 0x5D?:
                index += 1
                return .array(elements)
            default:
                break
            }
            elements.append(try parseValue(depth: depth + 1))
            try skipWhitespaceCommentsAndNewlines()
            switch peek() {
            case nil:
                throw unterminatedArray(open: open)
            case 0x2C?:
                index += 1
            case 0x5D?:
                index += 1
                return .array(elements)
            default:
                throw expectedArraySeparator(open: open)
            }
        }
    }

    mutating func unterminatedArray(open: Int) -> TOMLError {
        fail(.unterminatedArray, "unterminated array: no closing ']'", at: open)
    }

    mutating func expectedArraySeparator(open: Int) -> TOMLError {
        let found = describe(at: index)
        let opened = Self.place(position(at: open))
        return fail(.unexpectedCharacter, "expected ',' or ']' after an array element (the array opened at \(opened)), found \(found)", at: index)
    }

    /// At a `{`: reads an inline table.
    mutating func parseInlineTable(depth: Int) throws(TOMLError) -> TOMLValue {
        let open = index
        guard depth <= TOMLParser.maxDepth else { throw tooDeep(at: open) }
        let node = TableNode(kind: .inline, depth: depth, origin: position(at: open))
        index += 1
        skipWhitespace()
        if peek() == 0x7D {
            index += 1
            return .table(node.table())
        }
        while true {
            skipWhitespace()
            switch peek() {
            case nil, 0x0A?, 0x0D?:
                throw unterminatedInlineTable(open: open)
            case 0x7D?:
                throw trailingCommaInInlineTable()
            default:
                break
            }
            _ = try parseKeyValue(into: node)
            skipWhitespace()
            switch peek() {
            case nil, 0x0A?, 0x0D?:
                throw unterminatedInlineTable(open: open)
            case 0x2C?:
                index += 1
            case 0x7D?:
                index += 1
                return .table(node.table())
            default:
                throw expectedInlineTableSeparator()
            }
        }
    }

    mutating func unterminatedInlineTable(open: Int) -> TOMLError {
        fail(.unterminatedInlineTable, "unterminated inline table: no closing '}' on the same line (inline tables must be on one line)", at: open)
    }

    mutating func trailingCommaInInlineTable() -> TOMLError {
        fail(.unexpectedCharacter, "a trailing comma is not allowed in an inline table", at: index)
    }

    mutating func expectedInlineTableSeparator() -> TOMLError {
        fail(.unexpectedCharacter, "expected ',' or '}' in an inline table, found \(describe(at: index))", at: index)
    }

    // MARK: Strings

    /// At a `"`: reads a basic string (also used for quoted keys).
    mutating func parseBasicString() throws(TOMLError) -> String {
        let open = index
        index += 1
        var text: [UInt8] = []
        var run = index
        while true {
            guard let byte = peek() else { throw unterminatedString(open: open) }
            switch byte {
            case 0x22:
                text.append(contentsOf: bytes[run..<index])
                index += 1
                return String(decoding: text, as: UTF8.self)
            case 0x5C:
                text.append(contentsOf: bytes[run..<index])
                try parseEscape(into: &text, multiline: false)
                run = index
            case 0x0A, 0x0D:
                throw unterminatedString(open: open)
            case 0x09:
                index += 1
            case 0x00...0x1F, 0x7F:
                throw controlCharacterInString(at: index)
            default:
                index += 1
            }
        }
    }

    /// At a `'`: reads a literal string (also used for quoted keys).
    mutating func parseLiteralString() throws(TOMLError) -> String {
        let open = index
        index += 1
        let start = index
        while true {
            guard let byte = peek() else { throw unterminatedString(open: open) }
            switch byte {
            case 0x27:
                let text = String(decoding: bytes[start..<index], as: UTF8.self)
                index += 1
                return text
            case 0x0A, 0x0D:
                throw unterminatedString(open: open)
            case 0x09:
                index += 1
            case 0x00...0x1F, 0x7F:
                throw controlCharacterInString(at: index)
            default:
                index += 1
            }
        }
    }

    /// At `"""` or `'''`: reads a multi-line basic (with escapes) or literal string.
    mutating func parseMultilineString(quote: UInt8) throws(TOMLError) -> String {
        let open = index
        let isBasic = quote == 0x22
        index += 3
        // A line break right after the opening quotes is not part of the string.
        if peek() == 0x0A {
            index += 1
        } else if peek() == 0x0D {
            try consumeCarriageReturn()
        }
        var text: [UInt8] = []
        var run = index
        while true {
            guard let byte = peek() else {
                let delimiter = isBasic ? "\"\"\"" : "'''"
                throw fail(.unterminatedString, "unterminated multi-line string: no closing \(delimiter)", at: open)
            }
            switch byte {
            case quote:
                var count = 1
                while peek(count) == quote { count += 1 }
                if count < 3 {
                    index += count
                    continue
                }
                // Up to two quotes just before the closing three belong to the string.
                index += min(count - 3, 2)
                text.append(contentsOf: bytes[run..<index])
                index += 3
                return String(decoding: text, as: UTF8.self)
            case 0x5C where isBasic:
                text.append(contentsOf: bytes[run..<index])
                try parseEscape(into: &text, multiline: true)
                run = index
            case 0x0A, 0x09:
                index += 1
            case 0x0D:
                text.append(contentsOf: bytes[run..<index])
                try consumeCarriageReturn()
                text.append(0x0A)
                run = index
            case 0x00...0x1F, 0x7F:
                throw controlCharacterInString(at: index)
            default:
                index += 1
            }
        }
    }

    /// At a `\` in a basic string: appends what the escape stands for.
    mutating func parseEscape(into text: inout [UInt8], multiline: Bool) throws(TOMLError) {
        let start = index
        guard let code = peek(1) else {
            // Nothing follows: the caller reports the unterminated string.
            index += 1
            return
        }
        let simple: UInt8?
        switch code {
        case 0x62: simple = 0x08  // \b
        case 0x74: simple = 0x09  // \t
        case 0x6E: simple = 0x0A  // \n
        case 0x66: simple = 0x0C  // \f
        case 0x72: simple = 0x0D  // \r
        case 0x22: simple = 0x22  // \"
        case 0x5C: simple = 0x5C  // \\
        default: simple = nil
        }
        if let simple {
            text.append(simple)
            index += 2
            return
        }
        switch code {
        case 0x75:  // \uXXXX
            try parseUnicodeEscape(into: &text, digits: 4)
        case 0x55:  // \UXXXXXXXX
            try parseUnicodeEscape(into: &text, digits: 8)
        case 0x20, 0x09, 0x0A, 0x0D:
            // A line-ending backslash (multi-line strings only): only whitespace may follow it.
            guard multiline else { throw invalidEscape(at: start) }
            var next = start + 1
            while next < bytes.count, bytes[next] == 0x20 || bytes[next] == 0x09 { next += 1 }
            guard next < bytes.count else {
                index = next  // The caller reports the unterminated string.
                return
            }
            guard bytes[next] == 0x0A || bytes[next] == 0x0D else {
                throw fail(.invalidEscape, "invalid escape: a '\\' followed by spaces must end the line", at: start)
            }
            index = next
            while let byte = peek() {
                switch byte {
                case 0x20, 0x09, 0x0A: index += 1
                case 0x0D: try consumeCarriageReturn()
                default: return
                }
            }
        default:
            throw invalidEscape(at: start)
        }
    }

    /// An escape the subset does not define, at the `\` at `start`.
    mutating func invalidEscape(at start: Int) -> TOMLError {
        let code = start + 1 < bytes.count ? bytes[start + 1] : 0
        let escape = (0x21...0x7E).contains(code)
            ? "'\\\(Character(Unicode.Scalar(code)))'"
            : "'\\' followed by \(describe(at: start + 1))"
        return fail(.invalidEscape, "invalid escape \(escape); the escapes are \\b \\t \\n \\f \\r \\\" \\\\ \\uXXXX and \\UXXXXXXXX", at: start)
    }

    /// At `\u` or `\U`: reads `digits` hex digits naming a Unicode scalar.
    mutating func parseUnicodeEscape(into text: inout [UInt8], digits: Int) throws(TOMLError) {
        let start = index
        let letter = digits == 4 ? "u" : "U"
        var value: UInt32 = 0
        for position in 0..<digits {
            guard let byte = peek(2 + position), let digit = Self.digitValue(byte), digit < 16 else {
                throw fail(.invalidEscape, "invalid escape: '\\\(letter)' must be followed by \(digits) hex digits", at: start)
            }
            value = value << 4 | UInt32(digit)
        }
        guard let scalar = Unicode.Scalar(value) else {
            let written = String(decoding: bytes[start..<(start + 2 + digits)], as: UTF8.self)
            throw fail(.invalidEscape, "invalid escape '\(written)': not a Unicode scalar value", at: start)
        }
        UTF8.encode(scalar) { text.append($0) }
        index += 2 + digits
    }

    mutating func unterminatedString(open: Int) -> TOMLError {
        let quote = bytes[open] == 0x22 ? "'\"'" : "\"'\""
        return fail(.unterminatedString, "unterminated string: no closing \(quote) on the same line", at: open)
    }

    mutating func controlCharacterInString(at offset: Int) -> TOMLError {
        fail(.controlCharacter, "control character \(Self.unicodeName(UInt32(bytes[offset]))) must be written as an escape in a string", at: offset)
    }

    // MARK: Numbers, booleans and the unsupported

    /// The value of an ASCII digit or letter as a digit (`0`-`9`, then `a`/`A` = 10 ...), or nil.
    static func digitValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: return byte - 0x30
        case 0x41...0x5A: return byte - 0x41 + 10
        case 0x61...0x7A: return byte - 0x61 + 10
        default: return nil
        }
    }

    /// Reads a boolean or number, or rejects the unquoted word with a helpful message.
    mutating func parseUnquotedValue() throws(TOMLError) -> TOMLValue {
        let start = index
        while let byte = peek(), Self.isValueTokenByte(byte) { index += 1 }
        let token = bytes[start..<index]
        let text = String(decoding: token, as: UTF8.self)
        switch text {
        case "true": return .bool(true)
        case "false": return .bool(false)
        case "inf", "+inf", "-inf", "nan", "+nan", "-nan":
            throw fail(.unsupported, "inf and nan are not supported in this subset", at: start)
        default: break
        }
        if Self.looksLikeDateOrTime(token) {
            throw fail(.unsupported, "dates and times are not supported in this subset", at: start)
        }
        if let first = token.first, (0x41...0x5A).contains(first) || (0x61...0x7A).contains(first) {
            let lowered = text.lowercased()
            let hint = lowered == "true" || lowered == "false"
                ? "booleans are written 'true' and 'false'"
                : "strings must be in quotes"
            throw fail(.unexpectedCharacter, "expected a value, found '\(text)' (\(hint))", at: start)
        }
        return try parseNumber(token, text: text, at: start)
    }

    /// `1979-05-27...` or `07:32:00...`: a number never has four digits then `-`, or a `:`.
    static func looksLikeDateOrTime(_ token: ArraySlice<UInt8>) -> Bool {
        if token.contains(0x3A) { return true }
        let prefix = Array(token.prefix(5))
        return prefix.count == 5 && prefix[0..<4].allSatisfy { (0x30...0x39).contains($0) } && prefix[4] == 0x2D
    }

    /// Scans digits of `radix` with `_` only between digits, from `start`; returns where they
    /// end, or why they are malformed.
    func scanDigits(_ token: ArraySlice<UInt8>, from start: Int, radix: UInt8) -> (end: Int, problem: String?) {
        var offset = start
        var lastWasDigit = false
        while offset < token.endIndex {
            let byte = token[offset]
            if byte == 0x5F {
                guard lastWasDigit else { return (offset, "'_' must be between digits") }
                lastWasDigit = false
            } else if let digit = Self.digitValue(byte), digit < radix {
                lastWasDigit = true
            } else {
                break
            }
            offset += 1
        }
        if offset == start {
            return (offset, "expected a digit, found \(offset < token.endIndex ? describe(at: offset) : "end of number")")
        }
        if !lastWasDigit { return (offset, "'_' must be between digits") }
        return (offset, nil)
    }

    mutating func invalidNumber(_ text: String, _ reason: String, at start: Int) -> TOMLError {
        fail(.invalidNumber, "invalid number '\(text)': \(reason)", at: start)
    }

    /// Reads an integer or float from `token`, which starts at `start`.
    mutating func parseNumber(_ token: ArraySlice<UInt8>, text: String, at start: Int) throws(TOMLError) -> TOMLValue {
        let end = token.endIndex
        var offset = token.startIndex
        let hasSign = token[offset] == 0x2B || token[offset] == 0x2D
        if hasSign { offset += 1 }

        // Hexadecimal, octal, binary.
        if end - offset >= 2, token[offset] == 0x30, token[offset + 1] == 0x78 || token[offset + 1] == 0x6F || token[offset + 1] == 0x62 {
            let radix: UInt8 = token[offset + 1] == 0x78 ? 16 : token[offset + 1] == 0x6F ? 8 : 2
            guard !hasSign else {
                throw invalidNumber(text, "hexadecimal, octal and binary integers can't have a sign", at: start)
            }
            let digitsStart = offset + 2
            let (digitsEnd, problem) = scanDigits(token, from: digitsStart, radix: radix)
            if let problem { throw invalidNumber(text, problem, at: start) }
            guard digitsEnd == end else {
                throw invalidNumber(text, "\(describe(at: digitsEnd)) is not a base-\(radix) digit", at: start)
            }
            var value: Int64 = 0
            for byte in token[digitsStart..<end] {
                guard let digit = Self.digitValue(byte) else { continue }  // `_`
                let (shifted, overflowShift) = value.multipliedReportingOverflow(by: Int64(radix))
                let (sum, overflowAdd) = shifted.addingReportingOverflow(Int64(digit))
                if overflowShift || overflowAdd {
                    throw fail(.integerOverflow, "integer \(text) does not fit in 64 bits (the largest is 0x7FFFFFFFFFFFFFFF)", at: start)
                }
                value = sum
            }
            return .integer(value)
        }

        // Decimal integer part.
        let integerStart = offset
        let (integerEnd, integerProblem) = scanDigits(token, from: integerStart, radix: 10)
        if let integerProblem { throw invalidNumber(text, integerProblem, at: start) }
        if token[integerStart] == 0x30 && integerEnd - integerStart > 1 {
            throw invalidNumber(text, "leading zeros are not allowed", at: start)
        }
        offset = integerEnd
        if offset == end {
            let digits = String(decoding: token.filter { $0 != 0x5F }, as: UTF8.self)
            guard let value = Int64(digits) else {
                throw fail(.integerOverflow, "integer \(text) does not fit in 64 bits (from -9223372036854775808 to 9223372036854775807)", at: start)
            }
            return .integer(value)
        }

        // Fraction and exponent.
        if token[offset] == 0x2E {
            let (fractionEnd, problem) = scanDigits(token, from: offset + 1, radix: 10)
            if let problem { throw invalidNumber(text, "\(problem) after '.'", at: start) }
            offset = fractionEnd
        }
        if offset < end, token[offset] == 0x65 || token[offset] == 0x45 {
            offset += 1
            if offset < end, token[offset] == 0x2B || token[offset] == 0x2D { offset += 1 }
            let (exponentEnd, problem) = scanDigits(token, from: offset, radix: 10)
            if let problem { throw invalidNumber(text, "\(problem) in the exponent", at: start) }
            offset = exponentEnd
        }
        guard offset == end else {
            throw invalidNumber(text, "unexpected \(describe(at: offset))", at: start)
        }
        let cleaned = String(decoding: token.filter { $0 != 0x5F }, as: UTF8.self)
        guard let value = Double(cleaned), value.isFinite else {
            throw invalidNumber(text, "the value is too large for a float", at: start)
        }
        return .float(value)
    }
}
