import BackupCore
import Foundation
import KeepsakeSupport

/// The time a command dates new backups by and judges retention at.
///
/// It is the real time, with one exception for the tests: a debug build (the build every
/// test runs) takes the instant in `KEEPSAKE_NOW` (`2027-03-01T02:00:00Z`) instead, so a
/// test can live through a year of nights in minutes. A release build never reads the
/// variable, so nothing in a user's environment can give a real backup a made-up date or id.
/// Locks, progress and elapsed times always run on the real clock.
enum CommandClock {
    // MARK: Constants

    /// The variable a debug build reads.
    static let variable = "KEEPSAKE_NOW"

    /// Whether this build honours `KEEPSAKE_NOW` at all.
    static var honoursVariable: Bool {
        #if DEBUG
        return true
        #else
        return false
        #endif
    }

    // MARK: Reading

    /// Now, or `KEEPSAKE_NOW`'s instant in a debug build.
    /// - Throws: `UsageError` (exit 2) naming the variable when a debug build is given a value
    ///   that is not `YYYY-MM-DDTHH:MM:SSZ`.
    static func now(environment: [String: String], command: CommandSpec?) throws(UsageError) -> Date {
        guard honoursVariable, let text = environment[variable], !text.isEmpty else { return Date() }
        guard let date = Timestamp.parseISO8601(text) else {
            throw UsageError.custom("The value '\(text)' of \(variable) is not an instant like 2027-03-01T02:00:00Z.",
                                    command: command)
        }
        return date
    }
}
