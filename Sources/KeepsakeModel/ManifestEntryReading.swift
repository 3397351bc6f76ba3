import KeepsakeArchive

extension ArchiveReader {
    // MARK: Reading a manifest entry

    /// Reads the current entry, a manifest, into memory within the limit its own summary
    /// line sets (see `ManifestSizeLimit`); `name` says what it is in messages.
    public func readManifest(name: String) throws -> [UInt8] {
        var manifest = ManifestSizeLimit(name: name)
        while let block = try nextBlock() {
            try manifest.add(block.bytes, at: block.offset)
        }
        return manifest.bytes
    }
}
