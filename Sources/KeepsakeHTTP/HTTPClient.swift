import CCurl

/// A synchronous HTTP/1.1 client over one libcurl easy handle, which it reuses, so
/// successive requests to the same host keep their connection alive.
///
/// Not thread-safe, by design: a client (and the connection it keeps) belongs to one
/// thread at a time, so it is not `Sendable`. The S3 client keeps one per worker thread.
///
/// Behaviour every request gets:
/// - no proxy, even when `http_proxy`/`https_proxy` are set (`CURLOPT_NOPROXY "*"`), so a
///   store on loopback or the LAN is never sent through a proxy, unless
///   `Settings.useEnvironmentProxy` asks for one;
/// - no signals (`CURLOPT_NOSIGNAL`): the program handles SIGINT itself and runs threads;
/// - a connect timeout and a low-speed limit rather than a timeout on the whole transfer,
///   so a large transfer is never cut for its size, but a stalled one is;
/// - no `Expect: 100-continue`, so a PUT does not wait a second for an interim response;
/// - no redirects followed, no compression asked for, http and https only.
public final class HTTPClient {
    // MARK: Settings

    /// How requests are made.
    public struct Settings: Sendable {
        /// The longest wait for a connection (TCP and TLS).
        public var connectTimeout: Duration
        /// With `lowSpeedTime`: a transfer slower than this many bytes per second for that
        /// long is aborted as timed out (0 turns the check off).
        public var lowSpeedLimit: Int
        /// See `lowSpeedLimit`; rounded up to whole seconds.
        public var lowSpeedTime: Duration
        /// Whether to honour `http_proxy`, `https_proxy` and `no_proxy` from the environment.
        public var useEnvironmentProxy: Bool
        /// The `User-Agent` header, or nil for none.
        public var userAgent: String?
        /// How much of a non-2xx body (an error document) a response keeps.
        public var errorBodyLimit: Int
        /// A file of CA certificates to trust instead of the system's (`AWS_CA_BUNDLE`).
        public var caBundle: String?

        /// The defaults: 10 s to connect; abort when under 1 byte/s for 60 s, i.e. after a
        /// minute without data; no proxy; 64 KiB of an error body.
        public init(connectTimeout: Duration = .seconds(10), lowSpeedLimit: Int = 1, lowSpeedTime: Duration = .seconds(60),
                    useEnvironmentProxy: Bool = false, userAgent: String? = "keepsake", errorBodyLimit: Int = 64 * 1024) {
            self.connectTimeout = connectTimeout
            self.lowSpeedLimit = lowSpeedLimit
            self.lowSpeedTime = lowSpeedTime
            self.useEnvironmentProxy = useEnvironmentProxy
            self.userAgent = userAgent
            self.errorBodyLimit = errorBodyLimit
            caBundle = nil
        }
    }

    // MARK: State

    /// How requests are made.
    public let settings: Settings
    /// Asked during every transfer (at least once a second, more often while data flows);
    /// true aborts it with `HTTPError.Kind.cancelled`. Meant for a SIGINT flag.
    public var cancellation: (() -> Bool)?

    private let handle: UnsafeMutableRawPointer
    /// CURLOPT_ERRORBUFFER: curl's detailed message for the last failure.
    private let errorBuffer: UnsafeMutablePointer<CChar>
    /// Guards against a sink calling back into its own client mid-transfer.
    private var isBusy = false

    /// `curl_global_init`, which must run once before any handle exists and is not
    /// thread-safe itself: a `static let` runs it exactly once, under the runtime's lock.
    private static let globalSetup: CURLcode = curl_global_init(Int(CURL_GLOBAL_DEFAULT))

    // MARK: Life cycle

    /// A client with its own easy handle (no connection is made yet).
    public init(settings: Settings = Settings(), cancellation: (() -> Bool)? = nil) throws {
        let setup = Self.globalSetup
        guard setup == CURLE_OK else {
            throw HTTPError(.unavailable, method: "", url: "", detail: Self.genericMessage(for: setup))
        }
        guard let handle = curl_easy_init() else {
            throw HTTPError(.unavailable, method: "", url: "", detail: "curl_easy_init failed")
        }
        self.handle = handle
        self.settings = settings
        self.cancellation = cancellation
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
    }

    deinit {
        curl_easy_cleanup(handle)
        errorBuffer.deallocate()
    }

    // MARK: Requests

    /// Sends `request` and collects the response body.
    ///
    /// - Parameter responseLimit: The largest 2xx body accepted, in bytes; a larger one
    ///   (declared in `Content-Length` or as it arrives) fails with `.responseTooLarge`.
    ///   A non-2xx body is kept up to `Settings.errorBodyLimit` bytes instead, without failing.
    /// - Throws: `HTTPError` when no complete response arrived.
    public func perform(_ request: HTTPRequest, responseLimit: Int) throws -> HTTPResponse {
        try transfer(request, destination: .collect(limit: responseLimit))
    }

