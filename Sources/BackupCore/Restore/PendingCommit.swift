import Foundation
import KeepsakeArchive
import KeepsakeModel
import KeepsakeSupport

/// Settles what a restore put into the target before the archive's own manifest was read
/// (a lone archive, whose manifest is its last entry; or a plain tarball, which has none).
/// The files and hard links the writer left waiting under temporary names are placed under
/// their final names when the manifest agrees, or removed; the folders, symlinks and special
/// files placed meanwhile are taken back when the manifest does not list them as made, and
/// so are the empty folders made on the way to them that it does not list.
/// After a fatal error, everything still waiting is removed.
final class PendingCommit {
    // MARK: State

    /// A folder, symlink or special file placed before the manifest was read, with what
    /// its tar header recorded.
    private typealias Placed = (components: [[UInt8]], path: [UInt8], recorded: RecordedAttributes)

    private let target: RestoreTarget
    private let request: RestoreRequest
    private let cancellation: CancellationFlag
    /// Checked against the manifest at the end, since a damaged name lands as made.
    private var placedBeforeManifest: [Placed] = []
    /// Folders made on the way to an entry before the manifest was read, with their
    /// archive paths: a damaged name makes them too, and nothing else takes them back.
    private var madeBeforeManifest: [(components: [[UInt8]], path: [UInt8])] = []

    // MARK: Life cycle

    /// Settling in `target`, applying `request`'s policy on modes.
    init(target: RestoreTarget, request: RestoreRequest, cancellation: CancellationFlag) {
        self.target = target
        self.request = request
        self.cancellation = cancellation
    }

    /// Notes a folder, symlink or special file placed at `components` before the manifest
    /// was read.
    func notePlaced(_ components: [[UInt8]], path: [UInt8], header: ArchiveEntryHeader) {
        placedBeforeManifest.append((components, path, RecordedAttributes(header)))
    }

    /// Notes the folders just made on the way to the entry at archive path `path`, placed
    /// as `components`, before the manifest was read (`depths` from
    /// `RestoreTarget.madeByLastCall`).
    func noteMadeOnTheWay(_ depths: [Int], components: [[UInt8]], path: [UInt8]) {
        guard !depths.isEmpty, case .success(let parts) = ArchivePath.components(of: path),
              parts.count >= components.count else { return }
        // The archive path's components before `components` are the ones --strip-components took.
        let stripped = parts.count - components.count
        for depth in depths where depth > 0 && depth < components.count {
            let folder = parts.prefix(stripped + depth)
            madeBeforeManifest.append((Array(components.prefix(depth)),
                                       folder.dropFirst().reduce(folder[folder.startIndex]) { PathBytes.join($0, $1) }))
        }
    }

    // MARK: Waiting files

    /// Places the files that waited for the archive's own manifest (`index`); with no
    /// manifest at all (a plain tarball), they are placed unverified.
    func commit(_ pendings: [RestoreFileWriter.Pending], index: ManifestIndex?, hasManifest: Bool,
                result: inout RestoreResult) throws {
        var failed = Set<PathKey>()
        for pending in pendings {
            guard let parentFD = try? target.directory(pending.components.dropLast(), create: false) else { continue }
            if cancellation.isCancelled {
                // Stopped: every waiting file goes (the throw below ends the restore).
                RestoreTarget.remove(pending.temporaryName, in: parentFD)
                continue
            }
            var problem: String?
            if let linkOf = pending.linkOf {
                if failed.contains(PathKey(linkOf)) { problem = "the file it links to was damaged" }
            } else if let index {
                if let entry = index[PathKey(pending.path)] {
                    // Not hashed while written (no marker said a manifest would follow): read back.
                    let sha256 = pending.sha256 ?? (entry.sha256 == nil ? nil : hashWaiting(pending, parentFD: parentFD))
                    if entry.sha256 != nil && entry.sha256 != sha256 {
                        problem = "content does not match its SHA-256 in the manifest; not restored"
                    } else if let recorded = pending.recorded,
                              let differences = RecordedAttributes(entry).differences(from: recorded) {
                        problem = RecordedAttributes.disagreement(differences) + "; not restored"
                    }
                } else {
                    problem = "not in the backup's manifest; not restored"
                }
            }
            if problem == nil, pending.linkOf == nil, let entry = index?[PathKey(pending.path)] {
                // Mode and time from the manifest, in case the archive's header was damaged;
                // through a descriptor of the very file written (see RestoredMetadata).
                guard let identity = pending.identity,
                      RestoredMetadata.applyRecordedModeAndTime(entry, name: pending.temporaryName, parentFD: parentFD,
                                                                identity: identity, request: request) else {
                    failed.insert(PathKey(pending.path))
                    RestorePlacement.discardSwapped(pending.temporaryName, parentFD: parentFD, path: pending.path,
                                                    warnings: &result.warnings)
                    continue
                }
            }
            if let problem {
                failed.insert(PathKey(pending.path))
                RestoreTarget.remove(pending.temporaryName, in: parentFD)
                result.damaged.append(PathWarning(kind: .damaged, path: PathBytes.display(pending.path), reason: problem))
                continue
            }
            // Without a manifest and with the archive damaged, nothing proves a file intact:
            // it lands beside its final name, marked, never under it.
            var finalName = pending.components[pending.components.count - 1]
            if !hasManifest && result.archiveProblem != nil {
                finalName += Array(Restorer.unverifiedSuffix.utf8)
            }
            let code = RestoreTarget.rename(pending.temporaryName, to: finalName, in: parentFD)
            if code != 0 {
                RestoreTarget.remove(pending.temporaryName, in: parentFD)
                result.warnings.append(PathWarning(kind: .unwritable, path: PathBytes.display(pending.path),
                                                   reason: RestoreTarget.notWritten(code)))
                continue
            }
            if pending.linkOf != nil { result.hardlinks += 1 } else { result.files += 1 }
            if pending.replaces { result.replaced += 1 }
            if !hasManifest && pending.linkOf == nil { result.unverifiedFiles += 1 }
        }
        if !hasManifest { result.plainTarball = result.archiveProblem == nil }
        try cancellation.check()
    }

