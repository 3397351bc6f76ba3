import Foundation
import KeepsakeArchive
import KeepsakeModel
import KeepsakeSupport

/// Puts restored entries into the target, always relative to open folder descriptors, so
/// nothing is written through a symlink. Folders are made in place; a symlink or special
/// file is made under a temporary name, given its metadata through a descriptor of the node
/// itself, and renamed over its final name; files and hard links are queued for the
/// `RestoreFileWriter`, which does the same on its own thread. A failure of the target
/// itself (a full disk) is thrown as `TargetFailure`; a path the target refuses becomes a
/// warning.
final class RestorePlacement {
    // MARK: Types

    /// A failure of the target itself (disk full): stops the restore.
    struct TargetFailure: Error {
        let error: EngineError
    }

    /// Why a node this restore made is not placed: its temporary name no longer holds it.
    static let swappedReason = "its temporary name was replaced by something else while it was restored "
        + "(someone else can write this folder); not placed"

    // MARK: State

    private let plan: RestorePlan
    private let request: RestoreRequest
    private let cancellation: CancellationFlag
    /// Writes files and hard links beside the restoring thread.
    private let writer: RestoreFileWriter
    /// The writer's handle on the folder the last file went into, and that folder's path.
    private var lastDirectory: (components: ArraySlice<[UInt8]>, handle: DirectoryHandle)?

    // MARK: Life cycle

    /// Placement into `target` as `plan` and `request` say; throws when no descriptor is
    /// left for the file writer.
    init(target: RestoreTarget, plan: RestorePlan, request: RestoreRequest, cancellation: CancellationFlag) throws {
        let unnamed = target.startedEmpty ? UnnamedFiles.probe(in: target.rootFD) : nil
        guard let writer = RestoreFileWriter(rootFD: target.rootFD, request: request, cancellation: cancellation,
                                             targetStartedEmpty: target.startedEmpty, unnamed: unnamed) else {
            throw EngineError.targetUnusable(path: request.target, reason: FileDescriptorIO.message(errno))
        }
        self.plan = plan
        self.request = request
        self.cancellation = cancellation
        self.writer = writer
    }

    // MARK: Folders, symlinks and special files

    /// Makes the folder `name` in `parentFD` (private until its fix applies the recorded
    /// mode); false when the target refused it (named in a warning).
    func makeDirectory(_ name: [UInt8], in parentFD: Int32, path: [UInt8], result: inout RestoreResult) throws -> Bool {
        guard PathBytes.syscall(name, { mkdirat(parentFD, $0, 0o700) }) == 0 else {
            try targetProblem(path, errno, result: &result)
            return false
        }
        return true
    }

    /// Makes the symlink, FIFO or device node `header` describes as `name` in `parentFD`:
    /// under a temporary name, with its metadata, then renamed into place. False when it
    /// was not placed (named in a warning).
    func makeNode(_ header: ArchiveEntryHeader, name: [UInt8], in parentFD: Int32, path: [UInt8],
                  result: inout RestoreResult) throws -> Bool {
        let temporary = RestoreTarget.temporaryName()
        let status: Int32
        if header.type == .symlink {
            status = PathBytes.syscall(header.linkTarget ?? []) { link in
                PathBytes.syscall(temporary) { symlinkat(link, parentFD, $0) }
            }
        } else {
            let kind: mode_t = header.type == .fifo ? S_IFIFO : header.type == .characterDevice ? S_IFCHR : S_IFBLK
            status = PathBytes.syscall(temporary) {
                mknodat(parentFD, $0, kind | mode_t(header.permissions & 0o777), dev_t(header.rdev))
            }
        }
        guard status == 0 else {
            try targetProblem(path, errno, result: &result)
            return false
        }
        guard RestoredMetadata.applyToNode(header, name: temporary, parentFD: parentFD, request: request, path: path,
                                           warnings: &result.warnings) else {
            RestorePlacement.discardSwapped(temporary, parentFD: parentFD, path: path, warnings: &result.warnings)
            return false
        }
        return try place(temporary, as: name, parentFD: parentFD, path: path, result: &result)
    }

    // MARK: Files and hard links

    /// Queues a file's content, read from `reader`, for the writer, which writes it unnamed or
    /// under a temporary name, hashing it, then judges it as `check` says and places it (or
    /// leaves it waiting for the archive's own manifest).
    func queueFile(_ header: ArchiveEntryHeader, reader: any EntryContentReader, components: [[UInt8]], path: [UInt8],
                   parentFD: Int32, check: RestoreFileWriter.Check, replaces: Bool, result: inout RestoreResult) throws {
        try stopIfTargetFailed(result: &result)
        if result.firstFilePlacement == nil {
            result.firstFilePlacement = components.dropFirst().reduce(components[0]) { PathBytes.join($0, $1) }
        }
        guard let (directory, isNew) = directoryHandle(components.dropLast(), fd: parentFD) else {
            try targetProblem(path, errno, result: &result)
            try reader.skipContent()
            return
        }
        writer.beginFile(RestoreFileWriter.FileJob(directory: directory, components: components, path: path, header: header,
                                                   check: check, replaces: replaces), newDirectory: isNew)
        do {
            while let block = try reader.nextBlock() {
                try cancellation.check()
                try stopIfTargetFailed(result: &result)
                writer.write(block.bytes, at: block.offset)
            }
        } catch {
            writer.abortFile()
            throw error
        }
        writer.endFile()
    }