    /// Sends `request` and hands a 2xx response body to `sink` as it arrives, in chunks of
    /// any size; the buffer is valid only during the call. A non-2xx body (an error
    /// document) does not reach the sink: it is collected into `HTTPResponse.body`, up to
    /// `Settings.errorBodyLimit` bytes.
    ///
    /// - Throws: What `sink` throws, as it is (the transfer stops there; the connection is
    ///   dropped and the next request opens another), or `HTTPError`.
    public func perform(_ request: HTTPRequest, into sink: (UnsafeRawBufferPointer) throws -> Void) throws -> HTTPResponse {
        // The transfer stores the closure for curl's callbacks, but only until it returns.
        try withoutActuallyEscaping(sink) { sink in
            try transfer(request, destination: .stream(sink))
        }
    }

    // MARK: Transfer

    private func transfer(_ request: HTTPRequest, destination: HTTPTransfer.Destination) throws -> HTTPResponse {
        let method = request.method.rawValue
        func failure(_ kind: HTTPError.Kind, _ detail: String = "") -> HTTPError {
            HTTPError(kind, method: method, url: request.url, detail: detail)
        }
        guard !isBusy else { throw failure(.invalidRequest, "the client is already in a transfer") }
        if let problem = request.headerProblem() { throw failure(.invalidRequest, problem) }
        if request.body != nil && (request.method == .get || request.method == .head) {
            throw failure(.invalidRequest, "a \(method) request cannot carry a body")
        }
        if cancellation?() == true { throw failure(.cancelled) }

        isBusy = true
        defer { isBusy = false }
        return try (request.body ?? []).withUnsafeBytes { upload in
            let transfer = HTTPTransfer(method: method, url: request.url, upload: upload, destination: destination,
                                        errorBodyLimit: settings.errorBodyLimit, cancellation: cancellation)
            var headerList: UnsafeMutablePointer<curl_slist>?
            defer {
                // Back to defaults, which drops curl's pointers to the transfer, the upload
                // and the header list before they go; the connection stays open for the next.
                curl_easy_reset(handle)
                curl_slist_free_all(headerList)
            }
            headerList = try makeHeaderList(for: request, failure: failure)
            try configure(for: request, transfer: transfer, headerList: headerList, failure: failure)
            errorBuffer[0] = 0
            let code = withExtendedLifetime(transfer) { curl_easy_perform(handle) }
            if let error = transfer.failure { throw error }
            if code == CURLE_ABORTED_BY_CALLBACK && transfer.wasCancelled { throw failure(.cancelled) }
            guard code == CURLE_OK else { throw failure(Self.kind(of: code), message(for: code)) }
            var status = 0
            if ks_curl_get_long(handle, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK { status = transfer.status }
            return HTTPResponse(status: status, headers: transfer.headers, body: transfer.body)
        }
    }

    /// The request's header fields as curl wants them, plus the suppressions.
    private func makeHeaderList(for request: HTTPRequest,
                                failure: (HTTPError.Kind, String) -> HTTPError) throws -> UnsafeMutablePointer<curl_slist>? {
        var lines = request.headers.map { field in
            // "Name:" would tell curl to drop the header; "Name;" sends it empty.
            field.value.isEmpty ? "\(field.name);" : "\(field.name): \(field.value)"
        }
        // An empty value removes a header curl would add on its own.
        if !request.hasHeader("Expect") { lines.append("Expect:") }
        if request.method == .post || request.body != nil, !request.hasHeader("Content-Type") {
            lines.append("Content-Type:")  // not curl's application/x-www-form-urlencoded
        }
        var list: UnsafeMutablePointer<curl_slist>?
        for line in lines {
            guard let appended = curl_slist_append(list, line) else {
                curl_slist_free_all(list)
                throw failure(.unavailable, "out of memory for the header list")
            }
            list = appended
        }
        return list
    }

    /// Sets every option for one request on the freshly reset handle.
    private func configure(for request: HTTPRequest, transfer: HTTPTransfer, headerList: UnsafeMutablePointer<curl_slist>?,
                           failure: (HTTPError.Kind, String) -> HTTPError) throws {
        func check(_ code: CURLcode, _ option: String) throws {
            guard code == CURLE_OK else { throw failure(.curl(code: Int(code.rawValue)), "cannot set \(option): \(Self.genericMessage(for: code))") }
        }
        let context = Unmanaged.passUnretained(transfer).toOpaque()

        try check(ks_curl_set_string(handle, CURLOPT_URL, request.url), "the URL")
        try check(ks_curl_set_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"), "the protocols")
        try check(ks_curl_set_long(handle, CURLOPT_NOSIGNAL, 1), "NOSIGNAL")
        try check(ks_curl_set_long(handle, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_1_1)), "HTTP/1.1")
        try check(ks_curl_set_long(handle, CURLOPT_TCP_KEEPALIVE, 1), "TCP keep-alive")
        try check(ks_curl_set_long(handle, CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(settings.connectTimeout)), "the connect timeout")
        try check(ks_curl_set_long(handle, CURLOPT_LOW_SPEED_LIMIT, max(0, settings.lowSpeedLimit)), "the low-speed limit")
        try check(ks_curl_set_long(handle, CURLOPT_LOW_SPEED_TIME, Self.wholeSeconds(settings.lowSpeedTime)), "the low-speed time")
        if !settings.useEnvironmentProxy {
            try check(ks_curl_set_string(handle, CURLOPT_NOPROXY, "*"), "NOPROXY")
        }
        if let userAgent = settings.userAgent {
            try check(ks_curl_set_string(handle, CURLOPT_USERAGENT, userAgent), "the user agent")
        }
        if let caBundle = settings.caBundle {
            try check(ks_curl_set_string(handle, CURLOPT_CAINFO, caBundle), "the CA bundle")
        }
        try check(ks_curl_set_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer), "the error buffer")
        try check(ks_curl_set_pointer(handle, CURLOPT_HTTPHEADER, headerList), "the headers")

        try check(ks_curl_set_callback(handle, CURLOPT_HEADERFUNCTION, httpTransferHeader), "the header callback")
        try check(ks_curl_set_pointer(handle, CURLOPT_HEADERDATA, context), "the header context")
        try check(ks_curl_set_callback(handle, CURLOPT_WRITEFUNCTION, httpTransferWrite), "the write callback")
        try check(ks_curl_set_pointer(handle, CURLOPT_WRITEDATA, context), "the write context")
        if cancellation != nil {
            try check(ks_curl_set_xferinfo_callback(handle, httpTransferProgress), "the progress callback")
            try check(ks_curl_set_pointer(handle, CURLOPT_XFERINFODATA, context), "the progress context")
            try check(ks_curl_set_long(handle, CURLOPT_NOPROGRESS, 0), "NOPROGRESS")
        }

        let bodySize = curl_off_t(request.body?.count ?? 0)
        switch request.method {
        case .get:
            try check(ks_curl_set_long(handle, CURLOPT_HTTPGET, 1), "GET")
        case .head:
            try check(ks_curl_set_long(handle, CURLOPT_NOBODY, 1), "HEAD")
        case .put:
            try check(ks_curl_set_long(handle, CURLOPT_UPLOAD, 1), "PUT")
            try check(ks_curl_set_offset(handle, CURLOPT_INFILESIZE_LARGE, bodySize), "the body size")
        case .post:
            try check(ks_curl_set_long(handle, CURLOPT_POST, 1), "POST")
            try check(ks_curl_set_offset(handle, CURLOPT_POSTFIELDSIZE_LARGE, bodySize), "the body size")
        case .delete:
            if request.body != nil {
                // A body goes the way a POST's does, under the other method's name.
                try check(ks_curl_set_long(handle, CURLOPT_POST, 1), "DELETE")
                try check(ks_curl_set_offset(handle, CURLOPT_POSTFIELDSIZE_LARGE, bodySize), "the body size")
            }
            try check(ks_curl_set_string(handle, CURLOPT_CUSTOMREQUEST, "DELETE"), "DELETE")
        }
        if request.method == .put || request.method == .post || request.body != nil {
            // With no POSTFIELDS, curl reads a POST's body through the read callback too.
            try check(ks_curl_set_callback(handle, CURLOPT_READFUNCTION, httpTransferRead), "the read callback")
            try check(ks_curl_set_pointer(handle, CURLOPT_READDATA, context), "the read context")
            try check(ks_curl_set_seek_callback(handle, httpTransferSeek), "the seek callback")
            try check(ks_curl_set_pointer(handle, CURLOPT_SEEKDATA, context), "the seek context")
        }
    }

