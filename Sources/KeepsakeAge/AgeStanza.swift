/// One recipient stanza of an age header: "-> type args…" and a base64 body.
struct AgeStanza: Sendable, Equatable {
    // MARK: Fields

    /// The stanza's type: its first argument ("X25519", "scrypt", or one we do not know).
    var type: String
    /// The arguments after the type.
    var arguments: [String]
    /// The decoded body.
    var body: [UInt8]

    // MARK: Encoding

    /// The stanza as it appears in a header: the argument line, then the body in base64
    /// lines of 64 columns ending with a shorter (possibly empty) line.
    func serialized() -> [UInt8] {
        var out = Array("-> ".utf8)
        out += Array(([type] + arguments).joined(separator: " ").utf8)
        out.append(0x0A)
        let text = AgeBase64.encode(body)
        var start = 0
        while true {
            let end = min(start + AgeHeader.columns, text.count)
            out += text[start..<end]
            out.append(0x0A)
            if end - start < AgeHeader.columns { break }
            start = end
        }
        return out
    }
}
