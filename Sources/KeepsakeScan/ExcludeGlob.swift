import KeepsakeSupport

/// One compiled glob for a single path component (no `/` inside): `*`, `?`, `[...]` classes
/// and `\` escapes, matched against raw name bytes.
///
/// Names are bytes, not text: a well-formed UTF-8 sequence counts as one character, and every
/// byte that is not part of one counts as a character of its own, so `*` and `?` also match
/// names that are not valid UTF-8.
struct ExcludeGlob: Sendable {
    // MARK: Types

    /// A piece of a general glob.
    enum Token: Sendable {
        /// Bytes that must appear as they are.
        case literal([UInt8])
        /// `?`: exactly one character.
        case anyCharacter
        /// `*`: any run of characters, including none.
        case star
        /// `[...]`: one character in (or, negated, not in) the class.
        case characterClass(ExcludeCharacterClass)
    }

    /// The shape of the glob; the common shapes get fast paths that skip the general matcher.
    enum Shape: Sendable {
        /// No wildcards: a plain name such as `node_modules`.
        case literal([UInt8])
        /// `*` alone (or `**`): every name.
        case anything
        /// `*` followed by a literal, such as `*.o`.
        case suffix([UInt8])
        /// A literal followed by `*`, such as `cache*`.
        case prefix([UInt8])
        /// Anything else.
        case general([Token])
    }

    // MARK: Properties

    let shape: Shape

    // MARK: Compiling

    /// Compiles one component of `pattern` (given for error messages).
    init(component: ArraySlice<Unicode.Scalar>, pattern: String) throws(ExcludePatternError) {
        var tokens: [Token] = []
        var literal: [UInt8] = []

        // Adjacent literal characters become one token so the matcher compares runs of bytes.
        func flushLiteral() {
            if !literal.isEmpty {
                tokens.append(.literal(literal))
                literal.removeAll()
            }
        }

        var index = component.startIndex
        while index < component.endIndex {
            let scalar = component[index]
            switch scalar {
            case "\\":
                let next = component.index(after: index)
                guard next < component.endIndex else {
                    throw ExcludePatternError(pattern: pattern, kind: .trailingBackslash)
                }
                literal.append(contentsOf: String(component[next]).utf8)
                index = component.index(after: next)
            case "*":
                flushLiteral()
                // `**` inside a component, or any run of stars, behaves like a single `*`.
                if case .star? = tokens.last {} else { tokens.append(.star) }
                index = component.index(after: index)
            case "?":
                flushLiteral()
                tokens.append(.anyCharacter)
                index = component.index(after: index)
            case "[":
                flushLiteral()
                let (characterClass, end) = try ExcludeCharacterClass.parse(component, openingAt: index, pattern: pattern)
                tokens.append(.characterClass(characterClass))
                index = end
            default:
                literal.append(contentsOf: String(scalar).utf8)
                index = component.index(after: index)
            }
        }
        flushLiteral()
        shape = ExcludeGlob.shape(of: tokens)
    }

    private static func shape(of tokens: [Token]) -> Shape {
        switch tokens.count {
        case 0:
            return .literal([])
        case 1:
            switch tokens[0] {
            case .literal(let bytes): return .literal(bytes)
            case .star: return .anything
            default: return .general(tokens)
            }
        case 2:
            switch (tokens[0], tokens[1]) {
            case (.star, .literal(let bytes)): return .suffix(bytes)
            case (.literal(let bytes), .star): return .prefix(bytes)
            default: return .general(tokens)
            }
        default:
            return .general(tokens)
        }
    }

    // MARK: Matching

