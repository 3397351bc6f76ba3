/// One compiled gitignore-style exclude pattern (see `ExcludeRules` for the rules).
struct ExcludePattern: Sendable {
    // MARK: Types

    /// One `/`-separated piece of an anchored pattern.
    enum Segment: Sendable {
        /// `**` on its own: zero or more whole components.
        case anyComponents
        /// Exactly one component matching the glob.
        case component(ExcludeGlob)
    }

    // MARK: Properties

    /// The pattern as given, for messages.
    let source: String
    /// `!pattern`: a match re-includes instead of excluding.
    let negated: Bool
    /// `pattern/`: only directories match.
    let directoryOnly: Bool
    /// Set when the pattern has a leading or middle `/`: matched against whole paths.
    /// Nil for a slash-free pattern, which is matched against the last component only.
    let segments: [Segment]?
    /// The glob for a slash-free pattern.
    let nameGlob: ExcludeGlob?

    // MARK: Compiling

    init(_ pattern: String) throws(ExcludePatternError) {
        source = pattern
        var scalars = Array(pattern.unicodeScalars)[...]

        var negated = false
        if scalars.first == "!" {
            negated = true
            scalars = scalars.dropFirst()
        }

        // A trailing `/` (not an escaped one) means "directories only".
        var directoryOnly = false
        while scalars.last == "/" && !ExcludePattern.isEscaped(scalars, at: scalars.endIndex - 1) {
            directoryOnly = true
            scalars = scalars.dropLast()
        }
        self.negated = negated
        self.directoryOnly = directoryOnly

        // Split on unescaped slashes; an escaped character stays with its backslash.
        var pieces: [ArraySlice<Unicode.Scalar>] = []
        var start = scalars.startIndex
        var index = scalars.startIndex
        while index < scalars.endIndex {
            if scalars[index] == "\\" {
                index += 2
                continue
            }
            if scalars[index] == "/" {
                pieces.append(scalars[start..<index])
                start = index + 1
            }
            index += 1
        }
        pieces.append(scalars[start..<min(index, scalars.endIndex)])

        if pieces.count == 1 {
            guard let only = pieces.first, !only.isEmpty else {
                throw ExcludePatternError(pattern: pattern, kind: .empty)
            }
            segments = nil
            nameGlob = try ExcludeGlob(component: only, pattern: pattern)
            return
        }

        // Anchored: empty pieces come from the leading `/` or from `//`, and mean nothing.
        var compiled: [Segment] = []
        for piece in pieces where !piece.isEmpty {
            if piece.count == 2 && piece.first == "*" && piece.last == "*" {
                if case .anyComponents? = compiled.last { continue }
                compiled.append(.anyComponents)
            } else {
                compiled.append(.component(try ExcludeGlob(component: piece, pattern: pattern)))
            }
        }
        guard !compiled.isEmpty else { throw ExcludePatternError(pattern: pattern, kind: .empty) }
        // `a/**` is everything *inside* a, not a itself: a trailing `**` needs at least one more
        // component, so `!a/keep` can re-include a file because `a` itself is still scanned.
        if case .anyComponents? = compiled.last {
            compiled.append(.component(ExcludeGlob.anyName))
        }
        segments = compiled
        nameGlob = nil
    }

    /// Whether the character at `index` is preceded by an odd number of backslashes.
    static func isEscaped(_ scalars: ArraySlice<Unicode.Scalar>, at index: Int) -> Bool {
        var count = 0
        var cursor = index - 1
        while cursor >= scalars.startIndex && scalars[cursor] == "\\" {
            count += 1
            cursor -= 1
        }
        return count % 2 == 1
    }

    // MARK: Matching

    /// Whether an anchored pattern matches a whole path, given as the ranges of its components.
    ///
    /// Same single-backtrack scheme as `ExcludeGlob`, one level up: `**` plays the part of `*`
    /// and components play the part of characters, so `**/**/**/x` cannot blow up either.
    static func matches(_ segments: [Segment], _ path: [UInt8], _ components: [Range<Int>]) -> Bool {
        var segmentIndex = 0
        var componentIndex = 0
        var starSegment = -1
        var starComponent = 0

        while componentIndex < components.count {
            if segmentIndex < segments.count {
                switch segments[segmentIndex] {
                case .anyComponents:
                    starSegment = segmentIndex
                    starComponent = componentIndex
                    segmentIndex += 1
                    continue
                case .component(let glob):
                    if glob.matches(path, components[componentIndex]) {
                        segmentIndex += 1
                        componentIndex += 1
                        continue
                    }
                }
            }
            guard starSegment >= 0 else { return false }
            starComponent += 1
            componentIndex = starComponent
            segmentIndex = starSegment + 1
        }
        while segmentIndex < segments.count, case .anyComponents = segments[segmentIndex] {
            segmentIndex += 1
        }
        return segmentIndex == segments.count
    }
}

extension ExcludeGlob {
    /// `*`: any single name.
    static let anyName = ExcludeGlob(shape: .anything)

    private init(shape: Shape) {
        self.shape = shape
    }
}
