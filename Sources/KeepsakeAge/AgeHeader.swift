import CCrypto
import KeepsakeHashing

/// An age v1 header: the version line, recipient stanzas and the "---" MAC line, parsed with
/// every rule of the spec (canonical unpadded base64, 64-column body lines ending with a short
/// line, printable non-empty arguments, LF line ends only) and written the same way.
struct AgeHeader: Sendable {
    // MARK: Fields

    /// The stanzas in file order.
    var stanzas: [AgeStanza]
    /// The 32-byte HMAC from the MAC line.
    var mac: [UInt8]

    /// Columns of a full base64 body line.
    static let columns = 64
    /// Headers longer than this are refused rather than buffered without end.
    static let maxLength = 1 << 20

    private static let stanzaPrefix = Array("-> ".utf8)
    private static let macPrefix = Array("---".utf8)
    private static let macLinePrefix = Array("--- ".utf8)

    // MARK: Parsing

    /// A parse of the bytes read so far.
    enum Parse {
        /// The header continues past the bytes given: read more and parse again.
        case needMore
        /// A whole header: the MAC covers `bytes[..<macInputLength]`; the payload starts at `length`.
        case complete(AgeHeader, macInputLength: Int, length: Int)
    }

    /// Parses the header at the start of `bytes`; `atEnd` says no more bytes follow.
    static func parse(_ bytes: [UInt8], atEnd: Bool) throws -> Parse {
        let result = try parseLines(bytes, atEnd: atEnd)
        if case .needMore = result, bytes.count > maxLength {
            throw AgeError.malformedHeader("the header is longer than 1 MiB")
        }
        return result
    }

    private static func parseLines(_ bytes: [UInt8], atEnd: Bool) throws -> Parse {
        let version = AgeFormat.versionLine
        let known = min(bytes.count, version.count)
        if !bytes[..<known].elementsEqual(version[..<known]) {
            // "age-encryption.org/" with another version is an age file we cannot read.
            let family = Array("age-encryption.org/".utf8)
            let isFamily = bytes.count >= family.count && bytes[..<family.count].elementsEqual(family)
            throw isFamily ? AgeError.malformedHeader("unsupported version line (only age-encryption.org/v1 is known)")
                           : AgeError.notAgeFile
        }
        guard bytes.count >= version.count else {
            if atEnd { throw AgeError.notAgeFile }
            return .needMore
        }
        var reader = LineReader(bytes: bytes, position: version.count, atEnd: atEnd)
        var stanzas: [AgeStanza] = []
        while true {
            guard let (start, line) = try reader.next() else { return .needMore }
            if line.starts(with: stanzaPrefix) {
                var stanza = try parseArguments(line.dropFirst(3))
                guard let body = try parseBody(&reader) else { return .needMore }
                stanza.body = body
                stanzas.append(stanza)
            } else if line.starts(with: macPrefix) {
                let mac = try parseMAC(line)
                guard !stanzas.isEmpty else { throw AgeError.malformedHeader("the header has no recipient stanza") }
                let header = AgeHeader(stanzas: stanzas, mac: mac)
                try header.validate()
                return .complete(header, macInputLength: start + 3, length: reader.position)
            } else {
                throw AgeError.malformedHeader("a header line is neither a stanza ('-> ') nor the MAC line ('--- ')")
            }
        }
    }

    /// The stanza type and arguments of a "-> " line.
    private static func parseArguments(_ text: ArraySlice<UInt8>) throws -> AgeStanza {
        let parts = text.split(separator: 0x20, omittingEmptySubsequences: false)
        guard let first = parts.first, !first.isEmpty else { throw AgeError.malformedHeader("a stanza has no type") }
        guard parts.allSatisfy({ !$0.isEmpty }) else { throw AgeError.malformedHeader("a stanza has an empty argument") }
        // Line bytes are already known to be printable ASCII, so these are valid UTF-8.
        let strings = parts.map { String(decoding: $0, as: UTF8.self) }
        return AgeStanza(type: strings[0], arguments: Array(strings.dropFirst()), body: [])
    }

