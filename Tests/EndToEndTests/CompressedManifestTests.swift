import Foundation
import XCTest

/// The manifest beside each archive is stored compressed (`HOST_ID.manifest.jsonl.zst`),
/// readable with `zstd -dc`; destinations holding plain manifests from before still work.
final class CompressedManifestTests: EndToEndTestCase {
    // MARK: Setup

    private func twoBackups() throws -> (dest: String, source: String, first: String, second: String) {
        let source = path("src")
        let dest = path("dest")
        try Fixtures.makeTree(at: source, files: ["a.txt": "alpha\n", "b/c.txt": "gamma\n", "b/d.txt": "delta\n"])
        let first = try backup([source], dest: dest)
        try Fixtures.makeTree(at: source, files: ["a.txt": "alpha, changed\n"])
        let second = try backup([source], dest: dest)
        return (dest, source, first, second)
    }

    /// Turns every compressed manifest in `dest` into the plain one an older Keepsake wrote.
    private func makeManifestsPlain(in dest: String) throws {
        for name in try names(in: dest) where name.hasSuffix(".manifest.jsonl.zst") {
            let text = try sidecarText(dest + "/" + name)
            try Data(text.utf8).write(to: URL(fileURLWithPath: dest + "/" + String(name.dropLast(4))))
            try FileManager.default.removeItem(atPath: dest + "/" + name)
        }
    }

    // MARK: Format

    func testTheManifestBesideTheArchiveIsZstdThatZstdReads() throws {
        let setup = try twoBackups()
        let manifest = try sidecarPath(in: setup.dest, id: setup.second)
        try toolSucceeds("zstd", ["-tq", manifest])
        let lines = try sidecarText(manifest).split(separator: "\n")
        let summary = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        XCTAssertEqual(summary["keepsake"] as? String, "manifest")
        XCTAssertEqual(summary["id"] as? String, setup.second)
        XCTAssertNotNil(summary["archive"], "the copy beside the archive names it")

        // The entry lines are the archive's own manifest's, as GNU tar extracts them.
        let archive = try XCTUnwrap(try names(in: setup.dest).first { $0.contains(setup.second) && $0.hasSuffix(".tar.zst") })
        let inner = try toolSucceeds("tar", ["--zstd", "-xOf", setup.dest + "/" + archive, ".keepsake/manifest.jsonl"])
        XCTAssertEqual(Array(lines.dropFirst()), Array(inner.stdoutText.split(separator: "\n").dropFirst()))
        XCTAssertGreaterThan(lines.count, 3)
    }

    // MARK: Older destinations

    func testADestinationWithPlainManifestsFromBeforeStillWorks() throws {
        let setup = try twoBackups()
        try makeManifestsPlain(in: setup.dest)
        let listed = try run(["list", "--dest", setup.dest])
        assertExit(listed, 0)
        XCTAssertTrue(listed.stdoutText.contains(setup.first) && listed.stdoutText.contains(setup.second), listed.stdoutText)
        assertExit(try run(["verify", "--dest", setup.dest]), 0)
        let repair = try run(["repair", "--dest", setup.dest])
        assertExit(repair, 0)
        XCTAssertTrue(repair.stdoutText.contains("nothing to repair"), repair.stdoutText)

        // The next backup is an incremental on the plain manifest, and writes a compressed one.
        try Fixtures.makeTree(at: setup.source, files: ["b/c.txt": "gamma, changed\n"])
        let third = try run(["backup", setup.source, "--dest", setup.dest, "--json"])
        assertExit(third, 0)
        let report = try json(third)
        XCTAssertEqual(report["parent"] as? String, setup.second, "\(report)")
        let thirdID = try XCTUnwrap(report["id"] as? String)
        XCTAssertTrue(try sidecarPath(in: setup.dest, id: thirdID).hasSuffix(".manifest.jsonl.zst"))

        let target = path("target")
        assertExit(try run(["restore", thirdID, "--dest", setup.dest, "--target", target]), 0)
        try assertTreesEqual(expected: setup.source, actual: restored(setup.source, into: target))
        assertExit(try run(["verify", "--dest", setup.dest]), 0)
    }

