/// The kinds of entries a backup holds.
public enum EntryType: String, Sendable, CaseIterable {
    case file
    case directory = "dir"
    case symlink
    /// A further name for a file stored earlier in the same archive.
    case hardlink
    case fifo
    case characterDevice = "chardev"
    case blockDevice = "blockdev"
    case socket
}
