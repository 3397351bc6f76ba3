import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Plain HTTP/1.0 requests to a server on 127.0.0.1, over a socket of its own: no proxy
/// settings, no URLSession, nothing that could leave loopback. For readiness checks and for the
/// unauthenticated APIs of the servers the tests start (SeaweedFS's master and filer).
public enum LoopbackHTTP {
    // MARK: Types

    /// A response: status, headers (names lowercased) and the whole body.
    public struct Response: Sendable {
        /// The status code (200, 403, …).
        public let status: Int
        /// Header values by lowercased name (the last one wins when repeated).
        public let headers: [String: String]
        /// The body, read to the end of the connection.
        public let body: [UInt8]

        /// The body as UTF-8 text.
        public var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// The connection failed or the answer was not HTTP.
    public struct Failure: Error, CustomStringConvertible {
        /// What went wrong.
        public let description: String
    }

    // MARK: Requests

    /// Sends `method path` with `headers` and `body` to 127.0.0.1:`port` and reads the answer;
    /// every socket operation gives up after `timeout`.
    public static func request(
        _ method: String,
        port: UInt16,
        path: String,
        headers: [String: String] = [:],
        body: [UInt8] = [],
        timeout: Duration = .seconds(10)
    ) throws -> Response {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw failure("socket()") }
        defer { close(fd) }
        var limit = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: Int(timeout.components.attoseconds / 1_000_000_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))

        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else { throw failure("connect() to 127.0.0.1:\(port)") }

        var head = "\(method) \(path) HTTP/1.0\r\nHost: 127.0.0.1:\(port)\r\nContent-Length: \(body.count)\r\n"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        try sendAll(fd, Array(head.utf8) + body, port: port)
        return try parse(receiveAll(fd, port: port), port: port)
    }

    // MARK: Internals

    /// Writes every byte (MSG_NOSIGNAL: a closed peer is an error, not SIGPIPE).
    private static func sendAll(_ fd: Int32, _ bytes: [UInt8], port: UInt16) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { buffer -> Int in
                guard let base = buffer.baseAddress else { return 0 }
                return send(fd, base + offset, buffer.count - offset, Int32(MSG_NOSIGNAL))
            }
            if sent < 0 && errno == EINTR { continue }
            guard sent > 0 else { throw failure("send() to 127.0.0.1:\(port)") }
            offset += sent
        }
    }

    /// Reads until the server closes the connection (HTTP/1.0 without keep-alive).
    private static func receiveAll(_ fd: Int32, port: UInt16) throws -> [UInt8] {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { buffer -> Int in
                guard let base = buffer.baseAddress else { return 0 }
                return recv(fd, base, buffer.count, 0)
            }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw failure("recv() from 127.0.0.1:\(port)") }
            if count == 0 { return received }
            received += chunk[0..<count]
        }
    }

    /// Splits the status line, headers and body.
    private static func parse(_ bytes: [UInt8], port: UInt16) throws -> Response {
        let separator: [UInt8] = [13, 10, 13, 10]
        var found: Int?
        var index = 0
        while found == nil && index + 4 <= bytes.count {
            if bytes[index..<index + 4].elementsEqual(separator) { found = index }
            index += 1
        }
        guard let end = found else {
            throw Failure(description: "127.0.0.1:\(port) answered without a complete HTTP head (\(bytes.count) bytes)")
        }
        let lines = String(decoding: bytes[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusFields = lines[0].split(separator: " ")
        guard statusFields.count >= 2, statusFields[0].hasPrefix("HTTP/"), let status = Int(statusFields[1]) else {
            throw Failure(description: "127.0.0.1:\(port) answered with the status line '\(lines[0])'")
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Response(status: status, headers: headers, body: Array(bytes[(end + 4)...]))
    }

    /// A failure naming the call and the system's error text.
    private static func failure(_ call: String) -> Failure {
        Failure(description: "\(call): \(String(cString: strerror(errno)))")
    }
}
