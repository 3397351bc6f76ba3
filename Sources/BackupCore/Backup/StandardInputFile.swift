import Foundation
import KeepsakeArchive
import KeepsakeHashing
import KeepsakeSupport

/// Standard input as the one file a backup stores (`--stdin-name`). Its size is unknown
/// until the end, and a tar header needs it first, so the stream is spooled to a
/// temporary file while it is hashed.
struct StandardInputFile {
    // MARK: Naming

    /// A stdin name as an archive path: relative, no `..`, no empty name, and not one of
    /// Keepsake's own entries; nil when it is none of that.
    static func archivePath(_ name: [UInt8]) -> [UInt8]? {
        let components = PathBytes.components(name)
        guard !components.isEmpty, !components.contains([46, 46]) else { return nil }
        let path = components.dropFirst().reduce(components[0]) { PathBytes.join($0, $1) }
        return ArchiveLayout.isMetadataEntry(path) ? nil : path
    }

    // MARK: Content

    /// The archive path it is stored under.
    let path: [UInt8]
    /// Everything read, to be copied into the archive.
    let content: SpoolFile
    let sha256: String

    /// Reads standard input to its end, to be stored as `name`; stops between chunks once
    /// `cancellation` is set.
    init(name: [UInt8], cancellation: CancellationFlag) throws {
        guard let path = StandardInputFile.archivePath(name) else {
            throw EngineError.invalidRequest("The stdin name '\(PathBytes.display(name))' must be a relative path without '..'.")
        }
        self.path = path
        content = try SpoolFile()
        let hasher = SHA256Hasher()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 4096)
        defer { buffer.deallocate() }
        while true {
            try cancellation.check()
            let count = FileDescriptorIO.read(0, buffer)
            if count < 0 { throw EngineError.stdinUnreadable(reason: FileDescriptorIO.message(Int32(-count))) }
            if count == 0 { break }
            let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
            hasher.update(chunk)
            try content.write(chunk)
        }
        sha256 = hasher.finalizeHex()
    }

    /// The tar header: a private file of the user running the backup, made at `now`.
    func header(now: Date) -> ArchiveEntryHeader {
        ArchiveEntryHeader(path: path, type: .file, size: content.size, permissions: 0o600, uid: geteuid(),
                           gid: getegid(), userName: UserNames.shared.userName(for: geteuid()),
                           groupName: UserNames.shared.groupName(for: getegid()),
                           mtimeSeconds: Int64(now.timeIntervalSince1970.rounded(.down)))
    }
}
