/// Just enough XML for S3's answers (ListObjectsV2, multipart uploads, errors): elements,
/// their text, the five predefined entities and numeric character references. No DTDs, no
/// external anything: what comes back from a server is data, never instructions. Malformed
/// input yields what could be read, never a crash.
struct S3XML: Sendable {
    // MARK: Tree

    /// One element: its name (without namespace prefix), its text, its children.
    struct Element: Sendable {
        var name: String
        var text: String
        var children: [Element]

        /// The first child named `name`.
        func child(_ name: String) -> Element? { children.first { $0.name == name } }

        /// Every child named `name`, in order.
        func children(_ name: String) -> [Element] { children.filter { $0.name == name } }

        /// The text of the first child named `name`.
        func text(of name: String) -> String? { child(name)?.text }
    }

    /// The document's root element (an empty one when there is none).
    let root: Element

    // MARK: Parsing

    /// Reads `bytes` (UTF-8). Deeper than 64 levels or larger than `limit` is cut off.
    init(_ bytes: [UInt8], limit: Int = 64 << 20) {
        var parser = Parser(bytes: bytes.count > limit ? Array(bytes[..<limit]) : bytes)
        root = parser.document()
    }

    /// The document's root element read from `text`.
    init(_ text: String) {
        self.init(Array(text.utf8))
    }

    // MARK: - Parser

    private struct Parser {
        let bytes: [UInt8]
        var index = 0
        /// Open elements, innermost last.
        var stack: [Element] = []

        init(bytes: [UInt8]) {
            self.bytes = bytes
        }

        mutating func document() -> Element {
            stack = [Element(name: "", text: "", children: [])]
            while index < bytes.count {
                if bytes[index] == UInt8(ascii: "<") {
                    tag()
                } else {
                    text()
                }
            }
            // Close whatever was left open.
            while stack.count > 1, let last = stack.popLast() { stack[stack.count - 1].children.append(last) }
            return stack.first?.children.first ?? Element(name: "", text: "", children: [])
        }

        private mutating func text() {
            let start = index
            while index < bytes.count && bytes[index] != UInt8(ascii: "<") { index += 1 }
            guard stack.count > 1 else { return }
            stack[stack.count - 1].text += Parser.decodeEntities(bytes[start..<index])
        }

        private mutating func tag() {
            // Comments, processing instructions, declarations and CDATA.
            if starts(with: "<!--") { skip(past: "-->"); return }
            if starts(with: "<![CDATA[") {
                index += 9
                let start = index
                skip(past: "]]>")
                let end = max(start, index - 3)
                if stack.count > 1 { stack[stack.count - 1].text += String(decoding: bytes[start..<min(end, bytes.count)], as: UTF8.self) }
                return
            }
            if starts(with: "<?") || starts(with: "<!") { skip(past: ">"); return }
            let closing = index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "/")
            index += closing ? 2 : 1
            let nameStart = index
            while index < bytes.count, !Parser.isNameEnd(bytes[index]) { index += 1 }
            var name = String(decoding: bytes[nameStart..<index], as: UTF8.self)
            if let colon = name.lastIndex(of: ":") { name = String(name[name.index(after: colon)...]) }
            // Attributes are not needed: skip to the end of the tag, minding quotes.
            var quote: UInt8?
            var selfClosing = false
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                if let open = quote {
                    if byte == open { quote = nil }
                } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                    quote = byte
                } else if byte == UInt8(ascii: ">") {
                    selfClosing = index >= 2 && bytes[index - 2] == UInt8(ascii: "/")
                    break
                }
            }
            // A tag without a name (`<>`, `< x>`) is no element: nothing is opened or closed.
            guard !name.isEmpty else { return }
            if closing {
                // Close up to the matching element (tolerating unclosed ones inside it).
                guard let depth = stack.lastIndex(where: { $0.name == name }), depth > 0 else { return }
                while stack.count > depth, let last = stack.popLast() { stack[stack.count - 1].children.append(last) }
            } else if selfClosing {
                if stack.count < 64 { stack[stack.count - 1].children.append(Element(name: name, text: "", children: [])) }
            } else if stack.count < 64 {
                stack.append(Element(name: name, text: "", children: []))
            }
        }

        private func starts(with prefix: String) -> Bool {
            let wanted = Array(prefix.utf8)
            guard index + wanted.count <= bytes.count else { return false }
            return Array(bytes[index..<(index + wanted.count)]) == wanted
        }

        private mutating func skip(past terminator: String) {
            let wanted = Array(terminator.utf8)
            while index < bytes.count {
                if index + wanted.count <= bytes.count && Array(bytes[index..<(index + wanted.count)]) == wanted {
                    index += wanted.count
                    return
                }
                index += 1
            }
        }

        private static func isNameEnd(_ byte: UInt8) -> Bool {
            byte == UInt8(ascii: " ") || byte == UInt8(ascii: ">") || byte == UInt8(ascii: "/") || byte == UInt8(ascii: "\t")
                || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
        }

        /// Text with `&amp;`, `&lt;`, `&gt;`, `&quot;`, `&apos;`, `&#N;` and `&#xH;` decoded;
        /// anything else is kept as it is.
        static func decodeEntities(_ slice: ArraySlice<UInt8>) -> String {
            guard slice.contains(UInt8(ascii: "&")) else { return String(decoding: slice, as: UTF8.self) }
            var out = ""
            var pending: [UInt8] = []
            var position = slice.startIndex
            while position < slice.endIndex {
                let byte = slice[position]
                guard byte == UInt8(ascii: "&"), let semicolon = slice[position...].prefix(12).firstIndex(of: UInt8(ascii: ";")) else {
                    pending.append(byte)
                    position += 1
                    continue
                }
                let entity = String(decoding: slice[(position + 1)..<semicolon], as: UTF8.self)
                var scalar: Unicode.Scalar?
                switch entity {
                case "amp": scalar = "&"
                case "lt": scalar = "<"
                case "gt": scalar = ">"
                case "quot": scalar = "\""
                case "apos": scalar = "'"
                default:
                    if entity.hasPrefix("#x") || entity.hasPrefix("#X") {
                        scalar = UInt32(entity.dropFirst(2), radix: 16).flatMap(Unicode.Scalar.init)
                    } else if entity.hasPrefix("#") {
                        scalar = UInt32(entity.dropFirst(1)).flatMap(Unicode.Scalar.init)
                    }
                }
                guard let scalar else {
                    pending.append(byte)
                    position += 1
                    continue
                }
                out += String(decoding: pending, as: UTF8.self)
                pending.removeAll()
                out.unicodeScalars.append(scalar)
                position = semicolon + 1
            }
            return out + String(decoding: pending, as: UTF8.self)
        }
    }
}
