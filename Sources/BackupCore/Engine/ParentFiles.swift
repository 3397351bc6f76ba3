/// What an incremental backup needs of its parent: the parent's id and its regular files
/// by archive path.
struct ParentFiles {
    let id: BackupID
    let files: [[UInt8]: ManifestEntry]

    /// The regular files of `manifest`.
    init(manifest: Manifest) {
        id = manifest.summary.id
        var files: [[UInt8]: ManifestEntry] = [:]
        files.reserveCapacity(manifest.entries.count)
        for entry in manifest.entries where entry.type == .file {
            files[entry.path] = entry
        }
        self.files = files
    }
}
