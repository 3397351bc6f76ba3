import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real HTTP proxy on 127.0.0.1 in front of a test server (SeaweedFS), which passes every
/// request through unchanged (Host header and all, so signatures still match) until a test
/// asks it to misbehave: answer the next N requests with `503 SlowDown` (a storm), or cut
/// the body of the next GET halfway and close the connection (a truncated download).
///
/// The test switches modes through the proxy itself: `GET /__fault__/storm/N`,
/// `GET /__fault__/truncate`, `GET /__fault__/pass`; `GET /__fault__/count` answers how many
/// requests were forwarded. It is a python3 program, `fault_proxy.py` beside this file
/// (python3 runs in CI), started and stopped by pid like every test server.
public final class FaultProxy: Sendable {
    // MARK: Properties

    /// `http://127.0.0.1:<port>`: the endpoint to give the client instead of the server's.
    public let endpoint: URL
    /// The proxy's port.
    public let port: UInt16
    /// The python3 process.
    public let process: ServerProcess
    private let directory: URL

    // MARK: Starting

    /// Starts a proxy to `upstream` (`http://127.0.0.1:PORT`).
    public init(upstream: URL) throws {
        guard let upstreamPort = upstream.port else { throw ServerProcess.Failure("fault proxy: \(upstream) has no port") }
        directory = try ScratchDirectory.make("fault-proxy")
        let script = Self.program
        guard FileManager.default.isReadableFile(atPath: script.path) else {
            throw ServerProcess.Failure("fault proxy: its program \(script.path) is missing")
        }
        port = try FreePort.pick()
        endpoint = URL(string: "http://127.0.0.1:\(port)") ?? upstream
        let python = try Self.locate("python3")
        process = try ServerProcess(name: "fault proxy", executable: python,
                                    arguments: [script.path, String(port), String(upstreamPort)],
                                    environment: ServerProcess.inheritedEnvironment(),
                                    logFile: directory.appendingPathComponent("proxy.log"))
        try process.waitForPort(port, timeout: .seconds(20))
    }

    deinit { stop() }

    /// Stops the proxy and removes its files.
    public func stop() {
        _ = process.stop(grace: .seconds(2))
        try? FileManager.default.removeItem(at: directory)
    }

    // MARK: Faults

    /// Answers the next `count` requests with 503 SlowDown (without passing them on).
    public func storm(_ count: Int) throws { try control("storm/\(count)") }

    /// Answers the next `count` requests with 403 AccessDenied whose message holds terminal
    /// escapes (a title change, a screen clear, a colour), as a hostile server may.
    public func denyWithEscapes(_ count: Int) throws { try control("deny/\(count)") }

    /// Makes every listing endless, as a hostile server may: object listings and listings
    /// of unfinished uploads answer `IsTruncated` with the same token or markers each time
    /// (the uploads: one named like Keepsake's archives, one not), and aborts of uploads are
    /// answered here and recorded (`aborted()`).
    public func endlessListings() throws { try control("endless") }

    /// Passes requests on without their `If-None-Match` and `If-Match` headers, as a store
    /// that ignores conditional writes behaves (the server must not check signatures).
    public func ignoreConditions() throws { try control("unconditional") }

    /// The keys of the uploads aborted while listings were endless, in order.
    public func aborted() throws -> [String] {
        try control("aborted").split(separator: "\n").map(String.init)
    }

    /// Cuts the body of the next successful GET halfway, then closes the connection.
    public func truncateNextDownload() throws { try control("truncate") }

    /// Passes everything through again.
    public func pass() throws { try control("pass") }

    /// How many requests were answered with a fault so far.
    public func faultsServed() throws -> Int {
        Int(try control("count").trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    @discardableResult
    private func control(_ command: String) throws -> String {
        let response = try LoopbackHTTP.request("GET", port: port, path: "/__fault__/" + command)
        guard response.status == 200 else { throw ServerProcess.Failure("fault proxy: \(command) answered \(response.status)") }
        return response.text
    }

    private static func locate(_ program: String) throws -> String {
        for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let candidate = folder + "/" + program
            if access(candidate, X_OK) == 0 { return candidate }
        }
        throw ServerProcess.Failure("\(program) is not on PATH")
    }

    // MARK: The program

    /// The proxy's program, beside this file (a real script that can be read and run alone).
    private static let program = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("fault_proxy.py")
}
