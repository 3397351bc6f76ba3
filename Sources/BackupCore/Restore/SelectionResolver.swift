import Foundation
import KeepsakeModel
import KeepsakeSupport

/// Turns the paths given to `restore` into the archive paths they mean. A path may be given
/// as `list ID` and `find` print it (`home/ana/src/notes.txt`), as the original absolute
/// path, relative to a source root (`notes.txt` for the source `/home/ana/src`) or to its
/// parent (`src/notes.txt`), relative to the current folder, or by the end of its path
/// (`사진/가족.jpg`, or a bare name found at any depth, as `find` matches it). A path that
/// means nothing gets the closest paths of the backup as suggestions.
struct SelectionResolver {
    // MARK: Types

    /// What one given path turned into.
    struct Resolution {
        /// The archive paths it means (empty when it matched nothing).
        var paths: [[UInt8]] = []
        /// For a path that matched nothing: the backup's closest paths.
        var suggestions: [String] = []
    }

    // MARK: State

    private let index: ManifestIndex
    private let sources: [[UInt8]]
    private let workingDirectory: [UInt8]?

    /// A resolver over `manifest` (read whole), with the current folder `workingDirectory`.
    init(manifest: Manifest, workingDirectory: [UInt8]?) {
        index = manifest.index()
        sources = manifest.summary.sources.map { SelectionResolver.relative(PathBytes.from($0)) }
        self.workingDirectory = workingDirectory.map(SelectionResolver.relative)
    }

    // MARK: Resolving

    /// The archive paths `given` (a path, not a pattern) means; the first rule that finds
    /// anything wins.
    func resolve(_ given: [UInt8]) -> Resolution {
        let path = SelectionResolver.relative(given)
        guard !path.isEmpty else { return Resolution() }
        if index[PathKey(path)] != nil { return Resolution(paths: [path]) }
        // Under a source root, under a source root's parent, under the current folder.
        var bases = sources
        bases += sources.compactMap(SelectionResolver.parent)
        if let workingDirectory { bases.append(workingDirectory) }
        var found: [[UInt8]] = []
        for base in bases {
            let candidate = base.isEmpty ? path : PathBytes.join(base, path)
            if index[PathKey(candidate)] != nil, !found.contains(candidate) { found.append(candidate) }
        }
        if !found.isEmpty { return Resolution(paths: found) }
        // By the end of the path: every entry whose last components are these.
        let tail = [UInt8(ascii: "/")] + path
        for entry in index.entries where entry.path.count > tail.count && entry.path.ends(with: tail) {
            // A folder found this way brings its contents: nothing below it is listed again.
            if !found.contains(where: { PathBytes.isSameOrBelow(entry.path, $0) }) { found.append(entry.path) }
        }
        if !found.isEmpty { return Resolution(paths: found) }
        return Resolution(suggestions: suggestions(for: path))
    }

    /// Up to three paths of the backup whose name is within two edits of the given name's.
    private func suggestions(for path: [UInt8]) -> [String] {
        let wanted = String(decoding: PathBytes.lastComponent(path), as: UTF8.self).lowercased()
        let limit = min(Suggestion.maximumDistance, max(0, (wanted.count - 1) / 2))
        var close: [(distance: Int, path: String)] = []
        for entry in index.entries {
            let text = String(decoding: PathBytes.lastComponent(entry.path), as: UTF8.self).lowercased()
            guard let distance = Suggestion.distance(wanted, text, limit: limit) else { continue }
            close.append((distance, entry.displayPath))
        }
        return close.sorted { ($0.distance, $0.path) < ($1.distance, $1.path) }.prefix(3).map(\.path)
    }

    // MARK: Paths

    /// `path` without leading slashes, `.` and empty components.
    private static func relative(_ path: [UInt8]) -> [UInt8] {
        let parts = PathBytes.components(path).filter { $0 != [UInt8(ascii: ".")] }
        guard let first = parts.first else { return [] }
        return parts.dropFirst().reduce(first) { PathBytes.join($0, $1) }
    }

    /// The folder holding `path`; nil at the top.
    private static func parent(_ path: [UInt8]) -> [UInt8]? {
        let parts = PathBytes.components(path)
        guard parts.count > 1 else { return parts.count == 1 ? [] : nil }
        return parts.dropFirst().dropLast().reduce(parts[0]) { PathBytes.join($0, $1) }
    }
}

private extension Array where Element == UInt8 {
    /// Whether the last bytes are `suffix`.
    func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && self[(count - suffix.count)...].elementsEqual(suffix)
    }
}
