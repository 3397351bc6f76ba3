import Foundation
import XCTest
@testable import KeepsakeAge

@testable import BackupCore

/// Bech32 (BIP-173 vectors), age recipients and identities, and key files.
final class AgeKeyTests: KeepsakeTestCase {
    // MARK: BIP-173

    /// BIP-173's valid strings, and one 91 characters long that is valid once the 90-character
    /// limit is lifted (age keys need that: an identity is 74 characters, a hybrid one far more).
    func testBIP173ValidVectors() throws {
        let valid = [
            "A12UEL5L",
            "a12uel5l",
            "an83characterlonghumanreadablepartthatcontainsthenumber1andtheexcludedcharactersbio1tt5tgs",
            "abcdef1qpzry9x8gf2tvdw0s3jn54khce6mua7lmqqqxw",
            "11qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqc8247j",
            "split1checkupstagehandshakeupstreamerranterredcaperred2y9e3w",
            "?1ezyfcl",
        ]
        for text in valid {
            let decoded = try Bech32.decode(text, maxLength: 90)
            XCTAssertEqual(Bech32.encode(human: decoded.human, data: decoded.data), text.lowercased(), text)
            // One flipped bit in the data part breaks the checksum.
            var bytes = Array(text.utf8)
            let position = bytes.lastIndex(of: UInt8(ascii: "1"))! + 1
            bytes[position] ^= 1
            XCTAssertThrowsError(try Bech32.decode(String(decoding: bytes, as: UTF8.self)), text)
        }
        let long = "an84characterslonghumanreadablepartthatcontainsthenumber1andtheexcludedcharactersbio1569pvx"
        XCTAssertThrowsError(try Bech32.decode(long, maxLength: 90))
        XCTAssertEqual(try Bech32.decode(long).human, "an84characterslonghumanreadablepartthatcontainsthenumber1andtheexcludedcharactersbio")
    }

    func testBIP173InvalidVectors() {
        let invalid: [(String, Bech32.Failure)] = [
            ("\u{20}1nwldj5", .invalidCharacter),      // HRP character out of range
            ("\u{7F}1axkwrx", .invalidCharacter),
            ("\u{80}1eym55h", .invalidCharacter),
            ("pzry9x0s0muk", .noSeparator),
            ("1pzry9x0s0muk", .emptyHumanPart),
            ("x1b4n0q5v", .invalidCharacter),          // 'b' is not a data character
            ("li1dgmt3", .tooShort),                   // checksum shorter than 6
            ("de1lg7wt\u{FF}", .invalidCharacter),
            ("A1G7SGD8", .badChecksum),                // checksum made with the uppercase HRP
            ("10a06t8", .emptyHumanPart),
            ("1qzzfhee", .emptyHumanPart),
            ("a12UEL5L", .mixedCase),
        ]
        for (text, failure) in invalid {
            XCTAssertThrowsError(try Bech32.decode(text, maxLength: 90), text.debugDescription) { error in
                XCTAssertEqual(error as? Bech32.Failure, failure, text.debugDescription)
            }
        }
    }

    func testBitRegroupingRefusesBadPadding() throws {
        XCTAssertEqual(try Bech32.convertBits([0xFF], from: 8, to: 5, pad: true), [31, 28])
        XCTAssertEqual(try Bech32.convertBits([31, 28], from: 5, to: 8, pad: false), [0xFF])
        XCTAssertThrowsError(try Bech32.convertBits([31, 29], from: 5, to: 8, pad: false)) // non-zero padding
        XCTAssertThrowsError(try Bech32.convertBits([31, 28, 0], from: 5, to: 8, pad: false)) // 5 leftover bits
    }

    // MARK: Keys

    func testTestkitIdentityAndItsRecipient() throws {
        // The identity of the CCTV vectors; age-keygen -y gives its recipient.
        let identity = try AgeIdentity(parsing: "AGE-SECRET-KEY-1EGTZVFFV20835NWYV6270LXYVK2VKNX2MMDKWYKLMGR48UAWX40Q2P2LM0")
        XCTAssertEqual(identity.encoded, "AGE-SECRET-KEY-1EGTZVFFV20835NWYV6270LXYVK2VKNX2MMDKWYKLMGR48UAWX40Q2P2LM0")
        XCTAssertTrue(identity.recipient.encoded.hasPrefix("age1"))
        XCTAssertEqual(identity.recipient.encoded.count, 62)
        XCTAssertEqual(try AgeRecipient(parsing: "  \(identity.recipient.encoded)\n"), identity.recipient)
        XCTAssertEqual(try AgeRecipient(parsing: identity.recipient.encoded.uppercased()), identity.recipient)
    }

    func testGeneratedIdentitiesRoundTripAndDiffer() throws {
        let first = try AgeIdentity.generate()
        let second = try AgeIdentity.generate()
        XCTAssertNotEqual(first.recipient, second.recipient)
        let parsed = try AgeIdentity(parsing: first.encoded)
        XCTAssertEqual(parsed.recipient, first.recipient)
        XCTAssertEqual(parsed.encoded, first.encoded)
        XCTAssertEqual(first.encoded.count, 74)
        XCTAssertTrue(first.encoded.hasPrefix("AGE-SECRET-KEY-1"))
    }

