// MARK: - ArgumentKey

/// The name of a positional argument as specs declare it and commands look it up: one
/// static member per argument (`.backup`, `.path`), so a misspelled name does not compile,
/// as with `OptionKey`.
///
/// ```swift
/// ArgumentSpec(.pattern, help: "A name or path pattern.")
/// let pattern = arguments.argument(.pattern)
/// ```
struct ArgumentKey: Sendable, Hashable, CustomStringConvertible {
    /// The placeholder shown in usage and messages, conventionally upper case (`PATH`).
    let name: String

    /// The key of the argument shown as `name`.
    init(_ name: String) {
        self.name = name
    }

    /// The placeholder, as messages show it.
    var description: String { name }
}

// MARK: - Arguments of several commands

extension ArgumentKey {
    /// A backup id, unique prefix, `latest` or archive file (`list`, `restore`, `verify`, …).
    static let backup = ArgumentKey("BACKUP")
    /// A path on this machine or in a backup (`backup`, `restore`).
    static let path = ArgumentKey("PATH")
    /// A profile of the configuration file (`run`, `schedule`).
    static let profile = ArgumentKey("PROFILE")
}