    func testRepairReplacesADamagedPlainManifestWithACompressedOne() throws {
        let setup = try twoBackups()
        let original = try sidecarText(try sidecarPath(in: setup.dest, id: setup.first))
        try makeManifestsPlain(in: setup.dest)
        let plain = try XCTUnwrap(try names(in: setup.dest).first { $0.contains(setup.first) && $0.hasSuffix(".manifest.jsonl") })
        try Data("{\"not\": \"a manifest\"}\n".utf8).write(to: URL(fileURLWithPath: setup.dest + "/" + plain))
        assertExit(try run(["verify", "--dest", setup.dest]), 4)

        assertExit(try run(["repair", setup.first, "--dest", setup.dest]), 0)
        XCTAssertFalse(try names(in: setup.dest).contains(plain), "the damaged plain manifest is gone")
        XCTAssertEqual(try sidecarText(try sidecarPath(in: setup.dest, id: setup.first)), original)
        assertExit(try run(["verify", "--dest", setup.dest]), 0)
    }

    // MARK: Damage

    func testADamagedCompressedManifestIsReportedAndRepaired() throws {
        let setup = try twoBackups()
        let manifest = try sidecarPath(in: setup.dest, id: setup.first)
        let original = try Data(contentsOf: URL(fileURLWithPath: manifest))
        let text = try sidecarText(manifest)
        // A flip that damages what the manifest says: from the middle on, the first whose
        // file zstd refuses or decodes differently (a few bits of a frame decode the same,
        // and no reader can see those; CorruptionTests counts them).
        var damaged = false
        for offset in (original.count / 2)..<original.count where !damaged {
            var bytes = original
            bytes[offset] ^= 0x10
            try bytes.write(to: URL(fileURLWithPath: manifest))
            let decoded = try tool("zstd", ["-dc", manifest])
            damaged = decoded.exitCode != 0 || decoded.stdoutText != text
        }
        XCTAssertTrue(damaged, "no flip damaged the manifest")

        let verify = try run(["verify", "--dest", setup.dest])
        assertExit(verify, 4)
        XCTAssertTrue(verify.combinedText.contains("keepsake repair"), "verify points at repair:\n\(verify)")
        assertExit(try run(["repair", setup.first, "--dest", setup.dest]), 0)
        assertExit(try run(["verify", "--dest", setup.dest]), 0)
    }

    func testALoneArchiveFindsTheCompressedManifestBesideIt() throws {
        let setup = try twoBackups()
        let lone = path("lone")
        try FileManager.default.createDirectory(atPath: lone, withIntermediateDirectories: true)
        for name in try names(in: setup.dest) where name.contains(setup.first) {
            try FileManager.default.copyItem(atPath: setup.dest + "/" + name, toPath: lone + "/" + name)
        }
        let archive = lone + "/" + (try XCTUnwrap(try names(in: lone).first { $0.hasSuffix(".tar.zst") }))
        assertExit(try run(["verify", archive]), 0)

        // The manifest beside it is read: a wrong SHA-256 recorded there is noticed.
        let sidecar = try sidecarPath(in: lone)
        let text = try sidecarText(sidecar)
        let recorded = try XCTUnwrap(text.range(of: #""sha256":"[0-9a-f]{64}""#, options: .regularExpression))
        try writeSidecar(sidecar, text.replacingCharacters(in: recorded, with: "\"sha256\":\"" + String(repeating: "0", count: 64) + "\""))
        let verify = try run(["verify", archive])
        assertExit(verify, 4)
        XCTAssertTrue(verify.combinedText.contains("SHA-256 recorded"), "\(verify)")
    }
}
