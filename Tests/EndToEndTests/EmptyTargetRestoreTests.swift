import Foundation
import XCTest

/// A restore into a target that started empty: each file is written unnamed and gets its
/// name only once its SHA-256 matches, so no temporary name ever appears there; the tree
/// is the one a restore into a target already in use makes (through temporary names); a
/// damaged file never gets its name; and `--sync` waits for the disk and says so.
final class EmptyTargetRestoreTests: EndToEndTestCase {
    // MARK: Tests

    /// Every name, type and attribute of the awkward tree (as root: other owners and a
    /// setuid bit too) comes back into an empty target with no temporary name left, the same
    /// as into a target that already held a file.
    func testAnEmptyTargetGetsTheSameTreeAndNoTemporaryName() throws {
        let tree = try Fixtures.makeAwkwardTree(at: path("src"))
        let dest = path("dest")
        _ = try backup([tree.root], dest: dest)
        var options = TreeComparison.Options()
        options.xattrName = tree.xattrSupported ? "user.test" : nil
        let sameOwner = geteuid() == 0 ? ["--same-owner"] : []

        let empty = path("empty")
        assertExit(try run(["restore", "latest", "--dest", dest, "--target", empty] + sameOwner), 0, "into an empty target")
        try assertTreesEqual(expected: tree.root, actual: restored(tree.root, into: empty), options: options)
        XCTAssertEqual(try temporaryNames(below: empty), [])

        let used = path("used")
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(used))
        try RawFileSystem.writeFile(RawFileSystem.bytes(used + "/already-here.txt"), contents: Array("mine\n".utf8))
        assertExit(try run(["restore", "latest", "--dest", dest, "--target", used] + sameOwner), 0, "into a target in use")
        try assertTreesEqual(expected: restored(tree.root, into: empty), actual: restored(tree.root, into: used), options: options)
        XCTAssertEqual(try temporaryNames(below: used), [])
    }

    /// A file whose content no longer matches its SHA-256 (one byte flipped in an
    /// uncompressed archive, its tar header intact) is named as damaged (exit 4) and is not
    /// in the empty target under its name or any other; the files around it land.
    func testADamagedFileIsNotLeftUnderItsName() throws {
        let source = path("src")
        let marker = "DAMAGE-THIS-FILE-"
        try Fixtures.makeTree(at: source, files: ["a.txt": "alpha\n", "damaged.txt": marker + String(repeating: "x", count: 4000),
                                                  "z.txt": "zulu\n"])
        let dest = path("dest")
        let id = try backup([source], dest: dest, options: ["--compression", "none"])
        let archive = dest + "/" + (try XCTUnwrap(try names(in: dest).first { $0.contains(id) && $0.hasSuffix(".tar") }))
        var bytes = try RawFileSystem.readFile(RawFileSystem.bytes(archive))
        let needle = Array(marker.utf8)
        let at = try XCTUnwrap(bytes.indices.first { bytes[$0...].starts(with: needle) }, "the content is in the archive")
        bytes[at + needle.count + 100] ^= 0x01
        try RawFileSystem.writeFile(RawFileSystem.bytes(archive), contents: bytes, mode: 0o600)

        let target = path("target")
        let outcome = try run(["restore", "latest", "--dest", dest, "--target", target, "--json"])
        assertExit(outcome, 4, "a damaged file")
        let damaged = (try json(outcome)["damaged"] as? [[String: Any]])?.compactMap { $0["path"] as? String } ?? []
        XCTAssertEqual(damaged.filter { $0.hasSuffix("damaged.txt") }.count, 1, "named as damaged: \(damaged)")
        let root = RawFileSystem.bytes(restored(source, into: target))
        XCTAssertEqual(try RawFileSystem.listDirectory(root).map(RawFileSystem.display).sorted(), ["a.txt", "z.txt"],
                       "nothing under the damaged file's name, and no temporary name")
        XCTAssertEqual(try RawFileSystem.readFile(RawFileSystem.join(root, "a.txt")), Array("alpha\n".utf8))
        XCTAssertEqual(try RawFileSystem.readFile(RawFileSystem.join(root, "z.txt")), Array("zulu\n".utf8))
    }

    /// `--sync` restores the same tree and says in `--json` that the target's disk holds it;
    /// without it, the restore does not wait for the disk and says so.
    func testSyncWaitsForTheDiskAndSaysSo() throws {
        let source = path("src")
        try Fixtures.makeMixedTree(at: source)
        let dest = path("dest")
        _ = try backup([source], dest: dest)

        let plain = try run(["restore", "latest", "--dest", dest, "--target", path("plain"), "--json"])
        assertExit(plain, 0)
        XCTAssertEqual(try json(plain)["synced"] as? Bool, false)
        let synced = try run(["restore", "latest", "--dest", dest, "--target", path("synced"), "--sync", "--json"])
        assertExit(synced, 0)
        XCTAssertEqual(try json(synced)["synced"] as? Bool, true)
        try assertTreesEqual(expected: source, actual: restored(source, into: path("synced")))
        try assertTreesEqual(expected: source, actual: restored(source, into: path("plain")))
    }

    // MARK: Helpers

    /// The paths below `folder` whose last component is a restore's temporary name.
    private func temporaryNames(below folder: String) throws -> [String] {
        var found: [String] = []
        func walk(_ path: [UInt8]) throws {
            for child in try RawFileSystem.listDirectory(path) {
                let full = RawFileSystem.join(path, child)
                if child.starts(with: Array(".keepsake-".utf8)) { found.append(RawFileSystem.display(full)) }
                if let info = RawFileSystem.lstat(full), info.st_mode & S_IFMT == S_IFDIR { try walk(full) }
            }
        }
        try walk(RawFileSystem.bytes(folder))
        return found
    }
}
