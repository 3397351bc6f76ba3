import Foundation

/// Locale-independent formatting of counts, byte sizes, rates and durations, so output
/// is stable for scripts and tests.
///
/// ```swift
/// Units.bytes(1_288_490_189)   // "1.2 GiB"
/// Units.count(12345)           // "12,345"
/// Units.duration(3725)         // "1:02:05"
/// ```
public enum Units {

    // MARK: Numbers

    /// An integer with "," between groups of three digits.
    public static func count(_ value: Int) -> String {
        let digits = String(value.magnitude)
        var grouped = ""
        for (offset, digit) in digits.enumerated() {
            if offset > 0 && (digits.count - offset) % 3 == 0 { grouped.append(",") }
            grouped.append(digit)
        }
        return value < 0 ? "-" + grouped : grouped
    }

    /// A count with its noun: "1 file", "2 files", "1,204 files" (`plural` defaults to the
    /// noun with "s").
    public static func count(_ value: Int, _ noun: String, plural: String? = nil) -> String {
        "\(count(value)) \(value == 1 ? noun : plural ?? noun + "s")"
    }

    // MARK: Sizes

    /// A byte count in binary units: "512 B", "1.5 KiB", "12.3 MiB", "340 GiB".
    /// One decimal below 100 of a unit, none above.
    public static func bytes(_ value: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
        let magnitude = Double(value.magnitude)
        let sign = value < 0 ? "-" : ""
        guard magnitude >= 1024 else { return sign + "\(value.magnitude) B" }
        var scaled = magnitude
        var unit = 0
        while scaled >= 1024 && unit < units.count - 1 {
            scaled /= 1024
            unit += 1
        }
        // Rounding can reach 1024.0 of a unit; then show the next unit instead.
        if scaled.rounded() >= 1024 && unit < units.count - 1 {
            scaled /= 1024
            unit += 1
        }
        return sign + decimal(scaled) + " " + units[unit]
    }

    /// A byte count, convenient for `Int`.
    public static func bytes(_ value: Int) -> String { bytes(Int64(value)) }

    /// A transfer rate: "45.1 MiB/s".
    public static func rate(bytesPerSecond: Double) -> String {
        guard bytesPerSecond.isFinite, bytesPerSecond >= 0 else { return "– B/s" }
        let clamped = min(bytesPerSecond, Double(Int64.max / 2))
        return bytes(Int64(clamped)) + "/s"
    }

    private static func decimal(_ value: Double) -> String {
        if value >= 99.95 { return String(Int(value.rounded())) }
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }

    // MARK: Time

    /// A duration as "m:ss" or "h:mm:ss" ("0:07", "12:30", "1:02:05"); negative or
    /// non-finite values give "–:––".
    public static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0, seconds < Double(Int.max / 2) else { return "–:––" }
        let total = Int(seconds.rounded())
        let hours = total / 3600
        let minutes = (total % 3600) / 60
        let secs = total % 60
        let twoDigits = { (value: Int) in value < 10 ? "0\(value)" : "\(value)" }
        if hours > 0 { return "\(hours):\(twoDigits(minutes)):\(twoDigits(secs))" }
        return "\(minutes):\(twoDigits(secs))"
    }

    /// A measured duration for summaries: `0.42 s`, `12.3 s`, `2 min 05 s`, `1 h 02 min`.
    public static func elapsed(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0 else { return "–" }
        if seconds < 1 { return String(format: "%.2f s", seconds) }
        if seconds < 60 { return String(format: "%.1f s", seconds) }
        let total = Int(seconds.rounded())
        if total < 3600 { return String(format: "%d min %02d s", total / 60, total % 60) }
        return String(format: "%d h %02d min", total / 3600, (total % 3600) / 60)
    }
}
