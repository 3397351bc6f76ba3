/// The members of a TOML table, in the order their keys were first defined, with where each
/// key was defined (for later validation messages such as
/// "line 7, column 1: 'keep-daily' must be a whole number").
///
/// Equality compares the members as a map: the same keys with equal values, in any order.
/// Positions are ignored.
public struct TOMLTable: Sendable, Equatable {
    // MARK: Storage

    /// A 1-based line and column (in Unicode scalars) in the parsed text.
    struct Position: Sendable, Hashable {
        let line: Int
        let column: Int
    }

    /// One member's value and where its key was defined.
    struct Member: Sendable {
        let value: TOMLValue
        let position: Position?
    }

    /// The keys, in the order they were first defined.
    public private(set) var keys: [String] = []
    private var members: [String: Member] = [:]
    private var originPosition: Position?

    // MARK: Creating

    /// An empty table.
    public init() {}

    /// A table with `pairs` in order and no positions; when a key repeats, the last value wins
    /// (in the position of the first).
    public init(_ pairs: [(String, TOMLValue)]) {
        for (key, value) in pairs {
            if members[key] == nil { keys.append(key) }
            members[key] = Member(value: value, position: nil)
        }
    }

    /// A parsed table; `keys` and `members` must hold the same keys.
    init(keys: [String], members: [String: Member], origin: Position?) {
        self.keys = keys
        self.members = members
        self.originPosition = origin
    }

    // MARK: Access

    /// The value for `key`, or nil.
    public subscript(key: String) -> TOMLValue? { members[key]?.value }

    /// The number of members.
    public var count: Int { keys.count }

    /// True when the table has no members.
    public var isEmpty: Bool { keys.isEmpty }

    // MARK: Positions

    /// Where `key` was defined: the start of the key for `key = value` (for a dotted key
    /// `a.b.c`, the start of that part), or the `[` of the header for a table defined or first
    /// created by a header (`[key]`, `[key.sub]`, `[[key]]`). Nil when the table has no such
    /// key or was not parsed.
    public func position(of key: String) -> (line: Int, column: Int)? {
        guard let position = members[key]?.position else { return nil }
        return (position.line, position.column)
    }

    /// Where this table itself was defined: the `[` of its header (for an element of an array
    /// of tables, the header of that element), the `{` of an inline table, or the key part
    /// that created it for a table made by a dotted key. Nil for the root table and for
    /// tables that were not parsed.
    public var origin: (line: Int, column: Int)? {
        guard let originPosition else { return nil }
        return (originPosition.line, originPosition.column)
    }

    // MARK: Equality

    /// True when both tables have the same keys with equal values, in any order.
    public static func == (lhs: TOMLTable, rhs: TOMLTable) -> Bool {
        guard lhs.keys.count == rhs.keys.count else { return false }
        for (key, member) in lhs.members {
            guard let other = rhs.members[key], other.value == member.value else { return false }
        }
        return true
    }
}

// MARK: - Literals

extension TOMLTable: ExpressibleByDictionaryLiteral {
    /// A table with the members in the order written; a repeated key keeps the last value.
    public init(dictionaryLiteral elements: (String, TOMLValue)...) { self.init(elements) }
}
