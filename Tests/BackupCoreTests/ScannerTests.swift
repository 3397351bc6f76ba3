import Foundation
@testable import KeepsakeArchive
@testable import KeepsakeScan
@testable import KeepsakeModel
import KeepsakeSupport
import XCTest

@testable import BackupCore

final class ScannerTests: KeepsakeTestCase {
    // MARK: Setup

    private var root = ""
    private var savedDirectory = ""

    override func setUpWithError() throws {
        try super.setUpWithError()
        savedDirectory = FileManager.default.currentDirectoryPath
        root = try makeTemporaryDirectory("scanner")
    }

    override func tearDownWithError() throws {
        _ = FileManager.default.changeCurrentDirectoryPath(savedDirectory)
        removeTemporaryDirectory(root)
        try super.tearDownWithError()
    }

    // MARK: Helpers

    private func absolute(_ path: String, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        String(decoding: try Scanner.absoluteSourcePath(path), as: UTF8.self)
    }

    private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// Scans `source` and returns the visited paths relative to `root` (raw bytes), with types.
    private func scan(_ source: String, options: ScanOptions? = nil,
                      cancellation: CancellationFlag = CancellationFlag()) throws -> [(path: [UInt8], type: EntryType)] {
        var collected: [PathWarning] = []
        let scanner = Scanner(options: try options ?? noExcludes(), cancellation: cancellation) { collected.append($0) }
        var visited: [(path: [UInt8], type: EntryType)] = []
        let prefix = bytes(root + "/")
        try scanner.scan(source: try Scanner.absoluteSourcePath(source)) { item in
            XCTAssertEqual(item.archivePath, Array(item.absolutePath.dropFirst()))
            XCTAssertEqual(PathBytes.lastComponent(item.absolutePath), item.name)
            XCTAssertTrue(item.absolutePath.starts(with: prefix), PathBytes.display(item.absolutePath))
            visited.append((Array(item.absolutePath.dropFirst(prefix.count)), item.type))
        }
        XCTAssertEqual(collected, [], "no warnings expected")
        return visited
    }

    private func scannedPaths(_ source: String, options: ScanOptions? = nil) throws -> [String] {
        try scan(source, options: options).map { PathBytes.display($0.path) }
    }

    // MARK: Source paths

    func testDotIsTheCurrentDirectory() throws {
        XCTAssertTrue(FileManager.default.changeCurrentDirectoryPath(root))
        XCTAssertEqual(try absolute("."), root)
        XCTAssertEqual(try absolute("./"), root)
    }

    func testRelativePathsAreMadeAbsolute() throws {
        try writeFile(root + "/sub/deeper/file", "x")
        XCTAssertTrue(FileManager.default.changeCurrentDirectoryPath(root))
        XCTAssertEqual(try absolute("sub"), root + "/sub")
        XCTAssertEqual(try absolute("./sub/deeper"), root + "/sub/deeper")
        XCTAssertEqual(try absolute("sub/deeper/file"), root + "/sub/deeper/file")
        XCTAssertEqual(try absolute("sub/./deeper"), root + "/sub/deeper")
        XCTAssertEqual(try absolute("sub/.."), root)
        XCTAssertEqual(try absolute(".."), (root as NSString).deletingLastPathComponent)
    }

    func testTrailingSlashesAreDropped() throws {
        try FileManager.default.createDirectory(atPath: root + "/sub", withIntermediateDirectories: true)
        XCTAssertEqual(try absolute(root + "/sub/"), root + "/sub")
        XCTAssertEqual(try absolute(root + "/sub///"), root + "/sub")
        XCTAssertEqual(try absolute("/"), "/")
        XCTAssertEqual(try absolute("//"), "/")
    }

