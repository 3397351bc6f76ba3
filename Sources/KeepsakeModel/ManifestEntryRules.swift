import KeepsakeArchive
import KeepsakeSupport

/// What a manifest entry line must say, whichever parser read it: `ManifestEntry(json:line:)`
/// reads any JSON, `ManifestLineDecoder` the lines Keepsake writes, where they lie. Each
/// gathers the fields its own way (the decoder hands a line it cannot read to the general
/// parser) and both judge them here, in one order and with one set of messages, so the two
/// cannot disagree on what a line means, even on a line with several faults.
struct ManifestEntryRules {
    // MARK: Fields as read

    /// The path's length in bytes; nil when the line has none.
    var pathLength: Int?
    /// The entry's type; nil when `type` is missing or names no type.
    var type: EntryType?
    var size: Int64 = 0
    /// Whether `mode`, `sha256` or `in` was there and not what its rule below accepts.
    var modeInvalid = false
    var sha256Invalid = false
    var storedInInvalid = false
    /// `at` and `len`, as given (both or neither).
    var offset: Int64?
    var length: Int64?
    /// The owners as given (0 when absent), narrowed by `judged`.
    var uid: Int64 = 0
    var gid: Int64 = 0
    var hasLink = false

    // MARK: Judging the line

    /// The owners narrowed to 32 bits, or the line's first fault: path, type, size, mode,
    /// digest, holder, place in the archive, owners, link, in that order.
    func judged(line: Int) throws -> (uid: UInt32, gid: UInt32) {
        func invalid(_ reason: String) -> ManifestError { .invalidLine(line: line, reason: reason) }
        guard let pathLength else { throw invalid("missing 'path'") }
        guard pathLength > 0 else { throw invalid("empty 'path'") }
        guard let type else { throw invalid("missing or unknown 'type'") }
        guard size >= 0 else { throw invalid("'size' is negative") }
        if modeInvalid { throw invalid("'mode' must be octal like \"0644\"") }
        if sha256Invalid { throw invalid("'sha256' must be 64 lowercase hex digits") }
        if storedInInvalid { throw invalid("'in' must be a backup id") }
        // Both or neither; a partial restore trusts them only as far as the archive agrees.
        if (offset == nil) != (length == nil) { throw invalid(offset == nil ? "missing 'at'" : "missing 'len'") }
        if let offset, let length, offset < 0 || length <= 0 {
            throw invalid("'at' and 'len' must be a position and a length")
        }
        guard let uid32 = UInt32(exactly: uid) else { throw invalid("'uid' is out of range") }
        guard let gid32 = UInt32(exactly: gid) else { throw invalid("'gid' is out of range") }
        if !hasLink, type == .symlink || type == .hardlink { throw invalid("missing 'link'") }
        return (uid32, gid32)
    }

    // MARK: Rules of one field

    /// The most a `mode` holds: the permission bits, with setuid, setgid and sticky.
    static let largestMode: UInt32 = 0o7777

    /// A `mode` as written ("0644"): octal, as `UInt32(_:radix:)` reads it, at most
    /// `largestMode`; nil otherwise.
    static func mode(_ text: String) -> UInt32? {
        guard let mode = UInt32(text, radix: 8), mode <= largestMode else { return nil }
        return mode
    }

    /// `mode(_:)` of the text in `digits`, without making a string of the usual 1 to 10
    /// octal digits.
    static func mode(octalDigits digits: UnsafeBufferPointer<UInt8>) -> UInt32? {
        guard (1...10).contains(digits.count), digits.allSatisfy({ $0 >= 48 && $0 <= 55 }) else {
            return mode(String(decoding: digits, as: UTF8.self))
        }
        let mode = digits.reduce(UInt32(0)) { $0 << 3 | UInt32($1 - 48) }
        return mode <= largestMode ? mode : nil
    }

    /// A `sha256` as written: 64 lowercase hex digits.
    static func isSHA256(_ text: String) -> Bool {
        HexEncoding.isHex(text, length: 64)
    }
}
