import KeepsakeSupport

/// Why JSON text could not be parsed, and where.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    // MARK: Kinds

    /// The class of problem, for callers that react to it (tests, mostly).
    public enum Kind: Sendable, Equatable {
        /// The input ended where more was required.
        case unexpectedEnd
        /// A byte that cannot start or continue what is being parsed.
        case unexpectedCharacter
        /// Something that started like `true`, `false` or `null` but is not.
        case invalidLiteral
        /// A string without its closing quote.
        case unterminatedString
        /// A `\` escape that JSON does not define, or a `\u` without four hex digits.
        case invalidEscape
        /// A `\u` escape of half a surrogate pair.
        case loneSurrogate
        /// A raw control character (below U+0020) inside a string.
        case controlCharacter
        /// Bytes that are not well-formed UTF-8.
        case invalidUTF8
        /// A number that breaks the grammar (leading zero, missing digits).
        case invalidNumber
        /// An integer of more than 20 digits, an overlong number, or one beyond `Double`.
        case numberOutOfRange
        /// Arrays and objects nested deeper than the limit.
        case tooDeep
        /// Anything but whitespace after the value.
        case trailingData
    }

    // MARK: Properties

    /// The class of problem.
    public let kind: Kind
    /// Byte offset into the input where the problem was found.
    public let offset: Int
    /// What is wrong, without the offset (e.g. "unterminated string").
    public let message: String

    /// Creates an error.
    public init(kind: Kind, offset: Int, message: String) {
        self.kind = kind
        self.offset = offset
        self.message = message
    }

    /// The message with its position, e.g. "unterminated string at byte 17".
    public var description: String { "\(message) at byte \(offset)" }
}

/// A strict RFC 8259 JSON parser over UTF-8 bytes.
///
/// - Rejects anything the RFC does not allow: trailing data, leading zeros, raw control
///   characters in strings, invalid UTF-8, lone surrogates in `\u` escapes, `NaN`, comments.
/// - Integers that fit `Int64` become `.int`; larger ones of at most 20 digits become `.double`;
///   longer ones are "number out of range". Fractions and exponents become `.double`.
/// - Nesting deeper than `maxDepth` is an error. Parsing is iterative (no recursion), so no
///   input can overflow the stack, and it runs in time linear in the input. `maxDepth` is capped
///   at `depthCeiling`, because freeing, comparing or serializing a `JSONValue` recurses.
/// - When an object repeats a key, the last value wins (in the first one's position).
public enum JSONParser {
    // MARK: Entry points

    /// The default nesting limit.
    public static let defaultMaxDepth = 64

    /// The highest nesting limit honoured; a larger `maxDepth` is lowered to this.
    public static let depthCeiling = 512

    /// Parses one JSON document from UTF-8 bytes (`[UInt8]`, `ArraySlice`, `Data`, ...).
    public static func parse(
        _ bytes: some Collection<UInt8>, maxDepth: Int = defaultMaxDepth
    ) throws(JSONParseError) -> JSONValue {
        let contiguous = bytes.withContiguousStorageIfAvailable { buffer in
            parseResult(buffer, maxDepth: maxDepth)
        }
        if let contiguous { return try contiguous.get() }
        let copy = Array(bytes)
        return try copy.withUnsafeBufferPointer { parseResult($0, maxDepth: maxDepth) }.get()
    }

    /// Parses one JSON document from raw memory holding UTF-8.
    public static func parse(
        _ buffer: UnsafeRawBufferPointer, maxDepth: Int = defaultMaxDepth
    ) throws(JSONParseError) -> JSONValue {
        try buffer.withMemoryRebound(to: UInt8.self) { parseResult($0, maxDepth: maxDepth) }.get()
    }

    /// Parses one JSON document from a string.
    public static func parse(_ string: String, maxDepth: Int = defaultMaxDepth) throws(JSONParseError) -> JSONValue {
        var string = string
        return try string.withUTF8 { parseResult($0, maxDepth: maxDepth) }.get()
    }

