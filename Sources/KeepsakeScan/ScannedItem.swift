import Foundation
import KeepsakeArchive

/// One path the scanner found, with its `lstat` facts and the open directory it lives in.
public struct ScannedItem {
    /// Open descriptor of the containing directory; valid only during the visit.
    public let parentFD: Int32
    /// The last path component.
    public let name: [UInt8]
    /// The absolute path on this machine.
    public let absolutePath: [UInt8]
    /// The name in the archive: the absolute path without the leading `/`.
    public let archivePath: [UInt8]
    /// `lstat` of the path (symlinks are not followed).
    public let info: stat

    /// The entry type from the mode bits.
    public var type: EntryType {
        switch info.st_mode & S_IFMT {
        case S_IFDIR: return .directory
        case S_IFLNK: return .symlink
        case S_IFIFO: return .fifo
        case S_IFCHR: return .characterDevice
        case S_IFBLK: return .blockDevice
        case S_IFSOCK: return .socket
        default: return .file
        }
    }
}
