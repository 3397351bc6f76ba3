/// A value parsed from TOML (see `TOMLParser` for the subset accepted).
///
/// Arrays of tables (`[[name]]`) become `.array` of `.table` values; inline tables become
/// `.table`. There is no null in TOML.
public enum TOMLValue: Sendable, Equatable {
    /// A string of any of the four kinds (basic, literal, multi-line basic, multi-line literal).
    case string(String)
    /// An integer; TOML integers are 64-bit.
    case integer(Int64)
    /// A finite floating-point number.
    case float(Double)
    /// `true` or `false`.
    case bool(Bool)
    /// An array; its elements may be of different types.
    case array([TOMLValue])
    /// A table: an inline table, a `[header]` table, or one element of an array of tables.
    case table(TOMLTable)

    // MARK: Accessors

    /// The text of a `.string`, else nil.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The value of an `.integer`, else nil (a `.float` is not converted, even `7.0`).
    public var intValue: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    /// The value of a `.float`, or of an `.integer` converted (rounding above 2^53); else nil.
    public var doubleValue: Double? {
        switch self {
        case .float(let value): return value
        case .integer(let value): return Double(value)
        default: return nil
        }
    }

    /// The value of a `.bool`, else nil.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The elements of an `.array`, else nil.
    public var arrayValue: [TOMLValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The table of a `.table`, else nil.
    public var tableValue: TOMLTable? {
        if case .table(let value) = self { return value }
        return nil
    }

    /// The member named `key` of a `.table`; nil when absent or when this is not a table.
    public subscript(key: String) -> TOMLValue? {
        if case .table(let table) = self { return table[key] }
        return nil
    }

    // MARK: Describing

    /// The TOML name of the value's type, for messages: "string", "integer", "float",
    /// "boolean", "array" or "table".
    public var typeName: String {
        switch self {
        case .string: return "string"
        case .integer: return "integer"
        case .float: return "float"
        case .bool: return "boolean"
        case .array: return "array"
        case .table: return "table"
        }
    }
}

// MARK: - Literals

extension TOMLValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    /// A `.string`.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An `.integer`.
    public init(integerLiteral value: Int64) { self = .integer(value) }
    /// A `.float`.
    public init(floatLiteral value: Double) { self = .float(value) }
    /// A `.bool`.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// An `.array`.
    public init(arrayLiteral elements: TOMLValue...) { self = .array(elements) }
    /// A `.table` with the members in the order written; a repeated key keeps the last value.
    public init(dictionaryLiteral elements: (String, TOMLValue)...) { self = .table(TOMLTable(elements)) }
}
