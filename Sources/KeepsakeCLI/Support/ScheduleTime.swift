import Foundation

/// When `keepsake schedule` runs a profile, in the forms cron and systemd timers use.
enum ScheduleTime: Sendable, Equatable, CustomStringConvertible {
    /// Every hour at this minute.
    case hourly(minute: Int)
    /// Every day at this time.
    case daily(hour: Int, minute: Int)
    /// Every week on this day (0 = Sunday … 6 = Saturday, as cron counts) at this time.
    case weekly(day: Int, hour: Int, minute: Int)

    // MARK: Days

    /// Day names as systemd writes them, Sunday first (cron's numbering).
    static let systemdDays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let dayNames = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"]

    /// The day number (0 = Sunday) for `mon`, `Monday`, `1`, … (`7` is Sunday too, as in cron).
    static func day(_ text: String) -> Int? {
        let lowered = text.lowercased()
        if let number = Int(lowered), (0...7).contains(number) { return number % 7 }
        guard lowered.count >= 3 else { return nil }
        return dayNames.firstIndex { $0.hasPrefix(lowered) }
    }

    // MARK: Parsing

    /// `HH:MM` (or `H:MM`) as hour and minute, or nil.
    static func clock(_ text: String) -> (hour: Int, minute: Int)? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, (1...2).contains(parts[0].count), parts[1].count == 2,
              parts.allSatisfy({ $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
              let hour = Int(parts[0]), let minute = Int(parts[1]), (0...23).contains(hour), (0...59).contains(minute)
        else { return nil }
        return (hour, minute)
    }

    /// A minute `0`–`59`, or nil.
    static func minute(_ text: String) -> Int? {
        guard (1...2).contains(text.count), text.allSatisfy({ $0.isASCII && $0.isNumber }),
              let minute = Int(text), (0...59).contains(minute) else { return nil }
        return minute
    }

    // MARK: Forms

    /// The five time fields of a crontab line: `30 2 * * *`.
    var cronFields: String {
        switch self {
        case .hourly(let minute): return "\(minute) * * * *"
        case .daily(let hour, let minute): return "\(minute) \(hour) * * *"
        case .weekly(let day, let hour, let minute): return "\(minute) \(hour) * * \(day)"
        }
    }

    /// A systemd `OnCalendar=` value: `*-*-* 02:30:00`, `Sun *-*-* 02:30:00`, `*-*-* *:15:00`.
    var onCalendar: String {
        switch self {
        case .hourly(let minute): return "*-*-* *:\(Self.twoDigits(minute)):00"
        case .daily(let hour, let minute): return "*-*-* \(Self.twoDigits(hour)):\(Self.twoDigits(minute)):00"
        case .weekly(let day, let hour, let minute):
            return "\(Self.systemdDays[day]) *-*-* \(Self.twoDigits(hour)):\(Self.twoDigits(minute)):00"
        }
    }

    /// In words: `hourly at :15`, `daily at 02:30`, `weekly on Sunday at 02:30`.
    var description: String {
        switch self {
        case .hourly(let minute): return "hourly at :\(Self.twoDigits(minute))"
        case .daily(let hour, let minute): return "daily at \(Self.twoDigits(hour)):\(Self.twoDigits(minute))"
        case .weekly(let day, let hour, let minute):
            return "weekly on \(Self.dayNames[day].capitalized) at \(Self.twoDigits(hour)):\(Self.twoDigits(minute))"
        }
    }

    private static func twoDigits(_ value: Int) -> String {
        value < 10 ? "0\(value)" : "\(value)"
    }
}
