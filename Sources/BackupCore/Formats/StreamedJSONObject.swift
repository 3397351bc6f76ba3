import Foundation

/// A JSON object whose last member is an array too long to hold (a listing of 100,000
/// entries), written an element at a time: the text is exactly what `JSONValue.serialized`
/// gives for the whole object, compact or pretty.
///
/// ```swift
/// var document = StreamedJSONObject(leading: [("backup", summary.json)], arrayKey: "entries",
///                                   pretty: false) { standardOutput.write($0) }
/// for entry in entries { document.append(entry.json) }
/// document.finish()
/// ```
public struct StreamedJSONObject {
    // MARK: State

    private let pretty: Bool
    private let write: (String) -> Void
    /// The closing text after the last element.
    private let closing: String
    private var count = 0

    // MARK: Life cycle

    /// Writes the object's opening: the `leading` members, then `arrayKey` and the array's
    /// opening bracket.
    public init(leading: JSONObject, arrayKey: String, pretty: Bool, write: @escaping (String) -> Void) {
        self.pretty = pretty
        self.write = write
        var object = leading
        object[arrayKey] = .array([])
        // The whole object with an empty array, cut just after the array's `[`: what is left
        // (`]` and the object's end) closes it.
        let whole = JSONValue.object(object).serialized(pretty: pretty)
        let cut = whole.range(of: "[]", options: .backwards).map { whole.index(after: $0.lowerBound) } ?? whole.endIndex
        write(String(whole[..<cut]))
        closing = String(whole[cut...])
    }

    // MARK: Writing

    /// Writes the next element of the array.
    public mutating func append(_ element: JSONValue) {
        var text = count > 0 ? "," : ""
        if pretty { text += "\n    " }
        text += element.serialized(pretty: pretty, indent: 2)
        count += 1
        write(text)
    }

    /// Writes the array's and the object's end.
    public func finish() {
        write(count > 0 && pretty ? "\n  " + closing : closing)
    }
}
