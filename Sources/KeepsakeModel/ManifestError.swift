/// A manifest that cannot be read.
public enum ManifestError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The first line is missing or is not a Keepsake manifest summary.
    case notAManifest(reason: String)
    /// A line could not be understood.
    case invalidLine(line: Int, reason: String)
    /// The manifest was written by a newer format than this build reads.
    case unsupportedFormat(Int)
    /// A compressed manifest whose zstd stream cannot be decompressed.
    case compressionDamaged(reason: String)
    /// The manifest holds more bytes than the entries its summary declares can need (see
    /// `ManifestSizeLimit`): it was read no further.
    case tooLarge(name: String, size: Int64, limit: Int, entries: Int64)

    public var description: String {
        switch self {
        case .notAManifest(let reason): return "Not a Keepsake manifest (\(reason))"
        case .invalidLine(let line, let reason): return "Manifest line \(line): \(reason)"
        case .unsupportedFormat(let version):
            return "Manifest format \(version) is newer than this keepsake understands; upgrade keepsake"
        case .compressionDamaged(let reason): return "Its compressed bytes are damaged (\(reason))"
        case .tooLarge(let name, let size, let limit, let entries):
            let reached = size == Int64.max ? "more than \(limit)" : "at least \(size)"
            return "\(name) holds \(reached) bytes, more than the \(limit) allowed for the \(entries) entries its summary "
                + "declares; it is damaged or was made to exhaust memory, and was not read further"
        }
    }
}
