import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Manifests no honest backup writes, aimed at the paths restore trusts from them: a NUL
/// byte hidden in a path (`..\u0000` passes a check for `..` and becomes `..` for the
/// kernel), in the archive's own manifest and in the one beside it. Nothing may land
/// outside the target; the manifest is reported as damaged (exit 4).
final class HostileManifestTests: EndToEndTestCase {
    // MARK: State

    /// work/jail holds the target and nothing else; `..` from the target lands here.
    private var jail = ""
    private var target = ""
    private var source = ""
    private var dest = ""

    override func setUpWithError() throws {
        try super.setUpWithError()
        jail = path("jail")
        target = jail + "/target"
        try RawFileSystem.makeDirectory(RawFileSystem.bytes(target))
        source = path("src")
        try Fixtures.makeTree(at: source, files: ["a.txt": "alpha\n", "sel/keep.txt": "kept\n", "other.txt": "other\n"])
        dest = path("dest")
    }

    // MARK: The archive's own manifest (a lone archive)

    func testNULInAHardLinkOfTheArchivesOwnManifestDoesNotEscape() throws {
        try backup([source], dest: dest)
        let linkTarget = String(source.dropFirst()) + "/a.txt"
        // Content "in" an earlier backup: the link is made from the manifest alone, at the end.
        let id = "20000101T000000Z-00000000"
        for (name, line) in [
            ("escaped", #"{"path":"..\u0000/outside/victim","type":"hardlink","link":"\#(linkTarget)","in":"\#(id)"}"#),
            ("b64", #"{"path_b64":"\#(Data("..\u{0}/outside/victim".utf8).base64EncodedString())","type":"hardlink","link":"\#(linkTarget)","in":"\#(id)"}"#),
        ] {
            let hostile = try rewriteInnerManifest(of: try onlyArchive(in: dest), appending: line, name: name)
            for overwrite in ["never", "always"] {
                // An existing file outside that `--overwrite always` would have replaced.
                try RawFileSystem.makeDirectory(RawFileSystem.bytes(jail + "/outside"))
                try RawFileSystem.writeFile(RawFileSystem.bytes(jail + "/outside/victim"), contents: Array("precious\n".utf8))
                let outcome = try run(["restore", hostile, "--target", target, "--overwrite", overwrite])
                assertExit(outcome, 4, "\(name), --overwrite \(overwrite): the manifest is damaged")
                XCTAssertTrue(outcome.stderrText.contains("NUL"), "the reason names the NUL byte:\n\(outcome)")
                XCTAssertEqual(try String(contentsOfFile: jail + "/outside/victim", encoding: .utf8), "precious\n")
                XCTAssertEqual(RawFileSystem.lstat(jail + "/outside/victim")?.st_nlink, 1,
                               "\(name), --overwrite \(overwrite): a hard link was made outside the target")
                XCTAssertEqual(try names(in: jail + "/outside"), ["victim"])
                XCTAssertEqual(try names(in: jail).sorted(), ["outside", "target"])
                _ = try tool("rm", ["-rf", jail + "/outside", target])
                try RawFileSystem.makeDirectory(RawFileSystem.bytes(target))
            }
        }
    }

    // MARK: The manifest beside the archive (a partial restore)

    func testNULInAHardLinkOfTheManifestBesideTheArchiveDoesNotEscape() throws {
        try backup([source], dest: dest)
        let manifest = try sidecarPath(in: dest)
        let selected = String(source.dropFirst()) + "/sel"
        // Enough `..` to climb from target/<source>/sel to the jail, then into jail/outside.
        let climb = String(repeating: "..\\u0000/", count: selected.split(separator: "/").count + 1)
        let hostile = #"{"path":"\#(selected)/\#(climb)outside/victim","type":"hardlink","link":"\#(String(source.dropFirst()))/other.txt","size":6}"#
        try writeSidecar(manifest, try sidecarText(manifest) + hostile + "\n")

        let outcome = try run(["restore", "latest", selected, "--dest", dest, "--target", target])
        assertExit(outcome, 4, "the manifest beside the archive is damaged")
        XCTAssertTrue(outcome.stderrText.contains("NUL"), "the reason names the NUL byte:\n\(outcome)")
        XCTAssertEqual(try names(in: jail), ["target"], "something was written beside the target")
    }

    func testNULInAManifestLinkTargetIsADamagedManifest() throws {
        try backup([source], dest: dest)
        let manifest = try sidecarPath(in: dest)
        let prefix = String(source.dropFirst())
        let hostile = #"{"path":"\#(prefix)/sel/evil","type":"hardlink","link":"..\u0000/..\u0000/etc/passwd","size":6}"#
        try writeSidecar(manifest, try sidecarText(manifest) + hostile + "\n")
        for arguments in [["restore", "latest", prefix + "/sel", "--target", target], ["restore", "latest", "--target", target],
                          ["verify", "latest"], ["list", "latest"]] {
            let outcome = try run(arguments + ["--dest", dest])
            assertExit(outcome, 4, "\(arguments[0]) finds a damaged manifest")
            XCTAssertTrue(outcome.combinedText.contains("NUL"), "the reason names the NUL byte:\n\(outcome)")
        }
        XCTAssertEqual(try names(in: jail), ["target"])
    }

    func testUnsafeHardLinksRecordedOnlyInTheManifestAreNamed() throws {
        try backup([source], dest: dest)
        let manifest = try sidecarPath(in: dest)
        let prefix = String(source.dropFirst())
        // Hard links whose content is in an earlier archive ("in"): made at the end, from the
        // manifest alone. Before, an unsafe name was skipped without a word and the restore exited 0.
        let id = "20000101T000000Z-00000000"
        let lines = [
            #"{"path":"../escape","type":"hardlink","link":"\#(prefix)/a.txt","in":"\#(id)"}"#,
            #"{"path":"\#(prefix)/sel/to-passwd","type":"hardlink","link":"/etc/passwd","in":"\#(id)"}"#,
            #"{"path":"\#(prefix)/sel/up","type":"hardlink","link":"\#(prefix)/../../../../../../etc/passwd","in":"\#(id)"}"#,
        ]
        try writeSidecar(manifest, try sidecarText(manifest) + lines.joined(separator: "\n") + "\n")
        let outcome = try run(["restore", "latest", "--dest", dest, "--target", target])
        assertExit(outcome, 4, "unsafe entries are integrity failures")
        for name in ["../escape", prefix + "/sel/to-passwd", prefix + "/sel/up"] {
            XCTAssertTrue(outcome.stderrText.contains(name + ": unsafe entry refused"), "\(name) is not named:\n\(outcome)")
        }
        XCTAssertEqual(try names(in: jail), ["target"])
        XCTAssertEqual(try String(contentsOfFile: restored(source, into: target) + "/a.txt", encoding: .utf8), "alpha\n",
                       "the rest is restored")
    }

    // MARK: The archive a manifest names

    func testAManifestNamingAnArchiveOutsideTheDestinationIsDamaged() throws {
        try backup([source], dest: dest)
        let manifest = try sidecarPath(in: dest)
        let archiveName = URL(fileURLWithPath: try onlyArchive(in: dest)).lastPathComponent
        // A copy of the archive outside the destination, and a summary line that names it.
        try FileManager.default.copyItem(atPath: dest + "/" + archiveName, toPath: path("outside.tar.zst"))
        let text = try sidecarText(manifest)
        XCTAssertTrue(text.contains(#""name":"\#(archiveName)""#), text)
        try writeSidecar(manifest, text.replacingOccurrences(of: #""name":"\#(archiveName)""#, with: #""name":"../outside.tar.zst""#))
        for arguments in [["restore", "latest", "--target", target], ["verify", "latest"]] {
            let outcome = try run(arguments + ["--dest", dest])
            assertExit(outcome, 4, "\(arguments[0]): the manifest names a path, not an archive in the destination")
            XCTAssertTrue(outcome.combinedText.contains("not a path"), "\(outcome)")
        }
        XCTAssertEqual(try names(in: target), [], "nothing was restored from outside the destination")
    }

    // MARK: Names the manifest does not have

    /// A lone archive (no manifest beside it) whose tar holds a folder, a file in it and a
    /// symlink that its own manifest does not list — what a damaged name in a gzip stream
    /// (which carries no checksum) leaves: folders and links are made as met, before the
    /// manifest at the archive's end is read, so they are taken back once it is, and named.
    func testNodesTheArchivesOwnManifestDoesNotListAreTakenBack() throws {
        try backup([source], dest: dest)
        let archive = try onlyArchive(in: dest)
        let prefix = String(source.dropFirst())
        let output = path("stray.tar.zst")
        let script = """
        import io, subprocess, sys, tarfile
        source, output, prefix = sys.argv[1], sys.argv[2], sys.argv[3]
        raw = subprocess.run(["zstd", "-dc", source], check=True, capture_output=True).stdout
        original = tarfile.open(fileobj=io.BytesIO(raw))
        rewritten = io.BytesIO()
        with tarfile.open(fileobj=rewritten, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for member in original.getmembers():
                if member.name == ".keepsake/manifest.jsonl":
                    folder = tarfile.TarInfo(prefix + "/stray-folder"); folder.type = tarfile.DIRTYPE; folder.mode = 0o755
                    tar.addfile(folder)
                    inside = tarfile.TarInfo(prefix + "/stray-folder/inside.txt"); inside.size = 3
                    tar.addfile(inside, io.BytesIO(b"odd"))
                    link = tarfile.TarInfo(prefix + "/stray-link"); link.type = tarfile.SYMTYPE; link.linkname = "a.txt"
                    tar.addfile(link)
                data = original.extractfile(member).read() if member.isreg() else None
                tar.addfile(member, io.BytesIO(data) if data is not None else None)
        subprocess.run(["zstd", "-q", "-f", "-o", output], input=rewritten.getvalue(), check=True)
        """
        try toolSucceeds("python3", ["-c", script, archive, output, prefix])
        let outcome = try run(["restore", output, "--target", target])
        assertExit(outcome, 4, "names the backup never had are damage")
        for name in ["stray-folder", "stray-folder/inside.txt", "stray-link"] {
            XCTAssertTrue(outcome.stderrText.contains(prefix + "/" + name + ": not in the backup's manifest"), "\(name):\n\(outcome)")
        }
        let restoredSource = restored(source, into: target)
        XCTAssertFalse(RawFileSystem.exists(restoredSource + "/stray-folder"), "the folder is taken back")
        XCTAssertFalse(RawFileSystem.exists(restoredSource + "/stray-link"), "the link is taken back")
        XCTAssertEqual(try String(contentsOfFile: restoredSource + "/a.txt", encoding: .utf8), "alpha\n", "the rest is restored")
    }

    // MARK: Helpers

    /// A copy of a Keepsake `.tar.zst` whose own manifest has `line` appended (written by
    /// Python's tarfile, compressed by zstd: no seek table, as any tool would leave it).
    private func rewriteInnerManifest(of archive: String, appending line: String, name: String) throws -> String {
        let output = path("hostile-\(name).tar.zst")
        let script = """
        import io, subprocess, sys, tarfile
        source, output, extra = sys.argv[1], sys.argv[2], sys.stdin.buffer.read()
        raw = subprocess.run(["zstd", "-dc", source], check=True, capture_output=True).stdout
        original = tarfile.open(fileobj=io.BytesIO(raw))
        rewritten = io.BytesIO()
        with tarfile.open(fileobj=rewritten, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for member in original.getmembers():
                data = original.extractfile(member).read() if member.isreg() else None
                if member.name == ".keepsake/manifest.jsonl":
                    data = data + extra
                    member.size = len(data)
                tar.addfile(member, io.BytesIO(data) if data is not None else None)
        subprocess.run(["zstd", "-q", "-f", "-o", output], input=rewritten.getvalue(), check=True)
        """
        let made = try tool("python3", ["-c", script, archive, output], stdin: Data((line + "\n").utf8))
        XCTAssertEqual(made.exitCode, 0, "rewriting the archive failed:\n\(made)")
        return output
    }
}
