import Foundation
import XCTest

/// The base of every test case. Under CI (`CI=true`) a skipped test is a failure unless
/// `Tests/skip-allowlist.txt` names it with a reason: a skip there would hide a branch that
/// CI, running as root on Debian with every package installed, must run. Elsewhere a skip
/// stays a skip. (Every test target names it `KeepsakeTestCase` through a type alias;
/// .ci/run checks that no test class bypasses it.)
open class KeepsakeTestCase: XCTestCase {
    /// True when this run is CI's AddressSanitizer or ThreadSanitizer run, or its local
    /// reproduction (Scripts/test --sanitize sets ASAN_OPTIONS or TSAN_OPTIONS): tests that
    /// measure memory allow for the sanitizer's, and tests that repeat one check hundreds of
    /// times over make fewer repetitions (each says how many).
    public static var runsUnderSanitizer: Bool {
        let environment = ProcessInfo.processInfo.environment
        return environment["ASAN_OPTIONS"] != nil || environment["TSAN_OPTIONS"] != nil
    }

    override open func invokeTest() {
        super.invokeTest()
        // The run is stopped only after invokeTest returns, so a failure can still be recorded.
        guard testRun?.hasBeenSkipped == true, let refusal = SkipAllowList.refusal(forSkipOf: name) else { return }
        recordFailure(withDescription: refusal, inFile: #filePath, atLine: #line, expected: true)
    }
}

// MARK: - Allow-list

/// `Tests/skip-allowlist.txt`: one line per test that may skip under CI,
/// `TestClass.testMethod  reason`; `#` starts a comment.
public enum SkipAllowList {
    /// Why the skip of `test` ("TestClass.testMethod") is refused, or nil when it may skip.
    public static func refusal(forSkipOf test: String) -> String? {
        let value = ProcessInfo.processInfo.environment["CI"] ?? ""
        guard !["", "0", "false"].contains(value.lowercased()) else { return nil }
        let file = location()
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
            return "skipped under CI=\(value), and the allow-list \(file) cannot be read"
        }
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0]
                .split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.first.map(String.init) == test else { continue }
            return fields.count > 1 ? nil : "skipped under CI=\(value): its line in \(file) gives no reason"
        }
        return "skipped under CI=\(value) and not in \(file): make the test's prerequisite available in CI "
            + "(Scripts/setup) or add the line '\(test)  <reason>'"
    }

    /// The allow-list beside the test targets, found from this source file's path.
    private static func location() -> String {
        var folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while folder.path != "/" && folder.lastPathComponent != "Tests" { folder.deleteLastPathComponent() }
        return folder.appendingPathComponent("skip-allowlist.txt").path
    }
}
