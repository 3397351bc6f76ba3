import Foundation

/// A backup's name: UTC creation time to the second and eight random hex digits, e.g.
/// `20261129T023000Z-3f9a1c2e`. Ids sort by time as plain strings.
public struct BackupID: Sendable, Hashable, Comparable, CustomStringConvertible {
    // MARK: Value

    /// The id's text.
    public let rawValue: String

    // MARK: Creation

    /// A fresh id for a backup created at `date`.
    public init(date: Date) {
        var generator = SystemRandomNumberGenerator()
        let suffix = String(format: "%08x", UInt32.random(in: 0...UInt32.max, using: &generator))
        rawValue = BackupID.timestampFormatter(date) + "-" + suffix
    }

    /// A fresh id for `date` that sorts after `previous` (the newest id in the destination):
    /// two backups in one second, or a clock that went back, still list in the order they
    /// were made.
    public init(date: Date, after previous: BackupID?) {
        let fresh = BackupID(date: date)
        guard let previous, fresh <= previous else {
            self = fresh
            return
        }
        let stamp = String(previous.rawValue.prefix(16))
        let previousSuffix = UInt32(previous.rawValue.suffix(8), radix: 16) ?? 0
        var generator = SystemRandomNumberGenerator()
        if previousSuffix < UInt32.max {
            // Room left in the same second: a random suffix above the previous one.
            let upper = previousSuffix > UInt32.max - 0x1000_0000 ? UInt32.max : previousSuffix + 0x1000_0000
            let suffix = UInt32.random(in: (previousSuffix + 1)...upper, using: &generator)
            rawValue = stamp + "-" + String(format: "%08x", suffix)
        } else {
            let next = (previous.date ?? date).addingTimeInterval(1)
            rawValue = BackupID.timestampFormatter(next) + "-" + String(format: "%08x", UInt32.random(in: 0...UInt32.max, using: &generator))
        }
    }

    /// Parses and validates an id's text; nil when it is not of the id's form.
    public init?(_ text: String) {
        guard BackupID.isWellFormed(text) else { return nil }
        rawValue = text
    }

    // MARK: Parts

    /// When the backup was created, from the id's time part.
    public var date: Date? {
        let stamp = String(rawValue.prefix(16))
        var components = DateComponents()
        components.timeZone = TimeZone(identifier: "UTC")
        func number(_ from: Int, _ length: Int) -> Int? {
            let start = stamp.index(stamp.startIndex, offsetBy: from)
            return Int(stamp[start..<stamp.index(start, offsetBy: length)])
        }
        components.year = number(0, 4)
        components.month = number(4, 2)
        components.day = number(6, 2)
        components.hour = number(9, 2)
        components.minute = number(11, 2)
        components.second = number(13, 2)
        return Calendar(identifier: .gregorian).date(from: components)
    }

    /// The id's text.
    public var description: String { rawValue }

    public static func < (lhs: BackupID, rhs: BackupID) -> Bool { lhs.rawValue < rhs.rawValue }

    // MARK: Format

    /// `YYYYMMDDTHHMMSSZ-xxxxxxxx`
    static func isWellFormed(_ text: String) -> Bool {
        // Read in place, without allocating: every entry line of a manifest carries an ID.
        // Plain loops over the bytes: slices and closures cost a debug build (every test's)
        // 13% of a nightly run here.
        var text = text
        return text.withUTF8 { bytes in
            guard bytes.count == 25, bytes[8] == 0x54, bytes[15] == 0x5A, bytes[16] == 0x2D else { return false } // T, Z, -
            for index in 0..<15 where index != 8 {
                guard bytes[index] >= 0x30 && bytes[index] <= 0x39 else { return false }
            }
            for index in 17..<25 {
                let byte = bytes[index]
                guard (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x66) else { return false }
            }
            func number(_ start: Int, _ count: Int) -> Int {
                var value = 0
                for index in start..<(start + count) { value = value * 10 + Int(bytes[index] - 0x30) }
                return value
            }
            let year = number(0, 4), month = number(4, 2), day = number(6, 2)
            guard month >= 1 && month <= 12, number(9, 2) < 24, number(11, 2) < 60, number(13, 2) < 61 else { return false }
            let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
            let days: Int
            switch month {
            case 2: days = leap ? 29 : 28
            case 4, 6, 9, 11: days = 30
            default: days = 31
            }
            return day >= 1 && day <= days
        }
    }

    private static func timestampFormatter(_ date: Date) -> String {
        var time = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&time, &parts)
        return String(format: "%04d%02d%02dT%02d%02d%02dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
                      parts.tm_hour, parts.tm_min, parts.tm_sec)
    }
}
