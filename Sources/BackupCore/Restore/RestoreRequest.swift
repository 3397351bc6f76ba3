import Foundation
import KeepsakeModel
import KeepsakeSigning
import KeepsakeSupport

/// What to do with a file that already exists in the restore target.
public enum OverwritePolicy: String, Sendable, CaseIterable {
    /// Keep what is there (the default).
    case never
    /// Replace it when the backup's copy is newer.
    case ifNewer = "if-newer"
    /// Always replace it.
    case always
}

/// Where and what to restore.
public struct RestoreRequest: Sendable {
    /// The folder to restore into (created when missing), as bytes: a Linux path need not
    /// be UTF-8.
    public var targetPath: [UInt8]
    /// `targetPath` as text, for messages (shown with `PathBytes.display`).
    public var target: String {
        get { PathBytes.display(targetPath) }
        set { targetPath = PathBytes.from(newValue) }
    }
    /// Paths or patterns to restore, as bytes; empty for everything.
    public var selectionPaths: [[UInt8]]
    /// `selectionPaths` as text, for messages (shown with `PathBytes.display`).
    public var selections: [String] {
        get { selectionPaths.map(PathBytes.display) }
        set { selectionPaths = newValue.map(PathBytes.from) }
    }
    public var overwrite: OverwritePolicy
    /// Read and check the archive, write nothing.
    public var dryRun: Bool
    /// Restore owners and setuid/setgid bits (the default for root, as with tar).
    public var preserveOwnership: Bool
    /// Also restore setuid/setgid bits and device files (`--same-owner`; root only). Off by
    /// default: an archive should not be able to plant a setuid program or a raw disk node.
    public var restoreSpecialFiles: Bool
    /// Give entries exactly their recorded permission bits (`--same-permissions`; the
    /// default for root, as with GNU tar); otherwise `umask` is applied to them.
    public var samePermissions: Bool
    /// The process's umask when the request was made (applied unless `samePermissions`).
    public var umask: UInt32
    /// When set, the backup and every earlier backup it takes files from must be signed by
    /// this key (`SignatureCheck`); otherwise the restore stops with `SigningError`.
    public var signedBy: SigningPublicKey?
    /// Leading path components dropped from every restored path (`--strip-components`, as
    /// tar's); an entry with no component left is not restored.
    public var stripComponents = 0
    /// Wait until the target's file system has stored everything restored on its disk before
    /// the restore ends (`--sync`); otherwise the kernel writes it back in its own time.
    public var sync = false

    /// Creates a request.
    public init(target: String, selections: [String] = [], overwrite: OverwritePolicy = .never, dryRun: Bool = false,
                preserveOwnership: Bool = geteuid() == 0, restoreSpecialFiles: Bool = false,
                samePermissions: Bool = geteuid() == 0, umask: UInt32 = RestoreRequest.currentUmask()) {
        targetPath = PathBytes.from(target)
        selectionPaths = selections.map(PathBytes.from)
        self.overwrite = overwrite
        self.dryRun = dryRun
        self.preserveOwnership = preserveOwnership
        self.restoreSpecialFiles = restoreSpecialFiles && preserveOwnership
        self.samePermissions = samePermissions
        self.umask = umask & 0o7777
    }

    /// The process's umask, read from `/proc/self/status` (setting it to read it back would
    /// change it for every thread for a moment); 022 when that cannot be read.
    public static func currentUmask() -> UInt32 {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Umask:") }),
              let value = UInt32(line.dropFirst("Umask:".count).trimmingCharacters(in: .whitespaces), radix: 8) else {
            return 0o022
        }
        return value
    }
}

