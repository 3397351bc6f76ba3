import XCTest
@testable import KeepsakeAge

@testable import BackupCore

/// Damaged, truncated, extended and rearranged age files, and the wrong keys: each must fail
/// with the error that says what happened, never hand out wrong bytes.
final class AgeDamageTests: KeepsakeTestCase {
    private var identity: AgeIdentity!
    private var keys: AgeDecryptionKeys { AgeDecryptionKeys(identities: [identity]) }
    private let plaintext = AgeTestBytes.pattern(3 * 65536 + 5000)
    private var file: [UInt8] = []
    private var headerLength = 0

    override func setUpWithError() throws {
        identity = try AgeIdentity.generate()
        file = try AgeTestBytes.encrypt(plaintext, .recipients([identity.recipient]))
        guard case .complete(_, _, let length) = try AgeHeader.parse(file, atEnd: true) else { return XCTFail("no header") }
        headerLength = length
    }

    /// The error of a whole front-to-back read, through both readers (they must agree on the kind).
    private func errors(_ bytes: [UInt8], _ keys: AgeDecryptionKeys? = nil) -> (AgeError?, AgeError?) {
        let keys = keys ?? self.keys
        let random = AgeTestBytes.ageError { _ = try AgeTestBytes.decrypt(bytes, keys, piece: 100_000) }
        let stream = AgeTestBytes.ageError { _ = try AgeTestBytes.decryptStream(bytes, keys) }
        return (random, stream)
    }

    // MARK: Bit flips

    func testBitFlipsInTheHeaderFail() {
        var generator = SystemRandomNumberGenerator()
        var positions = Array(0..<min(headerLength, 40))
        positions += (0..<60).map { _ in Int.random(in: 0..<headerLength, using: &generator) }
        for position in positions {
            for bit in [0, 7] {
                var damaged = file
                damaged[position] ^= UInt8(1 << bit)
                let (random, stream) = errors(damaged)
                for error in [random, stream] {
                    switch error {
                    case .notAgeFile?, .malformedHeader?, .headerMACMismatch?, .noMatchingIdentity?: break
                    default: XCTFail("header byte \(position) bit \(bit): \(String(describing: error))")
                    }
                }
            }
        }
    }

    func testBitFlipsInThePayloadFail() {
        var generator = SystemRandomNumberGenerator()
        let nonceStart = headerLength
        var positions = Array(nonceStart..<(nonceStart + 16))  // the nonce changes the payload key
        positions += [nonceStart + 16, file.count - 1, file.count - 17, nonceStart + 16 + 65536 + 15]
        positions += (0..<80).map { _ in Int.random(in: nonceStart..<file.count, using: &generator) }
        for position in positions {
            var damaged = file
            damaged[position] ^= UInt8(1 << Int.random(in: 0..<8, using: &generator))
            let (random, stream) = errors(damaged)
            for error in [random, stream] {
                guard case .payloadDamaged(let chunk)? = error else {
                    XCTFail("payload byte \(position): \(String(describing: error))")
                    continue
                }
                let expected = position < nonceStart + 16 ? 0 : Int64((position - nonceStart - 16) / AgeFormat.sealedChunkSize)
                XCTAssertEqual(chunk, expected, "payload byte \(position)")
            }
        }
    }

    func testRandomAccessOnlyNoticesDamageInTheChunksItReads() throws {
        var damaged = file
        damaged[headerLength + 16 + 2 * AgeFormat.sealedChunkSize + 100] ^= 1   // in chunk 2
        let source = try AgeDecryptingSource(ciphertext: AgeMemorySource(damaged), keys: keys)
        var buffer = [UInt8](repeating: 0, count: 65536)
        XCTAssertEqual(try buffer.withUnsafeMutableBytes { try source.read(at: 65536, into: $0) }, 65536)
        XCTAssertEqual(buffer, Array(plaintext[65536..<131_072]))
        XCTAssertEqual(AgeTestBytes.ageError { _ = try buffer.withUnsafeMutableBytes { try source.read(at: 2 * 65536 + 10, into: $0) } },
                       .payloadDamaged(chunk: 2))
    }

    // MARK: Truncation and extension

