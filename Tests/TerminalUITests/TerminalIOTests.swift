import XCTest
import Glibc
@testable import TerminalUI

/// ConsoleWriter on pipes, and TerminalMode / TerminalPromptIO on a pseudo-terminal.
final class TerminalIOTests: KeepsakeTestCase {

    // MARK: ConsoleWriter

    func testWriterWritesEverythingToThePipe() throws {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        defer { close(fds[0]) }
        let writer = ConsoleWriter(fileDescriptor: fds[1])
        XCTAssertTrue(writer.write("사진 🎉\n"))
        XCTAssertTrue(writer.writeLine("line"))
        XCTAssertTrue(writer.write(Text("text"), in: .plain()))
        XCTAssertTrue(writer.write(""))
        close(fds[1])
        XCTAssertEqual(readAll(fds[0]), "사진 🎉\nline\ntext\n")
    }

    func testWriterReportsBrokenPipeWithoutCrashing() {
        ConsoleWriter.ignoreBrokenPipeSignal()
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        close(fds[0])
        defer { close(fds[1]) }
        XCTAssertFalse(ConsoleWriter(fileDescriptor: fds[1]).write("nobody reads this"))
        XCTAssertFalse(ConsoleWriter(fileDescriptor: -1).write("bad descriptor"))
    }

    func testLargeWritesArriveWhole() {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        let big = String(repeating: "0123456789", count: 100_000)  // larger than a pipe buffer
        let writeEnd = fds[1]
        let thread = Thread {
            ConsoleWriter(fileDescriptor: writeEnd).write(big)
            close(writeEnd)
        }
        thread.start()
        XCTAssertEqual(readAll(fds[0]).count, big.count)
        close(fds[0])
    }

    // MARK: TerminalMode on a pseudo-terminal

    func testModesChangeAndRestoreTerminalSettings() throws {
        let (master, slave) = try openPseudoTerminal()
        defer { close(master); close(slave) }
        let before = attributes(slave)
        XCTAssertNotEqual(before.c_lflag & tcflag_t(ECHO), 0)

        try TerminalMode.noEcho.run(on: slave) {
            XCTAssertEqual(attributes(slave).c_lflag & tcflag_t(ECHO), 0)
            XCTAssertNotEqual(attributes(slave).c_lflag & tcflag_t(ICANON), 0)
        }
        try TerminalMode.raw.run(on: slave) {
            let raw = attributes(slave)
            XCTAssertEqual(raw.c_lflag & tcflag_t(ECHO | ICANON), 0)
            XCTAssertNotEqual(raw.c_lflag & tcflag_t(ISIG), 0, "Ctrl-C must still raise SIGINT")
        }
        struct Boom: Error {}
        XCTAssertThrowsError(try TerminalMode.raw.run(on: slave) { throw Boom() })
        let after = attributes(slave)
        XCTAssertEqual(after.c_lflag, before.c_lflag)
        XCTAssertEqual(after.c_iflag, before.c_iflag)
    }

    func testModeOnNonTerminalThrows() {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        defer { close(fds[0]); close(fds[1]) }
        XCTAssertThrowsError(try TerminalMode.noEcho.run(on: fds[0]) {}) { error in
            guard case .terminalUnavailable = error as? PromptError else {
                return XCTFail("unexpected \(error)")
            }
        }
    }

    func testTerminalPromptIOReadsLinesAndKeysFromAPseudoTerminal() throws {
        let (master, slave) = try openPseudoTerminal()
        defer { close(master); close(slave) }
        let io = TerminalPromptIO(inputDescriptor: slave, output: ConsoleWriter(fileDescriptor: slave))
        XCTAssertTrue(io.isInteractive)

        _ = ConsoleWriter(fileDescriptor: master).write("alice\n")
        XCTAssertEqual(try io.readLine(echo: true), "alice")

        let secret = try TerminalMode.noEcho.run(on: slave) { () -> String? in
            _ = ConsoleWriter(fileDescriptor: master).write("s3cret\n")
            return try io.readLine(echo: true)  // already in no-echo mode
        }
        XCTAssertEqual(secret, "s3cret")

        let index = try io.withRawInput { () -> [UInt8] in
            _ = ConsoleWriter(fileDescriptor: master).write("\u{1B}[B")
            return try io.readKeyBytes()
        }
        XCTAssertEqual(PickerState.keys(from: index), [.down])
    }

    // MARK: Helpers

    private func readAll(_ fd: Int32) -> String {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            data += buffer.prefix(count)
        }
        return String(decoding: data, as: UTF8.self)
    }

    private func attributes(_ fd: Int32) -> termios {
        var value = termios()
        _ = tcgetattr(fd, &value)
        return value
    }

    /// Opens a pseudo-terminal pair through /dev/ptmx (posix_openpt and friends are not
    /// visible to Swift without _XOPEN_SOURCE, so the two Linux ioctls are used directly).
    private func openPseudoTerminal() throws -> (master: Int32, slave: Int32) {
        let master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
        guard master >= 0 else { throw XCTSkip("no pseudo-terminals here") }
        let unlockRequest: UInt = 0x4004_5431  // TIOCSPTLCK
        let numberRequest: UInt = 0x8004_5430  // TIOCGPTN
        var unlock: Int32 = 0
        var number: UInt32 = 0
        guard ioctl(master, unlockRequest, &unlock) == 0, ioctl(master, numberRequest, &number) == 0 else {
            close(master)
            throw XCTSkip("pseudo-terminal set-up failed")
        }
        let slave = open("/dev/pts/\(number)", O_RDWR | O_NOCTTY)
        guard slave >= 0 else {
            close(master)
            throw XCTSkip("cannot open /dev/pts/\(number)")
        }
        return (master, slave)
    }
}
