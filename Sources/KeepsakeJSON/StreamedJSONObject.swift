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
    /// opening bracket. `trailing` members (an `exit_code`) follow the array when it is
    /// finished.
    public init(leading: JSONObject, arrayKey: String, trailing: JSONObject = JSONObject(), pretty: Bool,
                write: @escaping (String) -> Void) {
        self.pretty = pretty
        self.write = write
        var object = leading
        // A stand-in for the array, found from the end: the leading members may hold any
        // text, the trailing ones are the caller's own.
        let marker = "\u{1}streamed array\u{1}"
        object[arrayKey] = .string(marker)
        for (key, value) in zip(trailing.keys, trailing.values) { object[key] = value }
        let whole = JSONValue.object(object).serialized(pretty: pretty)
        let serializedMarker = JSONValue.string(marker).serialized(pretty: false)
        guard let found = whole.range(of: serializedMarker, options: .backwards) else {
            // Unreachable: the marker is in the object. An empty array keeps the text valid.
            write(whole)
            closing = ""
            return
        }
        write(String(whole[..<found.lowerBound]) + "[")
        closing = "]" + String(whole[found.upperBound...])
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
