import Foundation
import KeepsakeSupport

/// The folder holding an archive file that was copied out of a destination (to a USB disk,
/// a download folder): a store that is only read, so a lone archive is read through the
/// same protocol as a destination (and nothing can write beside it). The manifest beside it, and the earlier archives an
/// incremental one relies on, are found by name in the same folder.
///
/// Unlike a destination, the folder is the user's own: a name here is opened even through
/// a symbolic link (`restore ~/latest.tar.zst` may well be one), and names are not held to
/// Keepsake's naming.
public final class LoneArchiveFolder: ReadableStorage {
    // MARK: State

    /// The folder's path.
    public let path: String
    public var location: String { path }
    /// Names here are the user's: an object's first bytes say what it is.
    public var naming: ObjectNaming { .foreign }

    /// The folder at `path`.
    public init(path: String) {
        self.path = path
    }

    /// The folder holding the file at `filePath`, and the file's name in it.
    public static func holding(_ filePath: String) -> (folder: LoneArchiveFolder, name: String) {
        let url = URL(fileURLWithPath: filePath)
        return (LoneArchiveFolder(path: url.deletingLastPathComponent().path), url.lastPathComponent)
    }

    // MARK: Reading

    public func list() throws -> [StoredObject] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else {
            throw StorageError.unusable(destination: path, reason: FileDescriptorIO.message(errno))
        }
        var objects: [StoredObject] = []
        for name in names where LoneArchiveFolder.isUsableName(name) {
            var info = stat()
            guard stat(path + "/" + name, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
            objects.append(StoredObject(name: name, size: Int64(info.st_size)))
        }
        return objects.sorted { $0.name < $1.name }
    }

    public func open(_ name: String) throws -> RandomAccessSource {
        guard LoneArchiveFolder.isUsableName(name) else {
            throw StorageError.io(name: name, operation: "use", reason: "not a file name")
        }
        let full = path + "/" + name
        let fd = Glibc.open(full, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT { throw StorageError.notFound(name: name, destination: path) }
            throw StorageError.io(name: full, operation: "open", reason: FileDescriptorIO.message(code))
        }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw StorageError.io(name: full, operation: "read", reason: "it is not a regular file")
        }
        posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL)
        return FileByteSource(fd: fd, name: full)
    }

    /// One path component: no slash, no NUL, not `.` or `..`.
    private static func isUsableName(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && !name.contains("/") && !name.contains("\0")
    }
}
