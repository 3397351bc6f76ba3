// MARK: - OptionKey

/// The name of an option as specs declare it and commands look it up: one static member
/// per option (`.dest`, `.json`), declared once beside the specs that use it, so a
/// misspelled option name does not compile.
///
/// ```swift
/// extension OptionKey { static let dest = OptionKey("dest") }
/// OptionSpec(.dest, short: "d", kind: .value(valueName: "where"), help: "…")
/// let where = arguments.value(.dest)
/// ```
struct OptionKey: Sendable, Hashable, CustomStringConvertible {
    /// The long name without dashes (`dest` for `--dest`).
    let name: String

    /// The key of `--name`.
    init(_ name: String) {
        self.name = name
    }

    /// `--name`, as messages show it.
    var description: String { "--" + name }
}
