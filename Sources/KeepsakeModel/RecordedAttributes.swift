import KeepsakeArchive

/// The attributes that both a tar header and a manifest line record for an entry: in a
/// Keepsake archive the manifest line is made from the header, so the two always agree
/// (restore and verify compare them).
///
/// A lone gzip, lz4 or uncompressed archive has no checksum that libarchive checks (its gzip
/// reader never compares the trailer's CRC), so a flipped bit can change a mode or a time
/// in one of the two copies and still parse. When they disagree, nothing tells which one is
/// right: the entry is damaged.
package struct RecordedAttributes: Sendable, Equatable {
    // MARK: Fields

    package let type: EntryType
    let permissions: UInt32
    let uid: UInt32
    let gid: UInt32
    let userName: String?
    let groupName: String?
    let mtimeNanoseconds: Int64
    /// A symlink's target (nil for other types).
    let linkTarget: [UInt8]?

    // MARK: Making

    package init(_ header: ArchiveEntryHeader) {
        type = header.type
        permissions = header.permissions
        uid = header.uid
        gid = header.gid
        userName = header.userName
        groupName = header.groupName
        // A hard link's time is its file's, compared there.
        mtimeNanoseconds = header.type == .hardlink ? 0 : header.mtimeTotalNanoseconds
        linkTarget = header.type == .symlink ? header.linkTarget : nil
    }

    package init(_ entry: ManifestEntry) {
        type = entry.type
        permissions = entry.mode
        uid = entry.uid
        gid = entry.gid
        userName = entry.userName
        groupName = entry.groupName
        mtimeNanoseconds = entry.type == .hardlink ? 0 : entry.mtimeNanoseconds
        linkTarget = entry.type == .symlink ? entry.linkTarget : nil
    }

    // MARK: Comparing

    /// What differs from `other`, in words ("mode, modified time"); nil when they agree.
    /// A name missing on one side is not a difference (the ids still are compared).
    package func differences(from other: RecordedAttributes) -> String? {
        var names: [String] = []
        if type != other.type { names.append("type") }
        if permissions != other.permissions { names.append("mode") }
        if uid != other.uid || gid != other.gid { names.append("owner") }
        if let userName, let otherName = other.userName, userName != otherName { names.append("user name") }
        if let groupName, let otherName = other.groupName, groupName != otherName { names.append("group name") }
        if mtimeNanoseconds != other.mtimeNanoseconds { names.append("modified time") }
        if linkTarget != other.linkTarget { names.append("link target") }
        return names.isEmpty ? nil : names.joined(separator: ", ")
    }

    /// The reason given for an entry whose header and manifest line disagree.
    package static func disagreement(_ differences: String) -> String {
        "its tar header and the archive's manifest disagree (\(differences)): one of them is damaged"
    }
}
