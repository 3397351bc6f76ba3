import Foundation
import KeepsakeHashing
import KeepsakeHTTP
import XCTest

@testable import BackupCore

/// `HTTPClient` against a real HTTP/1.1 server on loopback: python3's http.server with the
/// handler in `Fixtures/http_test_server.py`, started per test as a child process and stopped by pid.
final class HTTPClientTests: KeepsakeTestCase {
    private var directory = ""
    private var serverPID: pid_t = 0
    private var port = 0

    // MARK: Server

    override func setUpWithError() throws {
        try super.setUpWithError()
        directory = try makeTemporaryDirectory("http")
        serverPID = try spawn(["/usr/bin/env", "python3", Self.serverProgram, directory + "/port"],
                              log: directory + "/server.log")
        port = try waitForPort(file: directory + "/port")
    }

    override func tearDown() {
        if serverPID > 0 {
            kill(serverPID, SIGKILL)
            var status: Int32 = 0
            while waitpid(serverPID, &status, 0) == -1 && errno == EINTR {}
            serverPID = 0
        }
        removeTemporaryDirectory(directory)
        super.tearDown()
    }

    /// Starts `arguments` with stdin from /dev/null and stdout and stderr into `log`.
    private func spawn(_ arguments: [String], log: String) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        var envp: [UnsafeMutablePointer<CChar>?] = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, arguments[0], &actions, nil, &argv, &envp)
        guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: result) ?? .EIO) }
        return pid
    }

    /// Waits for the server to write its port (it binds port 0, so the kernel picks a free one).
    private func waitForPort(file: String) throws -> Int {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if let text = try? String(contentsOfFile: file, encoding: .utf8), let port = Int(text) { return port }
            var status: Int32 = 0
            if waitpid(serverPID, &status, WNOHANG) == serverPID {
                serverPID = 0
                let log = (try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? ""
                XCTFail("the test server exited: \(log)")
                throw POSIXError(.ECHILD)
            }
            usleep(20_000)
        }
        XCTFail("the test server did not start within 20 s")
        throw POSIXError(.ETIMEDOUT)
    }

    private func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    private func text(_ response: HTTPResponse) -> String { String(decoding: response.body, as: UTF8.self) }

    /// The kind of the `HTTPError` `body` throws (or a failure).
    private func errorKind<T>(_ body: @autoclosure () throws -> T, file: StaticString = #filePath, line: UInt = #line) -> HTTPError.Kind? {
        let error = assertThrows(try body(), file: file, line: line)
        guard let error = error as? HTTPError else {
            XCTFail("expected an HTTPError, got \(String(describing: error))", file: file, line: line)
            return nil
        }
        return error.kind
    }

    // MARK: Collecting and streaming

    func testGetCollectsTheBodyAndReadsHeadersCaseInsensitively() throws {
        let client = try HTTPClient()
        let response = try client.perform(HTTPRequest(method: .get, url: url("/hello")), responseLimit: 1024)
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(text(response), "hello, world")
        XCTAssertEqual(response.value(forHeader: "x-custom-thing"), "Some Value")
        XCTAssertEqual(response.value(forHeader: "X-LOWER"), "lower")
        XCTAssertEqual(response.values(forHeader: "CONTENT-length"), ["12"])
        XCTAssertEqual(response.contentLength, 12)
        XCTAssertNil(response.value(forHeader: "X-Absent"))
    }

    func testStreamingDeliversALargeBodyInManyChunksIntact() throws {
        let client = try HTTPClient()
        let size = 20 << 20
        // The body repeats 0...250; `pattern` is long enough to cover any chunk at any phase.
        let pattern = (0..<(251 * 8192)).map { UInt8($0 % 251) }
        var received = 0, chunks = 0, intact = true
        let response = try client.perform(HTTPRequest(method: .get, url: url("/bytes?n=\(size)"))) { buffer in
            let phase = received % 251
            intact = intact && buffer.count <= pattern.count - phase && pattern.withUnsafeBytes { expected in
                guard let want = expected.baseAddress, let got = buffer.baseAddress else { return false }
                return memcmp(want + phase, got, buffer.count) == 0
            }
            received += buffer.count
            chunks += 1
        }
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(received, size)
        XCTAssertTrue(intact, "the bytes arrived out of order or changed")
        XCTAssertGreaterThan(chunks, 20)
        XCTAssertTrue(response.body.isEmpty, "a streamed body is not also collected")
    }

    func testHeadReadsTheHeadersOnlyAndTheNextGetHasItsBody() throws {
        let client = try HTTPClient()
        let head = try client.perform(HTTPRequest(method: .head, url: url("/bytes?n=12345")), responseLimit: 0)
        XCTAssertEqual(head.status, 200)
        XCTAssertEqual(head.contentLength, 12345)
        XCTAssertTrue(head.body.isEmpty)
        // The handle is reused: HEAD's no-body option must not stay on.
        let get = try client.perform(HTTPRequest(method: .get, url: url("/bytes?n=12345")), responseLimit: 20_000)
        XCTAssertEqual(get.body.count, 12345)
    }

    // MARK: Sending

    func testPutBodiesArriveIntactWithoutExpect() throws {
        let client = try HTTPClient()
        let large = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }
        for body in [large, [UInt8](), Array("x".utf8)] {
            let response = try client.perform(HTTPRequest(method: .put, url: url("/sha256"), body: body), responseLimit: 1024)
            XCTAssertEqual(response.status, 200)
            XCTAssertEqual(text(response), SHA256Hasher.hex(of: body))
            XCTAssertEqual(response.value(forHeader: "X-Method"), "PUT")
            XCTAssertEqual(response.value(forHeader: "X-Received-Length"), String(body.count))
            XCTAssertEqual(response.value(forHeader: "X-Saw-Expect"), "none")
        }
        // No body at all still tells the server the length.
        let none = try client.perform(HTTPRequest(method: .put, url: url("/sha256")), responseLimit: 1024)
        XCTAssertEqual(none.value(forHeader: "X-Received-Length"), "0")
        XCTAssertEqual(text(none), SHA256Hasher.hex(of: []))
    }

    func testPostAndDeleteSendTheirBodies() throws {
        let client = try HTTPClient()
        let body = Array("<Delete><Object><Key>a</Key></Object></Delete>".utf8)
        let post = try client.perform(HTTPRequest(method: .post, url: url("/sha256"), body: body), responseLimit: 1024)
        XCTAssertEqual(text(post), SHA256Hasher.hex(of: body))
        XCTAssertEqual(post.value(forHeader: "X-Method"), "POST")
        XCTAssertEqual(post.value(forHeader: "X-Saw-Content-Type"), "none", "curl's form content type is not added")
        let typed = HTTPRequest(method: .post, url: url("/sha256"), headers: [("Content-Type", "application/xml")], body: body)
        XCTAssertEqual(try client.perform(typed, responseLimit: 1024).value(forHeader: "X-Saw-Content-Type"), "application/xml")
        let empty = try client.perform(HTTPRequest(method: .post, url: url("/sha256")), responseLimit: 1024)
        XCTAssertEqual(empty.value(forHeader: "X-Received-Length"), "0")

        XCTAssertEqual(text(try client.perform(HTTPRequest(method: .delete, url: url("/method")), responseLimit: 64)), "DELETE 0")
        let withBody = HTTPRequest(method: .delete, url: url("/method"), body: Array("hello".utf8))
        XCTAssertEqual(text(try client.perform(withBody, responseLimit: 64)), "DELETE 5")
        XCTAssertEqual(text(try client.perform(HTTPRequest(method: .get, url: url("/method")), responseLimit: 64)), "GET 0")
    }

    func testCustomHeadersReachTheServerInOrder() throws {
        let client = try HTTPClient()
        let request = HTTPRequest(method: .get, url: url("/headers"), headers: [
            ("X-Amz-Date", "20240101T000000Z"), ("X-Empty", ""), ("Authorization", "AWS4-HMAC-SHA256 Signature=abc"),
        ])
        let lines = text(try client.perform(request, responseLimit: 4096)).split(separator: "\n").map(String.init)
        let date = try XCTUnwrap(lines.firstIndex(of: "X-Amz-Date: 20240101T000000Z"))
        let empty = try XCTUnwrap(lines.firstIndex(of: "X-Empty: "))
        let authorization = try XCTUnwrap(lines.firstIndex(of: "Authorization: AWS4-HMAC-SHA256 Signature=abc"))
        XCTAssertLessThan(date, empty)
        XCTAssertLessThan(empty, authorization)
        XCTAssertTrue(lines.contains("User-Agent: keepsake"))
        XCTAssertFalse(lines.contains { $0.lowercased().hasPrefix("expect") })
    }

    func testRequestsThatCannotBeSentAreRefusedWithoutTheHeaderValue() throws {
        let client = try HTTPClient()
        let injected = HTTPRequest(method: .get, url: url("/hello"), headers: [("Authorization", "secret\r\nX-Injected: 1")])
        let error = try XCTUnwrap(assertThrows(try client.perform(injected, responseLimit: 64)) as? HTTPError)
        XCTAssertEqual(error.kind, .invalidRequest)
        XCTAssertFalse(error.description.contains("secret"), error.description)
        XCTAssertEqual(errorKind(try client.perform(HTTPRequest(method: .get, url: url("/"), headers: [("Bad Name", "v")]),
                                                    responseLimit: 64)), .invalidRequest)
        XCTAssertEqual(errorKind(try client.perform(HTTPRequest(method: .head, url: url("/"), body: [1]), responseLimit: 64)),
                       .invalidRequest)
        XCTAssertEqual(errorKind(try client.perform(HTTPRequest(method: .get, url: "file:///etc/passwd"), responseLimit: 1 << 20)),
                       .invalidRequest)
        XCTAssertEqual(try client.perform(HTTPRequest(method: .get, url: url("/hello")), responseLimit: 64).status, 200)
    }

    // MARK: Responses

    func testErrorStatusesAreResponses() throws {
        let client = try HTTPClient()
        for code in [400, 403, 404, 500, 503] {
            let response = try client.perform(HTTPRequest(method: .get, url: url("/status?code=\(code)")), responseLimit: 1024)
            XCTAssertEqual(response.status, code)
            XCTAssertFalse(response.isSuccess)
            XCTAssertEqual(text(response), "status \(code) body.")
        }
        // Streaming: an error document goes to the response, not the sink.
        var sinkCalls = 0
        let streamed = try client.perform(HTTPRequest(method: .get, url: url("/status?code=404"))) { _ in sinkCalls += 1 }
        XCTAssertEqual(streamed.status, 404)
        XCTAssertEqual(text(streamed), "status 404 body.")
        XCTAssertEqual(sinkCalls, 0)
        // A huge error document is kept only in part, and is not an error.
        let huge = try client.perform(HTTPRequest(method: .get, url: url("/status?code=500&repeat=100000")), responseLimit: 16)
        XCTAssertEqual(huge.status, 500)
        XCTAssertEqual(huge.body.count, 64 * 1024)
        XCTAssertTrue(text(huge).hasPrefix("status 500 body.status 500 body."))
    }

    func testOnlyTheFinalResponseAfterAnInterimOneCounts() throws {
        let client = try HTTPClient()
        let response = try client.perform(HTTPRequest(method: .put, url: url("/interim"), body: [1, 2, 3]), responseLimit: 64)
        XCTAssertEqual(response.status, 201)
        XCTAssertEqual(response.value(forHeader: "X-Final"), "yes")
        XCTAssertNil(response.value(forHeader: "X-Interim"))
        XCTAssertEqual(text(response), "created")
    }

    func testResponseLimit() throws {
        let client = try HTTPClient()
        XCTAssertEqual(try client.perform(HTTPRequest(method: .get, url: url("/bytes?n=1000")), responseLimit: 1000).body.count, 1000)
        XCTAssertEqual(errorKind(try client.perform(HTTPRequest(method: .get, url: url("/bytes?n=1000")), responseLimit: 999)),
                       .responseTooLarge(limit: 999))
        // Without a Content-Length the limit is found as the body arrives.
        XCTAssertEqual(try client.perform(HTTPRequest(method: .get, url: url("/chunked?n=300000")), responseLimit: 300_000).body,
                       (0..<300_000).map { UInt8($0 % 251) })
        XCTAssertEqual(errorKind(try client.perform(HTTPRequest(method: .get, url: url("/chunked?n=300000")), responseLimit: 299_999)),
                       .responseTooLarge(limit: 299_999))
        XCTAssertEqual(try client.perform(HTTPRequest(method: .get, url: url("/hello")), responseLimit: 64).status, 200)
    }

    // MARK: Failures

    func testConnectionRefusedIsTypedAndNamesNoHeaderValue() throws {
        let closed = try closedPort()
        let client = try HTTPClient()
        let request = HTTPRequest(method: .get, url: "http://127.0.0.1:\(closed)/bucket/key",
                                  headers: [("Authorization", "AWS4-HMAC-SHA256 Signature=topsecret")])
        let error = try XCTUnwrap(assertThrows(try client.perform(request, responseLimit: 64)) as? HTTPError)
        XCTAssertEqual(error.kind, .couldNotConnect)
        XCTAssertTrue(error.isTransient)
        XCTAssertTrue(error.description.hasPrefix("GET http://127.0.0.1:\(closed)/bucket/key: could not connect"), error.description)
        XCTAssertFalse(error.description.contains("topsecret"), error.description)
    }

    func testAConnectionBrokenMidResponseIsTyped() throws {
        let client = try HTTPClient()
        var received = 0
        let kind = errorKind(try client.perform(HTTPRequest(method: .get, url: url("/drop"))) { received += $0.count })
        XCTAssertEqual(kind, .connectionReset)
        XCTAssertEqual(received, 100)
        XCTAssertEqual(errorKind(try client.perform(HTTPRequest(method: .get, url: url("/drop")), responseLimit: 4096)),
                       .connectionReset)
        XCTAssertEqual(try client.perform(HTTPRequest(method: .get, url: url("/hello")), responseLimit: 64).status, 200)
    }

    func testABodyIsRewoundWhenCurlResendsOnAFreshConnection() throws {
        let client = try HTTPClient()
        let body = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        XCTAssertEqual(try client.perform(HTTPRequest(method: .get, url: url("/hello")), responseLimit: 64).status, 200)
        // The kept connection gets no answer: curl resends on a new one, reading the body again.
        for method in [HTTPRequest.Method.put, .post] {
            let response = try client.perform(HTTPRequest(method: method, url: url("/fresh-only"), body: body), responseLimit: 1024)
            XCTAssertEqual(response.status, 200)
            XCTAssertEqual(text(response), SHA256Hasher.hex(of: body))
            XCTAssertEqual(response.value(forHeader: "X-Received-Length"), String(body.count))
        }
    }

    func testAStalledResponseIsCutByTheLowSpeedLimit() throws {
        let client = try HTTPClient(settings: HTTPClient.Settings(lowSpeedLimit: 100, lowSpeedTime: .seconds(2)))
        let start = Date()
        XCTAssertEqual(errorKind(try client.perform(HTTPRequest(method: .get, url: url("/stall")), responseLimit: 4096)), .timedOut)
        let elapsed = Date().timeIntervalSince(start)
        XCTAssertGreaterThan(elapsed, 1.5)
        XCTAssertLessThan(elapsed, 6)
        XCTAssertEqual(try client.perform(HTTPRequest(method: .get, url: url("/hello")), responseLimit: 64).status, 200)
    }

    func testTheCancellationHookAbortsASlowDownload() throws {
        let deadline = Date().addingTimeInterval(0.5)
        let client = try HTTPClient(cancellation: { Date() >= deadline })
        var received = 0
        let start = Date()
        XCTAssertEqual(errorKind(try client.perform(HTTPRequest(method: .get, url: url("/slow"))) { received += $0.count }), .cancelled)
        XCTAssertLessThan(Date().timeIntervalSince(start), 2)
        XCTAssertGreaterThan(received, 0)
        XCTAssertLessThan(received, 1200 * 1024)
        // Once set, it stops the next request before it is sent.
        XCTAssertEqual(errorKind(try client.perform(HTTPRequest(method: .get, url: url("/hello")), responseLimit: 64)), .cancelled)
        client.cancellation = nil
        XCTAssertEqual(try client.perform(HTTPRequest(method: .get, url: url("/hello")), responseLimit: 64).status, 200)
    }

    func testAThrowingSinkAbortsTheTransferAndItsErrorIsRethrown() throws {
        struct Full: Error, Equatable {}
        let client = try HTTPClient()
        var received = 0
        let error = assertThrows(try client.perform(HTTPRequest(method: .get, url: url("/bytes?n=\(20 << 20)"))) { buffer in
            received += buffer.count
            if received > 1 << 20 { throw Full() }
        })
        XCTAssertEqual(error as? Full, Full())
        XCTAssertLessThan(received, 20 << 20)
        XCTAssertEqual(try client.perform(HTTPRequest(method: .get, url: url("/hello")), responseLimit: 64).status, 200)
        // A sink cannot start another request on its own client; that error comes back as it is.
        let nested = assertThrows(try client.perform(HTTPRequest(method: .get, url: url("/hello"))) { _ in
            _ = try client.perform(HTTPRequest(method: .get, url: url("/hello")), responseLimit: 64)
        })
        XCTAssertEqual((nested as? HTTPError)?.kind, .invalidRequest)
    }

    func testTheEnvironmentsProxyIsIgnoredUnlessAsked() throws {
        let names = ["http_proxy", "HTTP_PROXY", "no_proxy", "NO_PROXY", "all_proxy", "ALL_PROXY"]
        let saved = names.map { getenv($0).map { String(cString: $0) } }
        defer {
            for (name, value) in zip(names, saved) {
                if let value { setenv(name, value, 1) } else { unsetenv(name) }
            }
        }
        names.forEach { unsetenv($0) }
        setenv("http_proxy", "http://127.0.0.1:\(try closedPort())", 1)
        let direct = try HTTPClient()
        XCTAssertEqual(try direct.perform(HTTPRequest(method: .get, url: url("/hello")), responseLimit: 64).status, 200)
        let proxied = try HTTPClient(settings: HTTPClient.Settings(useEnvironmentProxy: true))
        XCTAssertEqual(errorKind(try proxied.perform(HTTPRequest(method: .get, url: url("/hello")), responseLimit: 64)),
                       .couldNotConnect)
    }

    func testErrorDescriptionsMaskCredentialsInTheURL() {
        let error = HTTPError(.timedOut, method: "PUT",
                              url: "https://user:pw@s3.example.com/b/k?partNumber=2&X-Amz-Signature=abc&X-Amz-Credential=AK%2F1#top")
        XCTAssertEqual(error.description,
                       "PUT https://***@s3.example.com/b/k?partNumber=2&X-Amz-Signature=***&X-Amz-Credential=***#top: timed out")
        XCTAssertEqual(HTTPError.redacted("http://127.0.0.1:9000/b/k?uploads"), "http://127.0.0.1:9000/b/k?uploads")
    }

    // MARK: Connection reuse

    func testOneConnectionServesSequentialRequestsWithoutLeakingDescriptors() throws {
        let client = try HTTPClient()
        let request = HTTPRequest(method: .get, url: url("/port"))
        let first = text(try client.perform(request, responseLimit: 16))
        let before = try openDescriptors()
        var ports: Set<String> = []
        for _ in 0..<200 {
            ports.insert(text(try client.perform(request, responseLimit: 16)))
        }
        XCTAssertEqual(ports, [first], "every request came over the first connection")
        XCTAssertEqual(try openDescriptors(), before)
    }

    private func openDescriptors() throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count
    }

    /// A loopback port with nothing listening: bound by the kernel's choice, then closed.
    private func closedPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw POSIXError(.EADDRNOTAVAIL) }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    // MARK: Server program

    /// The server: `Fixtures/http_test_server.py` beside this file, each path one behaviour the
    /// tests need.
    private static let serverProgram = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/http_test_server.py").path
}
