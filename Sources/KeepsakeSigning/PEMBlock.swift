import Foundation

/// The PEM text form (RFC 7468) of the DER structures signing keys are stored in, as
/// `openssl genpkey` and `openssl pkey` read and write them.
enum PEMBlock {
    // MARK: Writing

    /// `der` as a PEM block labelled `label` (base64 in lines of 64).
    static func render(label: String, der: [UInt8]) -> String {
        let base64 = Data(der).base64EncodedString()
        var lines = ["-----BEGIN \(label)-----"]
        var rest = Substring(base64)
        while !rest.isEmpty {
            lines.append(String(rest.prefix(64)))
            rest = rest.dropFirst(64)
        }
        lines.append("-----END \(label)-----")
        return lines.joined(separator: "\n") + "\n"
    }

    // MARK: Reading

    /// The labels of the PEM blocks in `text`, in order (text outside blocks is ignored,
    /// as OpenSSL ignores it).
    static func labels(in text: String) -> [String] {
        text.split(whereSeparator: \.isNewline).compactMap { line in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix("-----BEGIN "), trimmed.hasSuffix("-----") else { return nil }
            return String(trimmed.dropFirst("-----BEGIN ".count).dropLast(5))
        }
    }

    /// The DER bytes of the first block labelled `label`; nil when there is none or its
    /// base64 is broken.
    static func decode(label: String, in text: String) -> [UInt8]? {
        var inside = false
        var body = ""
        for line in text.split(whereSeparator: \.isNewline) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if !inside {
                inside = trimmed == "-----BEGIN \(label)-----"
                continue
            }
            if trimmed == "-----END \(label)-----" {
                return Data(base64Encoded: body).map { Array($0) }
            }
            // Encrypted PEM (RFC 1421) headers are not base64: such a block is not read.
            if trimmed.contains(":") { return nil }
            body += trimmed
        }
        return nil
    }
}
