/// The compressions a backup can use. Each yields a stream every common tool reads.
public enum Compression: String, Sendable, CaseIterable {
    case zstd, gzip, xz, lz4, none

    // MARK: Facts

    /// The archive file's extension.
    public var fileExtension: String {
        switch self {
        case .zstd: return ".tar.zst"
        case .gzip: return ".tar.gz"
        case .xz: return ".tar.xz"
        case .lz4: return ".tar.lz4"
        case .none: return ".tar"
        }
    }

    /// The level used when none is given.
    public var defaultLevel: Int? {
        switch self {
        case .zstd: return 3
        case .gzip: return 6
        case .xz: return 6
        case .lz4: return 1
        case .none: return nil
        }
    }

    /// The levels libarchive accepts for this codec (it reports out-of-range levels as an
    /// "Undefined option", so they are checked here first).
    public var levelRange: ClosedRange<Int>? {
        switch self {
        case .zstd: return 1...19
        case .gzip: return 1...9
        case .xz: return 0...9
        case .lz4: return 1...9
        case .none: return nil
        }
    }

    /// Whether libarchive can compress this codec on several threads.
    var supportsThreads: Bool { self == .zstd || self == .xz }

    /// The codec whose file extension `name` ends with, if any.
    public static func fromFileName(_ name: String) -> Compression? {
        let lowered = name.lowercased()
        for codec in [Compression.zstd, .gzip, .xz, .lz4] where lowered.hasSuffix(codec.fileExtension) {
            return codec
        }
        if lowered.hasSuffix(".tgz") { return .gzip }
        return lowered.hasSuffix(".tar") ? Compression.none : nil
    }
}
