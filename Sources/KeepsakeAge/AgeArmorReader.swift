import KeepsakeSupport

/// Reads age's ASCII armor (strict PEM, RFC 7468 section 3, label "AGE ENCRYPTED FILE"):
/// hands out the decoded age file. Whitespace is allowed only before the BEGIN line and after
/// the END line; lines end in LF or CRLF; every base64 line has 64 columns except the last
/// (1 to 64); padding and canonical base64 are required. Anything else is refused as
/// `malformedHeader("ASCII armor: …")`.
final class AgeArmorReader: ByteSource {
    // MARK: Markers

    static let beginLine = Array("-----BEGIN AGE ENCRYPTED FILE-----".utf8)
    static let endLine = Array("-----END AGE ENCRYPTED FILE-----".utf8)
    private static let columns = 64

    /// True when `prefix`, after leading whitespace, starts like a PEM block ("-----"): then the
    /// armor reader reads it, and says precisely what is wrong when it is not age's armor.
    static func isArmored(prefix: [UInt8]) -> Bool {
        guard let start = prefix.firstIndex(where: { !isWhitespace($0) }) else { return false }
        return prefix[start...].starts(with: beginLine.prefix(5))
    }

    /// Refuses a prefix that holds the BEGIN marker after other text: armor with data before
    /// it, which would otherwise read as "not an age file".
    static func refuseMisplacedArmor(prefix: [UInt8]) throws {
        guard !AgeFormat.isAgeFile(prefix: prefix), prefix.count >= beginLine.count else { return }
        for start in 0...(prefix.count - beginLine.count) where prefix[start] == beginLine[0] {
            if prefix[start..<(start + beginLine.count)].elementsEqual(beginLine) { throw failure("data before the BEGIN line") }
        }
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }

    private static func failure(_ reason: String) -> AgeError { .malformedHeader("ASCII armor: \(reason)") }

    // MARK: State

    private enum Phase { case leading, body, lastLineRead, trailing }

    private let source: ByteSource
    private var input: [UInt8]
    private var inputStart = 0
    private var sourceEnded = false
    private var phase = Phase.leading
    private var line: [UInt8] = []
    private var decoded: [UInt8] = []
    private var decodedStart = 0
    private var finished = false

    /// Decodes `prefix` (bytes already read from `source`) and then the rest of `source`.
    init(prefix: [UInt8] = [], source: ByteSource) {
        self.source = source
        input = prefix
        line.reserveCapacity(AgeArmorReader.columns + 2)
    }

    // MARK: ByteSource

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return 0 }
        while decodedStart == decoded.count && !finished {
            decoded.removeAll(keepingCapacity: true)
            decodedStart = 0
            try decodeMore()
        }
        let take = min(buffer.count, decoded.count - decodedStart)
        guard take > 0 else { return 0 }
        decoded.withUnsafeBytes { base.copyMemory(from: $0.baseAddress! + decodedStart, byteCount: take) }
        decodedStart += take
        return take
    }

    func close() { source.close() }

    // MARK: Decoding

    /// Consumes input until some bytes are decoded or the armor ends.
    private func decodeMore() throws {
        while decoded.isEmpty && !finished {
            if inputStart == input.count {
                guard try refill() else { try endOfInput(); return }
            }
            let byte = input[inputStart]
            inputStart += 1
            switch phase {
            case .leading where line.isEmpty && AgeArmorReader.isWhitespace(byte):
                continue
            case .trailing:
                guard AgeArmorReader.isWhitespace(byte) else { throw AgeArmorReader.failure("data after the END line") }
            default:
                if byte == 0x0A {
                    try endOfLine()
                } else {
                    // The longest line is the BEGIN marker (34) or a base64 line (64), plus a CR.
                    guard line.count <= AgeArmorReader.columns else { throw AgeArmorReader.failure("a line is longer than 64 columns") }
                    line.append(byte)
                }
            }
        }
    }

    /// Reads more input; false at the end of the source.
    private func refill() throws -> Bool {
        guard !sourceEnded else { return false }
        if input.count < 65536 { input = [UInt8](repeating: 0, count: 65536) }
        let got = try input.withUnsafeMutableBytes { try source.read(into: $0) }
        inputStart = 0
        if got == 0 {
            sourceEnded = true
            input.removeAll(keepingCapacity: true)
            return false
        }
        input.removeSubrange(got...)
        return true
    }

    /// Handles one whole line (in `line`, without its LF).
    private func endOfLine() throws {
        if line.last == 0x0D { line.removeLast() }
        defer { line.removeAll(keepingCapacity: true) }
        switch phase {
        case .leading:
            guard line == AgeArmorReader.beginLine else { throw AgeArmorReader.failure("expected '-----BEGIN AGE ENCRYPTED FILE-----'") }
            phase = .body
        case .body, .lastLineRead:
            if line == AgeArmorReader.endLine {
                phase = .trailing
                return
            }
            guard phase == .body else { throw AgeArmorReader.failure("a line follows the short last line (or padding) before the END line") }
            try decodeLine()
        case .trailing:
            break
        }
    }

    /// Decodes one base64 line: 64 columns, or a last line of 1 to 64 with any padding.
    private func decodeLine() throws {
        guard !line.isEmpty else { throw AgeArmorReader.failure("an empty line") }
        let padding = line.reversed().prefix { $0 == UInt8(ascii: "=") }.count
        let text = line.dropLast(padding)
        guard padding <= 2, (text.count + padding) % 4 == 0, padding == 0 || text.count % 4 == 4 - padding else {
            throw AgeArmorReader.failure("the base64 padding is wrong")
        }
        guard let bytes = AgeBase64.decode(text) else { throw AgeArmorReader.failure("a line is not canonical base64") }
        decoded += bytes
        if line.count < AgeArmorReader.columns || padding > 0 { phase = .lastLineRead }
    }

    /// The source ended: only after the END line (with or without its line end).
    private func endOfInput() throws {
        if !line.isEmpty && phase != .trailing {
            // The END line may be the very last bytes, without a line end.
            try endOfLine()
        }
        guard phase == .trailing else { throw AgeArmorReader.failure("the END line is missing") }
        finished = true
    }
}