    /// Queues the hard link `header` describes, at `components`, for the writer; with
    /// `deferred`, it waits with the files for the archive's own manifest.
    func queueHardLink(_ header: ArchiveEntryHeader, components: [[UInt8]], path: [UInt8], parentFD: Int32,
                       deferred: Bool, replaces: Bool, result: inout RestoreResult) throws {
        guard case .success(let archiveParts) = ArchivePath.components(of: header.linkTarget ?? []) else {
            result.refuse(path, "hard link to an unsafe path")
            return
        }
        let original = archiveParts.dropFirst().reduce(archiveParts[0]) { PathBytes.join($0, $1) }
        let linkPath = plan.linkedPath(original)
        let linkParts: [[UInt8]]
        switch plan.placement(of: linkPath) {
        case .success(let parts)?: linkParts = parts
        case .failure?:
            result.refuse(path, "hard link to an unsafe path")
            return
        case nil:
            result.warnings.append(PathWarning(kind: .skipped, path: PathBytes.display(path),
                                               reason: "the file it links to is above what --strip-components keeps"))
            return
        }
        try stopIfTargetFailed(result: &result)
        guard let (directory, isNew) = directoryHandle(components.dropLast(), fd: parentFD) else {
            try targetProblem(path, errno, result: &result)
            return
        }
        writer.link(RestoreFileWriter.LinkJob(directory: directory, components: components, path: path, linkPath: linkPath,
                                              linkParts: linkParts, deferred: deferred, replaces: replaces), newDirectory: isNew)
    }

    /// The writer's handle on folder `components` (open here as `fd`), and whether it is
    /// new; the last one is reused while files keep going into the same folder.
    private func directoryHandle(_ components: ArraySlice<[UInt8]>, fd: Int32) -> (DirectoryHandle, Bool)? {
        if let last = lastDirectory, last.components == components { return (last.handle, false) }
        lastDirectory = nil
        guard let handle = DirectoryHandle(copying: fd) else { return nil }
        lastDirectory = (components, handle)
        return (handle, true)
    }

    // MARK: The writer

    /// Files and bytes the writer has written since it was last drained, for progress.
    var progress: (files: Int64, bytes: Int64) { writer.progress }

    /// Throws the target's failure (a full disk) once the writer has met it.
    private func stopIfTargetFailed(result: inout RestoreResult) throws {
        guard writer.hasFailed else { return }
        try finishWrites(result: &result)
        try cancellation.check()
    }

    /// Waits for the writer, and takes in what it did; throws when the target failed.
    func finishWrites(result: inout RestoreResult) throws {
        if let failure = takeWriterOutcome(result: &result) { throw TargetFailure(error: failure) }
    }

    /// Waits for the writer and adds what it did to `result`; returns the target's failure,
    /// if it met one.
    func takeWriterOutcome(result: inout RestoreResult) -> EngineError? {
        let done = writer.drain()
        result.files += done.files
        result.hardlinks += done.hardlinks
        result.bytes += done.bytes
        result.replaced += done.replaced
        result.damaged += done.damaged
        result.warnings += done.warnings
        return done.failure
    }

    /// The files and links the writer left waiting for the archive's own manifest (after
    /// `finishWrites`); handed over once.
    func takePendings() -> [RestoreFileWriter.Pending] {
        writer.takePendings()
    }

    // MARK: Placing

    /// Renames a finished temporary name into place (replacing what the policy allowed).
    /// False when it could not be placed (the path is then named in a warning).
    private func place(_ temporary: [UInt8], as name: [UInt8], parentFD: Int32, path: [UInt8],
                       result: inout RestoreResult) throws -> Bool {
        let code = RestoreTarget.rename(temporary, to: name, in: parentFD)
        if code != 0 {
            RestoreTarget.remove(temporary, in: parentFD)
            try targetProblem(path, code, result: &result)
            return false
        }
        return true
    }

    /// A node whose temporary name was swapped (see `RestoredMetadata.applyToNode`): the name
    /// is removed (which never follows a symlink), and the path is named in a warning.
    static func discardSwapped(_ temporary: [UInt8], parentFD: Int32, path: [UInt8], warnings: inout [PathWarning]) {
        RestoreTarget.remove(temporary, in: parentFD)
        warnings.append(PathWarning(kind: .unwritable, path: PathBytes.display(path), reason: RestorePlacement.swappedReason))
    }

    /// A failure to create something in the target: fatal when the disk is full,
    /// otherwise a warning for that path.
    func targetProblem(_ path: [UInt8], _ code: Int32, result: inout RestoreResult) throws {
        if RestoreTarget.stopsRestore(code) {
            throw TargetFailure(error: RestoreTarget.stoppingError(request.target, code, path: path))
        }
        result.warnings.append(PathWarning(kind: .unwritable, path: PathBytes.display(path), reason: RestoreTarget.notWritten(code)))
    }
}
