import KeepsakeTestSupport
import XCTest
@testable import TerminalUI

// test-tag(threads): the progress renderer's thread
final class ProgressTests: KeepsakeTestCase {

    private let snapshot = ProgressBar(
        fraction: 0.4237, filesDone: 1234, bytesDone: 1 << 30, totalBytes: 3 << 30,
        bytesPerSecond: 45e6, eta: 42, currentItem: "/home/me/Photos/2024/summer/IMG_0001.jpg"
    )

    // MARK: ProgressBar

    func testLineAtEachWidth() {
        XCTAssertEqual(plain(snapshot, width: 40), "████▏░░░░░   42%  /home/me/Ph…G_0001.jpg\n")
        XCTAssertEqual(
            plain(snapshot, width: 80),
            "████████▍░░░░░░░░░░░   42%  1.0 GiB / 3.0 GiB  ETA 0:42  /home/me/Ph…MG_0001.jpg\n"
        )
        XCTAssertEqual(
            plain(snapshot, width: 120),
            "████████████▋░░░░░░░░░░░░░░░░░   42%  1.0 GiB / 3.0 GiB  1,234 files  42.9 MiB/s  ETA 0:42  /home/me/Photo…/IMG_0001.jpg\n"
        )
        assertRenderingRules(snapshot)
    }

    func testUnknownFractionBouncesWithTick() {
        let bar = ProgressBar(filesDone: 3, bytesDone: 5000, currentItem: "사진.jpg", tick: 5)
        XCTAssertEqual(plain(bar, width: 40), "░░░░░███░░  4.9 KiB  3 files  사진.jpg\n")
        XCTAssertEqual(plain(bar, width: 80), "░░░░░███░░░░░░░░░░░░  4.9 KiB  3 files  사진.jpg\n")
        var back = bar
        back.tick = 9  // travel is 7 cells, so tick 9 is on the way back at 5
        XCTAssertEqual(plain(back, width: 40), "░░░░░███░░  4.9 KiB  3 files  사진.jpg\n")
        back.tick = 0
        XCTAssertEqual(plain(back, width: 40), "███░░░░░░░  4.9 KiB  3 files  사진.jpg\n")
    }

    func testFullAndEmptyBarsAndClamping() {
        XCTAssertEqual(ProgressBar(fraction: 1.5).line(in: .plain(width: 40)), "██████████  100%  0 B  0 files")
        XCTAssertEqual(ProgressBar(fraction: 0).line(in: .plain(width: 40)), "░░░░░░░░░░    0%  0 B  0 files")
        XCTAssertNil(ProgressBar(fraction: .nan).fraction)
    }

    func testNarrowWidthsNeverOverflow() {
        for width in 1...45 {
            let line = snapshot.line(in: .plain(width: width))
            XCTAssertLessThanOrEqual(DisplayWidth.width(of: line), width, "width \(width): \(line)")
        }
        // The current item outlives the bar: knowing what is slow matters more.
        XCTAssertEqual(snapshot.line(in: .plain(width: 20)), " 42%  /home/m…01.jpg")
    }

    func testPlainLineForLogs() {
        XCTAssertEqual(
            snapshot.plainLine(),
            "42%  1.0 GiB / 3.0 GiB  1,234 files  42.9 MiB/s  ETA 0:42  /home/me/Photos/2024/summer/IMG_0001.jpg"
        )
        XCTAssertEqual(ProgressBar(filesDone: 1, bytesDone: 10, currentItem: "a\nb").plainLine(), "10 B  1 file  a b")
    }

    // MARK: ProgressRenderer on a TTY

    private func makeRenderer(tty: Bool, periodic: Double? = nil) -> (ProgressRenderer, OutputRecorder, FakeClock) {
        let recorder = OutputRecorder()
        let clock = FakeClock()
        let renderer = ProgressRenderer(
            isTTY: tty,
            context: .plain(width: 41),
            periodicPlainLines: periodic,
            clock: { clock.now },
            writer: { recorder.record($0) }
        )
        return (renderer, recorder, clock)
    }