/// What a restore did.
public struct RestoreResult: Sendable {
    /// Where the first file restored landed, relative to the target (after
    /// `--strip-components`): the summary names it when it is the only one.
    public var firstFilePlacement: [UInt8]?
    /// The backup's id when the archive had a manifest.
    public var backupID: BackupID?
    /// True when every restored file was checked against a manifest's SHA-256.
    public var verifiedAgainstManifest = false
    /// True when the archive has no Keepsake manifest (a plain tarball).
    public var plainTarball = false
    public var files: Int64 = 0
    public var directories: Int64 = 0
    public var symlinks: Int64 = 0
    public var hardlinks: Int64 = 0
    public var other: Int64 = 0
    public var bytes: Int64 = 0
    /// Existing files (and links and other non-folders) left alone by the overwrite policy,
    /// or that would be in a dry run; those among them that differ are in `keptDifferent`.
    public var skippedExisting: Int64 = 0
    /// The kept entries whose content (or link target, or kind) differs from the backup's:
    /// the target does not hold what the backup does there.
    public var keptDifferent: [String] = []
    /// Existing entries the backup's copy replaced (counted in `files` and the others too),
    /// or would replace in a dry run.
    public var replaced: Int64 = 0
    /// Those of `replaced` that already held what the backup does (by the manifest's
    /// SHA-256, a link's target, the kind of node).
    public var replacedSame: Int64 = 0
    /// Those of `replaced` that could not be compared: files with no SHA-256 to compare
    /// with before they were written (a plain tarball; a lone archive before its own
    /// manifest, at its end, is read). The rest of `replaced` differed.
    public var replacedUncompared: Int64 = 0

    /// Those of `replaced` known to have differed from the backup's copy.
    public var replacedDifferent: Int64 { max(0, replaced - replacedSame - replacedUncompared) }
    /// Folders of the backup that were already in the target (not counted in `directories`).
    public var existingDirectories: Int64 = 0
    /// Earlier archives an incremental backup needs that could not be found: the files
    /// they hold were not restored.
    public var missingArchives: [MissingArchive] = []
    /// Files restored without a manifest to check them against.
    public var unverifiedFiles: Int64 = 0
    /// Entries whose content or description did not match, or were unsafe: never written.
    public var damaged: [PathWarning] = []
    /// Smaller problems (metadata that could not be applied, unsupported types).
    public var warnings: [PathWarning] = []
    /// Why the archive could not be read to its end, if it could not.
    public var archiveProblem: String?
    /// With `dryRun`: the paths that would be restored.
    public var planned: [String] = []
    public var elapsed: TimeInterval = 0
    /// Compressed bytes read from archives. A partial restore of a seekable archive reads
    /// only the frames that hold the selected entries.
    public var archiveBytesRead: Int64 = 0
    /// Archives read only in part (the frames holding the selection), of those read.
    public var archivesReadInPart = 0
    /// The target's file system had stored everything on its disk when the restore ended
    /// (`RestoreRequest.sync`).
    public var synced = false

    /// An empty result.
    public init() {}

    /// True when something was damaged, unsafe or missing from an archive: exit code 4. An
    /// earlier archive that is not there at all (`missingArchives`) is not counted here: for
    /// a lone archive file it is a file to bring, not damage.
    public var hasIntegrityFailure: Bool { !damaged.isEmpty || archiveProblem != nil }
    /// Kept entries that differ from the backup: the restore did not bring those back.
    public var keptDifferentCount: Int { keptDifferent.count }
    /// Files not restored because the earlier archive that holds them was not found.
    public var missingArchivePaths: Int { missingArchives.reduce(0) { $0 + $1.paths.count } }
    /// Entries the restore wrote (new or replacing), not counting folders.
    public var writtenCount: Int64 { files + symlinks + hardlinks + other }
    /// True when some paths could not be written into the target (each named in a
    /// warning): exit code 3.
    public var hasUnwrittenPaths: Bool { unwrittenPaths > 0 }
    /// How many paths the target refused.
    public var unwrittenPaths: Int { warnings.count { $0.kind == .unwritable } }
    /// Entries restored (or, in a dry run, that would be).
    public var entryCount: Int64 { files + directories + symlinks + hardlinks + other }
}

// MARK: - Recording

extension RestoreResult {
    /// Records an entry refused as unsafe: it is never written.
    mutating func refuse(_ path: [UInt8], _ reason: String) {
        damaged.append(PathWarning(kind: .damaged, path: PathBytes.display(path), reason: "unsafe entry refused: \(reason)"))
    }

    /// Adds a reason why an archive could not be read to its end.
    mutating func noteArchiveProblem(_ problem: String) {
        archiveProblem = archiveProblem.map { $0 + "; " + problem } ?? problem
    }
}
