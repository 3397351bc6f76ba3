import Foundation
import XCTest
@testable import KeepsakeAge

@testable import BackupCore

/// Keepsake's age files against the real `age` and `age-keygen` (Debian's age 1.1.1, which
/// Scripts/setup installs): each side decrypts what the other encrypts, with key files from
/// either side. `age -p` reads passphrases from the terminal only, so those runs go through
/// `script`, which gives age a pseudo-terminal fed from our stdin.
final class AgeInteropTests: KeepsakeTestCase {
    private var folder = ""

    override func setUpWithError() throws {
        guard Self.tool("age") != nil, Self.tool("age-keygen") != nil else {
            throw XCTSkip("age and age-keygen are not installed (Scripts/setup installs them)")
        }
        folder = try makeTemporaryDirectory("age-interop")
    }

    override func tearDown() {
        removeTemporaryDirectory(folder)
        super.tearDown()
    }

    // MARK: Recipients and identities

    func testAgeKeygenFilesParseAndAgeDecryptsOurFiles() throws {
        let keyFile = folder + "/key.txt"
        try run("age-keygen", ["-o", keyFile])
        let identities = try AgeKeyFile.parseIdentities(try readFileBytes(Array(keyFile.utf8)), name: "key.txt")
        XCTAssertEqual(identities.count, 1)
        let recipient = String(decoding: try run("age-keygen", ["-y", keyFile]), as: UTF8.self)
        XCTAssertEqual(try AgeRecipient(parsing: recipient), identities[0].recipient)
        for size in [0, 1, 65536, 200_000] {
            let plaintext = AgeTestBytes.pattern(size, seed: UInt64(size + 3))
            try writeFile(folder + "/ours.age", bytes: try AgeTestBytes.encrypt(plaintext, .recipients([identities[0].recipient])))
            // To stdout: age makes an -o file only once there is a byte to write.
            XCTAssertEqual(try run("age", ["-d", "-i", keyFile, folder + "/ours.age"]), plaintext, "size \(size)")
        }
    }

    func testOurKeyFileWorksWithAgeAndAgeFilesDecryptHere() throws {
        let identity = try AgeIdentity.generate()
        let keyFile = folder + "/ours.key"
        try writeFile(keyFile, AgeKeyFile.render(identity, created: Date()))
        XCTAssertEqual(String(decoding: try run("age-keygen", ["-y", keyFile]), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines), identity.recipient.encoded)
        for size in [0, 5, 65535, 65536, 65537, 300_000] {
            let plaintext = AgeTestBytes.pattern(size, seed: UInt64(size + 11))
            try writeFile(folder + "/plain", bytes: plaintext)
            try run("age", ["-r", identity.recipient.encoded, "-o", folder + "/theirs.age", folder + "/plain"])
            let file = try readFileBytes(Array((folder + "/theirs.age").utf8))
            let keys = AgeDecryptionKeys(identities: [identity])
            XCTAssertEqual(try AgeTestBytes.decrypt(file, keys), plaintext, "size \(size)")
            XCTAssertEqual(try AgeTestBytes.decryptStream(file, keys), plaintext, "size \(size)")
            // And age reads our file with our key file.
            try writeFile(folder + "/ours.age", bytes: try AgeTestBytes.encrypt(plaintext, .recipients([identity.recipient])))
            XCTAssertEqual(try run("age", ["--decrypt", "--identity", keyFile, folder + "/ours.age"]), plaintext, "size \(size)")
        }
    }

