import CArchive
import Foundation
import KeepsakeSupport

/// Process-wide preparation libarchive needs, done once.
enum LibarchiveSetup {
    /// Switches to a UTF-8 locale: in the C locale libarchive cannot translate non-ASCII
    /// names and warns on every one.
    static let prepared: Bool = {
        setlocale(LC_ALL, "C.UTF-8")
        return true
    }()

    /// The last error message of an archive handle.
    static func errorMessage(_ archive: OpaquePointer?) -> String {
        guard let archive, let text = PathBytes.fromCString(archive_error_string(archive)) else { return "unknown error" }
        return String(decoding: text, as: UTF8.self)
    }
}