    func testSymlinkAsLastComponentIsKept() throws {
        try writeFile(root + "/real/file", "x")
        symlink(root + "/real", root + "/link")
        XCTAssertEqual(try absolute(root + "/link"), root + "/link")
        XCTAssertTrue(FileManager.default.changeCurrentDirectoryPath(root))
        XCTAssertEqual(try absolute("link"), root + "/link")
        // A symlink earlier in the path is resolved.
        XCTAssertEqual(try absolute(root + "/link/file"), root + "/real/file")
        // Scanning the symlink stores the symlink, not what it points to.
        let visited = try scan(root + "/link")
        XCTAssertEqual(visited.count, 1)
        XCTAssertEqual(visited.first?.type, .symlink)
    }

    func testMissingOrEmptySourceIsUnusable() {
        for path in ["", root + "/missing", root + "/missing/deeper", "relative-that-does-not-exist"] {
            XCTAssertThrowsError(try Scanner.absoluteSourcePath(path), path) { error in
                guard case .sourceUnusable(let reported, _)? = error as? ScanError else { return XCTFail("\(error)") }
                XCTAssertEqual(reported, path)
            }
        }
    }

    func testWithoutNestedSources() {
        let sources = ["/home/ana/docs", "/home/ana", "/home/anabel", "/etc", "/home/ana/docs/cv", "/etc"].map(bytes)
        XCTAssertEqual(Scanner.withoutNestedSources(sources), ["/etc", "/home/ana", "/home/anabel"].map(bytes))
        XCTAssertEqual(Scanner.withoutNestedSources(["/", "/etc"].map(bytes)), [bytes("/")])
        XCTAssertEqual(Scanner.withoutNestedSources([]), [])
    }

    // MARK: Walking order

    func testDirectoryComesBeforeItsContentsInByteOrder() throws {
        let source = root + "/src"
        try writeFile(source + "/a.txt", "1")
        try writeFile(source + "/B", "2")
        try writeFile(source + "/a/y/z", "3")
        try writeFile(source + "/a/x", "4")
        try writeFile(source + "/a-b", "5")
        try writeFile(source + "/é", "6")
        try writeFile(source + "/~", "7")
        let visited = try scan(source)
        XCTAssertEqual(visited.map { PathBytes.display($0.path) },
                       ["src", "src/B", "src/a", "src/a/x", "src/a/y", "src/a/y/z", "src/a-b", "src/a.txt", "src/~", "src/é"])
        XCTAssertEqual(visited.map(\.type), [.directory, .file, .directory, .file, .directory, .file, .file, .file, .file, .file])
    }

    func testEntryTypesAreReportedWithoutFollowingSymlinks() throws {
        let source = root + "/src"
        try FileManager.default.createDirectory(atPath: source + "/dir", withIntermediateDirectories: true)
        symlink("/etc", source + "/etc-link")
        mkfifo(source + "/pipe", 0o600)
        try writeFile(source + "/plain", "x")
        let visited = try scan(source)
        XCTAssertEqual(visited.map { PathBytes.display($0.path) }, ["src", "src/dir", "src/etc-link", "src/pipe", "src/plain"])
        XCTAssertEqual(visited.map(\.type), [.directory, .directory, .symlink, .fifo, .file])
    }

    func testSingleFileSource() throws {
        try writeFile(root + "/lone.txt", "x")
        let visited = try scan(root + "/lone.txt")
        XCTAssertEqual(visited.map { PathBytes.display($0.path) }, ["lone.txt"])
        XCTAssertEqual(visited.map(\.type), [.file])
    }

    // MARK: Excludes

    func testExcludesPruneDirectories() throws {
        let source = root + "/src"
        try writeFile(source + "/build/out.o", "x")
        try writeFile(source + "/build/deep/more.o", "x")
        try writeFile(source + "/keep.txt", "x")
        try writeFile(source + "/debug.log", "x")
        try writeFile(source + "/sub/trace.log", "x")
        try writeFile(source + "/sub/notes.md", "x")
        let options = ScanOptions(excludes: try ExcludeRules(patterns: ["build", "*.log"]))
        XCTAssertEqual(try scannedPaths(source, options: options), ["src", "src/keep.txt", "src/sub", "src/sub/notes.md"])
    }