    // The standard library's `with...` helpers rethrow untyped errors; a Result keeps the type.
    private static func parseResult(_ buffer: UnsafeBufferPointer<UInt8>, maxDepth: Int) -> Result<JSONValue, JSONParseError> {
        Result { () throws(JSONParseError) -> JSONValue in
            var cursor = JSONParserCursor(input: buffer, maxDepth: maxDepth)
            return try cursor.parseDocument()
        }
    }
}

// MARK: - Cursor

/// The parsing state over one input buffer; only lives inside a `parse` call.
private struct JSONParserCursor {
    let input: UnsafeBufferPointer<UInt8>
    let maxDepth: Int
    var position = 0
    /// Reused for strings with escapes, so each such string costs one `String` allocation.
    var scratch: [UInt8] = []

    init(input: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.input = input
        self.maxDepth = min(maxDepth, JSONParser.depthCeiling)
    }

    // MARK: Bytes

    // Hot paths spell bytes as hex literals (0x22 is `"`, 0x5C `\`, 0x2C `,` and so on):
    // `UInt8(ascii:)` and static constants are real calls in debug builds.
    /// Numbers longer than this are refused rather than handed to `Double(_:)`.
    private static let maxNumberLength = 1_000

    // MARK: Document

    /// An enclosing container, saved while a nested one is being parsed.
    private enum Frame {
        case array([JSONValue])
        case object(JSONObject, key: String)
    }

    /// The innermost open container.
    private enum Open { case none, array, object }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        // The innermost container lives in locals, so adding members touches no stack; only
        // enclosing containers go on `saved`. The explicit stack (not recursion) means hostile
        // nesting hits the depth limit instead of overflowing the call stack.
        var open = Open.none
        var array: [JSONValue] = []
        var object = JSONObject()
        var key = ""
        var saved: [Frame] = []

        /// Moves the innermost container (if any) onto `saved` before opening a nested one.
        func save() {
            switch open {
            case .none: break
            case .array: saved.append(.array(array)); array = []
            case .object: saved.append(.object(object, key: key)); object = JSONObject()
            }
        }

        /// Makes the enclosing container (if any) the innermost again.
        func restore() {
            guard let frame = saved.popLast() else {
                open = .none
                return
            }
            switch frame {
            case .array(let elements): open = .array; array = elements
            case .object(let members, let name): open = .object; object = members; key = name
            }
        }

