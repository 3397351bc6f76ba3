import XCTest
@testable import KeepsakeAge

@testable import BackupCore

/// Encrypting and decrypting age files: sizes around the chunk boundaries, recipients and
/// passphrases, random access at many offsets, and reads in odd sizes.
final class AgeRoundTripTests: KeepsakeTestCase {
    // MARK: Sizes

    private let sizes = [0, 1, 65535, 65536, 65537, 3 * 65536, 5 * 1024 * 1024 + 123]

    func testRoundTripsEverySizeToOneRecipient() throws {
        let identity = try AgeIdentity.generate()
        for size in sizes {
            let plaintext = AgeTestBytes.pattern(size, seed: UInt64(size + 1))
            let file = try AgeTestBytes.encrypt(plaintext, .recipients([identity.recipient]))
            let keys = AgeDecryptionKeys(identities: [identity])
            XCTAssertEqual(try AgeTestBytes.decrypt(file, keys), plaintext, "size \(size), random access")
            XCTAssertEqual(try AgeTestBytes.decryptStream(file, keys), plaintext, "size \(size), stream")
            XCTAssertEqual(try AgeDecryptingSource(ciphertext: AgeMemorySource(file), keys: keys).size(), Int64(size))
            // The ciphertext is the header, the nonce and one tag per chunk more than the plaintext.
            let chunks = max(1, (size + 65535) / 65536)
            let header = try headerLength(file)
            XCTAssertEqual(file.count, header + 16 + size + 16 * chunks, "size \(size)")
        }
    }

    func testThreeRecipientsEachOpenTheFile() throws {
        let identities = try (0..<3).map { _ in try AgeIdentity.generate() }
        let plaintext = AgeTestBytes.pattern(200_000)
        let file = try AgeTestBytes.encrypt(plaintext, .recipients(identities.map(\.recipient)))
        for identity in identities {
            XCTAssertEqual(try AgeTestBytes.decrypt(file, AgeDecryptionKeys(identities: [identity])), plaintext)
        }
        let source = try AgeDecryptingSource(ciphertext: AgeMemorySource(file), keys: AgeDecryptionKeys(identities: [identities[2]]))
        XCTAssertEqual(source.stanzaKinds, ["X25519", "X25519", "X25519"])
        XCTAssertEqual(source.encryptionSummary, "3 recipients")
        // Among other identities that do not match, the right one is found.
        let others = try (0..<2).map { _ in try AgeIdentity.generate() }
        XCTAssertEqual(try AgeTestBytes.decryptStream(file, AgeDecryptionKeys(identities: others + [identities[1]])), plaintext)
    }

    func testPassphraseRoundTrip() throws {
        let plaintext = AgeTestBytes.pattern(70_000)
        let passphrase = Array("correct horse battery staple".utf8)
        let file = try AgeTestBytes.encrypt(plaintext, .passphrase(passphrase, workFactor: 10))
        XCTAssertEqual(try AgeTestBytes.decrypt(file, AgeDecryptionKeys(passphrase: passphrase)), plaintext)
        XCTAssertEqual(try AgeTestBytes.decryptStream(file, AgeDecryptionKeys(passphrase: passphrase)), plaintext)
        let source = try AgeDecryptingSource(ciphertext: AgeMemorySource(file), keys: AgeDecryptionKeys(passphrase: passphrase))
        XCTAssertEqual(source.stanzaKinds, ["scrypt"])
        XCTAssertEqual(source.encryptionSummary, "passphrase")
        let text = String(decoding: file.prefix(try headerLength(file)), as: UTF8.self)
        XCTAssertTrue(text.contains("-> scrypt "), text)
        XCTAssertTrue(text.split(separator: "\n")[1].hasSuffix(" 10"), text)
    }

    func testPassphraseWorkFactorDefaultsTo18() throws {
        let file = try AgeTestBytes.encrypt([1, 2, 3], .passphrase(Array("pw".utf8)))
        let text = String(decoding: file.prefix(try headerLength(file)), as: UTF8.self)
        XCTAssertTrue(text.split(separator: "\n")[1].hasSuffix(" 18"), text)
        XCTAssertEqual(try AgeTestBytes.decrypt(file, AgeDecryptionKeys(passphrase: Array("pw".utf8))), [1, 2, 3])
    }

    func testWritesInOddPiecesGiveTheSameFileContent() throws {
        let identity = try AgeIdentity.generate()
        let plaintext = AgeTestBytes.pattern(300_001)
        for piece in [1, 7, 4096, 65535, 65536, 65537, 200_000] {
            let file = try AgeTestBytes.encrypt(plaintext, .recipients([identity.recipient]), piece: piece)
            XCTAssertEqual(try AgeTestBytes.decrypt(file, AgeDecryptionKeys(identities: [identity])), plaintext, "piece \(piece)")
        }
    }

    // MARK: Reading

    func testSequentialReadsInOddSizes() throws {
        let identity = try AgeIdentity.generate()
        let plaintext = AgeTestBytes.pattern(3 * 65536 + 999)
        let file = try AgeTestBytes.encrypt(plaintext, .recipients([identity.recipient]))
        let keys = AgeDecryptionKeys(identities: [identity])
        for piece in [1, 3, 1000, 65535, 65536, 65537, 131_073] {
            XCTAssertEqual(try AgeTestBytes.decrypt(file, keys, piece: piece), plaintext, "piece \(piece)")
            XCTAssertEqual(try AgeTestBytes.decryptStream(file, keys, piece: piece), plaintext, "stream piece \(piece)")
            XCTAssertEqual(try AgeTestBytes.decryptStream(file, keys, piece: piece, pipePiece: 4093), plaintext, "pipe piece \(piece)")
        }
    }

