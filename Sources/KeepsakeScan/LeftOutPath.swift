import Foundation

/// A path a scan leaves out, and the rule that left it out: what `backup --dry-run --list`
/// shows beside the paths it would save.
///
/// The scanner never descends into what it leaves out, so a folder stands for everything
/// below it; `contentsOnly` says that the folder itself is kept (a cache tag's folder, a
/// mount point) and only what it holds is left out.
public struct LeftOutPath: Sendable, Equatable {
    // MARK: Rules

    /// Why a path is left out.
    public enum Rule: Sendable, Equatable, CustomStringConvertible {
        /// An exclude pattern (`--exclude`, `--exclude-from`, a profile's `exclude`).
        case pattern(String)
        /// A valid `CACHEDIR.TAG` in the folder (`--exclude-caches`).
        case cacheTag
        /// A file of this name in the folder (`--exclude-if-present`).
        case marker(String)
        /// Another file system below a source (`--one-file-system`).
        case otherFileSystem
        /// The destination (with its temporary and lock files) lies inside a source.
        case destination

        /// The rule as the listing shows it: the option that made it, where there is one.
        public var description: String {
            switch self {
            case .pattern(let pattern): return "--exclude '\(pattern)'"
            case .cacheTag: return "CACHEDIR.TAG, --exclude-caches"
            case .marker(let name): return "\(name) is present, --exclude-if-present"
            case .otherFileSystem: return "another file system, --one-file-system"
            case .destination: return "the destination, left out automatically"
            }
        }
    }

    // MARK: Properties

    /// The path on this machine.
    public let path: [UInt8]
    /// Whether the path is a folder (everything below it is left out too).
    public let isDirectory: Bool
    /// True when the folder is kept and only its contents are left out.
    public let contentsOnly: Bool
    /// Why.
    public let rule: Rule

    /// Creates a record.
    public init(path: [UInt8], isDirectory: Bool, contentsOnly: Bool = false, rule: Rule) {
        self.path = path
        self.isDirectory = isDirectory
        self.contentsOnly = contentsOnly
        self.rule = rule
    }
}
