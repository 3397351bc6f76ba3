/// A fast, append-only JSON writer for hot paths such as manifest lines: values go straight
/// into a byte buffer, with no intermediate `JSONValue`.
///
/// Commas are inserted automatically between the members of an object and the elements of an
/// array. Top-level values get no separator, so a JSON Lines writer calls `endLine()` (or
/// appends its own byte) after each one. The caller is responsible for well-formed nesting:
/// `key` before each object member, and matching `begin`/`end` calls.
///
/// ```swift
/// var writer = JSONWriter()
/// writer.beginObject()
/// writer.key("path"); writer.string("src/a.c")
/// writer.key("size"); writer.int(42)
/// writer.endObject()
/// writer.endLine()   // {"path":"src/a.c","size":42}\n
/// ```
public struct JSONWriter: Sendable {
    // MARK: State

    /// The JSON text written so far, as UTF-8.
    public var bytes: [UInt8]
    /// Open containers; separators are only written inside one.
    private var depth = 0
    /// Whether the next value in the current container needs a comma before it.
    private var needsComma = false

    // MARK: Creating

    /// An empty writer; `capacity` pre-sizes the buffer.
    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Clears the buffer (keeping its capacity) and the nesting state, to reuse the writer.
    public mutating func reset() {
        bytes.removeAll(keepingCapacity: true)
        depth = 0
        needsComma = false
    }

    /// The text written so far.
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    // MARK: Containers

    /// Starts an object: `{`.
    public mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        depth += 1
        needsComma = false
    }

    /// Ends an object: `}`.
    public mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        depth -= 1
        needsComma = true
    }

    /// Starts an array: `[`.
    public mutating func beginArray() {
        separate()
        bytes.append(UInt8(ascii: "["))
        depth += 1
        needsComma = false
    }

    /// Ends an array: `]`.
    public mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        depth -= 1
        needsComma = true
    }

    /// Writes an object member's key and `:`; the member's value comes next.
    public mutating func key(_ key: String) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        JSONWriter.appendEscaped(key, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        // The value that follows belongs to this key: no comma before it.
        needsComma = false
    }

    /// Appends a newline, ending a JSON Lines record.
    public mutating func endLine() {
        bytes.append(UInt8(ascii: "\n"))
    }

    // MARK: Scalars

    /// Writes a string, escaped.
    public mutating func string(_ value: String) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        JSONWriter.appendEscaped(value, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
        needsComma = true
    }

    /// Writes a signed integer.
    public mutating func int(_ value: Int64) {
        separate()
        if value < 0 {
            bytes.append(UInt8(ascii: "-"))
            // The magnitude of Int64.min does not fit Int64, but does fit UInt64.
            appendDigits(value.magnitude)
        } else {
            appendDigits(UInt64(value))
        }
        needsComma = true
    }

    /// Writes an unsigned integer.
    public mutating func uint(_ value: UInt64) {
        separate()
        appendDigits(value)
        needsComma = true
    }

    /// Writes a double so that parsing it gives back the same value (shortest round-trip
    /// form, e.g. `0.1`, `1e+20`). NaN and infinities have no JSON form and become `null`.
    public mutating func double(_ value: Double) {
        separate()
        if value.isFinite {
            bytes.append(contentsOf: value.description.utf8)
        } else {
            bytes.append(contentsOf: JSONWriter.nullBytes)
        }
        needsComma = true
    }

    /// Writes `true` or `false`.
    public mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: value ? JSONWriter.trueBytes : JSONWriter.falseBytes)
        needsComma = true
    }

    /// Writes `null`.
    public mutating func null() {
        separate()
        bytes.append(contentsOf: JSONWriter.nullBytes)
        needsComma = true
    }

    /// Writes a whole `JSONValue` (objects in key order).
    public mutating func value(_ value: JSONValue) {
        switch value {
        case .null: null()
        case .bool(let flag): bool(flag)
        case .int(let number): int(number)
        case .uint(let number): uint(number)
        case .double(let number): double(number)
        case .string(let text): string(text)
        case .array(let elements):
            beginArray()
            for element in elements { self.value(element) }
            endArray()
        case .object(let object):
            beginObject()
            for (position, name) in object.keys.enumerated() {
                key(name)
                self.value(object.values[position])
            }
            endObject()
        }
    }

    // MARK: Escaping

    /// Appends `string` escaped for use inside a JSON string literal, *without* the surrounding
    /// quotes: `"` and `\` are backslash-escaped, control characters become `\n`, `\t`, `\r`,
    /// `\b`, `\f` or `\u00XX`, and all other characters are copied as UTF-8.
    public static func appendEscaped(_ string: String, to bytes: inout [UInt8]) {
        var string = string
        // Contiguous UTF-8 lets runs of plain bytes be copied in one go.
        string.withUTF8 { utf8 in
            var runStart = 0
            var index = 0
            while index < utf8.count {
                let byte = utf8[index]
                // Hex literals: `UInt8(ascii:)` is a real call per byte in debug builds.
                if byte >= 0x20 && byte != 0x22 && byte != 0x5C { // not `"` or `\`
                    index += 1
                    continue
                }
                if index > runStart { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index])) }
                appendEscape(for: byte, to: &bytes)
                index += 1
                runStart = index
            }
            if index > runStart { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index])) }
        }
    }

    private static func appendEscape(for byte: UInt8, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""): bytes.append(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): bytes.append(UInt8(ascii: "\\"))
        case 0x0a: bytes.append(UInt8(ascii: "n"))
        case 0x09: bytes.append(UInt8(ascii: "t"))
        case 0x0d: bytes.append(UInt8(ascii: "r"))
        case 0x08: bytes.append(UInt8(ascii: "b"))
        case 0x0c: bytes.append(UInt8(ascii: "f"))
        default:
            bytes.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                      hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0x0f)]])
        }
    }

    // MARK: Helpers

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
    private static let nullBytes: [UInt8] = Array("null".utf8)
    private static let trueBytes: [UInt8] = Array("true".utf8)
    private static let falseBytes: [UInt8] = Array("false".utf8)

    /// A comma before a value that follows another inside the same container.
    private mutating func separate() {
        if needsComma && depth > 0 { bytes.append(UInt8(ascii: ",")) }
    }

    /// Decimal digits without going through `String`.
    private mutating func appendDigits(_ value: UInt64) {
        if value < 10 {
            bytes.append(UInt8(ascii: "0") + UInt8(value))
            return
        }
        // UInt64.max has 20 digits; fill a fixed buffer from the end.
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
        var remaining = value
        withUnsafeMutableBytes(of: &digits) { buffer in
            var position = buffer.count
            while remaining > 0 {
                position -= 1
                buffer[position] = UInt8(ascii: "0") + UInt8(remaining % 10)
                remaining /= 10
            }
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[position...]))
        }
    }
}
