import Foundation

/// Helpers for file paths kept as raw bytes: Linux names may be any bytes but `/` and NUL,
/// and not every name is valid UTF-8, so paths never pass through `String` on the way to
/// the file system.
public enum PathBytes {
    // MARK: Conversion

    /// The bytes of a Swift string path.
    public static func from(_ string: String) -> [UInt8] {
        Array(string.utf8)
    }

    /// The path as text when it is valid UTF-8, nil otherwise.
    public static func validString(_ bytes: [UInt8]) -> String? {
        String(validating: bytes, as: UTF8.self)
    }

    /// The path for people: invalid bytes shown as `\xNN`, control characters escaped, so a
    /// name with a newline or an escape sequence cannot garble a terminal or a log line.
    public static func display(_ bytes: [UInt8]) -> String {
        if let text = validString(bytes), !text.unicodeScalars.contains(where: isControl) {
            return text
        }
        var out = ""
        var index = 0
        while index < bytes.count {
            let length = UTF8Sequence.length(in: bytes, at: index, end: bytes.count)
            if length > 0, let text = String(validating: bytes[index..<(index + length)], as: UTF8.self) {
                for scalar in text.unicodeScalars {
                    switch scalar.value {
                    case 0x0a: out += "\\n"
                    case 0x09: out += "\\t"
                    case _ where isControl(scalar): out += String(format: scalar.value < 0x100 ? "\\x%02x" : "\\u{%04x}", scalar.value)
                    default: out.unicodeScalars.append(scalar)
                    }
                }
                index += length
            } else {
                out += String(format: "\\x%02x", bytes[index])
                index += 1
            }
        }
        return out
    }

    /// C0 and C1 control characters: some terminals act on them (U+009B starts an escape).
    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7f...0x9f).contains(scalar.value)
    }

    // MARK: Composition

    /// `parent/child`, without doubling a slash.
    public static func join(_ parent: [UInt8], _ child: [UInt8]) -> [UInt8] {
        if parent.isEmpty { return child }
        var out = parent
        if out.last != UInt8(ascii: "/") { out.append(UInt8(ascii: "/")) }
        out.append(contentsOf: child)
        return out
    }

    /// The components of a path, without empty and `.` components.
    public static func components(_ bytes: [UInt8]) -> [[UInt8]] {
        // One pass, no intermediate arrays: restore splits every entry's path.
        var parts: [[UInt8]] = []
        bytes.withUnsafeBufferPointer { buffer in
            var start = 0
            for index in 0...buffer.count where index == buffer.count || buffer[index] == UInt8(ascii: "/") {
                let length = index - start
                if length > 0 && !(length == 1 && buffer[start] == UInt8(ascii: ".")) {
                    parts.append(Array(buffer[start..<index]))
                }
                start = index + 1
            }
        }
        return parts
    }

    /// The last component, or the whole path when it has no slash.
    public static func lastComponent(_ bytes: [UInt8]) -> [UInt8] {
        components(bytes).last ?? bytes
    }

    /// True when `path` equals `prefix` or lies below it (component-wise).
    public static func isSameOrBelow(_ path: [UInt8], _ prefix: [UInt8]) -> Bool {
        let trimmed = prefix.last == UInt8(ascii: "/") ? Array(prefix.dropLast()) : prefix
        if trimmed.isEmpty { return true }
        guard path.count >= trimmed.count, Array(path[0..<trimmed.count]) == trimmed else { return false }
        return path.count == trimmed.count || path[trimmed.count] == UInt8(ascii: "/")
    }

    /// A path holding a NUL byte: a C string would end there, so the system would be handed
    /// another path than the one checked. No such path is ever passed on.
    public struct EmbeddedNUL: Error, Sendable, CustomStringConvertible {
        /// The offending bytes.
        public let path: [UInt8]

        package init(path: [UInt8]) { self.path = path }

        public var description: String { "the path \(PathBytes.display(path)) holds a NUL byte" }
    }

    /// Calls `body` with a NUL-terminated C string of the bytes; throws `EmbeddedNUL`
    /// (without calling it) when the bytes hold a NUL.
    public static func withCString<R>(_ bytes: [UInt8], _ body: (UnsafePointer<CChar>) throws -> R) throws -> R {
        guard !bytes.contains(0) else { throw EmbeddedNUL(path: bytes) }
        var terminated = bytes
        terminated.append(0)
        return try terminated.withUnsafeBufferPointer { buffer in
            try buffer.withMemoryRebound(to: CChar.self) { buffer in
                guard let base = buffer.baseAddress else { throw EmbeddedNUL(path: bytes) }
                return try body(base)
            }
        }
    }

    /// Calls a system call that takes a path and returns -1 with `errno` set on failure:
    /// for bytes holding a NUL, it is not called and the result is -1 with `errno` EINVAL.
    public static func syscall<R: SignedInteger>(_ bytes: [UInt8], _ body: (UnsafePointer<CChar>) -> R) -> R {
        do {
            return try withCString(bytes, body)
        } catch {
            errno = EINVAL
            return -1
        }
    }

    /// The bytes of a C string, or nil for a NULL pointer.
    public static func fromCString(_ pointer: UnsafePointer<CChar>?) -> [UInt8]? {
        guard let pointer else { return nil }
        let length = strlen(pointer)
        return pointer.withMemoryRebound(to: UInt8.self, capacity: length) { Array(UnsafeBufferPointer(start: $0, count: length)) }
    }

    /// The name of a directory entry `readdir` returned. Read in place through a pointer to
    /// `d_name`: the kernel sizes each record to its name, so copying the 256-byte field (as
    /// `withUnsafeBytes(of: entry.pointee.d_name)` does) reads past the end of the last
    /// record in the buffer.
    public static func name(of entry: UnsafeMutablePointer<dirent>) -> [UInt8] {
        guard let field = entry.pointer(to: \.d_name) else { return [] }
        return fromCString(UnsafeRawPointer(field).assumingMemoryBound(to: CChar.self)) ?? []
    }
}
