import Foundation
import KeepsakeHashing
import KeepsakeHTTP
import KeepsakeSupport

/// Signed requests to one bucket of an S3-compatible store, retried with backoff and
/// jitter on network errors, 5xx and 429. Holds one `HTTPClient` (one kept-alive
/// connection), so it is not thread-safe: each thread that talks to the store makes its
/// own (`copy()`).
final class S3Client {
    // MARK: Retry policy

    /// How often and how patiently a request is retried.
    struct RetryPolicy: Sendable {
        /// Tries in all (the first one included).
        var attempts: Int
        /// The first pause; each further one doubles, up to `maximumDelay`, with full jitter.
        var baseDelay: Double
        var maximumDelay: Double

        /// 7 tries over about half a minute; `KEEPSAKE_S3_MAX_ATTEMPTS` changes the count
        /// (tests of a dead server need not wait that long).
        static func standard(environment: [String: String]) -> RetryPolicy {
            let attempts = environment["KEEPSAKE_S3_MAX_ATTEMPTS"].flatMap(Int.init).map { max(1, min(20, $0)) } ?? 7
            return RetryPolicy(attempts: attempts, baseDelay: 0.25, maximumDelay: 8)
        }

        /// The pause before try `attempt` (1 for the first retry).
        func delay(before attempt: Int) -> Double {
            let ceiling = min(maximumDelay, baseDelay * pow(2, Double(attempt - 1)))
            return Double.random(in: (ceiling / 2)...ceiling)
        }
    }

    // MARK: State

    let configuration: S3Configuration
    let bucket: String
    let retry: RetryPolicy
    private let http: HTTPClient
    private let signer: SigV4Signer
    private let cancellation: CancellationFlag?
    /// `host[:port]` as sent in the Host header (and signed).
    private let host: String
    /// `scheme://host[:port]` requests go to.
    private let origin: String

    /// SHA-256 of nothing: the payload hash of requests without a body.
    static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    /// A client for `bucket` (no connection is made yet).
    init(configuration: S3Configuration, bucket: String, retry: RetryPolicy, cancellation: CancellationFlag?) throws {
        self.configuration = configuration
        self.bucket = bucket
        self.retry = retry
        self.cancellation = cancellation
        signer = SigV4Signer(credentials: configuration.credentials, region: configuration.region)
        var settings = HTTPClient.Settings(connectTimeout: .seconds(10), lowSpeedLimit: 1, lowSpeedTime: .seconds(60))
        settings.userAgent = "keepsake"
        settings.caBundle = configuration.caBundle
        http = try HTTPClient(settings: settings)
        let schemeEnd = configuration.endpoint.range(of: "://")
        let scheme = schemeEnd.map { String(configuration.endpoint[..<$0.lowerBound]) } ?? "https"
        let authority = schemeEnd.map { String(configuration.endpoint[$0.upperBound...]) } ?? configuration.endpoint
        host = configuration.pathStyle ? authority : bucket + "." + authority
        origin = scheme + "://" + host
    }

    /// Another client with the same settings and its own connection, for another thread.
    func copy() throws -> S3Client {
        try S3Client(configuration: configuration, bucket: bucket, retry: retry, cancellation: cancellation)
    }

    // MARK: Requests

    /// A request to the store, before signing.
    struct Request {
        var method: HTTPRequest.Method
        /// The object's key (empty for the bucket itself).
        var key: String
        var query: [(name: String, value: String)] = []
        var headers: [(name: String, value: String)] = []
        var body: [UInt8]?
        /// The SHA-256 (hex) of `body` when the caller has it already.
        var bodyHash: String?
        /// What the request does, for messages (`upload part 3 of`).
        var operation: String
        /// Sent even once the run is interrupted: the clean-up that follows an interruption
        /// (aborting an upload, releasing the lock) must still reach the store.
        var evenWhenInterrupted = false
        /// S3 may answer 200 and report a failure in the body (completing an upload, copying
        /// an object): such an answer is an error too.
        var mayFailAfter200 = false
    }