    func testRandomAccessAtManyOffsetsAndLengths() throws {
        let identity = try AgeIdentity.generate()
        let plaintext = AgeTestBytes.pattern(5 * 65536 + 4321)
        let file = try AgeTestBytes.encrypt(plaintext, .recipients([identity.recipient]))
        let source = try AgeDecryptingSource(ciphertext: AgeMemorySource(file), keys: AgeDecryptionKeys(identities: [identity]))
        let size = plaintext.count
        var generator = SystemRandomNumberGenerator()
        var cases: [(Int, Int)] = [(0, 1), (0, 65536), (65535, 2), (65536, 65536), (size - 1, 1), (size - 1, 10),
                                   (size, 5), (size + 100, 5), (0, size + 10), (65536 * 5, 4321), (100, 3 * 65536)]
        for _ in 0..<300 {
            let offset = Int.random(in: 0...size, using: &generator)
            cases.append((offset, Int.random(in: 1...200_000, using: &generator)))
        }
        for (offset, length) in cases {
            var buffer = [UInt8](repeating: 0xAA, count: length)
            let got = try buffer.withUnsafeMutableBytes { try source.read(at: Int64(offset), into: $0) }
            let expected = offset >= size ? plaintext[size...] : plaintext[offset..<min(size, offset + length)]
            assertSameBytes(buffer[..<got], expected, "offset \(offset) length \(length)")
        }
    }

    func testSmallSequentialReadsDecryptEachChunkOnce() throws {
        let identity = try AgeIdentity.generate()
        let plaintext = AgeTestBytes.pattern(4 * 65536)
        let file = try AgeTestBytes.encrypt(plaintext, .recipients([identity.recipient]))
        let memory = AgeMemorySource(file)
        let source = try AgeDecryptingSource(ciphertext: memory, keys: AgeDecryptionKeys(identities: [identity]))
        let before = memory.randomReads
        XCTAssertEqual(try AgeTestBytes.readAll(source, piece: 100), plaintext)
        // One fetch per chunk (each read asks for less than a chunk), not one per 100 bytes.
        XCTAssertLessThanOrEqual(memory.randomReads - before, 5)
        source.close()
        XCTAssertTrue(memory.closed)
    }

    func testWholeReadFetchesCiphertextInBigPieces() throws {
        let identity = try AgeIdentity.generate()
        let plaintext = AgeTestBytes.pattern(32 * 65536)
        let sink = AgeMemorySink()
        let age = try AgeEncryptingSink(downstream: sink, encryption: .recipients([identity.recipient]))
        try plaintext.withUnsafeBytes { try age.write($0) }
        try age.finish()
        XCTAssertEqual(age.plaintextBytes, Int64(plaintext.count))
        XCTAssertLessThanOrEqual(sink.writes, 3, "sealed chunks go downstream about 1 MiB at a time")
        let memory = AgeMemorySource(sink.bytes)
        let source = try AgeDecryptingSource(ciphertext: memory, keys: AgeDecryptionKeys(identities: [identity]))
        let before = memory.randomReads
        XCTAssertEqual(try AgeTestBytes.readAll(source, piece: 4 << 20), plaintext)
        XCTAssertLessThanOrEqual(memory.randomReads - before, 3)
    }

    func testSinkRefusesUseAfterFinishAndEmptyRecipients() throws {
        let identity = try AgeIdentity.generate()
        let age = try AgeEncryptingSink(downstream: AgeMemorySink(), encryption: .recipients([identity.recipient]))
        try age.finish()
        XCTAssertNotNil(AgeTestBytes.ageError { try age.finish() })
        XCTAssertNotNil(AgeTestBytes.ageError { try [1, 2, 3].withUnsafeBytes { try age.write($0) } })
        XCTAssertThrowsError(try AgeEncryptingSink(downstream: AgeMemorySink(), encryption: .recipients([])))
        XCTAssertEqual(AgeTestBytes.ageError { _ = try AgeEncryptingSink(downstream: AgeMemorySink(),
                                                                           encryption: .passphrase([1], workFactor: 23)) },
                       .workFactorTooHigh(23))
    }

    func testFormatDetection() throws {
        let identity = try AgeIdentity.generate()
        let file = try AgeTestBytes.encrypt([1, 2, 3], .recipients([identity.recipient]))
        XCTAssertTrue(AgeFormat.isAgeFile(prefix: Array(file.prefix(22))))
        XCTAssertTrue(AgeFormat.isAgeFile(prefix: file))
        XCTAssertFalse(AgeFormat.isAgeFile(prefix: Array(file.prefix(21))))
        XCTAssertFalse(AgeFormat.isAgeFile(prefix: Array("age-encryption.org/v2\n".utf8)))
        XCTAssertFalse(AgeFormat.isAgeFile(prefix: [0x28, 0xB5, 0x2F, 0xFD]))
        XCTAssertEqual(AgeFormat.chunkSize, 65536)
    }

    // MARK: Helpers

    /// The length of `file`'s header (through the MAC line).
    private func headerLength(_ file: [UInt8]) throws -> Int {
        guard case .complete(_, _, let length) = try AgeHeader.parse(file, atEnd: true) else {
            XCTFail("header incomplete")
            return 0
        }
        return length
    }
}
