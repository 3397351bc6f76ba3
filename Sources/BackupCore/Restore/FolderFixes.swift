import Foundation
import KeepsakeArchive
import KeepsakeModel
import KeepsakeSupport

/// The modes and times of the folders a restore made (or, with `--overwrite always`, met),
/// applied at the end: a read-only folder can still be filled until then, and a folder's
/// time is set only after everything inside it has changed.
struct FolderFixes {
    // MARK: State

    private struct Fix {
        /// The folder, relative to the target.
        let components: [[UInt8]]
        let header: ArchiveEntryHeader
    }

    private var fixes: [Fix] = []

    // MARK: Gathering

    /// Gives the folder `components` the metadata of `header` at the end.
    mutating func add(_ components: [[UInt8]], header: ArchiveEntryHeader) {
        fixes.append(Fix(components: components, header: header))
    }

    /// Forgets the folder `components` (it was taken back).
    mutating func forget(_ components: [[UInt8]]) {
        fixes.removeAll { $0.components == components }
    }

    // MARK: Applying

    /// Applies every fix in `target` as `request` says (owners, special bits), through the
    /// folders' descriptors, and forgets them; problems become `warnings`.
    mutating func apply(in target: RestoreTarget, request: RestoreRequest, warnings: inout [PathWarning]) {
        // Deepest first (a folder's time is set after everything inside it changed), and
        // siblings together, so the target's open folders on the way are reused: opening
        // each folder from the top cost 55,000 openat calls for 5,000 folders.
        let ordered = fixes.sorted { first, second in
            if first.components.count != second.components.count { return first.components.count > second.components.count }
            return first.components.lexicographicallyPrecedes(second.components) { $0.lexicographicallyPrecedes($1) }
        }
        for fix in ordered {
            guard let fd = try? target.directory(fix.components[...], create: false) else { continue }
            let path = fix.components.dropFirst().reduce(fix.components[0]) { PathBytes.join($0, $1) }
            RestoredMetadata.apply(fix.header, fd: fd, request: request, path: path, warnings: &warnings)
        }
        fixes = []
    }
}
