import Foundation

/// Identity and recipient files in the formats age-keygen writes and `age -i` / `age -R` read.
public enum AgeKeyFile {
    // MARK: Writing

    /// An identity file as age-keygen writes it: "# created: 2006-01-02T15:04:05Z\n# public key: age1…\nAGE-SECRET-KEY-1…\n"
    public static func render(_ identity: AgeIdentity, created: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return "# created: \(formatter.string(from: created))\n# public key: \(identity.recipient.encoded)\n\(identity.encoded)\n"
    }

    // MARK: Reading

    /// Identities in an identity file: blank lines and "#" comments skipped; any other line must be AGE-SECRET-KEY-1…;
    /// errors name the file `name` and the line number, never the line's text.
    public static func parseIdentities(_ bytes: [UInt8], name: String) throws -> [AgeIdentity] {
        var identities: [AgeIdentity] = []
        for (number, line) in try lines(bytes, name: name) {
            if line.hasPrefix("AGE-PLUGIN-") || line.hasPrefix("AGE-SECRET-KEY-PQ-") {
                throw AgeError.invalidKey("\(name), line \(number): this identity type is not supported (only X25519 AGE-SECRET-KEY-1… identities)")
            }
            do {
                identities.append(try AgeIdentity(parsing: line))
            } catch {
                throw AgeError.invalidKey("\(name), line \(number): expected an X25519 identity 'AGE-SECRET-KEY-1…', a '#' comment or a blank line")
            }
        }
        guard !identities.isEmpty else { throw AgeError.invalidKey("\(name): no identity (AGE-SECRET-KEY-1…) found") }
        return identities
    }

    /// Recipients in a recipients file (age -R format): age1… lines, blank and "#" lines skipped; errors name file and line.
    public static func parseRecipients(_ bytes: [UInt8], name: String) throws -> [AgeRecipient] {
        var recipients: [AgeRecipient] = []
        for (number, line) in try lines(bytes, name: name) {
            do {
                recipients.append(try AgeRecipient(parsing: line))
            } catch {
                throw AgeError.invalidKey("\(name), line \(number): expected an X25519 recipient 'age1…', a '#' comment or a blank line")
            }
        }
        guard !recipients.isEmpty else { throw AgeError.invalidKey("\(name): no recipient (age1…) found") }
        return recipients
    }

    // MARK: Lines

    /// The numbered lines (from 1) that are neither blank nor comments, trimmed, CR of CRLF dropped.
    private static func lines(_ bytes: [UInt8], name: String) throws -> [(Int, String)] {
        var result: [(Int, String)] = []
        // Split bytes, not Characters: Swift reads "\r\n" as one Character.
        for (index, raw) in bytes.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated() {
            guard let decoded = String(validating: raw, as: UTF8.self) else {
                throw AgeError.invalidKey("\(name), line \(index + 1): not UTF-8 text")
            }
            let line = AgeRecipient.trimmed(decoded)
            if line.isEmpty || line.hasPrefix("#") { continue }
            result.append((index + 1, line))
        }
        return result
    }
}
