import Foundation

/// The INI dialect of the AWS shared files (`~/.aws/credentials`, `~/.aws/config`):
/// `[section]` headers and `key = value` lines; `#` and `;` start comments.
enum IniFile {
    /// The keys of `section` in the file at `path` (lowercased names), or nil when the file
    /// or the section is not there. Files over 1 MiB are not read.
    static func section(_ section: String, of path: String) -> [String: String]? {
        guard let data = FileManager.default.contents(atPath: path), data.count <= 1 << 20 else { return nil }
        return self.section(section, in: String(decoding: data, as: UTF8.self))
    }

    /// The keys of `section` in `text`.
    static func section(_ wanted: String, in text: String) -> [String: String]? {
        var current: String?
        var found: [String: String]?
        for rawLine in text.split(omittingEmptySubsequences: true, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                current = line.dropFirst().dropLast().trimmingCharacters(in: .whitespaces)
                if current == wanted && found == nil { found = [:] }
                continue
            }
            guard current == wanted, let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            found?[key] = value
        }
        return found
    }
}
