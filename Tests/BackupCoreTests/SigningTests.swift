import Foundation
@testable import KeepsakeSigning
import XCTest
@testable import KeepsakeAge

@testable import BackupCore

/// Ed25519 through OpenSSL, the key files, and the signed statement and signature object:
/// RFC 8032's vectors, keys made by the `openssl` program read back, and every variation of
/// a statement or signature object that must not be taken for one.
final class SigningTests: KeepsakeTestCase {
    // MARK: Ed25519

    /// RFC 8032 section 7.1, tests 1 and 2: the public key of each seed and the signature of
    /// each message, byte for byte; a signature checks only its own message and key.
    func testRFC8032VectorsSignAndVerify() throws {
        let vectors: [(seed: String, publicKey: String, message: String, signature: String)] = [
            ("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
             "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
             "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"),
            ("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
             "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
             "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"),
        ]
        for vector in vectors {
            let seed = SecretBytes(copying: try bytes(vector.seed))
            let message = try bytes(vector.message)
            XCTAssertEqual(try Ed25519.publicKey(of: seed), try bytes(vector.publicKey))
            let signature = try Ed25519.sign(message, seed: seed)
            XCTAssertEqual(signature, try bytes(vector.signature))
            XCTAssertTrue(Ed25519.isValid(signature, of: message, publicKey: try bytes(vector.publicKey)))
            XCTAssertFalse(Ed25519.isValid(signature, of: message + [0], publicKey: try bytes(vector.publicKey)))
            var flipped = signature
            flipped[10] ^= 1
            XCTAssertFalse(Ed25519.isValid(flipped, of: message, publicKey: try bytes(vector.publicKey)))
        }
        XCTAssertFalse(Ed25519.isValid(try bytes(vectors[0].signature), of: [], publicKey: try bytes(vectors[1].publicKey)))
        XCTAssertFalse(Ed25519.isValid([], of: [], publicKey: try bytes(vectors[0].publicKey)), "a short signature")
        XCTAssertFalse(Ed25519.isValid(try bytes(vectors[0].signature), of: [], publicKey: []), "a short key")
    }

    // MARK: Key files

    /// A key `openssl genpkey -algorithm ed25519` wrote is read, and its public key is the
    /// one `openssl pkey -pubout` derives; a key file Keepsake writes is read by openssl
    /// (which ignores the comment lines) and gives the same public key.
    func testKeyFilesAreTheOnesOpenSSLReadsAndWrites() throws {
        let folder = try temporaryDirectory()
        let made = folder + "/openssl.pem"
        try runTool("openssl", ["genpkey", "-algorithm", "ed25519", "-out", made])
        let key = try SigningKey(fileBytes: Array(try Data(contentsOf: URL(fileURLWithPath: made))), path: made)
        let derived = try runTool("openssl", ["pkey", "-in", made, "-pubout"])
        XCTAssertEqual(try SigningPublicKey(parsing: derived), key.publicKey)
        XCTAssertEqual(key.publicKey.pem, derived, "the PEM form is openssl's")

        let ours = folder + "/keepsake.pem"
        let fresh = try SigningKey.generate()
        try Data(fresh.fileText(created: Date(timeIntervalSince1970: 0)).utf8).write(to: URL(fileURLWithPath: ours))
        XCTAssertEqual(try SigningPublicKey(parsing: try runTool("openssl", ["pkey", "-in", ours, "-pubout"])), fresh.publicKey)
        XCTAssertThrowsError(try SigningPublicKey.load(ours), "the secret key is never taken for the public one") {
            XCTAssertTrue("\($0)".contains("secret signing key") && !"\($0)".contains("PRIVATE KEY"), "\($0)")
        }
        let publicFile = folder + "/public.txt"
        try Data("# public key: \(fresh.publicKey.encoded)\n".utf8).write(to: URL(fileURLWithPath: publicFile))
        XCTAssertEqual(try SigningPublicKey.load(publicFile), fresh.publicKey, "the comment line alone names it")
        XCTAssertEqual(try SigningPublicKey.load(fresh.publicKey.encoded), fresh.publicKey)
        XCTAssertNotEqual(try SigningKey.generate().publicKey, fresh.publicKey)
    }

    /// Keys of other kinds, encrypted keys, public keys given as secret ones and the other
    /// way round are refused with a reason, never read as something else.
    func testOtherKeysAreRefusedWithAReason() throws {
        let folder = try temporaryDirectory()
        let rsa = folder + "/rsa.pem"
        try runTool("openssl", ["genpkey", "-algorithm", "rsa", "-pkeyopt", "rsa_keygen_bits:1024", "-out", rsa])
        let ed448 = folder + "/ed448.pem"
        try runTool("openssl", ["genpkey", "-algorithm", "ed448", "-out", ed448])
        let encrypted = folder + "/encrypted.pem"
        try runTool("openssl", ["genpkey", "-algorithm", "ed25519", "-aes-128-cbc", "-pass", "pass:secret", "-out", encrypted])
        for (file, reason) in [(rsa, "not an Ed25519 key"), (ed448, "not an Ed25519 key"), (encrypted, "protected by a passphrase")] {
            XCTAssertThrowsError(try SigningKey(fileBytes: Array(try Data(contentsOf: URL(fileURLWithPath: file))), path: file)) {
                XCTAssertTrue("\($0)".contains(reason), "\(file): \($0)")
            }
        }
        let publicKey = try SigningKey.generate().publicKey
        XCTAssertThrowsError(try SigningKey(fileBytes: Array(publicKey.pem.utf8), path: "pub.pem")) {
            XCTAssertTrue("\($0)".contains("holds a public key"), "\($0)")
        }
        XCTAssertThrowsError(try SigningPublicKey.load(rsa)) { XCTAssertTrue("\($0)".contains("secret signing key"), "\($0)") }
        XCTAssertThrowsError(try SigningPublicKey(parsing: try runTool("openssl", ["pkey", "-in", ed448, "-pubout"]))) {
            XCTAssertTrue("\($0)".contains("not an Ed25519 one"), "\($0)")
        }
        for text in ["ed25519:", "ed25519:AAAA", "ed25519:" + String(repeating: "A", count: 43) + "=x", "age1qqqq", ""] {
            XCTAssertThrowsError(try SigningPublicKey(parsing: text), text)
        }
        XCTAssertThrowsError(try SigningPublicKey.load(folder + "/missing")) {
            XCTAssertTrue("\($0)".contains("no file of that name"), "\($0)")
        }
    }