    /// The SHA-256 of a file waiting under its temporary name, read back from the target;
    /// nil when it cannot be read or a stop was asked for.
    private func hashWaiting(_ pending: RestoreFileWriter.Pending, parentFD: Int32) -> String? {
        let fd = PathBytes.syscall(pending.temporaryName) { openat(parentFD, $0, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) }
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        // Only the very file written (see RestoredMetadata.Identity): nothing swapped in is read.
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG,
              let identity = pending.identity, identity == RestoredMetadata.Identity(info) else { return nil }
        return (try? ManifestCheck.hashFile(fd, size: Int64(info.st_size), cancellation: cancellation)) ?? nil
    }

    /// Removes every file still waiting (after a fatal error).
    func discard(_ pendings: [RestoreFileWriter.Pending]) {
        for pending in pendings {
            if let parentFD = try? target.directory(pending.components.dropLast(), create: false) {
                RestoreTarget.remove(pending.temporaryName, in: parentFD)
            }
        }
    }

    // MARK: Placed nodes

    /// Takes back what was placed before the archive's own manifest (`index`) was read and
    /// that it does not list, or lists with other attributes than the archive's header: a
    /// name or attribute damaged in the archive (a flipped bit in a gzip stream, which has
    /// no checksum of its own) must not stay as if restored. Deepest first, after the
    /// waiting files, so a folder with a damaged name is empty by then; one that is not
    /// empty (something else was put in it) is left and named. A folder taken back leaves
    /// `fixes`. Last, the folders made on the way (see `noteMadeOnTheWay`) that it does not
    /// list as folders go when empty.
    func removeUnlisted(_ index: ManifestIndex, fixes: inout FolderFixes, result: inout RestoreResult) {
        var doubtful: [(node: Placed, problem: String?)] = []
        for node in placedBeforeManifest {
            if let entry = index[PathKey(node.path)] {
                if let differences = RecordedAttributes(entry).differences(from: node.recorded) {
                    doubtful.append((node, differences))
                }
            } else {
                doubtful.append((node, nil))
            }
        }
        placedBeforeManifest = []
        for (node, differences) in doubtful.sorted(by: { $0.node.components.count > $1.node.components.count }) {
            guard let parentFD = try? target.directory(node.components.dropLast(), create: false) else { continue }
            let name = node.components[node.components.count - 1]
            let type = node.recorded.type
            // Only what this restore made is taken back: the same kind of node, never followed.
            guard let existing = RestoreTarget.existing(name, in: parentFD) else { continue }
            let kind = existing.st_mode & S_IFMT
            let isFolder = kind == S_IFDIR
            guard isFolder == (type == .directory), type != .symlink || kind == S_IFLNK else { continue }
            let status = PathBytes.syscall(name) { unlinkat(parentFD, $0, isFolder ? AT_REMOVEDIR : 0) }
            let display = PathBytes.display(node.path)
            let why = differences.map(RecordedAttributes.disagreement) ?? "not in the backup's manifest"
            if status == 0 {
                switch type {
                case .directory: result.directories -= 1
                case .symlink: result.symlinks -= 1
                default: result.other -= 1
                }
                fixes.forget(node.components)
                result.damaged.append(PathWarning(kind: .damaged, path: display, reason: why + "; removed"))
            } else {
                result.damaged.append(PathWarning(kind: .damaged, path: display,
                                                  reason: why + ", and not empty: left in place; look at it"))
            }
        }
        // Then the folders made on the way that the manifest does not list as folders, once
        // nothing is left in them: the entry they were made for was refused or taken back
        // (and is named). Folders above the restored tree are not empty, so they stay.
        for folder in madeBeforeManifest.sorted(by: { $0.components.count > $1.components.count })
            where index[PathKey(folder.path)]?.type != .directory {
            guard let parentFD = try? target.directory(folder.components.dropLast(), create: false) else { continue }
            _ = PathBytes.syscall(folder.components[folder.components.count - 1]) { unlinkat(parentFD, $0, AT_REMOVEDIR) }
        }
        madeBeforeManifest = []
    }
}