    func testTruncationAtChunkBoundariesIsTruncated() {
        let payload = headerLength + 16
        for chunks in [1, 2, 3] {
            let cut = Array(file.prefix(payload + chunks * AgeFormat.sealedChunkSize))
            let (random, stream) = errors(cut)
            XCTAssertEqual(random, .truncated, "\(chunks) chunks")
            XCTAssertEqual(stream, .truncated, "\(chunks) chunks")
        }
        // Header and nonce only, and the nonce cut short.
        XCTAssertEqual(errors(Array(file.prefix(payload))).0, .truncated)
        XCTAssertEqual(errors(Array(file.prefix(payload))).1, .truncated)
        if case .malformedHeader? = errors(Array(file.prefix(payload - 5))).0 {} else { XCTFail("nonce cut") }
        if case .malformedHeader? = errors(Array(file.prefix(headerLength - 5))).1 {} else { XCTFail("header cut") }
    }

    func testTruncationMidChunkFails() {
        let payload = headerLength + 16
        for cut in [payload + 5, payload + 100, payload + AgeFormat.sealedChunkSize + 17, file.count - 1, file.count - 16] {
            let (random, stream) = errors(Array(file.prefix(cut)))
            for error in [random, stream] {
                switch error {
                case .truncated?, .payloadDamaged?: break
                default: XCTFail("cut at \(cut): \(String(describing: error))")
                }
            }
        }
    }

    func testSizeRefusesImpossibleCiphertextSizes() throws {
        let payload = headerLength + 16
        let shortTail = Array(file.prefix(payload + AgeFormat.sealedChunkSize + 10))
        XCTAssertEqual(AgeTestBytes.ageError { _ = try AgeDecryptingSource(ciphertext: AgeMemorySource(shortTail), keys: self.keys).size() },
                       .truncated)
        let emptyTail = Array(file.prefix(payload + AgeFormat.sealedChunkSize + 16))
        XCTAssertEqual(AgeTestBytes.ageError { _ = try AgeDecryptingSource(ciphertext: AgeMemorySource(emptyTail), keys: self.keys).size() },
                       .payloadDamaged(chunk: 1))
    }

    func testAppendedBytesFail() throws {
        for extra in [[UInt8(0)], [1, 2, 3], Array(repeating: 7, count: 40)] {
            let (random, stream) = errors(file + extra)
            for error in [random, stream] {
                switch error {
                case .trailingData?, .payloadDamaged?, .truncated?: break
                default: XCTFail("\(extra.count) appended: \(String(describing: error))")
                }
            }
        }
        // After a full final chunk, an appended byte is seen for what it is.
        let exact = try AgeTestBytes.encrypt(AgeTestBytes.pattern(2 * 65536), .recipients([identity.recipient]))
        let (random, stream) = errors(exact + [0])
        XCTAssertEqual(stream, .trailingData)
        XCTAssertEqual(random, .trailingData)
    }

    func testSwappedChunksFail() {
        let start = headerLength + 16
        let size = AgeFormat.sealedChunkSize
        var swapped = file
        swapped.replaceSubrange(start..<(start + size), with: file[(start + size)..<(start + 2 * size)])
        swapped.replaceSubrange((start + size)..<(start + 2 * size), with: file[start..<(start + size)])
        let (random, stream) = errors(swapped)
        XCTAssertEqual(random, .payloadDamaged(chunk: 0))
        XCTAssertEqual(stream, .payloadDamaged(chunk: 0))
        // A chunk from another file under another key is damage too.
        let other = (try? AgeTestBytes.encrypt(plaintext, .recipients([identity.recipient]))) ?? []
        var spliced = file
        spliced.replaceSubrange((start + size)..<(start + 2 * size), with: other[(start + size)..<(start + 2 * size)])
        XCTAssertEqual(errors(spliced).0, .payloadDamaged(chunk: 1))
    }

    // MARK: Keys

    func testWrongIdentityAndMissingKeys() throws {
        let stranger = try AgeIdentity.generate()
        XCTAssertEqual(errors(file, AgeDecryptionKeys(identities: [stranger])).0, .noMatchingIdentity)
        XCTAssertEqual(errors(file, AgeDecryptionKeys()).0, .identityRequired)
        XCTAssertEqual(errors(file, AgeDecryptionKeys(passphrase: [1, 2])).0, .identityRequired)
    }