    /// Sends `request`, retrying transient failures, and collects the body up to `limit`.
    /// Statuses in `accepted` are answers; any other is an `S3Error.server` (after the
    /// retries, for 5xx and 429).
    func send(_ request: Request, accepted: (Int) -> Bool = { (200..<300).contains($0) },
              limit: Int = 16 << 20) throws -> HTTPResponse {
        try send(request, accepted: accepted) { httpRequest in try http.perform(httpRequest, responseLimit: limit) }
    }

    /// Sends `request` and streams a 2xx body into `sink` (a retry starts the body again:
    /// `sink` is told through `restart` to drop what it had).
    func send(_ request: Request, accepted: (Int) -> Bool = { (200..<300).contains($0) },
              restart: () -> Void, sink: (UnsafeRawBufferPointer) throws -> Void) throws -> HTTPResponse {
        var started = false
        return try send(request, accepted: accepted) { httpRequest in
            if started { restart() }
            started = true
            return try http.perform(httpRequest, into: sink)
        }
    }

    private func send(_ request: Request, accepted: (Int) -> Bool,
                      perform: (HTTPRequest) throws -> HTTPResponse) throws -> HTTPResponse {
        let payloadHash = request.bodyHash ?? request.body.map(SHA256Hasher.hex(of:)) ?? S3Client.emptyPayloadHash
        let rawPath = Array((configuration.pathStyle ? "/" + bucket + "/" + request.key : "/" + request.key).utf8)
        let path = SigV4URIEncoding.path(rawPath)
        let queryText = request.query.map { SigV4URIEncoding.queryComponent($0.name) + "=" + SigV4URIEncoding.queryComponent($0.value) }
            .joined(separator: "&")
        let url = origin + path + (queryText.isEmpty ? "" : "?" + queryText)
        var lastProblem = ""
        let watched = request.evenWhenInterrupted ? nil : cancellation
        http.cancellation = watched.map { flag in { flag.isCancelled } }
        for attempt in 1...retry.attempts {
            try watched?.check()
            if attempt > 1 { try pause(retry.delay(before: attempt - 1), watching: watched) }
            // The signer encodes the raw path exactly as `path` was encoded for the URL.
            let signed = signer.authorizationHeaders(method: request.method.rawValue, host: host, path: rawPath,
                                                     query: request.query, headers: request.headers,
                                                     payloadHash: payloadHash, date: Date())
            let httpRequest = HTTPRequest(method: request.method, url: url, headers: request.headers + signed, body: request.body)
            let response: HTTPResponse
            do {
                response = try perform(httpRequest)
            } catch let error as HTTPError where error.isTransient {
                lastProblem = error.description
                continue
            } catch let error as HTTPError where error.kind == .cancelled {
                throw Interruption()
            }
            // Bodies are parsed only when they may be an error document (never an object's bytes).
            if accepted(response.status) && !request.mayFailAfter200 { return response }
            let document = S3XML(response.body).root
            if accepted(response.status) && document.name != "Error" { return response }
            let code = document.text(of: "Code") ?? ""
            if S3Client.isTransient(status: response.status, code: code) {
                lastProblem = "it answered HTTP \(response.status)" + (code.isEmpty ? "" : " \(code)")
                continue
            }
            throw S3Error.server(status: response.status, code: code, message: document.text(of: "Message") ?? "",
                                 operation: request.operation, endpoint: configuration.endpoint, bucket: bucket, key: request.key)
        }
        throw S3Error.unreachable(reason: lastProblem, operation: request.operation, endpoint: configuration.endpoint,
                                  bucket: bucket, key: request.key, attempts: retry.attempts)
    }

    /// 5xx, 429 (and S3's own names for slowing down) are worth another try.
    static func isTransient(status: Int, code: String) -> Bool {
        status >= 500 || status == 429 || status == 408 || code == "SlowDown" || code == "RequestTimeout"
    }

    /// Sleeps `seconds`, waking early (and throwing) when the run is interrupted.
    private func pause(_ seconds: Double, watching flag: CancellationFlag?) throws {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            try flag?.check()
            usleep(useconds_t(min(50_000, max(1_000, end.timeIntervalSinceNow * 1_000_000))))
        }
    }
}
