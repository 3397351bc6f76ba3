import Foundation
import KeepsakeTestSupport

/// What a bucket on a test S3 server holds, as the server lists it to curl (signed with the
/// server's keys): the tests' own reader, independent of Keepsake's S3 client.
struct S3BucketListing {
    // MARK: State

    let server: SeaweedServer
    let bucket: String
    /// Keys asked for a page (the server's most is 1,000): fewer makes the listing page.
    var pageSize = 1000

    // MARK: Listing

    /// The keys under `prefix`, page after page, in the server's order.
    func keys(prefix: String) throws -> [String] {
        var keys: [String] = []
        var token: String?
        repeat {
            var query = ["list-type": "2", "max-keys": String(pageSize), "prefix": prefix]
            if let token { query["continuation-token"] = token }
            let page = try get(query)
            keys += Self.elements("Key", in: page)
            token = page.contains("<IsTruncated>true</IsTruncated>") ? Self.elements("NextContinuationToken", in: page).first : nil
        } while token != nil
        return keys
    }

    /// The keys of multipart uploads under `prefix` that were begun and neither completed
    /// nor aborted.
    func unfinishedUploads(prefix: String) throws -> [String] {
        Self.elements("Key", in: try get(["uploads": "", "prefix": prefix]))
    }

    // MARK: Requests

    /// The body of a GET of the bucket with `query`, signed by curl. Debian's curl signs a
    /// query correctly only when it is already in canonical form: keys sorted, `key=value`,
    /// values percent-encoded but for unreserved characters.
    private func get(_ query: [String: String]) throws -> String {
        var unreserved = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)..<Unicode.Scalar(128)))
        unreserved.insert(charactersIn: "-_.~")
        let canonical = query.sorted { $0.key < $1.key }
            .map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? "")" }.joined(separator: "&")
        let outcome = try ProcessRunner.run("curl", ["-sS", "--fail", "--aws-sigv4", "aws:amz:\(server.region):s3",
                                                     "--user", "\(server.accessKey):\(server.secretKey)",
                                                     "\(server.endpoint.absoluteString)/\(bucket)?\(canonical)"])
        guard outcome.exitCode == 0 else {
            throw ProcessRunner.Failure(description: "listing bucket \(bucket) with curl failed:\n\(outcome)")
        }
        return outcome.stdoutText
    }

    /// The text of every `<element>` in `xml` (the keys Keepsake writes are plain names:
    /// nothing in them is escaped).
    private static func elements(_ element: String, in xml: String) -> [String] {
        xml.components(separatedBy: "<\(element)>").dropFirst().compactMap { $0.components(separatedBy: "</\(element)>").first }
    }
}
