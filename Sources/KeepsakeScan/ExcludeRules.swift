/// The `--exclude PATTERN` / `--exclude-from FILE` rules of a backup: gitignore-style
/// patterns, compiled once and matched against raw path bytes for every scanned entry.
///
/// Pattern rules (as in gitignore):
/// - The last matching pattern wins; a pattern starting with `!` re-includes what an earlier
///   pattern excluded.
/// - A pattern ending with `/` matches directories only.
/// - A pattern without a slash (a trailing one aside) matches the name at any depth: it is
///   matched against the last path component (`*.o`, `node_modules`).
/// - A pattern with a leading or middle slash is anchored: it must match the whole path
///   relative to the source root (`/build`, `src/*.o`), or else the whole absolute path
///   (`/home/u/.cache` also works when backing up `/home`).
/// - `*` matches any run of characters but `/`, `?` one character but `/`, `[abc]`, `[a-z]`,
///   `[!a-z]` and `[^a-z]` one character of a class, and `\` makes the next character literal.
///   A well-formed UTF-8 sequence is one character; a byte that is not valid UTF-8 is a
///   character of its own, so wildcards work on any Linux file name.
/// - `**/x` matches `x` at any depth, `a/**` everything inside `a` (not `a` itself), `a/**/b`
///   `b` with zero or more directories between; any other `**` acts like `*`.
///
/// The scanner never descends into an excluded directory, so — exactly as in git — a file
/// inside an excluded directory cannot be re-included by a later `!` pattern. Exclude the
/// contents instead (`dir/**` then `!dir/keep`) when that is needed.
public struct ExcludeRules: Sendable {
    // MARK: Properties

    private let rules: [ExcludePattern]

    // MARK: Creating

    /// Compiles `patterns` in order (later patterns take precedence).
    /// - Throws: `ExcludePatternError` naming the first pattern that cannot be compiled.
    public init(patterns: [String]) throws(ExcludePatternError) {
        var rules: [ExcludePattern] = []
        rules.reserveCapacity(patterns.count)
        for pattern in patterns {
            rules.append(try ExcludePattern(pattern))
        }
        self.rules = rules
    }

    /// The patterns of an exclude file (`--exclude-from`), read the way git reads `.gitignore`:
    /// blank lines and lines starting with `#` are skipped, `\#` and `\!` start a pattern with a
    /// literal `#` or `!`, and trailing spaces are dropped unless escaped as `\ `.
    /// A trailing carriage return is dropped too, so files saved with CRLF line ends work.
    public static func patterns(fromFileContents contents: String) -> [String] {
        var patterns: [String] = []
        // Split on scalars: as a Character, "\r\n" is one cluster and would not split on "\n".
        for rawLine in contents.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: true) {
            var line = Array(rawLine)[...]
            if line.last == "\r" { line = line.dropLast() }
            if line.first == "#" { continue }
            // The escapes themselves are left in place: the pattern compiler reads `\#` as `#`,
            // and `\!` at the start is not a negation.
            while line.last == " " && !ExcludePattern.isEscaped(line, at: line.endIndex - 1) {
                line = line.dropLast()
            }
            if line.isEmpty { continue }
            var pattern = ""
            pattern.unicodeScalars.append(contentsOf: line)
            patterns.append(pattern)
        }
        return patterns
    }

    // MARK: Inspecting

    /// True when there are no patterns, so nothing is ever excluded.
    public var isEmpty: Bool { rules.isEmpty }

    /// The number of patterns.
    public var count: Int { rules.count }

    // MARK: Matching

    /// Whether an entry is excluded.
    ///
    /// Only the entry itself is tested, never its parent directories: the scanner does not
    /// descend into an excluded directory in the first place. When `relativePath` is empty
    /// (the source root itself), slash-free patterns test the last component of
    /// `absolutePath` and anchored patterns test the absolute path only.
    /// - Parameters:
    ///   - relativePath: path below the source root, `/`-separated, no leading slash (`src/a.o`).
    ///   - absolutePath: the same entry's absolute path (`/home/u/proj/src/a.o`).
    ///   - isDirectory: whether the entry is a directory (for patterns ending in `/`).
    public func isExcluded(relativePath: [UInt8], absolutePath: [UInt8], isDirectory: Bool) -> Bool {
        excludingPattern(relativePath: relativePath, absolutePath: absolutePath, isDirectory: isDirectory) != nil
    }

    /// The pattern that excludes an entry, as it was written; nil when the entry is kept
    /// (no pattern matches, or the last one that does is a `!` pattern). See `isExcluded`.
    public func excludingPattern(relativePath: [UInt8], absolutePath: [UInt8], isDirectory: Bool) -> String? {
        if rules.isEmpty { return nil }

        var name = ExcludeRules.lastComponent(relativePath)
        let nameSource: [UInt8]
        if name.isEmpty {
            name = ExcludeRules.lastComponent(absolutePath)
            nameSource = absolutePath
        } else {
            nameSource = relativePath
        }

        // Component lists are built at most once per call, and only when an anchored rule
        // is actually reached.
        var relativeComponents: [Range<Int>]?
        var absoluteComponents: [Range<Int>]?

        var index = rules.count - 1
        while index >= 0 {
            let rule = rules[index]
            index -= 1
            if rule.directoryOnly && !isDirectory { continue }

            let matched: Bool
            if let glob = rule.nameGlob {
                matched = !name.isEmpty && glob.matches(nameSource, name)
            } else if let segments = rule.segments {
                let relative = relativeComponents ?? ExcludeRules.components(relativePath)
                relativeComponents = relative
                if !relative.isEmpty && ExcludePattern.matches(segments, relativePath, relative) {
                    matched = true
                } else {
                    let absolute = absoluteComponents ?? ExcludeRules.components(absolutePath)
                    absoluteComponents = absolute
                    matched = !absolute.isEmpty && ExcludePattern.matches(segments, absolutePath, absolute)
                }
            } else {
                matched = false
            }
            if matched { return rule.negated ? nil : rule.source }
        }
        return nil
    }

    // MARK: Path splitting

    private static let slash = UInt8(ascii: "/")

    /// The byte range of the last non-empty component (trailing slashes ignored).
    private static func lastComponent(_ path: [UInt8]) -> Range<Int> {
        var end = path.count
        while end > 0 && path[end - 1] == slash { end -= 1 }
        var start = end
        while start > 0 && path[start - 1] != slash { start -= 1 }
        return start..<end
    }

    /// The byte ranges of the non-empty components (leading, trailing and doubled slashes
    /// are ignored, so `/home//u/` is `home`, `u`).
    private static func components(_ path: [UInt8]) -> [Range<Int>] {
        var result: [Range<Int>] = []
        var start = 0
        var index = 0
        while index < path.count {
            if path[index] == slash {
                if index > start { result.append(start..<index) }
                start = index + 1
            }
            index += 1
        }
        if index > start { result.append(start..<index) }
        return result
    }
}
