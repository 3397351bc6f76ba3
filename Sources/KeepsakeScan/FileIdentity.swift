import Foundation

/// A file's identity on this machine (device and inode): how a scan knows a folder it must
/// leave out, and a backup the further names of a hard-linked file.
package struct FileIdentity: Hashable, Sendable {
    package let device: UInt64
    package let inode: UInt64

    /// The identity `info` (from `stat`) describes.
    package init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }
}
