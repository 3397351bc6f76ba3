import Foundation

/// ISO 8601 text for instants, in UTC to the second (`2026-11-29T02:30:00Z`).
public enum Timestamp {
    /// Formats a date as `YYYY-MM-DDTHH:MM:SSZ`.
    public static func iso8601(_ date: Date) -> String {
        var time = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&time, &parts)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02dZ", parts.tm_year + 1900, parts.tm_mon + 1,
                      parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec)
    }

    /// Parses `YYYY-MM-DDTHH:MM:SSZ`; nil for anything else.
    public static func parseISO8601(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count == 20, bytes[4] == 45, bytes[7] == 45, bytes[10] == 84, bytes[13] == 58, bytes[16] == 58,
              bytes[19] == 90 else { return nil }
        func number(_ range: Range<Int>) -> Int32? {
            guard bytes[range].allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
            return Int32(String(decoding: bytes[range], as: UTF8.self))
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = month - 1
        parts.tm_mday = day
        parts.tm_hour = hour
        parts.tm_min = minute
        parts.tm_sec = second
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }

    /// Parses an HTTP date (`Tue, 01 Dec 2026 19:40:00 GMT`, RFC 9110's preferred form);
    /// nil for anything else.
    public static func parseHTTPDate(_ text: String) -> Date? {
        let parts = text.split(separator: " ")
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        guard parts.count == 6, parts[5] == "GMT", let day = Int32(parts[1]), let monthIndex = months.firstIndex(of: String(parts[2])),
              let year = Int32(parts[3]) else { return nil }
        let clock = parts[4].split(separator: ":")
        guard clock.count == 3, let hour = Int32(clock[0]), let minute = Int32(clock[1]), let second = Int32(clock[2]),
              (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        var fields = tm()
        fields.tm_year = year - 1900
        fields.tm_mon = Int32(monthIndex)
        fields.tm_mday = day
        fields.tm_hour = hour
        fields.tm_min = minute
        fields.tm_sec = second
        return Date(timeIntervalSince1970: TimeInterval(timegm(&fields)))
    }

    /// Local time for people: `2026-11-29 03:30`.
    public static func localShort(_ date: Date) -> String {
        var time = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        localtime_r(&time, &parts)
        return String(format: "%04d-%02d-%02d %02d:%02d", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
                      parts.tm_hour, parts.tm_min)
    }
}
