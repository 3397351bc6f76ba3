import Foundation

/// How long to wait for a destination's lock (`--lock-wait`, a profile's `lock-wait`):
/// seconds as a whole number (`900`), or with a unit: `90s`, `15min`, `2h`. At most a day.
public enum LockWait {
    /// The longest wait accepted.
    public static let maximum: TimeInterval = 86_400

    /// The seconds `text` says, or nil when it is not a wait.
    public static func parse(_ text: String) -> TimeInterval? {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        let units: [(suffix: String, seconds: Double)] = [("min", 60), ("h", 3600), ("s", 1), ("", 1)]
        for unit in units where trimmed.hasSuffix(unit.suffix) {
            let number = trimmed.dropLast(unit.suffix.count)
            guard !number.isEmpty, number.allSatisfy(\.isASCII), number.allSatisfy(\.isNumber),
                  let value = Double(number) else { continue }
            let seconds = value * unit.seconds
            return seconds <= maximum ? seconds : nil
        }
        return nil
    }

    /// What a bad value gets told.
    public static let expected = "a number of seconds (900), or with a unit: 90s, 15min, 2h; at most 24h"
}
