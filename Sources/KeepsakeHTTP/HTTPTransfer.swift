import CCurl
import Glibc

/// The state of one `HTTPClient.perform` call, which libcurl's callbacks reach through an
/// unretained pointer. It lives on the caller's stack frame for the duration of
/// `curl_easy_perform` only: the client clears every pointer to it (`curl_easy_reset`)
/// before returning.
final class HTTPTransfer {
    // MARK: Destinations

    /// Where a 2xx body goes.
    enum Destination {
        /// Kept in `body`, failing beyond `limit` bytes.
        case collect(limit: Int)
        /// Handed to the closure chunk by chunk (the caller's non-escaping closure, made
        /// storable by `withoutActuallyEscaping` for the call's duration).
        case stream((UnsafeRawBufferPointer) throws -> Void)
    }

    // MARK: State

    private let method: String
    private let url: String
    private let upload: UnsafeRawBufferPointer
    private var uploadOffset = 0
    private let destination: Destination
    private let errorBodyLimit: Int
    private let cancellation: (() -> Bool)?

    /// The status of the response whose headers are arriving (interim ones included).
    private(set) var status = 0
    /// The header fields of the latest response: a status line starts over, so an
    /// interim `100 Continue`'s fields do not stay.
    private(set) var headers: [(name: String, value: String)] = []
    /// The collected body (see `Destination`; a non-2xx body is capped at `errorBodyLimit`).
    private(set) var body: [UInt8] = []
    /// The error that made a callback stop the transfer: the sink's own, or a too-large body.
    private(set) var failure: (any Error)?
    /// Whether the cancellation hook stopped the transfer.
    private(set) var wasCancelled = false

    // MARK: Life cycle

    /// A transfer that sends `upload` (which must stay valid until it ends).
    init(method: String, url: String, upload: UnsafeRawBufferPointer, destination: Destination,
         errorBodyLimit: Int, cancellation: (() -> Bool)?) {
        self.method = method
        self.url = url
        self.upload = upload
        self.destination = destination
        self.errorBodyLimit = max(0, errorBodyLimit)
        self.cancellation = cancellation
    }

    // MARK: Response headers

    /// Takes one header line as curl delivers it (with its CR LF, not NUL-terminated).
    func receiveHeaderLine(_ bytes: UnsafeRawBufferPointer) {
        var line = bytes[...]
        while let last = line.last, last == 0x0A || last == 0x0D { line = line.dropLast() }
        guard let first = line.first else { return }  // the blank line closing a block
        let text = String(decoding: line, as: UTF8.self)
        if text.hasPrefix("HTTP/") {
            // A new response (after a 100 Continue, say): only the last one's fields count.
            headers.removeAll(keepingCapacity: true)
            let fields = text.split(separator: " ", maxSplits: 2)
            status = fields.count > 1 ? Int(fields[1]) ?? 0 : 0
        } else if first == 0x20 || first == 0x09 {
            // Obsolete line folding continues the previous field's value.
            guard let index = headers.indices.last else { return }
            headers[index].value += " " + Self.trimmed(Substring(text))
        } else if let colon = text.firstIndex(of: ":") {
            headers.append((name: String(text[..<colon]), value: Self.trimmed(text[text.index(after: colon)...])))
        }
    }

    /// `text` without leading and trailing spaces and tabs.
    private static func trimmed(_ text: Substring) -> String {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let start = text.firstIndex(where: { !isBlank($0) }), let end = text.lastIndex(where: { !isBlank($0) }) else {
            return ""
        }
        return String(text[start...end])
    }

    // MARK: Response body

