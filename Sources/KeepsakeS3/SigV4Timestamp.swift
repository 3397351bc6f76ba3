import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A request time in the two UTC forms SigV4 uses: `yyyyMMdd'T'HHmmss'Z'` for
/// `x-amz-date` and `yyyyMMdd` for the credential scope.
///
/// Formatted by hand from `gmtime_r`, not with `DateFormatter`, whose output depends on
/// the locale and calendar of the process.
public struct SigV4Timestamp: Sendable, Equatable {
    // MARK: Forms

    /// The `x-amz-date` form, e.g. `20130524T000000Z`.
    public let amzDate: String

    /// The date stamp of the credential scope, e.g. `20130524`.
    public let dateStamp: String

    // MARK: Life cycle

    /// The UTC forms of `date`, to the second (fractions are dropped). Times before 1970
    /// or after 9999 are clamped, keeping the forms four-digit-year and well formed.
    public init(_ date: Date) {
        let seconds = date.timeIntervalSince1970
        let clamped = seconds.isNaN ? 0 : min(max(seconds, 0), Self.lastSecond)
        var time = time_t(clamped.rounded(.down))
        var parts = tm()
        gmtime_r(&time, &parts)
        let day = Self.digits(Int(parts.tm_year) + 1900, 4) + Self.digits(Int(parts.tm_mon) + 1, 2)
            + Self.digits(Int(parts.tm_mday), 2)
        dateStamp = day
        amzDate = day + "T" + Self.digits(Int(parts.tm_hour), 2) + Self.digits(Int(parts.tm_min), 2)
            + Self.digits(Int(parts.tm_sec), 2) + "Z"
    }

    // MARK: Helpers

    /// 9999-12-31T23:59:59Z, the last second with a four-digit year.
    private static let lastSecond: Double = 253_402_300_799

    /// `value` in decimal, zero-padded on the left to `width` digits.
    private static func digits(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }
}