    func testIdentityTextNeverShowsTheSecret() throws {
        let identity = try AgeIdentity.generate()
        let secret = identity.encoded
        let secretBody = String(secret.dropFirst("AGE-SECRET-KEY-1".count))
        XCTAssertEqual(identity.description, "AGE-SECRET-KEY-1… (redacted) for \(identity.recipient.encoded)")
        var dumped = ""
        dump(identity, to: &dumped)
        for text in [identity.description, "\(identity)", String(describing: identity), String(reflecting: identity), dumped,
                     "\([identity])", "\(AgeDecryptionKeys(identities: [identity]))"] {
            XCTAssertFalse(text.contains(secretBody), "leaks the secret: \(text.prefix(40))…")
        }
    }

    func testBadKeysNameTheFormAndNeverEchoTheText() throws {
        let identity = try AgeIdentity.generate()
        var broken = Array(identity.encoded.utf8)
        broken[30] = broken[30] == UInt8(ascii: "Q") ? UInt8(ascii: "P") : UInt8(ascii: "Q")
        let brokenText = String(decoding: broken, as: UTF8.self)
        for text in [brokenText, "AGE-SECRET-KEY-1", "", identity.recipient.encoded, identity.encoded.lowercased() + "x"] {
            XCTAssertThrowsError(try AgeIdentity(parsing: text)) { error in
                guard case .invalidKey(let reason)? = error as? AgeError else { return XCTFail("\(error)") }
                XCTAssertTrue(reason.contains("AGE-SECRET-KEY-1…"), reason)
                XCTAssertFalse(reason.contains(String(brokenText.dropFirst(16).prefix(20))), reason)
            }
        }
        for text in ["age1", identity.encoded, "age1qqqqqqqq", identity.recipient.encoded + "q"] {
            XCTAssertThrowsError(try AgeRecipient(parsing: text)) { error in
                guard case .invalidKey(let reason)? = error as? AgeError else { return XCTFail("\(error)") }
                XCTAssertTrue(reason.contains("age1…"), reason)
                XCTAssertFalse(reason.contains(String(identity.encoded.dropFirst(16).prefix(20))), reason)
            }
        }
    }

    // MARK: Key files

    func testRenderedKeyFileParsesBack() throws {
        let identity = try AgeIdentity.generate()
        let text = AgeKeyFile.render(identity, created: Date(timeIntervalSince1970: 1_136_214_245))
        XCTAssertEqual(text, "# created: 2006-01-02T15:04:05Z\n# public key: \(identity.recipient.encoded)\n\(identity.encoded)\n")
        let parsed = try AgeKeyFile.parseIdentities(Array(text.utf8), name: "key.txt")
        XCTAssertEqual(parsed.map(\.recipient), [identity.recipient])
    }

    func testIdentityFilesSkipCommentsAndBlankLinesAndNameBadLines() throws {
        let one = try AgeIdentity.generate()
        let two = try AgeIdentity.generate()
        let text = "# a comment\r\n\r\n\(one.encoded)\r\n   \n# created: x\n\(two.encoded)"
        XCTAssertEqual(try AgeKeyFile.parseIdentities(Array(text.utf8), name: "k").map(\.recipient), [one.recipient, two.recipient])
        let bad = "# ok\n\(one.encoded)\n\(one.encoded)X\n"
        XCTAssertThrowsError(try AgeKeyFile.parseIdentities(Array(bad.utf8), name: "keys.txt")) { error in
            let message = "\(error)"
            XCTAssertTrue(message.contains("keys.txt, line 3"), message)
            XCTAssertFalse(message.contains(String(one.encoded.dropFirst(16))), message)
        }
        XCTAssertThrowsError(try AgeKeyFile.parseIdentities(Array("# only comments\n".utf8), name: "empty.txt")) { error in
            XCTAssertTrue("\(error)".contains("empty.txt"))
        }
        XCTAssertThrowsError(try AgeKeyFile.parseIdentities([0x41, 0xFF, 0x0A], name: "bin")) { error in
            XCTAssertTrue("\(error)".contains("bin, line 1"), "\(error)")
        }
    }

    func testRecipientFiles() throws {
        let one = try AgeIdentity.generate().recipient
        let two = try AgeIdentity.generate().recipient
        let text = "# team\n\(one.encoded)\n\n  \(two.encoded)  \n"
        XCTAssertEqual(try AgeKeyFile.parseRecipients(Array(text.utf8), name: "r"), [one, two])
        XCTAssertThrowsError(try AgeKeyFile.parseRecipients(Array("\(one.encoded)\nssh-ed25519 AAAA\n".utf8), name: "team.txt")) { error in
            XCTAssertTrue("\(error)".contains("team.txt, line 2"), "\(error)")
        }
    }
}
