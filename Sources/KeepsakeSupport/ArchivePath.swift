/// The one place that decides whether a path read from an archive header or a manifest
/// (an entry's path, or the first name of a hard link) may be written below a restore
/// target. Paths are judged as bytes, after any decoding (JSON escapes, base64, pax
/// records), so that what is checked is exactly what reaches the file system.
public enum ArchivePath {
    // MARK: Refusals

    /// Why a path cannot be written safely.
    public struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        /// The reason, for a warning (`path contains '..'`).
        public let reason: String

        package init(reason: String) { self.reason = reason }

        public var description: String { reason }
    }

    // MARK: Validation

    /// The path's components (empty and `.` components dropped), or why it is unsafe: it is
    /// empty, absolute, holds a NUL byte (a C string would end there, so the kernel would
    /// see another path than the one checked), or has a `..` component.
    public static func components(of path: [UInt8]) -> Result<[[UInt8]], Refusal> {
        if path.isEmpty { return .failure(Refusal(reason: "empty path")) }
        if path.first == UInt8(ascii: "/") { return .failure(Refusal(reason: "absolute path")) }
        if path.contains(0) { return .failure(Refusal(reason: "path contains a NUL byte")) }
        let parts = PathBytes.components(path)
        if parts.contains(where: isParent) { return .failure(Refusal(reason: "path contains '..'")) }
        if parts.isEmpty { return .failure(Refusal(reason: "empty path")) }
        return .success(parts)
    }

    /// Whether `path` names the restore target itself: `.`, `./`, `.//.` and the like, as
    /// `tar -C DIR .` writes for DIR. Such a folder entry is the target, not a way out of it.
    public static func namesTheTarget(_ path: [UInt8]) -> Bool {
        guard !path.isEmpty, path.first != UInt8(ascii: "/"), !path.contains(0) else { return false }
        return PathBytes.components(path).isEmpty
    }

    /// Whether `bytes` can be stored as a name or link target in a tar archive and handed to
    /// the file system: anything but a NUL byte (pax records are length-prefixed, so every
    /// other byte survives).
    public static func isStorable(_ bytes: [UInt8]) -> Bool {
        !bytes.contains(0)
    }

    private static func isParent(_ component: [UInt8]) -> Bool {
        component.count == 2 && component[0] == UInt8(ascii: ".") && component[1] == UInt8(ascii: ".")
    }
}
