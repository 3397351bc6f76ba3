// libFuzzer target: restore path validation and the manifest → restore-plan path.
//
// The raw input is judged as one path by ArchivePath.components(of:) (the one place that
// decides whether a path from an archive or a manifest may be written under a target). Then
// the input is parsed as a manifest and, for every entry, its path (and a hard link's target)
// is judged too; a restore selection is made of a few entry paths and of the input's lines
// (paths and glob patterns, as `restore` takes them), every entry is matched against it, and
// the manifest index is built as RestorePlan and BackupCatalog build them. Checked on every input:
//   - a path ArchivePath accepts has components, none empty, none `..`, none holding a NUL
//     byte, and it does not start with `/`;
//   - a selection of a plain path selects that path;
//   - the index finds every entry by its path and counts each path once.
@testable import BackupCore
import Glibc
import KeepsakeModel
import KeepsakeSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRestorePath(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    judge(bytes)

    // Selections from the input's first lines, whatever it is (patterns included).
    let lines = bytes.split(separator: UInt8(ascii: "\n"), maxSplits: 4, omittingEmptySubsequences: true)
        .prefix(4).map { String(decoding: $0, as: UTF8.self) }
    if let selection = try? RestoreSelection(lines) {
        for line in lines { _ = selection.matches(Array(line.utf8), isDirectory: line.hasSuffix("/")) }
    }

    guard let manifest = try? Manifest.parse(bytes) else { return 0 }
    for entry in manifest.entries {
        judge(entry.path)
        if entry.type == .hardlink, let target = entry.linkTarget { judge(target) }
    }

    // A selection of a few entry paths: each selects itself (a folder brings its contents).
    var chosen: [String] = []
    for entry in manifest.entries.prefix(3) {
        guard let text = PathBytes.validString(entry.path) else { continue }
        chosen.append(text)
    }
    if let selection = try? RestoreSelection(chosen + lines.prefix(1)) {
        for text in chosen where !text.contains(where: { "*?[".contains($0) }) {
            let parts = PathBytes.components(PathBytes.from(text))
            guard let first = parts.first else { continue }
            let normalized = parts.dropFirst().reduce(first) { PathBytes.join($0, $1) }
            require(selection.matches(normalized, isDirectory: false), "the selection of '\(text)' does not select it")
        }
        // The restore plan: selected entries and the files their hard links need.
        let plan = RestorePlan(manifest: manifest, selection: selection)
        checkIndex(ManifestIndex(plan.wanted ?? manifest.entries))
        // A partial restore's parse keeps the selected lines and every hard link.
        if let kept = try? Manifest.parse(bytes, keeping: { path, type in
            type == .hardlink || selection.matches(Array(path), isDirectory: type == .directory)
        }) {
            require(kept.entries.count <= manifest.entries.count, "a partial parse kept more than the whole")
        }
    }
    checkIndex(manifest.index())
    return 0
}

/// Judges `path` as a restore would and checks what an accepted path must satisfy.
private func judge(_ path: [UInt8]) {
    guard case .success(let parts) = ArchivePath.components(of: path) else { return }
    require(!parts.isEmpty, "accepted with no components")
    require(path.first != UInt8(ascii: "/"), "accepted an absolute path")
    require(!path.contains(0), "accepted a path holding a NUL byte")
    for part in parts {
        require(!part.isEmpty, "accepted with an empty component")
        require(part != Array("..".utf8), "accepted with a '..' component")
        require(!part.contains(0), "accepted with a NUL byte in a component")
        require(!part.contains(UInt8(ascii: "/")), "a component holds '/'")
    }
}

/// The index finds every entry by its path, and counts each path once.
private func checkIndex(_ index: ManifestIndex) {
    var paths = Set<PathKey>()
    for entry in index.entries {
        paths.insert(PathKey(entry.path))
        require(index[PathKey(entry.path)] != nil, "the index lost '\(PathBytes.display(entry.path))'")
    }
    require(index.count == paths.count, "the index counts \(index.count) paths, the entries hold \(paths.count)")
}

/// Stops with the message (libFuzzer keeps the input) when an invariant does not hold.
private func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    guard !condition else { return }
    let text = "restorepath invariant broken: \(message())\n"
    _ = text.withCString { write(2, $0, strlen($0)) }
    abort()
}
