import Foundation
@testable import KeepsakeRclone
import KeepsakeSupport
import XCTest

@testable import BackupCore

/// The child-process runner under the rclone backend, with ordinary programs.
final class ChildProcessTests: KeepsakeTestCase {
    // MARK: Helpers

    /// Runs `/bin/sh -c script` to its end; returns its output and the process.
    private func shell(_ script: String, input: [UInt8]? = nil, errorLimit: Int = 64 << 10) throws -> (String, ChildProcess) {
        let process = try ChildProcess(executable: "/bin/sh", arguments: ["-c", script], environment: ["PATH": "/usr/bin:/bin"],
                                       input: input == nil ? .null : .pipe, output: .pipe, errorLimit: errorLimit)
        if let input { try input.withUnsafeBytes { try process.write($0) } }
        var output: [UInt8] = []
        try process.finish(collectingOutputInto: &output, limit: 1 << 20)
        return (String(decoding: output, as: UTF8.self), process)
    }

    override func tearDownWithError() throws {
        XCTAssertEqual(RcloneBackendChecks.leftoverChildren(command: nil), [], "no child is left running")
        try super.tearDownWithError()
    }

    // MARK: Tests

    func testArgumentsArePassedAsTheyAreWithoutAShell() throws {
        let process = try ChildProcess(executable: "/usr/bin/printf", arguments: ["%s|", "a b", "$HOME", "*", "; rm -rf /"],
                                       environment: [:], input: .null, output: .pipe)
        var output: [UInt8] = []
        XCTAssertEqual(try process.finish(collectingOutputInto: &output, limit: 100), .exited(0))
        XCTAssertEqual(String(decoding: output, as: UTF8.self), "a b|$HOME|*|; rm -rf /|")
    }

    func testInputOutputStatusAndEnvironment() throws {
        let (output, process) = try shell("tr a-z A-Z; echo \"$GREETING\"; exit 3", input: Array("hello\n".utf8))
        XCTAssertEqual(output, "HELLO\n\n", "only the environment given")
        XCTAssertEqual(process.termination, .exited(3))
        let (more, _) = try shell("cat | wc -c", input: [UInt8](repeating: 1, count: 3 << 20))
        XCTAssertEqual(more.trimmingCharacters(in: .whitespacesAndNewlines), "\(3 << 20)", "more than a pipe holds")
    }

    func testStandardErrorKeepsItsEndUpToTheLimit() throws {
        // Much more on standard error than a pipe holds, while the input is still being read.
        let (_, process) = try shell("head -c 300000 /dev/zero | tr '\\0' x >&2; echo END >&2; cat >/dev/null",
                                     input: [UInt8](repeating: 0, count: 1 << 20), errorLimit: 1000)
        XCTAssertEqual(process.termination, .exited(0))
        XCTAssertEqual(process.standardError.utf8.count, 1000)
        XCTAssertTrue(process.standardError.hasSuffix("xxxEND\n"))
    }

    func testChildInheritsNoDescriptorSignalOrGroupOfOurs() throws {
        // A descriptor opened without O_CLOEXEC, and SIGPIPE ignored (as keepsake does).
        let leaked = open("/dev/null", O_RDONLY)
        defer { close(leaked) }
        let previous = signal(SIGPIPE, SIG_IGN)
        defer { signal(SIGPIPE, previous) }
        let (output, process) = try shell("ls /proc/$$/fd; grep SigIgn /proc/$$/status; cut -d' ' -f5 /proc/$$/stat")
        let lines = output.split(separator: "\n").map(String.init)
        XCTAssertEqual(Array(lines.prefix(while: { Int($0) != nil })).sorted(), ["0", "1", "2"], output)
        // No standard signal (1-31) ignored; glibc keeps its own above them out of reach.
        let ignored = lines.first { $0.hasPrefix("SigIgn:") }.flatMap { UInt64($0.dropFirst(7).trimmingCharacters(in: .whitespaces), radix: 16) }
        XCTAssertEqual(ignored.map { $0 & 0x7FFF_FFFF }, 0, "\(lines)")
        XCTAssertEqual(lines.last, String(process.pid), "a process group of its own")
    }

    func testMissingProgramIsNotStarted() {
        XCTAssertThrowsError(try ChildProcess(executable: "/nonexistent/program", arguments: [], environment: [:], input: .pipe,
                                              output: .pipe)) { error in
            XCTAssertEqual(error as? ChildProcess.Failure, .notStarted(FileDescriptorIO.message(ENOENT)))
        }
    }

    func testWritingToAnEndedChildFailsWithEPIPE() throws {
        let previous = signal(SIGPIPE, SIG_IGN)
        defer { signal(SIGPIPE, previous) }
        let process = try ChildProcess(executable: "/bin/true", arguments: [], environment: [:], input: .pipe, output: .null)
        let bytes = [UInt8](repeating: 1, count: 1 << 20)
        XCTAssertThrowsError(try bytes.withUnsafeBytes { try process.write($0) }) { error in
            XCTAssertEqual(error as? ChildProcess.Failure, .io(EPIPE))
        }
        XCTAssertEqual(try process.finish(), .exited(0))
    }

    func testCancellationKillsAChildThatKeepsUsWaiting() throws {
        let cancellation = CancellationFlag()
        let process = try ChildProcess(executable: "/bin/sleep", arguments: ["30"], environment: [:], input: .null, output: .pipe,
                                       cancellation: cancellation)
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { cancellation.cancel() }
        let started = Date()
        var buffer = [UInt8](repeating: 0, count: 10)
        XCTAssertThrowsError(try buffer.withUnsafeMutableBytes { _ = try process.read(into: $0) }) { error in
            XCTAssertEqual(error as? ChildProcess.Failure, .cancelled)
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 5)
        XCTAssertEqual(process.termination, .signaled(SIGKILL))
    }

    func testTerminateKillsAndReapsOnce() throws {
        let process = try ChildProcess(executable: "/bin/sleep", arguments: ["30"], environment: [:], input: .pipe, output: .pipe)
        process.terminate()
        process.terminate()
        XCTAssertEqual(process.termination, .signaled(SIGKILL))
        XCTAssertEqual(kill(process.pid, 0), -1, "reaped: the pid is gone")
    }
}
