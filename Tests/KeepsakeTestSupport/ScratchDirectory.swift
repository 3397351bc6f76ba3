import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Temporary directories: for the servers' data, configuration and logs, and for test targets
/// that have no helpers of their own (the configuration tests).
public enum ScratchDirectory {
    // MARK: Creating

    /// A new, empty directory (mode 0700) under the system's temporary folder, by its real path.
    /// Kept short: SeaweedFS puts Unix sockets in it, whose paths may not exceed 107 bytes.
    public static func make(_ label: String) throws -> URL {
        let base = NSTemporaryDirectory().isEmpty ? "/tmp" : NSTemporaryDirectory()
        var template = Array((base + "/keepsake-\(label)-XXXXXX").utf8CString)
        let path = template.withUnsafeMutableBufferPointer { buffer -> String? in
            guard let address = buffer.baseAddress, let made = mkdtemp(address) else { return nil }
            return String(cString: made)
        }
        guard let path else {
            throw ServerProcess.Failure("mkdtemp under \(base): \(String(cString: strerror(errno)))")
        }
        guard let resolved = realpath(path, nil) else { return URL(fileURLWithPath: path, isDirectory: true) }
        defer { free(resolved) }
        return URL(fileURLWithPath: String(cString: resolved), isDirectory: true)
    }

    /// Creates `name` inside `directory` (and its parents) and returns it.
    public static func subdirectory(_ name: String, of directory: URL) throws -> URL {
        let folder = directory.appendingPathComponent(name, isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    // MARK: Removing

    /// Removes `directory` and everything in it (making read-only folders writable first).
    public static func remove(_ directory: URL) {
        let path = directory.path
        guard FileManager.default.fileExists(atPath: path) else { return }
        if let enumerator = FileManager.default.enumerator(atPath: path) {
            for case let relative as String in enumerator {
                var info = stat()
                if lstat(path + "/" + relative, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR {
                    chmod(path + "/" + relative, 0o700)
                }
            }
        }
        try? FileManager.default.removeItem(atPath: path)
    }
}