    // MARK: Errors

    /// The kind of failure a `CURLcode` stands for.
    private static func kind(of code: CURLcode) -> HTTPError.Kind {
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY, CURLE_COULDNT_CONNECT:
            return .couldNotConnect
        case CURLE_OPERATION_TIMEDOUT:
            return .timedOut
        case CURLE_PARTIAL_FILE, CURLE_GOT_NOTHING, CURLE_SEND_ERROR, CURLE_RECV_ERROR:
            return .connectionReset
        case CURLE_ABORTED_BY_CALLBACK:
            return .cancelled
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT:
            return .invalidRequest
        default:
            return .curl(code: Int(code.rawValue))
        }
    }

    /// curl's detailed message for the last failure, or its generic one for `code`.
    private func message(for code: CURLcode) -> String {
        let detailed = String(cString: errorBuffer)
        return detailed.isEmpty ? Self.genericMessage(for: code) : detailed
    }

    private static func genericMessage(for code: CURLcode) -> String {
        curl_easy_strerror(code).map { String(cString: $0) } ?? "curl error \(code.rawValue)"
    }

    // MARK: Durations

    private static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        let whole = seconds.multipliedReportingOverflow(by: 1000)
        return whole.overflow ? Int.max : Int(whole.partialValue) + Int(attoseconds / 1_000_000_000_000_000)
    }

    private static func wholeSeconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        return Int(seconds) + (attoseconds > 0 ? 1 : 0)
    }
}