    func testAnchoredExcludeIsRelativeToTheSource() throws {
        let source = root + "/src"
        try writeFile(source + "/tmp/a", "x")
        try writeFile(source + "/sub/tmp/b", "x")
        let options = ScanOptions(excludes: try ExcludeRules(patterns: ["/tmp/"]))
        XCTAssertEqual(try scannedPaths(source, options: options), ["src", "src/sub", "src/sub/tmp", "src/sub/tmp/b"])
    }

    func testExcludeCachesKeepsTagAndFolderButNotContents() throws {
        let source = root + "/src"
        let signature = "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag.\n"
        try writeFile(source + "/cache/CACHEDIR.TAG", signature)
        try writeFile(source + "/cache/big.bin", "x")
        try writeFile(source + "/cache/sub/inner", "x")
        try writeFile(source + "/fake/CACHEDIR.TAG", "Signature: not the right one\n")
        try writeFile(source + "/fake/data", "x")
        try writeFile(source + "/other", "x")
        let options = ScanOptions(excludes: try ExcludeRules(patterns: []), excludeCaches: true)
        XCTAssertEqual(try scannedPaths(source, options: options),
                       ["src", "src/cache", "src/cache/CACHEDIR.TAG", "src/fake", "src/fake/CACHEDIR.TAG", "src/fake/data", "src/other"])
        // Without the option, everything is there.
        XCTAssertEqual(try scannedPaths(source).count, 10)
        // A source that is itself a cache folder keeps only its tag.
        XCTAssertEqual(try scannedPaths(source + "/cache", options: options), ["src/cache", "src/cache/CACHEDIR.TAG"])
    }

    func testExcludeIfPresent() throws {
        let source = root + "/src"
        try writeFile(source + "/private/.nobackup", "")
        try writeFile(source + "/private/secret", "x")
        try writeFile(source + "/private/deep/more", "x")
        try writeFile(source + "/public/file", "x")
        let options = ScanOptions(excludes: try ExcludeRules(patterns: []), excludeIfPresent: [".nobackup", "NOBACKUP"])
        XCTAssertEqual(try scannedPaths(source, options: options),
                       ["src", "src/private", "src/private/.nobackup", "src/public", "src/public/file"])
    }

    // MARK: Raw names

    func testNamesThatAreNotUTF8AreVisited() throws {
        let source = root + "/src"
        try writeFile(source + "/a", "x")
        let oddFile: [UInt8] = [0x66, 0xff, 0x67]
        let oddDirectory: [UInt8] = [0x80, 0xfe]
        try createFile(named: oddFile, in: source, contents: [1, 2, 3])
        let directory = PathBytes.join(bytes(source), oddDirectory)
        XCTAssertEqual(PathBytes.syscall(directory) { mkdir($0, 0o755) }, 0)
        try createFile(at: PathBytes.join(directory, [0xff]), contents: [4])
        let visited = try scan(source)
        let src = bytes("src/")
        XCTAssertEqual(visited.map(\.path), [bytes("src"), bytes("src/a"), src + oddFile, src + oddDirectory,
                                              src + oddDirectory + [0x2f, 0xff]])
        XCTAssertEqual(visited.map(\.type), [.directory, .file, .file, .directory, .file])
        XCTAssertEqual(visited.map { PathBytes.display($0.path) }.last, "src/\\x80\\xfe/\\xff")
    }

    // MARK: Cancellation

    func testCancelledScanThrowsInterrupted() throws {
        let source = root + "/src"
        try writeFile(source + "/a/b", "x")
        let flag = CancellationFlag()
        flag.cancel()
        XCTAssertThrowsError(try scan(source, cancellation: flag)) { error in
            XCTAssertEqual(error as? Interruption, Interruption())
        }
    }
}
