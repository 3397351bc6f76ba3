import Foundation

/// Looks at a lone archive file (one copied out of a destination, or a plain tarball):
/// finds the manifest beside it and lists what it holds.
public enum ArchiveFileInspector {
    /// True when `path` names an existing regular file (not a backup id).
    public static func isArchiveFile(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
    }

    /// The manifest copy beside an archive file (`X.manifest.jsonl.zst`, or the older
    /// plain `X.manifest.jsonl`, for `X.tar.zst`), if there is one and it reads cleanly.
    public static func sidecarManifest(forArchiveAt path: String) -> Manifest? {
        sidecarData(forArchiveAt: path).flatMap { try? Manifest.parse($0) }
    }

    /// The bytes (decompressed) of the manifest copy beside an archive file, if there is
    /// one and it decompresses.
    public static func sidecarData(forArchiveAt path: String) -> [UInt8]? {
        let url = URL(fileURLWithPath: path)
        for name in BackupNaming.sidecarNames(forArchive: url.lastPathComponent) {
            let sidecar = url.deletingLastPathComponent().appendingPathComponent(name).path
            guard FileManager.default.fileExists(atPath: sidecar) else { continue }
            return try? SidecarManifest.read(path: sidecar)
        }
        return nil
    }

    /// The archive file of backup `id` in the same folder as the archive at `path`
    /// (`HOST_ID.tar.zst` or any other codec's extension), if there is one.
    public static func siblingArchive(of path: String, for id: BackupID) -> String? {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return nil }
        let marker = "_" + id.rawValue
        let match = names.sorted().first { name in
            guard let stem = BackupNaming.stem(of: name), !BackupNaming.isManifestName(name) else { return false }
            return stem.hasSuffix(marker) || stem == id.rawValue
        }
        return match.map { folder.appendingPathComponent($0).path }
    }

    /// What the archive holds: from its manifest when it has one (with SHA-256s),
    /// otherwise from its tar headers.
    public static func contents(ofArchiveAt path: String, cancellation: CancellationFlag) throws -> (manifest: Manifest?, entries: [ManifestEntry]) {
        if let sidecar = sidecarManifest(forArchiveAt: path) { return (sidecar, sidecar.entries) }
        let source = try FileByteSource(path: path)
        defer { source.close() }
        let reader = try ArchiveReader(source: source, name: path, cancellation: cancellation)
        var entries: [ManifestEntry] = []
        while let header = try reader.nextHeader() {
            try cancellation.check()
            if header.path == BackupNaming.manifestEntryPath {
                let manifest = try Manifest.parse(try reader.readManifest(name: "the manifest inside \(path)"))
                return (manifest, manifest.entries)
            }
            try reader.skipContent()
            if BackupNaming.isMetadataEntry(header.path) { continue }
            entries.append(ManifestEntry(path: header.path, type: header.type, size: header.size, mode: header.permissions,
                                         uid: header.uid, gid: header.gid, userName: header.userName,
                                         groupName: header.groupName, mtimeNanoseconds: header.mtimeTotalNanoseconds,
                                         rdev: header.rdev, linkTarget: header.linkTarget))
        }
        return (nil, entries)
    }
}
