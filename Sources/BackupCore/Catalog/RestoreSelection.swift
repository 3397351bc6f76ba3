import KeepsakeScan
import KeepsakeSupport

/// Which archive paths a restore takes: everything, or the given paths (a folder brings
/// its contents) and gitignore-style patterns.
struct RestoreSelection {
    private let exact: [[UInt8]]
    private let patterns: ExcludeRules?

    /// Builds a selection; paths may be given with or without the leading `/`.
    init(_ selections: [String]) throws {
        try self.init(selections.map(PathBytes.from))
    }

    /// Builds a selection from paths given as bytes (a path need not be UTF-8; a pattern
    /// is matched as text).
    init(_ selectionPaths: [[UInt8]]) throws {
        var exact: [[UInt8]] = []
        var globs: [String] = []
        for bytes in selectionPaths {
            let selection = String(decoding: bytes, as: UTF8.self)
            guard let normalized = RestoreSelection.normalized(bytes) else { continue }
            if selection.contains(where: { "*?[".contains($0) }) {
                // Anchor patterns that name a path, so `home/*/notes` means from the root.
                globs.append(selection.contains("/") && !selection.hasPrefix("/") && !selection.hasPrefix("**")
                             ? "/" + selection : selection)
            } else {
                exact.append(normalized)
            }
        }
        self.exact = exact
        patterns = globs.isEmpty ? nil : try ExcludeRules(patterns: globs)
    }

    /// A literal selection as the archive path it names (without `/`, `.` and empty
    /// components); nil when it names the top.
    static func normalized(_ bytes: [UInt8]) -> [UInt8]? {
        let trimmed = PathBytes.components(bytes)
        guard let first = trimmed.first else { return nil }
        return trimmed.dropFirst().reduce(first) { PathBytes.join($0, $1) }
    }

    /// True when the selection takes everything.
    var isEverything: Bool { exact.isEmpty && patterns == nil }

    /// True when `path` (normalized, relative) is selected or lies in a selected folder.
    func matches(_ path: [UInt8], isDirectory: Bool) -> Bool {
        if isEverything { return true }
        if exact.contains(where: { PathBytes.isSameOrBelow(path, $0) }) { return true }
        guard let patterns else { return false }
        // A pattern naming a folder selects what is inside it too: try every ancestor.
        var prefix: [UInt8] = []
        let parts = PathBytes.components(path)
        for (index, part) in parts.enumerated() {
            prefix = PathBytes.join(prefix, part)
            let folder = index < parts.count - 1 || isDirectory
            if patterns.isExcluded(relativePath: prefix, absolutePath: [UInt8(ascii: "/")] + prefix, isDirectory: folder) {
                return true
            }
        }
        return false
    }
}