    func testRedrawsInPlaceAtMostTenTimesASecond() {
        let (renderer, recorder, clock) = makeRenderer(tty: true)
        renderer.update(ProgressBar(fraction: 0.1))
        renderer.update(ProgressBar(fraction: 0.2))   // too soon: skipped
        clock.advance(0.05)
        renderer.update(ProgressBar(fraction: 0.3))   // still too soon
        clock.advance(0.06)
        renderer.update(ProgressBar(fraction: 0.4))   // 0.11 s after the first frame
        XCTAssertEqual(recorder.all, [
            "\r\u{1B}[2K█░░░░░░░░░   10%  0 B  0 files",
            "\r\u{1B}[2K████░░░░░░   40%  0 B  0 files",
        ])
        renderer.finish()
        XCTAssertEqual(recorder.all.last, "\r\u{1B}[2K")
        renderer.update(ProgressBar(fraction: 0.9))   // ignored after finish
        XCTAssertEqual(recorder.all.count, 3)
    }

    func testPrintLineAboveTheBarAndFinishMessage() {
        let (renderer, recorder, _) = makeRenderer(tty: true)
        renderer.update(ProgressBar(fraction: 0.5, currentItem: "a"))
        renderer.printLine("warning: cannot read b")
        renderer.finish(message: "done")
        XCTAssertEqual(recorder.text,
            "\r\u{1B}[2K█████░░░░░   50%  0 B  0 files  a"
            + "\r\u{1B}[2Kwarning: cannot read b\n"
            + "\r\u{1B}[2K█████░░░░░   50%  0 B  0 files  a"
            + "\r\u{1B}[2K"
            + "done\n")
    }

    // MARK: ProgressRenderer without a TTY

    func testSilentWithoutTTY() {
        let (renderer, recorder, clock) = makeRenderer(tty: false)
        for step in 0..<50 {
            clock.advance(1)
            renderer.update(ProgressBar(fraction: Double(step) / 50))
        }
        renderer.finish()
        XCTAssertEqual(recorder.all, [])
    }

    func testPeriodicPlainLinesWithoutTTY() {
        let (renderer, recorder, clock) = makeRenderer(tty: false, periodic: 10)
        renderer.update(ProgressBar(fraction: 0.1, filesDone: 1))  // too early
        clock.advance(10)
        renderer.update(ProgressBar(fraction: 0.2, filesDone: 2))
        clock.advance(5)
        renderer.update(ProgressBar(fraction: 0.3, filesDone: 3))
        clock.advance(5)
        renderer.update(ProgressBar(fraction: 0.4, filesDone: 4))
        renderer.printLine("warning: x")
        renderer.finish(message: "done")
        XCTAssertEqual(recorder.text, "20%  0 B  2 files\n40%  0 B  4 files\nwarning: x\ndone\n")
        XCTAssertFalse(recorder.text.contains("\u{1B}"))
    }

    func testConcurrentUpdatesAreSafe() {
        let (renderer, recorder, clock) = makeRenderer(tty: true)
        DispatchQueue.concurrentPerform(iterations: 200) { index in
            if index % 10 == 0 { clock.advance(0.2) }
            renderer.update(ProgressBar(fraction: Double(index) / 200))
        }
        renderer.finish()
        XCTAssertFalse(recorder.all.isEmpty)
        XCTAssertEqual(recorder.all.last, ProgressRenderer.eraseLine)
    }

    func testCapabilitiesInitializerAnimatesOnlyOnCapableStderr() {
        let tty = TerminalCapabilities(environment: ["TERM": "xterm"], stdinIsTTY: false, stdoutIsTTY: false, stderrIsTTY: true)
        XCTAssertTrue(ProgressRenderer(capabilities: tty, output: CapturedOutput()).isTTY)
        XCTAssertTrue(ProgressRenderer(capabilities: tty, output: CapturedOutput()).context.colorEnabled)
        let dumb = TerminalCapabilities(environment: ["TERM": "dumb"], stdinIsTTY: false, stdoutIsTTY: false, stderrIsTTY: true)
        XCTAssertFalse(ProgressRenderer(capabilities: dumb, output: CapturedOutput()).isTTY)
    }
}
