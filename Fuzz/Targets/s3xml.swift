// libFuzzer target: the XML reader of S3 answers (S3XML), which reads whatever a server sends:
// listings, multipart uploads, error documents. Any input must end in a tree, never a crash,
// hang or leak. Checked on every input:
//   - the tree is no deeper than the reader's 64 levels;
//   - every element has a name and texts hold no unpaired surrogates (they are Strings);
//   - the String and byte entry points agree on valid UTF-8;
//   - what Keepsake reads of a listing (Contents, Upload, IsTruncated, the tokens and an
//     error's Code and Message) is read without trouble, as S3Backend and S3Client read it.
@testable import BackupCore
import Glibc
@testable import KeepsakeS3

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzS3XML(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    let root = S3XML(bytes).root
    let depth = check(root, depth: 0)
    require(depth <= 66, "a tree \(depth) levels deep")
    for item in root.children("Contents") {
        _ = item.text(of: "Key")
        _ = item.text(of: "Size").flatMap(Int64.init)
    }
    for upload in root.children("Upload") {
        _ = (upload.text(of: "Key"), upload.text(of: "UploadId"))
    }
    _ = (root.text(of: "IsTruncated"), root.text(of: "NextContinuationToken"), root.text(of: "NextKeyMarker"),
         root.text(of: "NextUploadIdMarker"), root.text(of: "Code"), root.text(of: "Message"), root.text(of: "UploadId"))
    if let text = String(validating: bytes, as: UTF8.self) {
        require(same(S3XML(text).root, root), "the String and byte entry points read different trees")
    }
    return 0
}

/// The depth of `element`'s tree, checking each element on the way.
private func check(_ element: S3XML.Element, depth: Int) -> Int {
    require(depth == 0 || !element.name.isEmpty, "an element without a name at depth \(depth)")
    var deepest = depth
    for child in element.children { deepest = max(deepest, check(child, depth: depth + 1)) }
    return deepest
}

private func same(_ left: S3XML.Element, _ right: S3XML.Element) -> Bool {
    left.name == right.name && left.text == right.text && left.children.count == right.children.count
        && zip(left.children, right.children).allSatisfy { same($0, $1) }
}

/// Stops with the message (libFuzzer keeps the input) when an invariant does not hold.
private func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    guard !condition else { return }
    let text = "s3xml invariant broken: \(message())\n"
    _ = text.withCString { write(2, $0, strlen($0)) }
    abort()
}
