import Foundation
@testable import KeepsakeArchive
import XCTest
@testable import KeepsakeAge

@testable import BackupCore

/// Runs the age project's test vectors (C2SP CCTV, `Fixtures/age-testkit`): every vector is
/// decrypted with its identities or passphrases, through the pipe reader and the
/// random-access reader, and must end as its `expect:` line says. Skipped vectors are
/// named and counted, never skipped silently.
final class AgeTestkitTests: KeepsakeTestCase {
    // MARK: Vectors

    private struct Vector {
        var name: String
        var expect = ""
        var payloadHash: String?
        var identities: [String] = []
        var passphrases: [String] = []
        var armored = false
        var compressed: String?
        var file: [UInt8] = []
    }

    private static var folder: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/age-testkit").path
    }

    /// Vectors this reader cannot run: those for post-quantum mlkem768x25519 identities
    /// (AGE-SECRET-KEY-PQ-1…, not implemented), armored or not.
    private static let expectedSkips: Set<String> = [
        "armor_hybrid",
        "hybrid", "hybrid_and_x25519", "hybrid_bad_tag", "hybrid_currupted_enc_mlkem", "hybrid_currupted_enc_x25519",
        "hybrid_extra_argument", "hybrid_grease", "hybrid_identity", "hybrid_long_file_key", "hybrid_long_share",
        "hybrid_low_order", "hybrid_multiple_recipients", "hybrid_no_match", "hybrid_not_canonical_body",
        "hybrid_not_canonical_enc", "hybrid_short_share", "hybrid_uppercase",
    ]

    func testEveryVector() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.folder).filter { $0 != "README.md" }.sorted()
        XCTAssertEqual(names.count, 143, "the CCTV age vectors")
        var passed: [String] = []
        var skipped: [String] = []
        var armoredPassed = 0
        for name in names {
            let vector = try load(name)
            let identities = vector.identities.filter { !$0.hasPrefix("AGE-SECRET-KEY-PQ-") }
            if !vector.identities.isEmpty && identities.isEmpty && vector.passphrases.isEmpty {
                skipped.append(name)
                continue
            }
            if run(vector, identities: try identities.map { try AgeIdentity(parsing: $0) }) {
                passed.append(name)
                if vector.armored { armoredPassed += 1 }
            }
        }
        XCTAssertEqual(Set(skipped), Self.expectedSkips, "skipped vectors")
        XCTAssertEqual(skipped.count, 18)
        XCTAssertEqual(passed.count, 125, "vectors run and passed")
        XCTAssertEqual(armoredPassed, 32, "armored vectors run and passed")
        XCTAssertEqual(passed.count + skipped.count, names.count)
    }

    // MARK: Running

    /// Whether `vector` ends as expected in both readers (each failure is recorded).
    private func run(_ vector: Vector, identities: [AgeIdentity]) -> Bool {
        let keySets = vector.passphrases.isEmpty
            ? [AgeDecryptionKeys(identities: identities)]
            : vector.passphrases.map { AgeDecryptionKeys(identities: identities, passphrase: Array($0.utf8)) }
        var ok = true
        for keys in keySets {
            // Front to back through the pipe reader, keeping what it hands out before any error.
            var released: [UInt8] = []
            var streamError: AgeError?
            do {
                let source = try AgeDecryptingSource(stream: AgePipeSource(vector.file, pieceLimit: 10_000), keys: keys)
                var buffer = [UInt8](repeating: 0, count: 50_000)
                while true {
                    let got = try buffer.withUnsafeMutableBytes { try source.read(into: $0) }
                    if got == 0 { break }
                    released += buffer[..<got]
                }
            } catch let error as AgeError {
                streamError = error
            } catch {
                XCTFail("\(vector.name): unexpected \(error)")
                return false
            }
            // The random-access reader must agree on the outcome.
            var randomError: AgeError?
            var randomPlaintext: [UInt8] = []
            do {
                randomPlaintext = try AgeTestBytes.decrypt(vector.file, keys, piece: 70_000)
            } catch let error as AgeError {
                randomError = error
            } catch {
                XCTFail("\(vector.name): unexpected \(error)")
                return false
            }
            let streamOutcome = streamError.map(Self.outcome) ?? "success"
            let randomOutcome = randomError.map(Self.outcome) ?? "success"
            if streamOutcome != vector.expect || randomOutcome != vector.expect {
                XCTFail("\(vector.name): expected \(vector.expect), stream gave \(streamError.map { "\($0)" } ?? "success"), "
                        + "random access gave \(randomError.map { "\($0)" } ?? "success")")
                ok = false
            }
            if let hash = vector.payloadHash, vector.expect == "success" || vector.expect == "payload failure" {
                if AgeTestBytes.sha256Hex(released) != hash {
                    XCTFail("\(vector.name): the \(released.count) bytes released do not match the payload hash")
                    ok = false
                }
            }
            if vector.expect == "success" && randomPlaintext != released {
                XCTFail("\(vector.name): the random-access reader gave other bytes")
                ok = false
            }
        }
        return ok
    }

    /// The testkit's name for the outcome an error stands for.
    private static func outcome(_ error: AgeError) -> String {
        switch error {
        case .malformedHeader(let reason) where reason.hasPrefix("ASCII armor:"): return "armor failure"
        case .notAgeFile, .malformedHeader, .workFactorTooHigh: return "header failure"
        case .noMatchingIdentity, .wrongPassphrase: return "no match"
        case .headerMACMismatch: return "HMAC failure"
        case .payloadDamaged, .truncated, .trailingData: return "payload failure"
        case .identityRequired, .passphraseRequired, .invalidKey, .io: return "unexpected \(error)"
        }
    }

    // MARK: Loading

    /// A vector file: "key: value" lines, a blank line, then the age file (maybe zstd-compressed).
    private func load(_ name: String) throws -> Vector {
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: Self.folder + "/" + name)))
        var vector = Vector(name: name)
        var position = 0
        while true {
            guard let newline = bytes[position...].firstIndex(of: 0x0A) else { throw CocoaError(.fileReadCorruptFile) }
            let line = String(decoding: bytes[position..<newline], as: UTF8.self)
            position = newline + 1
            if line.isEmpty { break }
            guard let colon = line.range(of: ": ") else { continue }
            let key = String(line[..<colon.lowerBound])
            let value = String(line[colon.upperBound...])
            switch key {
            case "expect": vector.expect = value
            case "payload": vector.payloadHash = value
            case "identity": vector.identities.append(value)
            case "passphrase": vector.passphrases.append(value)
            case "armored": vector.armored = value == "yes"
            case "compressed": vector.compressed = value
            default: break // "file key", "comment"
            }
        }
        let body = Array(bytes[position...])
        switch vector.compressed {
        case nil: vector.file = body
        case "zstd": vector.file = try Self.zstdDecompress(body)
        case let other?: throw NSError(domain: "AgeTestkit", code: 1, userInfo: [NSLocalizedDescriptionKey: "\(name): \(other)"])
        }
        return vector
    }

    /// Decompresses a zstd stream with BackupCore's libzstd context.
    private static func zstdDecompress(_ input: [UInt8]) throws -> [UInt8] {
        let context = try ZstdContext(.decompression)
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var inputPosition = 0
        while inputPosition < input.count {
            var outputPosition = 0
            let status = input.withUnsafeBytes { source in
                buffer.withUnsafeMutableBytes {
                    context.decompressStream(source, inputPosition: &inputPosition, into: $0, outputPosition: &outputPosition)
                }
            }
            if case .failure = status { throw CocoaError(.fileReadCorruptFile) }
            out += buffer[..<outputPosition]
        }
        return out
    }
}
