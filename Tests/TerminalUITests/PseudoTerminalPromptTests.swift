import Foundation
import Glibc
import XCTest
@testable import TerminalUI

/// The secret prompt on a real pseudo-terminal (posix_openpt): no echo while typing, a
/// confirmation, and the terminal's echo restored afterwards.
final class PseudoTerminalPromptTests: KeepsakeTestCase {
    // MARK: Pseudo-terminal

    private var master: Int32 = -1
    private var slave: Int32 = -1

    override func setUpWithError() throws {
        try super.setUpWithError()
        // /dev/ptmx with the two ioctls behind posix_openpt/unlockpt/ptsname (which Swift's
        // Glibc module does not export).
        master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
        var unlock: Int32 = 0
        var number: UInt32 = 0
        let tiocsptlck: UInt = 0x4004_5431
        let tiocgptn: UInt = 0x8004_5430
        guard master >= 0, ioctl(master, tiocsptlck, &unlock) == 0, ioctl(master, tiocgptn, &number) == 0 else {
            throw XCTSkip("no pseudo-terminals on this machine")
        }
        slave = open("/dev/pts/\(number)", O_RDWR | O_NOCTTY)
        XCTAssertGreaterThanOrEqual(slave, 0)
    }

    override func tearDown() {
        if slave >= 0 { close(slave) }
        if master >= 0 { close(master) }
        super.tearDown()
    }

    /// Reads what the program wrote to the terminal until `text` shows up.
    private func readUntil(_ text: String, into transcript: inout String) throws {
        try readUntil(into: &transcript) { $0.contains(text) }
    }

    /// Reads what the program wrote to the terminal until `done` holds; after 10 s the test
    /// fails (never skips: a prompt that stops answering is a bug).
    private func readUntil(into transcript: inout String, _ done: (String) -> Bool) throws {
        let deadline = Date().addingTimeInterval(10)
        var buffer = [UInt8](repeating: 0, count: 1024)
        while !done(transcript) {
            guard Date() < deadline else { throw PromptTimeout(transcript: transcript) }
            var poller = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { read(master, $0.baseAddress, $0.count) }
            if count > 0 { transcript += String(decoding: buffer[0..<count], as: UTF8.self) }
        }
    }

    private func type(_ text: String) {
        _ = text.utf8CString.withUnsafeBufferPointer { write(master, $0.baseAddress, $0.count - 1) }
    }

    private func echoIsOn() -> Bool {
        var attributes = termios()
        tcgetattr(slave, &attributes)
        return attributes.c_lflag & tcflag_t(ECHO) != 0
    }

    /// The answer from the prompting thread.
    private final class Answer: @unchecked Sendable {
        private let lock = NSLock()
        private var stored: Result<String, Error>?
        var value: Result<String, Error>? {
            get { lock.withLock { stored } }
            set { lock.withLock { stored = newValue } }
        }
    }

    // MARK: Tests

    func testSecretIsNotEchoedIsConfirmedAndEchoComesBack() throws {
        XCTAssertTrue(echoIsOn(), "a fresh terminal echoes")
        let io = TerminalPromptIO(inputDescriptor: slave, output: ConsoleWriter(fileDescriptor: slave))
        XCTAssertTrue(io.isInteractive)
        let answer = Answer()
        let done = DispatchSemaphore(value: 0)
        let field = Field.secret("Passphrase", confirm: true)
        DispatchQueue.global().async {
            answer.value = Result { try field.ask(using: io, context: .plain(width: 80)) }
            done.signal()
        }
        var transcript = ""
        try readUntil("Passphrase", into: &transcript)
        usleep(100_000)
        XCTAssertFalse(echoIsOn(), "echo is off while the secret is typed")
        type("correct horse\n")
        // The confirmation prompt.
        try readUntil(into: &transcript) { $0.components(separatedBy: "assphrase").count >= 3 }
        usleep(100_000)
        XCTAssertFalse(echoIsOn(), "echo is off for the confirmation too")
        type("correct horse\n")
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(try answer.value?.get(), "correct horse")
        XCTAssertFalse(transcript.contains("correct horse"), "the secret never appears on the screen: \(transcript)")
        XCTAssertTrue(echoIsOn(), "echo is restored after the prompt")
    }

    func testEndOfInputOnATerminalThrowsInsteadOfHanging() throws {
        let io = TerminalPromptIO(inputDescriptor: slave, output: ConsoleWriter(fileDescriptor: slave))
        let answer = Answer()
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            answer.value = Result { try Field.text("Name").ask(using: io, context: .plain(width: 80)) }
            done.signal()
        }
        var transcript = ""
        try readUntil("Name", into: &transcript)
        type("\u{04}") // Ctrl-D at the start of a line: end of input
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertThrowsError(try answer.value?.get()) { error in
            XCTAssertEqual(error as? PromptError, .endOfInput(prompt: "Name"))
        }
    }
}

/// The prompt did not write what a test waited for within 10 s (a failure, not a skip).
private struct PromptTimeout: Error, CustomStringConvertible {
    let transcript: String
    var description: String { "the prompt did not answer within 10 s; transcript: \(transcript.debugDescription)" }
}