    /// Takes a chunk of the body; false stops the transfer (`failure` says why).
    func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard !bytes.isEmpty else { return true }
        guard (200..<300).contains(status) else {
            // An error document: kept for the caller to read, but bounded; the rest is read
            // and dropped so the connection stays usable.
            let room = errorBodyLimit - body.count
            if room > 0 { append(UnsafeRawBufferPointer(rebasing: bytes.prefix(room))) }
            return true
        }
        switch destination {
        case .collect(let limit):
            if body.isEmpty, let declared = headers.last(where: { HTTPResponse.namesMatch($0.name, "Content-Length") })
                .flatMap({ Int($0.value) }) {
                // Refuse before reading when the server says up front that it is too large.
                guard declared <= limit else { return tooLarge(limit) }
                body.reserveCapacity(declared)
            }
            guard bytes.count <= limit - body.count else { return tooLarge(limit) }
            append(bytes)
        case .stream(let sink):
            do {
                try sink(bytes)
            } catch {
                failure = error
                return false
            }
        }
        return true
    }

    private func append(_ bytes: UnsafeRawBufferPointer) {
        bytes.withMemoryRebound(to: UInt8.self) { body.append(contentsOf: $0) }
    }

    private func tooLarge(_ limit: Int) -> Bool {
        failure = HTTPError(.responseTooLarge(limit: limit), method: method, url: url)
        return false
    }

    // MARK: Request body

    /// Fills `buffer` with the next bytes to send; 0 at the end.
    func sendBody(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let count = min(upload.count - uploadOffset, buffer.count)
        guard count > 0, let source = upload.baseAddress, let target = buffer.baseAddress else { return 0 }
        target.copyMemory(from: source + uploadOffset, byteCount: count)
        uploadOffset += count
        return count
    }

    /// Moves the send position (curl rewinds when it resends on a fresh connection).
    func seekBody(to offset: curl_off_t, origin: Int32) -> Int32 {
        guard origin == SEEK_SET, offset >= 0, offset <= curl_off_t(upload.count) else { return Int32(CURL_SEEKFUNC_FAIL) }
        uploadOffset = Int(offset)
        return Int32(CURL_SEEKFUNC_OK)
    }

    // MARK: Cancellation

    /// Asks the hook whether to stop; remembers a yes.
    func shouldStop() -> Bool {
        if !wasCancelled, cancellation?() == true { wasCancelled = true }
        return wasCancelled
    }
}

// MARK: - libcurl callbacks

// Plain functions, since a C function pointer cannot capture: each finds its transfer
// through the context pointer curl hands back.

/// The transfer behind a context pointer (unretained: `HTTPClient.perform` keeps it alive).
private func transfer(_ context: UnsafeMutableRawPointer?) -> HTTPTransfer? {
    context.map { Unmanaged<HTTPTransfer>.fromOpaque($0).takeUnretainedValue() }
}

/// The `size * count` bytes at `data`, or nil when they cannot be addressed.
private func chunk(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int) -> UnsafeMutableRawBufferPointer? {
    let (length, overflow) = size.multipliedReportingOverflow(by: count)
    guard !overflow, length >= 0 else { return nil }
    guard length > 0 else { return UnsafeMutableRawBufferPointer(start: nil, count: 0) }
    guard let data else { return nil }
    return UnsafeMutableRawBufferPointer(start: UnsafeMutableRawPointer(data), count: length)
}

/// CURLOPT_WRITEFUNCTION: a short count makes curl stop with CURLE_WRITE_ERROR.
func httpTransferWrite(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int,
                       _ context: UnsafeMutableRawPointer?) -> Int {
    guard let transfer = transfer(context), let bytes = chunk(data, size, count) else { return 0 }
    return transfer.receiveBody(UnsafeRawBufferPointer(bytes)) ? bytes.count : 0
}

/// CURLOPT_HEADERFUNCTION: one line per call.
func httpTransferHeader(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int,
                        _ context: UnsafeMutableRawPointer?) -> Int {
    guard let transfer = transfer(context), let bytes = chunk(data, size, count) else { return 0 }
    transfer.receiveHeaderLine(UnsafeRawBufferPointer(bytes))
    return bytes.count
}

/// CURLOPT_READFUNCTION.
func httpTransferRead(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int,
                      _ context: UnsafeMutableRawPointer?) -> Int {
    guard let transfer = transfer(context), let buffer = chunk(data, size, count) else { return Int(CURL_READFUNC_ABORT) }
    return transfer.sendBody(into: buffer)
}

/// CURLOPT_SEEKFUNCTION.
func httpTransferSeek(_ context: UnsafeMutableRawPointer?, _ offset: curl_off_t, _ origin: Int32) -> Int32 {
    transfer(context)?.seekBody(to: offset, origin: origin) ?? Int32(CURL_SEEKFUNC_FAIL)
}

/// CURLOPT_XFERINFOFUNCTION: non-zero aborts with CURLE_ABORTED_BY_CALLBACK.
func httpTransferProgress(_ context: UnsafeMutableRawPointer?, _ downloadTotal: curl_off_t, _ downloadNow: curl_off_t,
                          _ uploadTotal: curl_off_t, _ uploadNow: curl_off_t) -> Int32 {
    guard let transfer = transfer(context) else { return 1 }
    return transfer.shouldStop() ? 1 : 0
}
