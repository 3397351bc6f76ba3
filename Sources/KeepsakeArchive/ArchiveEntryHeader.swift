import CArchive
import Foundation
import KeepsakeSupport

/// Everything a tar header says about one entry, in Swift terms. Used both to write
/// entries and to describe entries read back.
public struct ArchiveEntryHeader: Sendable, Equatable {
    // MARK: Fields

    /// The entry's name: raw bytes, never with a leading `/` when written by Keepsake.
    public var path: [UInt8]
    public var type: EntryType
    /// Logical content size (for sparse files, including the holes).
    public var size: Int64
    /// Permission bits including setuid, setgid and sticky.
    public var permissions: UInt32
    public var uid: UInt32
    public var gid: UInt32
    public var userName: String?
    public var groupName: String?
    public var mtimeSeconds: Int64
    public var mtimeNanoseconds: Int32
    /// A symlink's target or a hard link's archive path.
    public var linkTarget: [UInt8]?
    public var rdev: UInt64
    /// Extended attributes, name → value.
    public var xattrs: [XAttribute]
    /// The data regions of a sparse file (offset, length); empty for a dense file.
    public var sparseRegions: [SparseRegion]

    /// One extended attribute.
    public struct XAttribute: Sendable, Equatable {
        public var name: String
        public var value: [UInt8]

        /// Creates an attribute.
        public init(name: String, value: [UInt8]) {
            self.name = name
            self.value = value
        }
    }

    /// A run of real data inside a sparse file.
    public struct SparseRegion: Sendable, Equatable {
        public var offset: Int64
        public var length: Int64

        /// Creates a region.
        public init(offset: Int64, length: Int64) {
            self.offset = offset
            self.length = length
        }
    }

    /// Creates a header.
    public init(path: [UInt8], type: EntryType, size: Int64 = 0, permissions: UInt32 = 0o644, uid: UInt32 = 0,
                gid: UInt32 = 0, userName: String? = nil, groupName: String? = nil, mtimeSeconds: Int64 = 0,
                mtimeNanoseconds: Int32 = 0, linkTarget: [UInt8]? = nil, rdev: UInt64 = 0,
                xattrs: [XAttribute] = [], sparseRegions: [SparseRegion] = []) {
        self.path = path
        self.type = type
        self.size = size
        self.permissions = permissions
        self.uid = uid
        self.gid = gid
        self.userName = userName
        self.groupName = groupName
        self.mtimeSeconds = mtimeSeconds
        self.mtimeNanoseconds = mtimeNanoseconds
        self.linkTarget = linkTarget
        self.rdev = rdev
        self.xattrs = xattrs
        self.sparseRegions = sparseRegions
    }

    /// The most runs of data (and holes) a sparse file's map holds in an archive Keepsake
    /// writes; a file with more is stored whole, its holes as zeros. It bounds the memory
    /// reading a map can take (16 bytes a run).
    public static let mostSparseRuns = 1 << 20

    /// The modification time in nanoseconds since the epoch.
    public var mtimeTotalNanoseconds: Int64 { mtimeSeconds &* 1_000_000_000 &+ Int64(mtimeNanoseconds) }

    // MARK: libarchive bridging

    /// Reads a header from a libarchive entry; nil when it has no usable name.
    init?(entry: OpaquePointer) {
        guard var name = PathBytes.fromCString(archive_entry_pathname(entry)), !name.isEmpty else { return nil }
        // pax and GNU tar write folders as `name/`; the manifest has no trailing slash.
        while name.count > 1 && name.last == UInt8(ascii: "/") { name.removeLast() }
        let fileType = UInt32(archive_entry_filetype(entry))
        let hardlink = PathBytes.fromCString(archive_entry_hardlink(entry))
        var type: EntryType
        switch fileType {
        case KS_AE_IFDIR: type = .directory
        case KS_AE_IFLNK: type = .symlink
        case KS_AE_IFIFO: type = .fifo
        case KS_AE_IFCHR: type = .characterDevice
        case KS_AE_IFBLK: type = .blockDevice
        case KS_AE_IFSOCK: type = .socket
        default: type = .file
        }
        if let hardlink, !hardlink.isEmpty { type = .hardlink }
        var link: [UInt8]?
        if type == .symlink { link = PathBytes.fromCString(archive_entry_symlink(entry)) ?? [] }
        if type == .hardlink { link = hardlink }
        var attributes: [XAttribute] = []
        if archive_entry_xattr_reset(entry) > 0 {
            var namePointer: UnsafePointer<CChar>?
            var valuePointer: UnsafeRawPointer?
            var length = 0
            while archive_entry_xattr_next(entry, &namePointer, &valuePointer, &length) == ARCHIVE_OK {
                guard let attributeName = PathBytes.fromCString(namePointer).flatMap(PathBytes.validString) else { continue }
                let value = valuePointer.map { Array(UnsafeRawBufferPointer(start: $0, count: length)) } ?? []
                attributes.append(XAttribute(name: attributeName, value: value))
            }
        }
        let uid = archive_entry_uid(entry)
        let gid = archive_entry_gid(entry)
        // The reading side of the same libarchive quirk: "-99.75" comes back as (-99, .75).
        var seconds = Int64(archive_entry_mtime(entry))
        var nanoseconds = Int32(clamping: archive_entry_mtime_nsec(entry))
        if seconds < 0 && nanoseconds > 0 && seconds > Int64.min {
            seconds -= 1
            nanoseconds = 1_000_000_000 - nanoseconds
        }
        self.init(path: name, type: type, size: archive_entry_size_is_set(entry) != 0 ? archive_entry_size(entry) : 0,
                  permissions: UInt32(archive_entry_perm(entry)) & 0o7777,
                  uid: UInt32(clamping: uid), gid: UInt32(clamping: gid),
                  userName: PathBytes.fromCString(archive_entry_uname(entry)).flatMap(PathBytes.validString).flatMap { $0.isEmpty ? nil : $0 },
                  groupName: PathBytes.fromCString(archive_entry_gname(entry)).flatMap(PathBytes.validString).flatMap { $0.isEmpty ? nil : $0 },
                  mtimeSeconds: seconds, mtimeNanoseconds: nanoseconds,
                  linkTarget: link, rdev: UInt64(archive_entry_rdev(entry)), xattrs: attributes)
    }
}
