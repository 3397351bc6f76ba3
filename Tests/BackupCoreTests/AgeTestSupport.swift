import Foundation
import KeepsakeHashing
import KeepsakeSupport
@testable import KeepsakeAge

@testable import BackupCore

// MARK: - In-memory byte streams for the age tests

/// Collects what is written, counting the writes.
final class AgeMemorySink: ByteSink {
    private(set) var bytes: [UInt8] = []
    private(set) var writes = 0

    func write(_ buffer: UnsafeRawBufferPointer) throws {
        bytes.append(contentsOf: buffer)
        writes += 1
    }
}

/// Bytes that can be read at any offset, or front to back; `pieceLimit` caps each read
/// (like a pipe handing out little at a time).
final class AgeMemorySource: RandomAccessSource {
    let bytes: [UInt8]
    private var position = 0
    private let pieceLimit: Int
    private(set) var closed = false
    private(set) var randomReads = 0

    init(_ bytes: [UInt8], pieceLimit: Int = .max) {
        self.bytes = bytes
        self.pieceLimit = pieceLimit
    }

    func size() throws -> Int64 { Int64(bytes.count) }

    func read(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        randomReads += 1
        guard offset < Int64(bytes.count) else { return 0 }
        let count = min(buffer.count, bytes.count - Int(offset))
        bytes.withUnsafeBytes { buffer.baseAddress?.copyMemory(from: $0.baseAddress! + Int(offset), byteCount: count) }
        return count
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let count = min(buffer.count, bytes.count - position, pieceLimit)
        guard count > 0 else { return 0 }
        bytes.withUnsafeBytes { buffer.baseAddress?.copyMemory(from: $0.baseAddress! + position, byteCount: count) }
        position += count
        return count
    }

    func close() { closed = true }
}

/// A front-to-back-only view of bytes (what a pipe gives).
final class AgePipeSource: ByteSource {
    private let inner: AgeMemorySource
    init(_ bytes: [UInt8], pieceLimit: Int = .max) { inner = AgeMemorySource(bytes, pieceLimit: pieceLimit) }
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int { try inner.read(into: buffer) }
    func close() { inner.close() }
}

// MARK: - Helpers

enum AgeTestBytes {
    /// Deterministic pseudo-random bytes (xorshift), so failures reproduce.
    static func pattern(_ count: Int, seed: UInt64 = 0x9E37_79B9_7F4A_7C15) -> [UInt8] {
        var state = seed | 1
        var out = [UInt8](repeating: 0, count: count)
        var index = 0
        while index < count {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            var word = state
            for _ in 0..<8 where index < count {
                out[index] = UInt8(truncatingIfNeeded: word)
                word >>= 8
                index += 1
            }
        }
        return out
    }

    /// `plaintext` encrypted as one age file, written in pieces of `piece` bytes.
    static func encrypt(_ plaintext: [UInt8], _ encryption: AgeEncryption, piece: Int = 1 << 20) throws -> [UInt8] {
        let sink = AgeMemorySink()
        let age = try AgeEncryptingSink(downstream: sink, encryption: encryption)
        var offset = 0
        while offset < plaintext.count {
            let end = min(offset + piece, plaintext.count)
            try plaintext[offset..<end].withUnsafeBytes { try age.write($0) }
            offset = end
        }
        try age.finish()
        return sink.bytes
    }

    /// Everything a source gives front to back, read `piece` bytes at a time.
    static func readAll(_ source: ByteSource, piece: Int = 1 << 20) throws -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: piece)
        while true {
            let got = try buffer.withUnsafeMutableBytes { try source.read(into: $0) }
            if got == 0 { return out }
            out += buffer[..<got]
        }
    }

    /// Decrypts front to back through the random-access reader.
    static func decrypt(_ file: [UInt8], _ keys: AgeDecryptionKeys, piece: Int = 1 << 20) throws -> [UInt8] {
        try readAll(try AgeDecryptingSource(ciphertext: AgeMemorySource(file), keys: keys), piece: piece)
    }

    /// Decrypts front to back through the pipe reader.
    static func decryptStream(_ file: [UInt8], _ keys: AgeDecryptionKeys, piece: Int = 1 << 20, pipePiece: Int = .max) throws -> [UInt8] {
        try readAll(try AgeDecryptingSource(stream: AgePipeSource(file, pieceLimit: pipePiece), keys: keys), piece: piece)
    }

    /// The error `body` throws, as an AgeError (nil when it throws none or another kind).
    static func ageError(_ body: () throws -> Void) -> AgeError? {
        do { try body() } catch let error as AgeError { return error } catch { return nil }
        return nil
    }

    static func sha256Hex(_ bytes: [UInt8]) -> String {
        SHA256Hasher.hex(of: bytes)
    }
}
