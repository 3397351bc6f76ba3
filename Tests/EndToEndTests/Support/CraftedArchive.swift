import Foundation

/// Hand-made tar archives (with Python's `tarfile`), for entries no honest tool writes:
/// `..`, absolute paths, symlinks to write through, hard links out of the target.
enum CraftedArchive {
    // MARK: Types

    /// One archive member.
    enum Member {
        case file(String, contents: String)
        case directory(String)
        case symlink(String, target: String)
        case hardLink(String, target: String)

        var json: [String: String] {
            switch self {
            case .file(let name, let contents): return ["kind": "file", "name": name, "contents": contents]
            case .directory(let name): return ["kind": "directory", "name": name]
            case .symlink(let name, let target): return ["kind": "symlink", "name": name, "target": target]
            case .hardLink(let name, let target): return ["kind": "hardlink", "name": name, "target": target]
            }
        }
    }

    /// How the archive is compressed.
    enum Compression: String, CaseIterable {
        case none, gzip, xz, zstd

        /// The file name extension.
        var fileExtension: String {
            switch self {
            case .none: return ".tar"
            case .gzip: return ".tar.gz"
            case .xz: return ".tar.xz"
            case .zstd: return ".tar.zst"
            }
        }
    }

    // MARK: Writing

    private static let script = """
    import io, json, sys, tarfile
    spec = json.load(sys.stdin)
    mode = {"none": "w", "gzip": "w:gz", "xz": "w:xz", "zstd": "w"}[spec["compression"]]
    with tarfile.open(spec["path"], mode, format=tarfile.PAX_FORMAT) as tar:
        for member in spec["members"]:
            info = tarfile.TarInfo(member["name"])
            info.mtime = 1700000000
            info.mode = 0o644
            kind = member["kind"]
            if kind == "file":
                data = member["contents"].encode()
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            elif kind == "directory":
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                tar.addfile(info)
            elif kind == "symlink":
                info.type = tarfile.SYMTYPE
                info.linkname = member["target"]
                tar.addfile(info)
            elif kind == "hardlink":
                info.type = tarfile.LNKTYPE
                info.linkname = member["target"]
                tar.addfile(info)
    """

    /// Writes `members`, in order, to `folder/name` + the compression's extension and
    /// returns the archive's path.
    @discardableResult
    static func write(_ members: [Member], to folder: String, name: String, compression: Compression = .none) throws -> String {
        let tarPath = folder + "/" + name + ".tar"
        let path = folder + "/" + name + compression.fileExtension
        let spec: [String: Any] = [
            "path": compression == .zstd || compression == .none ? tarPath : path,
            "compression": compression.rawValue,
            "members": members.map(\.json),
        ]
        let input = try JSONSerialization.data(withJSONObject: spec)
        let made = try ProcessRunner.run("python3", ["-c", script], stdin: input)
        guard made.exitCode == 0 else { throw ProcessRunner.Failure(description: "python3 tarfile failed:\n\(made)") }
        if compression == .zstd {
            let compressed = try ProcessRunner.run("zstd", ["-q", "-f", "--rm", tarPath, "-o", path])
            guard compressed.exitCode == 0 else { throw ProcessRunner.Failure(description: "zstd failed:\n\(compressed)") }
        }
        return path
    }
}