    func testWrongAndMissingPassphrase() throws {
        let passphrase = Array("open sesame".utf8)
        let locked = try AgeTestBytes.encrypt([1, 2, 3], .passphrase(passphrase, workFactor: 10))
        XCTAssertEqual(errors(locked, AgeDecryptionKeys(passphrase: Array("open sesame!".utf8))).0, .wrongPassphrase)
        XCTAssertEqual(errors(locked, AgeDecryptionKeys()).1, .passphraseRequired)
        XCTAssertEqual(errors(locked, AgeDecryptionKeys(identities: [identity])).0, .passphraseRequired)
        XCTAssertEqual(try AgeTestBytes.decrypt(locked, AgeDecryptionKeys(identities: [identity], passphrase: passphrase)), [1, 2, 3])
        XCTAssertEqual(errors(locked, AgeDecryptionKeys(passphrase: passphrase, maxWorkFactor: 9)).0, .workFactorTooHigh(10))
    }

    /// Issue 26 §9: age accepts up to 22 (26 s and 4.2 GB a try here); Keepsake, which like
    /// age writes 18, refuses anything above 19 before scrypt runs (and before the MAC).
    func testWorkFactorsAbove19AreRefusedBeforeAnyWork() throws {
        XCTAssertEqual(AgeDecryptionKeys().maxWorkFactor, 19)
        let locked = try AgeTestBytes.encrypt([1], .passphrase([9], workFactor: 10))
        let line = Array(" 10\n".utf8)
        guard let at = (0..<locked.count - 4).first(where: { locked[$0..<($0 + 4)].elementsEqual(line) }) else { return XCTFail("no 10") }
        for factor in [20, 22, 23] {
            var text = locked
            text.replaceSubrange(at..<(at + 4), with: Array(" \(factor)\n".utf8))
            XCTAssertEqual(errors(text, AgeDecryptionKeys(passphrase: [9])).0, .workFactorTooHigh(factor))
            XCTAssertEqual(errors(text, AgeDecryptionKeys(passphrase: [9])).1, .workFactorTooHigh(factor))
        }
    }

    func testNotAnAgeFile() {
        XCTAssertEqual(errors([]).0, .notAgeFile)
        XCTAssertEqual(errors(Array("hello world, this is not age\n".utf8)).1, .notAgeFile)
        XCTAssertEqual(errors([0x28, 0xB5, 0x2F, 0xFD, 0, 0, 0]).0, .notAgeFile)
    }

    func testErrorMessagesCarryNoSecrets() throws {
        let all: [AgeError] = [.notAgeFile, .malformedHeader("x"), .noMatchingIdentity, .wrongPassphrase, .passphraseRequired,
                               .identityRequired, .headerMACMismatch, .workFactorTooHigh(23), .payloadDamaged(chunk: 4),
                               .truncated, .trailingData, .invalidKey("expected age1…"), .io("disk")]
        for error in all { XCTAssertFalse(error.description.isEmpty) }
        XCTAssertTrue(AgeError.payloadDamaged(chunk: 4).description.contains("chunk 4"))
    }
}

extension AgeDamageTests {
    func testEndlessHeaderIsRefused() {
        // Stanzas without end (unknown ones, each with ten full body lines): refused once the
        // header passes 1 MiB, not buffered without end (the file goes on past that, so that
        // the readers meet the limit before the file's end).
        var bytes = AgeFormat.versionLine
        let stanza = Array(("-> grease\n" + String(repeating: String(repeating: "A", count: 64) + "\n", count: 10) + "AAAA\n").utf8)
        while bytes.count < (1 << 20) + (64 << 10) { bytes += stanza }
        for error in [AgeTestBytes.ageError { _ = try AgeTestBytes.decrypt(bytes, self.keys) },
                      AgeTestBytes.ageError { _ = try AgeTestBytes.decryptStream(bytes, self.keys) }] {
            guard case .malformedHeader(let reason)? = error else { return XCTFail(String(describing: error)) }
            XCTAssertTrue(reason.contains("longer than 1 MiB"), reason)
        }
    }
}
