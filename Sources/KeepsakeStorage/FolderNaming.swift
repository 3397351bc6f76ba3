import Foundation

/// The names a folder-like destination (a local folder, an rclone remote) gives its lock and
/// its temporaries: `keepsake.lock`, and `.tmp-STEM-PID-RANDOM` for an object being written
/// (`.tmp-lock-PID[-RANDOM]` for a lock attempt), so that a run can tell its own temporaries,
/// a live writer's and a dead one's leftovers apart. Both backends use them, so the names
/// mean the same whichever backend lists the folder.
package enum FolderNaming {
    // MARK: Names

    /// What every temporary's name starts with.
    package static let temporaryPrefix = ".tmp-"
    /// The lock record's name.
    package static let lockName = "keepsake.lock"

    /// A fresh name `.tmp-STEM-PID-RANDOM` for a temporary of this process (see `writerPID`).
    package static func temporaryName(stem: String) -> String {
        temporaryPrefix + stem + "-\(getpid())-" + String(UInt32.random(in: 0...UInt32.max), radix: 16)
    }

    // MARK: Leftovers

    /// True for a temporary's name whose writer is no longer running on this host. What a
    /// live process is writing (a lock attempt, or an object of a run that should not be
    /// running beside us) is not a leftover.
    package static func isLeftoverTemporary(_ name: String) -> Bool {
        guard name.hasPrefix(temporaryPrefix) else { return false }
        if let pid = writerPID(ofTemporary: name), kill(pid, 0) == 0 || errno != ESRCH { return false }
        return true
    }

    /// The pid in a temporary's name: `.tmp-lock-PID[-RANDOM]` or `.tmp-NAME-PID-RANDOM`.
    package static func writerPID(ofTemporary name: String) -> Int32? {
        let lockPrefix = temporaryPrefix + "lock-"
        if name.hasPrefix(lockPrefix) {
            return name.dropFirst(lockPrefix.count).split(separator: "-").first.flatMap { Int32($0) }
        }
        let parts = name.dropFirst(temporaryPrefix.count).split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count >= 3, let pid = Int32(parts[parts.count - 2]), pid > 0,
              UInt32(parts[parts.count - 1], radix: 16) != nil else { return nil }
        return pid
    }
}
