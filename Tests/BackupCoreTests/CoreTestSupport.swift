import Foundation
@testable import KeepsakeStorage
@testable import KeepsakeScan
@testable import KeepsakeModel
import KeepsakeSupport
import XCTest

@testable import BackupCore

// MARK: - Temporary directories

/// A fresh directory under the system temporary folder, with its real path (no symlinks),
/// so paths the engine resolves with `realpath` compare equal to the test's own.
func makeTemporaryDirectory(_ label: String) throws -> String {
    let base = NSTemporaryDirectory().isEmpty ? "/tmp" : NSTemporaryDirectory()
    var template = Array((base + "/keepsake-tests-\(label)-XXXXXX").utf8CString)
    let created = template.withUnsafeMutableBufferPointer { buffer -> Bool in
        guard let address = buffer.baseAddress else { return false }
        return mkdtemp(address) != nil
    }
    guard created else { throw CocoaError(.fileWriteUnknown) }
    let path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    guard let resolved = realpath(path, nil) else { return path }
    defer { free(resolved) }
    return String(cString: resolved)
}

/// Removes a tree made by a test, making read-only folders writable first.
func removeTemporaryDirectory(_ path: String) {
    guard !path.isEmpty, FileManager.default.fileExists(atPath: path) else { return }
    if let enumerator = FileManager.default.enumerator(atPath: path) {
        for case let relative as String in enumerator {
            chmod(path + "/" + relative, 0o700)
        }
    }
    try? FileManager.default.removeItem(atPath: path)
}

// MARK: - Bytes

/// Fails unless `actual` holds exactly `expected`, naming the first difference. Compared with
/// memcmp and reported in one line: a byte-by-byte comparison of megabytes takes seconds in a
/// debug build, and XCTAssertEqual would print both in full.
func assertSameBytes(_ actual: ArraySlice<UInt8>, _ expected: ArraySlice<UInt8>, _ message: @autoclosure () -> String = "",
                     file: StaticString = #filePath, line: UInt = #line) {
    let same = actual.count == expected.count && actual.withUnsafeBytes { left in
        expected.withUnsafeBytes { right in
            guard let a = left.baseAddress, let b = right.baseAddress else { return true }
            return memcmp(a, b, left.count) == 0
        }
    }
    if same { return }
    let first = zip(actual, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        ?? min(actual.count, expected.count)
    XCTFail("\(message()): \(actual.count) bytes where \(expected.count) were expected, differing from offset \(first) on",
            file: file, line: line)
}

// MARK: - Files

/// Writes `contents` to `path`, creating the parent folders.
func writeFile(_ path: String, _ contents: String) throws {
    try writeFile(path, bytes: Array(contents.utf8))
}

/// Writes raw bytes to `path`, creating the parent folders.
func writeFile(_ path: String, bytes: [UInt8]) throws {
    let parent = (path as NSString).deletingLastPathComponent
    try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
    try Data(bytes).write(to: URL(fileURLWithPath: path))
}

/// Creates a file whose name is raw bytes (not necessarily UTF-8) inside `directory`.
func createFile(named name: [UInt8], in directory: String, contents: [UInt8] = []) throws {
    try createFile(at: PathBytes.join(PathBytes.from(directory), name), contents: contents)
}

/// Creates a file at a raw-byte path (not necessarily UTF-8).
func createFile(at full: [UInt8], contents: [UInt8] = []) throws {
    let fd = PathBytes.syscall(full) { open($0, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644) }
    guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    defer { close(fd) }
    let code = contents.withUnsafeBytes { FileDescriptorIO.writeAll(fd, $0) }
    guard code == 0 else { throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO) }
}

/// The raw bytes of the file at `path` (which may hold non-UTF-8 bytes).
func readFileBytes(_ path: [UInt8]) throws -> [UInt8] {
    let fd = PathBytes.syscall(path) { open($0, O_RDONLY | O_CLOEXEC) }
    guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    let source = FileByteSource(fd: fd, name: PathBytes.display(path))
    defer { source.close() }
    return try source.readAll(limit: 1 << 30)
}

/// The raw names in a directory (everything but `.` and `..`), sorted.
func rawDirectoryNames(_ path: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
}

/// `lstat` of a path, or nil.
func lstatInfo(_ path: String) -> stat? {
    var info = stat()
    return lstat(path, &info) == 0 ? info : nil
}

// MARK: - Errors

/// Runs `body`, expecting it to throw; returns the error (or fails the test).
@discardableResult
func assertThrows<T>(_ body: @autoclosure () throws -> T, _ message: String = "",
                     file: StaticString = #filePath, line: UInt = #line) -> Error? {
    do {
        let value = try body()
        XCTFail("expected an error but got \(value) \(message)", file: file, line: line)
        return nil
    } catch {
        return error
    }
}

// MARK: - Engine helpers

/// Scan options with no excludes.
func noExcludes() throws -> ScanOptions {
    ScanOptions(excludes: try ExcludeRules(patterns: []))
}

/// A fixed instant: `2024-01-01T00:00:00Z` plus `days`.
func fixedDate(days: Double = 0, seconds: Double = 0) -> Date {
    Date(timeIntervalSince1970: 1_704_067_200 + days * 86_400 + seconds)
}

/// The archive path the engine gives an absolute local path (without the leading `/`).
func archivePath(_ absolute: String) -> [UInt8] {
    Array(PathBytes.from(absolute).drop(while: { $0 == UInt8(ascii: "/") }))
}

// MARK: - Events

/// Collects what an engine reports. Events other than warnings and progress are kept as
/// their descriptions, so tests can look for a message whatever kind of event carries it.
final class EventRecorder: EngineEventSink {
    private(set) var warnings: [PathWarning] = []
    private(set) var messages: [String] = []
    private(set) var progressReports = 0

    func handle(_ event: EngineEvent) {
        if case .warning(let warning) = event {
            warnings.append(warning)
        } else if case .progress = event {
            progressReports += 1
        } else {
            messages.append(String(describing: event))
        }
    }
}
