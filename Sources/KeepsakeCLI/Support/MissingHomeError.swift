/// The default destination (or another path under the home folder) cannot be found: HOME
/// is unset or empty and the user's account names no home folder that exists. Says what to
/// do instead (exit 2: the command needs `--dest` in this environment).
struct MissingHomeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was being looked for, e.g. "the default destination (~/.local/share/keepsake/backups)".
    let needed: String

    var description: String {
        "Cannot find \(needed): HOME is not set and this user's account names no home folder that exists. "
            + "Give the destination with --dest WHERE, or set KEEPSAKE_DEST=WHERE (or HOME)"
    }
}
