import CArchive
import Foundation
@testable import KeepsakeArchive
import KeepsakeSupport

@testable import BackupCore

/// libarchive 3.6's pax writer, configured as Keepsake's `ArchiveWriter` used it before it
/// encoded headers itself: the reference `PaxHeaderEncoderTests` compares bytes against.
final class LibarchivePaxReference {
    // MARK: State

    private let archive: OpaquePointer
    private let entry: OpaquePointer
    private let output = Output()

    /// Collects what libarchive writes.
    private final class Output {
        var bytes: [UInt8] = []
        var accepting = true
    }

    // MARK: Life cycle

    init() throws {
        _ = LibarchiveSetup.prepared
        guard let archive = archive_write_new(), let entry = archive_entry_new() else { throw ArchiveError.setup("out of memory") }
        self.archive = archive
        self.entry = entry
        func check(_ status: Int32) throws {
            guard status == ARCHIVE_OK else { throw ArchiveError.setup(LibarchiveSetup.errorMessage(archive)) }
        }
        try check(archive_write_set_format_pax(archive))
        try check(archive_write_set_format_option(archive, "pax", "xattrheader", "SCHILY"))
        // Unbuffered, so that `take()` after a header returns that header's bytes.
        try check(archive_write_set_bytes_per_block(archive, 0))
        try check(archive_write_set_bytes_in_last_block(archive, 1))
        let client = Unmanaged.passUnretained(output).toOpaque()
        try check(archive_write_open2(archive, client, nil, { _, client, buffer, length in
            guard let client, let buffer else { return -1 }
            let output = Unmanaged<Output>.fromOpaque(client).takeUnretainedValue()
            guard output.accepting else { return -1 }
            output.bytes.append(contentsOf: UnsafeRawBufferPointer(start: buffer, count: length))
            return length
        }, nil, nil))
    }

    deinit {
        archive_entry_free(entry)
        archive_write_free(archive)
    }

    // MARK: Writing

    /// Writes a header as `ArchiveWriter` did; throws for what libarchive refused.
    func writeHeader(_ header: ArchiveEntryHeader) throws {
        archive_entry_clear(entry)
        try fill(entry, from: header)
        if archive_write_header(archive, entry) < ARCHIVE_WARN {
            throw ArchiveError.write(path: PathBytes.display(header.path), reason: LibarchiveSetup.errorMessage(archive))
        }
    }

    /// Writes content (holes included, as zeros).
    func writeData(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { archive_write_data(archive, $0.baseAddress, $0.count) }
            guard written > 0 else { throw ArchiveError.write(path: "data", reason: LibarchiveSetup.errorMessage(archive)) }
            offset += written
        }
    }

    func finishEntry() throws {
        guard archive_write_finish_entry(archive) >= ARCHIVE_WARN else { throw ArchiveError.setup("finish entry") }
    }

    func finish() throws {
        guard archive_write_close(archive) == ARCHIVE_OK else { throw ArchiveError.setup("close") }
    }

    /// Refuses all further output: freeing a writer closes it, which writes the rest of an
    /// entry's content as zeros, gigabytes for the large sizes that are only headers here.
    func refuseFurtherOutput() {
        output.accepting = false
    }

    /// The bytes written since the last call.
    func take() -> [UInt8] {
        defer { output.bytes.removeAll() }
        return output.bytes
    }

    // MARK: The header as libarchive took it

    /// Fills a cleared libarchive entry from the header, exactly as `ArchiveWriter` did.
    private func fill(_ entry: OpaquePointer, from header: ArchiveEntryHeader) throws {
        try PathBytes.withCString(header.path) { archive_entry_copy_pathname(entry, $0) }
        archive_entry_set_size(entry, header.type == .file ? header.size : 0)
        archive_entry_set_perm(entry, mode_t(header.permissions & 0o7777))
        archive_entry_set_uid(entry, la_int64_t(header.uid))
        archive_entry_set_gid(entry, la_int64_t(header.gid))
        if let userName = header.userName { archive_entry_copy_uname(entry, userName) }
        if let groupName = header.groupName { archive_entry_copy_gname(entry, groupName) }
        // libarchive 3.6 writes pax times before 1970 as "-sec.nsec" where the fraction
        // should count toward zero; handing it (sec + 1, 1e9 - nsec) yields the right text.
        if header.mtimeSeconds < 0 && header.mtimeNanoseconds > 0 {
            archive_entry_set_mtime(entry, time_t(header.mtimeSeconds + 1), Int(1_000_000_000 - header.mtimeNanoseconds))
        } else {
            archive_entry_set_mtime(entry, time_t(header.mtimeSeconds), Int(header.mtimeNanoseconds))
        }
        switch header.type {
        case .file: archive_entry_set_filetype(entry, KS_AE_IFREG)
        case .directory: archive_entry_set_filetype(entry, KS_AE_IFDIR)
        case .symlink:
            archive_entry_set_filetype(entry, KS_AE_IFLNK)
            try PathBytes.withCString(header.linkTarget ?? []) { archive_entry_copy_symlink(entry, $0) }
        case .hardlink:
            archive_entry_set_filetype(entry, KS_AE_IFREG)
            try PathBytes.withCString(header.linkTarget ?? []) { archive_entry_copy_hardlink(entry, $0) }
        case .fifo: archive_entry_set_filetype(entry, KS_AE_IFIFO)
        case .characterDevice:
            archive_entry_set_filetype(entry, KS_AE_IFCHR)
            archive_entry_set_rdev(entry, dev_t(header.rdev))
        case .blockDevice:
            archive_entry_set_filetype(entry, KS_AE_IFBLK)
            archive_entry_set_rdev(entry, dev_t(header.rdev))
        case .socket: archive_entry_set_filetype(entry, KS_AE_IFSOCK)
        }
        for attribute in header.xattrs {
            attribute.value.withUnsafeBytes { raw in
                archive_entry_xattr_add_entry(entry, attribute.name, raw.baseAddress, raw.count)
            }
        }
        for region in header.sparseRegions {
            archive_entry_sparse_add_entry(entry, region.offset, region.length)
        }
    }
}
