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

    public var description: String {
        switch self {
        case .notAManifest(let reason): return "Not a Keepsake manifest (\(reason))"
        case .invalidLine(let line, let reason): return "Manifest line \(line): \(reason)"
        case .unsupportedFormat(let version):
            return "Manifest format \(version) is newer than this keepsake understands; upgrade keepsake"
        case .compressionDamaged(let reason): return "Its compressed bytes are damaged (\(reason))"
        }
    }
}