    func testSeveralRecipientsBothWays() throws {
        let identities = try (0..<3).map { _ in try AgeIdentity.generate() }
        let recipientsFile = folder + "/recipients.txt"
        try writeFile(recipientsFile, "# team\n" + identities.map { $0.recipient.encoded + "\n" }.joined())
        let recipients = try AgeKeyFile.parseRecipients(try readFileBytes(Array(recipientsFile.utf8)), name: "recipients.txt")
        let plaintext = AgeTestBytes.pattern(150_000)
        try writeFile(folder + "/plain", bytes: plaintext)
        try run("age", ["-R", recipientsFile, "-o", folder + "/theirs.age", folder + "/plain"])
        let theirs = try readFileBytes(Array((folder + "/theirs.age").utf8))
        XCTAssertEqual(try AgeTestBytes.decrypt(theirs, AgeDecryptionKeys(identities: [identities[2]])), plaintext)
        try writeFile(folder + "/ours.age", bytes: try AgeTestBytes.encrypt(plaintext, .recipients(recipients)))
        for (index, identity) in identities.enumerated() {
            try writeFile(folder + "/k\(index)", AgeKeyFile.render(identity, created: Date()))
            try run("age", ["-d", "-i", folder + "/k\(index)", "-o", folder + "/back\(index)", folder + "/ours.age"])
            XCTAssertEqual(try readFileBytes(Array((folder + "/back\(index)").utf8)), plaintext)
        }
    }

    func testAgeArmorDecryptsHere() throws {
        let identity = try AgeIdentity.generate()
        let plaintext = AgeTestBytes.pattern(140_000)
        try writeFile(folder + "/plain", bytes: plaintext)
        try run("age", ["-a", "-r", identity.recipient.encoded, "-o", folder + "/theirs.asc", folder + "/plain"])
        let armored = try readFileBytes(Array((folder + "/theirs.asc").utf8))
        XCTAssertTrue(String(decoding: armored.prefix(34), as: UTF8.self).hasPrefix("-----BEGIN AGE ENCRYPTED FILE-----"))
        XCTAssertEqual(try AgeTestBytes.decryptStream(armored, AgeDecryptionKeys(identities: [identity])), plaintext)
        XCTAssertEqual(try AgeTestBytes.decrypt(armored, AgeDecryptionKeys(identities: [identity])), plaintext)
    }

    // MARK: Passphrases (through a pseudo-terminal)

    func testPassphraseFilesBothWays() throws {
        guard Self.tool("script") != nil else { throw XCTSkip("script (util-linux) is not installed") }
        let passphrase = "interop passphrase 7"
        let plaintext = AgeTestBytes.pattern(100_000)
        try writeFile(folder + "/plain", bytes: plaintext)
        // age -p asks twice (passphrase, confirmation); its default work factor is 18.
        try runInTerminal("age -p -o theirs.age plain", input: "\(passphrase)\n\(passphrase)\n")
        let theirs = try readFileBytes(Array((folder + "/theirs.age").utf8))
        XCTAssertEqual(try AgeTestBytes.decrypt(theirs, AgeDecryptionKeys(passphrase: Array(passphrase.utf8))), plaintext)
        XCTAssertEqual(AgeTestBytes.ageError { _ = try AgeTestBytes.decrypt(theirs, AgeDecryptionKeys(passphrase: Array("no".utf8))) },
                       .wrongPassphrase)
        try writeFile(folder + "/ours.age",
                      bytes: try AgeTestBytes.encrypt(plaintext, .passphrase(Array(passphrase.utf8), workFactor: 12)))
        try runInTerminal("age -d -o back ours.age", input: "\(passphrase)\n")
        XCTAssertEqual(try readFileBytes(Array((folder + "/back").utf8)), plaintext)
    }

    // MARK: Running tools

    /// The path of `name` on PATH.
    private static func tool(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Runs `name` with `arguments` in the test folder; returns stdout; fails on a non-zero exit.
    @discardableResult
    private func run(_ name: String, _ arguments: [String], input: String? = nil) throws -> [UInt8] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try XCTUnwrap(Self.tool(name)))
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: folder)
        let output = Pipe()
        let errors = Pipe()
        let feed = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = feed
        try process.run()
        if let input { feed.fileHandleForWriting.write(Data(input.utf8)) }
        try feed.fileHandleForWriting.close()
        // age writes little to stderr, so reading stdout to its end first cannot stall.
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            XCTFail("\(name) \(arguments.joined(separator: " ")) exited \(process.terminationStatus): \(String(decoding: err, as: UTF8.self))")
            throw CocoaError(.executableLoad)
        }
        return Array(out)
    }

    /// Runs a shell command line under `script`, so it has a terminal that reads `input`.
    private func runInTerminal(_ command: String, input: String) throws {
        try run("script", ["-q", "-e", "-c", command, "/dev/null"], input: input)
    }
}