    /// Whether the glob matches the whole of `name[range]`.
    func matches(_ name: [UInt8], _ range: Range<Int>) -> Bool {
        switch shape {
        case .literal(let bytes):
            return ExcludeGlob.bytes(name, range.lowerBound, range.upperBound, equal: bytes)
        case .anything:
            return true
        case .suffix(let bytes):
            // A literal from a Swift string never starts with a continuation byte, so it can only
            // match at a character boundary: a plain byte comparison is exact.
            guard range.count >= bytes.count else { return false }
            return ExcludeGlob.bytes(name, range.upperBound - bytes.count, range.upperBound, equal: bytes)
        case .prefix(let bytes):
            guard range.count >= bytes.count else { return false }
            return ExcludeGlob.bytes(name, range.lowerBound, range.lowerBound + bytes.count, equal: bytes)
        case .general(let tokens):
            return ExcludeGlob.matchGeneral(tokens, name, range)
        }
    }

    /// Iterative wildcard matching that only ever backtracks to the most recent `*`.
    ///
    /// Every token but `*` consumes a fixed amount at a given position, so when a later `*` is
    /// reached, retrying an earlier one can never help: the work is O(name × pattern) at worst,
    /// even for hostile patterns like `*a*a*a*a*b`.
    private static func matchGeneral(_ tokens: [Token], _ name: [UInt8], _ range: Range<Int>) -> Bool {
        var tokenIndex = 0
        var position = range.lowerBound
        let end = range.upperBound
        var starToken = -1
        var starPosition = 0

        while position < end {
            if tokenIndex < tokens.count {
                if case .star = tokens[tokenIndex] {
                    starToken = tokenIndex
                    starPosition = position
                    tokenIndex += 1
                    continue
                }
                if let consumed = consume(tokens[tokenIndex], name, at: position, end: end) {
                    position += consumed
                    tokenIndex += 1
                    continue
                }
            }
            guard starToken >= 0 else { return false }
            // Let the last `*` swallow one more character (never half of one) and retry.
            starPosition += character(name, at: starPosition, end: end).length
            position = starPosition
            tokenIndex = starToken + 1
        }
        while tokenIndex < tokens.count, case .star = tokens[tokenIndex] {
            tokenIndex += 1
        }
        return tokenIndex == tokens.count
    }

    /// Bytes consumed by a non-star token at `position`, or nil when it does not match there.
    private static func consume(_ token: Token, _ name: [UInt8], at position: Int, end: Int) -> Int? {
        switch token {
        case .literal(let bytes):
            guard end - position >= bytes.count,
                  ExcludeGlob.bytes(name, position, position + bytes.count, equal: bytes) else { return nil }
            return bytes.count
        case .anyCharacter:
            return character(name, at: position, end: end).length
        case .characterClass(let characterClass):
            let (value, length) = character(name, at: position, end: end)
            return characterClass.contains(value) ? length : nil
        case .star:
            return nil
        }
    }

    // MARK: Bytes and characters

    private static func bytes(_ name: [UInt8], _ start: Int, _ end: Int, equal literal: [UInt8]) -> Bool {
        guard end - start == literal.count else { return false }
        var offset = 0
        while offset < literal.count {
            if name[start + offset] != literal[offset] { return false }
            offset += 1
        }
        return true
    }

    /// Value used for a byte that is not part of well-formed UTF-8: above every Unicode scalar,
    /// so such a byte only ever matches `?`, `*` and negated classes.
    static let invalidByteBase: UInt32 = 0x11_0000

    /// The character starting at `position` (which must be below `end`): its scalar value and
    /// byte length for well-formed UTF-8, or `invalidByteBase + byte` and 1 for any other byte.
    static func character(_ name: [UInt8], at position: Int, end: Int) -> (value: UInt32, length: Int) {
        let lead = name[position]
        if lead < 0x80 { return (UInt32(lead), 1) }
        let length = UTF8Sequence.length(in: name, at: position, end: end)
        guard length > 0 else { return (invalidByteBase + UInt32(lead), 1) }
        var value = UInt32(lead) & (length == 2 ? 0x1f : length == 3 ? 0x0f : 0x07)
        for offset in 1..<length {
            value = value << 6 | UInt32(name[position + offset] & 0x3f)
        }
        return (value, length)
    }
}
