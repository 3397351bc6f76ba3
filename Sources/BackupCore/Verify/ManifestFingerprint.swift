import KeepsakeHashing
import KeepsakeModel

/// What `verify` keeps of a manifest to compare another copy of it with, without holding
/// either copy's bytes (25 MB each for 60,000 files): its summary line, and the length and
/// SHA-256 of its entry lines. Built from the copy beside an archive, or fed the archive's
/// own copy a block at a time as it is read.
final class ManifestFingerprint {
    // MARK: State

    /// The first line, without its newline.
    private(set) var summaryLine: [UInt8] = []
    private var summaryEnded = false
    private let entries = SHA256Hasher()
    private var entriesLength = 0
    private var entriesDigest: String?
    /// The longest summary line believed.
    private static let summaryLimit = 1 << 20

    // MARK: Building

    /// An empty fingerprint, to be fed with `update`.
    init() {}

    /// The finished fingerprint of a whole manifest.
    convenience init(of bytes: [UInt8]) {
        self.init()
        bytes.withUnsafeBytes { update($0) }
        finish()
    }

    /// Feeds the next bytes of the manifest.
    func update(_ bytes: UnsafeRawBufferPointer) {
        var rest = bytes
        if !summaryEnded {
            let newline = rest.firstIndex(of: UInt8(ascii: "\n"))
            let end = newline ?? rest.count
            if summaryLine.count <= ManifestFingerprint.summaryLimit { summaryLine.append(contentsOf: rest[0..<end]) }
            guard let newline else { return }
            summaryEnded = true
            rest = UnsafeRawBufferPointer(rebasing: rest[(newline + 1)...])
        }
        entries.update(rest)
        entriesLength += rest.count
    }

    /// Ends the feeding; the fingerprint can then be compared.
    func finish() {
        if entriesDigest == nil { entriesDigest = entries.finalizeHex() }
    }

    // MARK: Comparing

    /// True when `inside` (the archive's own copy) says exactly what this copy beside the
    /// archive says: the same entry lines byte for byte, and the same summary line once
    /// the archive facts (which only the copy beside can know) are left out.
    func matches(inside: ManifestFingerprint) -> Bool {
        guard summaryEnded, inside.summaryEnded, let digest = entriesDigest, digest == inside.entriesDigest,
              entriesLength == inside.entriesLength else { return false }
        // Byte for byte: a damaged key that parses to a default value must not slip through.
        guard let facts = (try? Manifest.parseSummary(summaryLine))?.archive,
              inside.summaryLine.last == UInt8(ascii: "}") else { return false }
        var expected = Array(inside.summaryLine.dropLast())
        expected.append(contentsOf: Array(",\"archive\":".utf8))
        expected.append(contentsOf: Array(facts.json.serialized().utf8))
        expected.append(UInt8(ascii: "}"))
        return summaryLine == expected
    }
}
