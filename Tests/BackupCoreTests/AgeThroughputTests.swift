import Foundation
import KeepsakeSupport
import XCTest
@testable import KeepsakeAge

@testable import BackupCore

/// Prints encryption and decryption speed (no timed assertion: the machine is shared).
/// `KEEPSAKE_AGE_BENCH_MIB=512 Scripts/test --verbose --filter AgeThroughput` measures 512 MiB;
/// by default 16 MiB, which still checks the bytes come back.
final class AgeThroughputTests: KeepsakeTestCase {
    /// Throws writes away, counting them.
    private final class NullSink: ByteSink {
        var count = 0
        func write(_ buffer: UnsafeRawBufferPointer) throws { count += buffer.count }
    }

    func testThroughput() throws {
        let mebibytes = Int(ProcessInfo.processInfo.environment["KEEPSAKE_AGE_BENCH_MIB"] ?? "") ?? 16
        let identity = try AgeIdentity.generate()
        let block = AgeTestBytes.pattern(1 << 20)
        let total = Double(mebibytes) * 1_048_576

        // Encrypt only, into a sink that drops the bytes.
        let null = NullSink()
        var start = Date()
        let sink = try AgeEncryptingSink(downstream: null, encryption: .recipients([identity.recipient]))
        for _ in 0..<mebibytes { try block.withUnsafeBytes { try sink.write($0) } }
        try sink.finish()
        let encryptSeconds = Date().timeIntervalSince(start)

        // Encrypt into memory, then decrypt front to back in 1 MiB reads.
        let memory = AgeMemorySink()
        let keep = try AgeEncryptingSink(downstream: memory, encryption: .recipients([identity.recipient]))
        for _ in 0..<mebibytes { try block.withUnsafeBytes { try keep.write($0) } }
        try keep.finish()
        let ciphertext = memory.bytes
        XCTAssertEqual(null.count, ciphertext.count)
        start = Date()
        let source = try AgeDecryptingSource(ciphertext: AgeMemorySource(ciphertext), keys: AgeDecryptionKeys(identities: [identity]))
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var read = 0
        var matches = true
        while true {
            let got = try buffer.withUnsafeMutableBytes { try source.read(into: $0) }
            if got == 0 { break }
            read += got
            // memcmp: an Array comparison in a debug build would cost more than the decryption.
            if got == block.count && memcmp(buffer, block, got) != 0 { matches = false }
        }
        let decryptSeconds = Date().timeIntervalSince(start)
        XCTAssertEqual(read, mebibytes << 20)
        XCTAssertTrue(matches)

        // The pipe reader, the same way.
        start = Date()
        let stream = try AgeDecryptingSource(stream: AgePipeSource(ciphertext), keys: AgeDecryptionKeys(identities: [identity]))
        read = 0
        while true {
            let got = try buffer.withUnsafeMutableBytes { try stream.read(into: $0) }
            if got == 0 { break }
            read += got
        }
        let streamSeconds = Date().timeIntervalSince(start)
        XCTAssertEqual(read, mebibytes << 20)

        let rate = { (seconds: Double) in String(format: "%.0f MB/s", total / 1_000_000 / seconds) }
        print("age throughput on \(mebibytes) MiB: encrypt \(rate(encryptSeconds)), decrypt (random-access reader) "
              + "\(rate(decryptSeconds)), decrypt (pipe reader) \(rate(streamSeconds))")
    }
}
