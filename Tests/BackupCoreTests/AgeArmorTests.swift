import Foundation
import XCTest
@testable import KeepsakeAge

@testable import BackupCore

/// ASCII-armored age files (age -a): recognised and decoded on the way, front to back.
final class AgeArmorTests: KeepsakeTestCase {
    /// `file` in armor, with `lineEnd` after every line.
    private func armor(_ file: [UInt8], lineEnd: String = "\n") -> [UInt8] {
        let text = Data(file).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        let lines = ["-----BEGIN AGE ENCRYPTED FILE-----"] + text.split(separator: "\n").map(String.init)
            + ["-----END AGE ENCRYPTED FILE-----"]
        return Array(lines.map { $0 + lineEnd }.joined().utf8)
    }

    func testArmoredFilesDecryptInEveryReadPattern() throws {
        let identity = try AgeIdentity.generate()
        let keys = AgeDecryptionKeys(identities: [identity])
        for size in [0, 1, 47, 48, 65536, 3 * 65536 + 17] {
            let plaintext = AgeTestBytes.pattern(size, seed: UInt64(size + 5))
            let file = try AgeTestBytes.encrypt(plaintext, .recipients([identity.recipient]))
            for lineEnd in ["\n", "\r\n"] {
                let armored = armor(file, lineEnd: lineEnd)
                XCTAssertEqual(try AgeTestBytes.decryptStream(armored, keys), plaintext, "size \(size)")
                XCTAssertEqual(try AgeTestBytes.decryptStream(armored, keys, piece: 1000, pipePiece: 7), plaintext, "size \(size)")
                XCTAssertEqual(try AgeTestBytes.decrypt(armored, keys, piece: 333), plaintext, "size \(size)")
            }
        }
    }

    func testArmoredFilesAreFrontToBackOnly() throws {
        let identity = try AgeIdentity.generate()
        let file = armor(try AgeTestBytes.encrypt([1, 2, 3], .recipients([identity.recipient])))
        let source = try AgeDecryptingSource(ciphertext: AgeMemorySource(file), keys: AgeDecryptionKeys(identities: [identity]))
        XCTAssertThrowsError(try source.size())
        var buffer = [UInt8](repeating: 0, count: 3)
        XCTAssertThrowsError(try buffer.withUnsafeMutableBytes { try source.read(at: 0, into: $0) })
        XCTAssertEqual(try AgeTestBytes.readAll(source), [1, 2, 3])
    }

    func testDamagedArmorNamesTheArmor() throws {
        let identity = try AgeIdentity.generate()
        let good = armor(try AgeTestBytes.encrypt(AgeTestBytes.pattern(5000), .recipients([identity.recipient])))
        let text = String(decoding: good, as: UTF8.self)
        let damaged = [
            text.replacingOccurrences(of: "-----END AGE ENCRYPTED FILE-----\n", with: ""),      // no END line
            text + "trailing garbage\n",
            "garbage\n" + text,
            text.replacingOccurrences(of: "BEGIN AGE", with: "BEGIN  AGE"),
            text.replacingOccurrences(of: "\n", with: " \n"),                                    // spaces at line ends
        ]
        for bad in damaged {
            let error = AgeTestBytes.ageError { _ = try AgeTestBytes.decryptStream(Array(bad.utf8), AgeDecryptionKeys(identities: [identity])) }
            guard case .malformedHeader(let reason)? = error else { XCTFail(String(describing: error)); continue }
            XCTAssertTrue(reason.hasPrefix("ASCII armor:"), reason)
        }
        // Whitespace around the block is allowed.
        XCTAssertEqual(try AgeTestBytes.decryptStream(Array(("\n \t\r\n" + text + "\n\n  ").utf8), AgeDecryptionKeys(identities: [identity])),
                       AgeTestBytes.pattern(5000))
    }
}