        nextValue: while true {
            skipWhitespace()
            guard position < input.count else {
                throw fail(.unexpectedEnd, "unexpected end of input, expected a value")
            }
            var value: JSONValue
            switch input[position] {
            case 0x7B: // {
                try checkDepth(saved.count + (open == .none ? 0 : 1))
                position += 1
                skipWhitespace()
                if position < input.count && input[position] == 0x7D { // }
                    position += 1
                    value = .object(JSONObject())
                } else {
                    let firstKey = try parseKey()
                    save()
                    open = .object
                    key = firstKey
                    continue nextValue
                }
            case 0x5B: // [
                try checkDepth(saved.count + (open == .none ? 0 : 1))
                position += 1
                skipWhitespace()
                if position < input.count && input[position] == 0x5D { // ]
                    position += 1
                    value = .array([])
                } else {
                    save()
                    open = .array
                    continue nextValue
                }
            case 0x22: // "
                value = .string(try parseString())
            case 0x2D, 0x30...0x39: // -, 0-9
                value = try parseNumber()
            case 0x74: // t
                try expectLiteral("true")
                value = .bool(true)
            case 0x66: // f
                try expectLiteral("false")
                value = .bool(false)
            case 0x6E: // n
                try expectLiteral("null")
                value = .null
            default:
                throw unexpected("expected a value")
            }

            // Hand the finished value to its container; closing a container finishes another.
            while open != .none {
                skipWhitespace()
                if open == .array {
                    array.append(value)
                    guard position < input.count else {
                        throw fail(.unexpectedEnd, "unexpected end of input in an array, expected ',' or ']'")
                    }
                    if input[position] == 0x2C { // ,
                        position += 1
                        continue nextValue
                    }
                    guard input[position] == 0x5D else { throw unexpected("expected ',' or ']'") } // ]
                    position += 1
                    value = .array(array)
                    array = []
                } else {
                    object[key] = value
                    guard position < input.count else {
                        throw fail(.unexpectedEnd, "unexpected end of input in an object, expected ',' or '}'")
                    }
                    if input[position] == 0x2C { // ,
                        position += 1
                        skipWhitespace()
                        key = try parseKey()
                        continue nextValue
                    }
                    guard input[position] == 0x7D else { throw unexpected("expected ',' or '}'") } // }
                    position += 1
                    value = .object(object)
                    object = JSONObject()
                }
                restore()
            }

            skipWhitespace()
            guard position == input.count else {
                throw fail(.trailingData, "unexpected data after the JSON value")
            }
            return value
        }
    }

    private func checkDepth(_ depth: Int) throws(JSONParseError) {
        if depth >= maxDepth {
            throw fail(.tooDeep, "arrays and objects nested deeper than \(maxDepth) levels")
        }
    }

    /// An object key and its `:`; `position` is at the key's opening quote (after whitespace).
    private mutating func parseKey() throws(JSONParseError) -> String {
        guard position < input.count else {
            throw fail(.unexpectedEnd, "unexpected end of input in an object, expected a key")
        }
        guard input[position] == 0x22 else { throw unexpected("expected a string key") }
        let key = try parseString()
        skipWhitespace()
        guard position < input.count else {
            throw fail(.unexpectedEnd, "unexpected end of input in an object, expected ':'")
        }
        guard input[position] == 0x3A else { throw unexpected("expected ':' after a key") } // :
        position += 1
        return key
    }

    private mutating func skipWhitespace() {
        while position < input.count {
            switch input[position] {
            case 0x20, 0x0a, 0x0d, 0x09: position += 1
            default: return
            }
        }
    }

    private mutating func expectLiteral(_ word: StaticString) throws(JSONParseError) {
        let length = word.utf8CodeUnitCount
        let matches = word.withUTF8Buffer { expected in
            guard input.count - position >= length else { return false }
            for offset in 0..<length where input[position + offset] != expected[offset] { return false }
            return true
        }
        guard matches else { throw fail(.invalidLiteral, "invalid literal, expected '\(word)'") }
        position += length
    }

    // MARK: Strings

    /// A string; `position` is at its opening quote and ends just past the closing one.
    private mutating func parseString() throws(JSONParseError) -> String {
        let open = position
        let start = position + 1
        var index = start
        // Fast path: no escapes, so the string is a slice of the input (validated as we go).
        while index < input.count {
            let byte = input[index]
            if byte == 0x22 { // closing quote
                position = index + 1
                return String(decoding: UnsafeBufferPointer(rebasing: input[start..<index]), as: UTF8.self)
            }
            if byte == 0x5C { break } // backslash
            if byte < 0x20 { throw controlCharacter(at: index) }
            index += byte < 0x80 ? 1 : try utf8Length(at: index)
        }
        guard index < input.count else { throw fail(.unterminatedString, "unterminated string", at: open) }

        // Slow path: copy into the scratch buffer, decoding escapes.
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: UnsafeBufferPointer(rebasing: input[start..<index]))
        while index < input.count {
            let byte = input[index]
            if byte == 0x22 { // closing quote
                position = index + 1
                return String(decoding: scratch, as: UTF8.self)
            }
            if byte == 0x5C { // backslash
                index = try decodeEscape(at: index, open: open)
            } else if byte < 0x20 {
                throw controlCharacter(at: index)
            } else if byte < 0x80 {
                scratch.append(byte)
                index += 1
            } else {
                let length = try utf8Length(at: index)
                scratch.append(contentsOf: UnsafeBufferPointer(rebasing: input[index..<(index + length)]))
                index += length
            }
        }
        throw fail(.unterminatedString, "unterminated string", at: open)
    }

    /// Decodes the escape whose `\` is at `index` into `scratch`; returns the index after it.
    private mutating func decodeEscape(at index: Int, open: Int) throws(JSONParseError) -> Int {
        guard index + 1 < input.count else { throw fail(.unterminatedString, "unterminated string", at: open) }
        let decoded: UInt8
        switch input[index + 1] {
        case UInt8(ascii: "\""): decoded = UInt8(ascii: "\"")
        case UInt8(ascii: "\\"): decoded = UInt8(ascii: "\\")
        case UInt8(ascii: "/"): decoded = UInt8(ascii: "/")
        case UInt8(ascii: "b"): decoded = 0x08
        case UInt8(ascii: "f"): decoded = 0x0c
        case UInt8(ascii: "n"): decoded = 0x0a
        case UInt8(ascii: "r"): decoded = 0x0d
        case UInt8(ascii: "t"): decoded = 0x09
        case UInt8(ascii: "u"):
            return try decodeUnicodeEscape(at: index)
        default:
            throw fail(.invalidEscape, "invalid escape \(describe(input[index + 1], prefix: "'\\"))", at: index)
        }
        scratch.append(decoded)
        return index + 2
    }

    /// `\uXXXX`, or a `\uD8xx\uDCxx` surrogate pair, at `index`; returns the index after it.
    private mutating func decodeUnicodeEscape(at index: Int) throws(JSONParseError) -> Int {
        let unit = try hex4(at: index + 2, escapeAt: index)
        var scalarValue = unit
        var end = index + 6
        switch unit {
        case 0xd800...0xdbff:
            // A high surrogate must be followed directly by an escaped low surrogate.
            guard end + 1 < input.count, input[end] == 0x5C, input[end + 1] == UInt8(ascii: "u") else {
                throw fail(.loneSurrogate, "lone surrogate \\u\(hexText(unit)) (a high surrogate without a low one)", at: index)
            }
            let low = try hex4(at: end + 2, escapeAt: end)
            guard (0xdc00...0xdfff).contains(low) else {
                throw fail(.loneSurrogate, "lone surrogate \\u\(hexText(unit)) (followed by \\u\(hexText(low)))", at: index)
            }
            scalarValue = 0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00)
            end += 6
        case 0xdc00...0xdfff:
            throw fail(.loneSurrogate, "lone surrogate \\u\(hexText(unit)) (a low surrogate without a high one)", at: index)
        default:
            break
        }
        guard let scalar = Unicode.Scalar(scalarValue) else {
            throw fail(.invalidEscape, "invalid \\u escape", at: index)
        }
        appendUTF8(scalar.value)
        return end
    }

    private mutating func appendUTF8(_ value: UInt32) {
        switch value {
        case 0..<0x80:
            scratch.append(UInt8(value))
        case 0x80..<0x800:
            scratch.append(0xc0 | UInt8(value >> 6))
            scratch.append(0x80 | UInt8(value & 0x3f))
        case 0x800..<0x10000:
            scratch.append(0xe0 | UInt8(value >> 12))
            scratch.append(0x80 | UInt8((value >> 6) & 0x3f))
            scratch.append(0x80 | UInt8(value & 0x3f))
        default:
            scratch.append(0xf0 | UInt8(value >> 18))
            scratch.append(0x80 | UInt8((value >> 12) & 0x3f))
            scratch.append(0x80 | UInt8((value >> 6) & 0x3f))
            scratch.append(0x80 | UInt8(value & 0x3f))
        }
    }

    /// Four hex digits at `start` as a value; the escape itself began at `escapeAt`.
    private func hex4(at start: Int, escapeAt: Int) throws(JSONParseError) -> UInt32 {
        guard start + 4 <= input.count else {
            throw fail(.invalidEscape, "incomplete \\u escape (needs four hex digits)", at: escapeAt)
        }
        var value: UInt32 = 0
        for offset in 0..<4 {
            let byte = input[start + offset]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw fail(.invalidEscape, "invalid \\u escape (needs four hex digits)", at: escapeAt)
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    private func hexText(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    /// Length of the well-formed UTF-8 sequence at `index` (lead byte ≥ 0x80), or an error.
    /// Overlong forms, encoded surrogates and values above U+10FFFF are all rejected.
    private func utf8Length(at index: Int) throws(JSONParseError) -> Int {
        let length = UTF8Sequence.length(in: input, at: index, end: input.count)
        guard length > 0 else {
            throw fail(.invalidUTF8, "invalid UTF-8 (byte 0x\(String(input[index], radix: 16)))", at: index)
        }
        return length
    }

    private func controlCharacter(at index: Int) -> JSONParseError {
        fail(.controlCharacter, "control character \(describe(input[index], prefix: "'")) in a string (must be escaped)", at: index)
    }

    // MARK: Numbers

    /// A number per the RFC grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    private mutating func parseNumber() throws(JSONParseError) -> JSONValue {
        let start = position
        var index = position
        let negative = input[index] == 0x2D // -
        if negative { index += 1 }

        let integerStart = index
        guard index < input.count, isDigit(input[index]) else {
            throw fail(.invalidNumber, "invalid number (expected a digit after '-')", at: index)
        }
        if input[index] == 0x30 { // 0
            index += 1
            if index < input.count && isDigit(input[index]) {
                throw fail(.invalidNumber, "invalid number (leading zero)", at: start)
            }
        } else {
            while index < input.count && isDigit(input[index]) { index += 1 }
        }
        let integerEnd = index

        var isInteger = true
        if index < input.count && input[index] == 0x2E { // .
            isInteger = false
            index += 1
            guard index < input.count, isDigit(input[index]) else {
                throw fail(.invalidNumber, "invalid number (expected a digit after '.')", at: index)
            }
            while index < input.count && isDigit(input[index]) { index += 1 }
        }
        if index < input.count && (input[index] == 0x65 || input[index] == 0x45) { // e E
            isInteger = false
            index += 1
            if index < input.count && (input[index] == 0x2B || input[index] == 0x2D) { // + -
                index += 1
            }
            guard index < input.count, isDigit(input[index]) else {
                throw fail(.invalidNumber, "invalid number (expected a digit in the exponent)", at: index)
            }
            while index < input.count && isDigit(input[index]) { index += 1 }
        }
        position = index

        if isInteger {
            guard integerEnd - integerStart <= 20 else {
                throw fail(.numberOutOfRange, "number out of range (more than 20 digits)", at: start)
            }
            if let exact = exactInteger(from: integerStart, to: integerEnd, negative: negative) {
                return exact
            }
        }
        guard index - start <= JSONParserCursor.maxNumberLength else {
            throw fail(.numberOutOfRange, "number out of range (longer than \(JSONParserCursor.maxNumberLength) characters)", at: start)
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: input[start..<index]), as: UTF8.self)
        guard let number = Double(text), number.isFinite else {
            throw fail(.numberOutOfRange, "number out of range", at: start)
        }
        return .double(number)
    }

    /// `.int` if it fits `Int64`, `.uint` if it is non-negative and fits `UInt64`, else nil
    /// (the caller falls back to `Double`).
    private func exactInteger(from start: Int, to end: Int, negative: Bool) -> JSONValue? {
        var magnitude: UInt64 = 0
        var index = start
        while index < end {
            let (shifted, overflowA) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflowB) = shifted.addingReportingOverflow(UInt64(input[index] &- 0x30))
            if overflowA || overflowB { return nil }
            magnitude = sum
            index += 1
        }
        if negative {
            if magnitude == UInt64(Int64.max) + 1 { return .int(Int64.min) }
            return magnitude <= UInt64(Int64.max) ? .int(-Int64(magnitude)) : nil
        }
        return magnitude <= UInt64(Int64.max) ? .int(Int64(magnitude)) : .uint(magnitude)
    }

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= 0x30 && byte <= 0x39
    }

    // MARK: Errors

    private func fail(_ kind: JSONParseError.Kind, _ message: String, at offset: Int? = nil) -> JSONParseError {
        JSONParseError(kind: kind, offset: offset ?? position, message: message)
    }

    /// "unexpected character 'x', expected ..." at the current position.
    private func unexpected(_ expectation: String) -> JSONParseError {
        let byte = input[position]
        let what = byte >= 0x21 && byte < 0x7f ? "unexpected character" : "unexpected byte"
        return fail(.unexpectedCharacter, "\(what) \(describe(byte, prefix: "'")), \(expectation)")
    }

    /// A byte for messages: `'x'` when printable ASCII, `0xNN` otherwise.
    private func describe(_ byte: UInt8, prefix: String) -> String {
        if byte >= 0x21 && byte < 0x7f {
            return prefix + String(UnicodeScalar(byte)) + "'"
        }
        let hex = String(byte, radix: 16)
        return "0x" + (hex.count == 1 ? "0" + hex : hex)
    }
}
