import Foundation
import KeepsakeArchive
import KeepsakeStorage

/// What a `BACKUP` argument of `restore`, `list`, `verify` and `diff` names: a backup in
/// the destination, or an archive file. `BackupLocator` turns it into a `LocatedBackup`.
///
/// The rule, so that `restore latest` never restores a stray file called `latest`:
/// - A path — it holds a `/` (`./latest`, `/mnt/x`) or ends with an archive extension
///   (`x.tar.zst`) — is always the file: no backup id looks like that.
/// - A backup word — `latest`, an id or an id prefix (`20261129T02`) — is always a backup,
///   and so is any word when `--dest` is given on the command line.
/// - Any other word is the file when one of that name exists, else a backup.
/// A word that is read as a backup while a file of that name exists gets a hint on stderr
/// saying `./NAME` reaches the file, so the choice is never silent.
public enum BackupReference: Sendable, Equatable {
    /// A backup id, id prefix or `latest`, to resolve in the destination.
    case backup(String)
    /// The path of an archive file.
    case archiveFile(String)
    /// An archive file on object storage or an rclone remote (`s3://b/p/HOST_ID.tar.zst`,
    /// `rclone:nas:keepsake/HOST_ID.tar.zst`): the object `name` in the destination `folder`.
    case remoteArchive(folder: DestinationAddress, name: String, text: String)

    // MARK: Deciding

    /// How `argument` is read, and whether a file of that name exists that was not taken.
    /// - Parameters:
    ///   - explicitDestination: `--dest` was given on the command line.
    ///   - isFile: whether a path names an existing regular file.
    public static func interpret(_ argument: String, explicitDestination: Bool,
                          isFile: (String) -> Bool = ArchiveFileInspector.isArchiveFile) -> (reference: BackupReference, shadowedFile: Bool) {
        if let remote = remoteArchive(argument) { return (remote, false) }
        if isPath(argument) { return (.archiveFile(argument), false) }
        let fileExists = isFile(argument)
        if isBackupWord(argument) || explicitDestination {
            return (.backup(argument), fileExists)
        }
        return (fileExists ? .archiveFile(argument) : .backup(argument), false)
    }

    /// The archive an `s3://` or `rclone:` address names, split into its folder and name.
    static func remoteArchive(_ argument: String) -> BackupReference? {
        guard let scheme = DestinationAddress.scheme(of: argument), scheme == "s3" || scheme == "rclone",
              let address = try? DestinationAddress.parse(argument, workingDirectory: "/", home: "/") else { return nil }
        func split(_ path: String) -> (String, String)? {
            let parts = path.split(separator: "/", omittingEmptySubsequences: false)
            guard let last = parts.last, !last.isEmpty else { return nil }
            return (parts.dropLast().joined(separator: "/"), String(last))
        }
        switch address {
        case .s3(let bucket, let prefix):
            guard let (folder, name) = split(prefix) else { return nil }
            return .remoteArchive(folder: .s3(bucket: bucket, prefix: folder), name: name, text: argument)
        case .rclone(let remote, let path):
            guard let (folder, name) = split(path) else { return nil }
            return .remoteArchive(folder: .rclone(remote: remote, path: folder), name: name, text: argument)
        case .localFolder:
            return nil
        }
    }

    // MARK: Kinds of words

    /// A `/` or an archive extension: only a file can be meant.
    public static func isPath(_ argument: String) -> Bool {
        argument.contains("/") || Compression.fromFileName(argument) != nil
    }

    /// `latest`, or a non-empty prefix of the id form `20261129T023000Z-3f9a1c2e`.
    public static func isBackupWord(_ argument: String) -> Bool {
        if argument == "latest" { return true }
        let form = Array("DDDDDDDDTDDDDDDZ-HHHHHHHH".utf8)
        let bytes = Array(argument.utf8)
        guard !bytes.isEmpty, bytes.count <= form.count else { return false }
        return zip(bytes, form).allSatisfy { byte, slot in
            switch slot {
            case UInt8(ascii: "D"): return (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
            case UInt8(ascii: "H"): return (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
            default: return byte == slot
            }
        }
    }
}