    // MARK: Statements and signature objects

    /// A statement reads back only in exactly the form it is written.
    func testAStatementReadsBackOnlyInItsOwnForm() throws {
        let stem = "nas_20261129T023000Z-3f9a1c2e"
        let hex = String(repeating: "ab", count: 32)
        let statement = SignedStatement(stem: stem, objects: [
            .init(role: .archive, name: stem + ".tar.zst", size: 301, sha256: hex),
            .init(role: .manifest, name: stem + ".manifest.jsonl.zst", size: 44, sha256: hex),
        ])
        let text = statement.text
        XCTAssertEqual(text, "keepsake-signature 1\nbackup \(stem)\narchive \(stem).tar.zst 301 \(hex)\n"
            + "manifest \(stem).manifest.jsonl.zst 44 \(hex)\n")
        XCTAssertEqual(SignedStatement(parsing: text), statement)
        let variants = [
            text.replacingOccurrences(of: "keepsake-signature 1", with: "keepsake-signature 2"),
            String(text.dropLast()),
            text + "\n",
            text.replacingOccurrences(of: hex, with: hex.uppercased()),
            text.replacingOccurrences(of: " 301 ", with: " 0301 "),
            text.replacingOccurrences(of: " 301 ", with: " -301 "),
            text.replacingOccurrences(of: "archive \(stem).tar.zst", with: "archive other_20261129T023000Z-3f9a1c2e.tar.zst"),
            text.replacingOccurrences(of: "archive ", with: "summary "),
            text.replacingOccurrences(of: "backup \(stem)", with: "backup nas"),
            text.replacingOccurrences(of: "\n", with: "\r\n"),
            text + "summary \(stem).summary.json 1 \(hex)\nextra\n",
        ]
        for variant in variants { XCTAssertNil(SignedStatement(parsing: variant), variant) }
        let encrypted = text + "summary \(stem).summary.json 12 \(hex)\n"
        XCTAssertEqual(SignedStatement(parsing: encrypted)?.object(.summary)?.size, 12)
    }

    /// A signature object checks with its own key and statement only; malformed ones do not
    /// read at all.
    func testASignatureObjectChecksOnlyWithItsKeyAndStatement() throws {
        let key = try SigningKey.generate()
        let stem = "nas_20261129T023000Z-3f9a1c2e"
        let statement = SignedStatement(stem: stem, objects: [
            .init(role: .archive, name: stem + ".tar.zst", size: 1, sha256: String(repeating: "0", count: 64)),
            .init(role: .manifest, name: stem + ".manifest.jsonl.zst", size: 2, sha256: String(repeating: "1", count: 64)),
        ])
        let signature = try BackupSignature(signing: statement, with: key)
        let read = try XCTUnwrap(BackupSignature(parsing: signature.bytes))
        XCTAssertEqual(read, signature)
        XCTAssertTrue(read.isSigned(by: key.publicKey))
        XCTAssertFalse(read.isSigned(by: try SigningKey.generate().publicKey))
        var edited = read
        edited.statementText = edited.statementText.replacingOccurrences(of: " 1 ", with: " 9 ")
        XCTAssertFalse(edited.isSigned(by: key.publicKey), "an edited statement")

        let text = String(decoding: signature.bytes, as: UTF8.self)
        let broken = [
            "", "{}", "[]", text.replacingOccurrences(of: "\"format\":1", with: "\"format\":2"),
            text.replacingOccurrences(of: "\"keepsake\":\"signature\"", with: "\"keepsake\":\"manifest\""),
            text.replacingOccurrences(of: "\"key\":\"ed25519:", with: "\"key\":\"ed448:"),
            text.replacingOccurrences(of: "\"signature\":\"", with: "\"signature\":\"AAAA"),
            String(repeating: " ", count: BackupSignature.sizeLimit) + text,
        ]
        for variant in broken { XCTAssertNil(BackupSignature(parsing: Array(variant.utf8)), String(variant.prefix(80))) }
    }

    // MARK: Helpers

    private func bytes(_ hex: String) throws -> [UInt8] {
        var result: [UInt8] = []
        var rest = Substring(hex)
        while !rest.isEmpty {
            result.append(try XCTUnwrap(UInt8(rest.prefix(2), radix: 16), hex))
            rest = rest.dropFirst(2)
        }
        return result
    }

    /// A folder removed after the test.
    private func temporaryDirectory() throws -> String {
        let folder = try makeTemporaryDirectory("signing")
        addTeardownBlock { removeTemporaryDirectory(folder) }
        return folder
    }

    /// Runs a program, failing unless it exits 0; its standard output.
    @discardableResult
    private func runTool(_ program: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [program] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, "\(program) \(arguments) failed")
        return String(decoding: data, as: UTF8.self)
    }
}
