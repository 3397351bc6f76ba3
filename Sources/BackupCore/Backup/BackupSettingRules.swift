import Foundation

/// The rules a backup's settings obey, in one place: `keepsake backup`'s options and a
/// profile's keys (`config.toml`) are both checked here, and each front end only words the
/// answer its own way (an option and its value, or a key at its line), so the two cannot
/// drift apart. `Compression.levelRange` is the rule for levels.
public enum BackupSettingRules {
    // MARK: Counts

    /// Compression threads (`--threads`, `threads`).
    public static let threads: ClosedRange<Int> = 1...256
    /// Files read ahead at once (`--readers`, `readers`).
    public static let readers: ClosedRange<Int> = 1...64
    /// Backups of a chain before the next full one (`--full-every`, `full-every`); 1 makes
    /// every backup full.
    public static let fullEvery: ClosedRange<Int> = 1...1_000_000

    /// `value` when `range` holds it (a whole number read from the command line or a file).
    public static func accepted<Number: BinaryInteger>(_ value: Number, in range: ClosedRange<Int>) -> Int? {
        guard let exact = Int(exactly: value), range.contains(exact) else { return nil }
        return exact
    }

    // MARK: Tags and names

    /// Why `tag` cannot be a backup's tag (a comma separates tags in `--keep-tag`, a line
    /// ends a manifest field), or nil when it can.
    public static func tagProblem(_ tag: String) -> String? {
        tag.isEmpty || tag.contains(",") || tag.contains(where: \.isNewline)
            ? "tags are non-empty and hold no commas or newlines" : nil
    }

    /// `tags` each once, in the order first given.
    public static func distinct(_ tags: [String]) -> [String] {
        var seen = Set<String>()
        return tags.filter { seen.insert($0).inserted }
    }

    /// Why `name` cannot mark a folder to leave out (`--exclude-if-present`,
    /// `exclude-if-present`), or nil when it can: a file name, looked up in each folder.
    public static func markerProblem(_ name: String) -> String? {
        name.isEmpty || name.contains("/") ? "give a file name, not a path or an empty name" : nil
    }
}
