/// A parsed or hand-built JSON value.
///
/// Integers that fit `Int64` are kept exactly as `.int`, larger non-negative ones that fit
/// `UInt64` (inode and device numbers) as `.uint`; other numbers are `.double`.
/// Objects keep their keys in insertion order (see `JSONObject`).
public enum JSONValue: Sendable, Equatable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// An integer that fits `Int64`.
    case int(Int64)
    /// A non-negative integer above `Int64.max` that fits `UInt64`.
    case uint(UInt64)
    /// Any other number (fraction, exponent, or an integer beyond `UInt64`).
    case double(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object, keys in insertion order.
    case object(JSONObject)

    // MARK: Accessors

    /// The text of a `.string`, else nil.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The value of an `.int`, or of a `.double` that is integral and within `Int64`; else nil.
    public var int64Value: Int64? {
        switch self {
        case .int(let value): return value
        case .double(let value): return Int64(exactly: value)
        default: return nil
        }
    }

    /// The value of a non-negative `.int`, or of a `.double` that is integral and within
    /// `UInt64`; else nil.
    public var uint64Value: UInt64? {
        switch self {
        case .int(let value): return UInt64(exactly: value)
        case .uint(let value): return value
        case .double(let value): return UInt64(exactly: value)
        default: return nil
        }
    }

    /// The value of a `.double`, or an `.int` converted (rounding above 2^53); else nil.
    public var doubleValue: Double? {
        switch self {
        case .double(let value): return value
        case .int(let value): return Double(value)
        case .uint(let value): return Double(value)
        default: return nil
        }
    }

    /// The value of a `.bool`, else nil.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The elements of an `.array`, else nil.
    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The members of an `.object`, else nil.
    public var objectValue: JSONObject? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// True for `.null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The member named `key` of an `.object`; nil when absent or when this is not an object.
    public subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    /// The element at `index` of an `.array`; nil when out of range or not an array.
    public subscript(index: Int) -> JSONValue? {
        guard case .array(let array) = self, array.indices.contains(index) else { return nil }
        return array[index]
    }

    // MARK: Serializing

    /// The value as JSON text. Compact by default; `pretty` indents by two spaces and puts
    /// one member or element per line. Object keys keep their insertion order.
    /// `indent` (pretty only) is the depth the value sits at, for text placed inside an
    /// enclosing document (see `StreamedJSONObject`).
    public func serialized(pretty: Bool = false, indent: Int = 0) -> String {
        var bytes: [UInt8] = []
        if pretty {
            appendPretty(to: &bytes, indent: indent)
        } else {
            var writer = JSONWriter()
            writer.value(self)
            bytes = writer.bytes
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private func appendPretty(to bytes: inout [UInt8], indent: Int) {
        switch self {
        case .array(let elements) where !elements.isEmpty:
            bytes.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                JSONValue.newline(&bytes, indent: indent + 1)
                element.appendPretty(to: &bytes, indent: indent + 1)
            }
            JSONValue.newline(&bytes, indent: indent)
            bytes.append(UInt8(ascii: "]"))
        case .object(let object) where !object.isEmpty:
            bytes.append(UInt8(ascii: "{"))
            for (index, key) in object.keys.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                JSONValue.newline(&bytes, indent: indent + 1)
                bytes.append(UInt8(ascii: "\""))
                JSONWriter.appendEscaped(key, to: &bytes)
                bytes.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":"), UInt8(ascii: " ")])
                object.values[index].appendPretty(to: &bytes, indent: indent + 1)
            }
            JSONValue.newline(&bytes, indent: indent)
            bytes.append(UInt8(ascii: "}"))
        default:
            // Scalars and empty containers look the same either way.
            var writer = JSONWriter()
            writer.value(self)
            bytes.append(contentsOf: writer.bytes)
        }
    }

    private static func newline(_ bytes: inout [UInt8], indent: Int) {
        bytes.append(UInt8(ascii: "\n"))
        bytes.append(contentsOf: [UInt8](repeating: UInt8(ascii: " "), count: indent * 2))
    }
}

// MARK: - Literals

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral {
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// An object with the members in the order written; a repeated key keeps the last value.
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(JSONObject(elements)) }
}

// MARK: - JSONObject

/// The members of a JSON object, in insertion order.
///
/// Equality compares members in order. Setting an existing key replaces its value in place;
/// setting a new key appends it. Lookups are linear for small objects (the common case of a
/// manifest line) and use a hash index once an object grows large.
public struct JSONObject: Sendable, Equatable {
    // MARK: Storage

    /// Keys and values in parallel, so a lookup scans only the keys.
    public private(set) var keys: [String] = []
    /// The values, in key order.
    public private(set) var values: [JSONValue] = []
    /// Key → position, only kept once there are more than `indexThreshold` members.
    private var index: [String: Int]?
    private static let indexThreshold = 16

    // MARK: Creating

    /// An empty object.
    public init() {}

    /// An object with `pairs` in order; when a key repeats, the last value wins (in the
    /// position of the first).
    public init(_ pairs: [(String, JSONValue)]) {
        keys.reserveCapacity(pairs.count)
        values.reserveCapacity(pairs.count)
        for (key, value) in pairs { self[key] = value }
    }

    // MARK: Access

    /// The value for `key`, or nil. Setting a new key appends it; setting nil removes the key.
    public subscript(key: String) -> JSONValue? {
        get {
            guard let position = position(of: key) else { return nil }
            return values[position]
        }
        set {
            if let newValue {
                if let position = position(of: key) {
                    values[position] = newValue
                } else {
                    keys.append(key)
                    values.append(newValue)
                    if index != nil {
                        index?[key] = keys.count - 1
                    } else if keys.count > JSONObject.indexThreshold {
                        buildIndex()
                    }
                }
            } else if let position = position(of: key) {
                keys.remove(at: position)
                values.remove(at: position)
                index = nil
                if keys.count > JSONObject.indexThreshold { buildIndex() }
            }
        }
    }

    /// The members in order.
    public var pairs: [(key: String, value: JSONValue)] {
        zip(keys, values).map { (key: $0, value: $1) }
    }

    /// The number of members.
    public var count: Int { keys.count }

    /// True when there are no members.
    public var isEmpty: Bool { keys.isEmpty }

    // MARK: Equality

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.keys == rhs.keys && lhs.values == rhs.values
    }

    // MARK: Index

    private func position(of key: String) -> Int? {
        if let index { return index[key] }
        // A plain loop: `firstIndex(where:)` with a closure is slow in debug builds.
        var position = 0
        while position < keys.count {
            if keys[position] == key { return position }
            position += 1
        }
        return nil
    }

    private mutating func buildIndex() {
        var built: [String: Int] = [:]
        built.reserveCapacity(keys.count)
        for (position, key) in keys.enumerated() { built[key] = position }
        index = built
    }
}

// MARK: - JSONObject sequence

extension JSONObject: Sequence {
    /// Iterates the members in order.
    public func makeIterator() -> IndexingIterator<[(key: String, value: JSONValue)]> {
        pairs.makeIterator()
    }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    /// An object with the members in the order written.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init(elements)
    }
}