    /// A stanza body: full 64-column base64 lines and one shorter (possibly empty) last line.
    private static func parseBody(_ reader: inout LineReader) throws -> [UInt8]? {
        var text: [UInt8] = []
        while true {
            guard let (_, line) = try reader.next() else { return nil }
            guard line.count <= columns else { throw AgeError.malformedHeader("a stanza body line is longer than 64 columns") }
            guard line.allSatisfy(AgeBase64.isAlphabet) else {
                throw AgeError.malformedHeader("a stanza body line is not base64 (or the stanza has no final short line)")
            }
            text += line
            if line.count < columns { break }
        }
        guard let body = AgeBase64.decode(text) else {
            throw AgeError.malformedHeader("a stanza body is not canonical unpadded base64")
        }
        return body
    }

    /// The MAC of a "--- " line.
    private static func parseMAC(_ line: ArraySlice<UInt8>) throws -> [UInt8] {
        guard line.starts(with: macLinePrefix), line.count == 4 + 43,
              let mac = AgeBase64.decode(line.dropFirst(4)), mac.count == HMACSHA256.tagLength else {
            throw AgeError.malformedHeader("the MAC line is not '--- ' and 43 characters of canonical base64")
        }
        return mac
    }

    // MARK: Known stanzas

    /// Checks the shape of the stanzas we know (unknown types are left for others to open).
    private func validate() throws {
        let scryptCount = stanzas.filter { $0.type == AgeScryptStanza.type }.count
        if scryptCount > 0 && stanzas.count > 1 {
            throw AgeError.malformedHeader("a scrypt stanza must be the only stanza in the header")
        }
        for stanza in stanzas {
            switch stanza.type {
            case AgeX25519Stanza.type: _ = try AgeX25519Stanza(stanza)
            case AgeScryptStanza.type: _ = try AgeScryptStanza(stanza)
            default: break
            }
        }
    }

    // MARK: MAC

    /// HMAC-SHA256 under HKDF(file key, "header") of `macInput`, the header through "---".
    static func computeMAC(fileKey: SecretBytes, macInput: ArraySlice<UInt8>) throws -> [UInt8] {
        let key = try HKDFSHA256.derive(key: fileKey, salt: [], info: "header", length: 32)
        var keyBytes = key.array()
        defer { SecretBytes.wipe(&keyBytes) }
        return HMACSHA256.mac(key: keyBytes, message: Array(macInput))
    }

    /// Whether `mac` is this header's MAC (compared in constant time).
    static func macMatches(_ mac: [UInt8], fileKey: SecretBytes, macInput: ArraySlice<UInt8>) throws -> Bool {
        let expected = try computeMAC(fileKey: fileKey, macInput: macInput)
        guard expected.count == mac.count else { return false }
        return expected.withUnsafeBytes { a in mac.withUnsafeBytes { b in CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 } }
    }

    // MARK: Writing

    /// The whole header for `stanzas`, MAC line included, under `fileKey`.
    static func serialize(stanzas: [AgeStanza], fileKey: SecretBytes) throws -> [UInt8] {
        var out = AgeFormat.versionLine
        for stanza in stanzas { out += stanza.serialized() }
        out += Array("---".utf8)
        let mac = try computeMAC(fileKey: fileKey, macInput: out[...])
        out.append(0x20)
        out += AgeBase64.encode(mac)
        out.append(0x0A)
        return out
    }
}

// MARK: - Lines

/// Splits header bytes into LF-terminated lines of printable ASCII.
private struct LineReader {
    let bytes: [UInt8]
    var position: Int
    let atEnd: Bool

    /// The next line's start and bytes (without the LF), or nil when more bytes are needed.
    mutating func next() throws -> (Int, ArraySlice<UInt8>)? {
        guard let newline = bytes[position...].firstIndex(of: 0x0A) else {
            if atEnd { throw AgeError.malformedHeader("the file ends inside the header") }
            return nil
        }
        let start = position
        let line = bytes[start..<newline]
        // Only printable ASCII and spaces: a CR (CRLF line ends) or any control byte is refused.
        guard line.allSatisfy({ $0 >= 0x20 && $0 <= 0x7E }) else {
            throw AgeError.malformedHeader("a header line holds a byte that is not printable ASCII (CRLF line ends?)")
        }
        position = newline + 1
        return (start, line)
    }
}
