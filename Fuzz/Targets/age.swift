// libFuzzer target: the age v1 reader (header, stanzas, MAC, STREAM payload), through both the
// random-access and the streaming reader, with a fixed identity and passphrase (a low scrypt
// cap keeps each run fast). Any input must end in plaintext or a thrown error; never a
// crash, hang or leak.
import KeepsakeAge
import KeepsakeSupport

/// An age file held in memory, readable at any offset.
private final class MemorySource: RandomAccessSource {
    private let bytes: [UInt8]
    private var position = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    func size() throws -> Int64 { Int64(bytes.count) }

    func read(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard offset >= 0, offset < Int64(bytes.count) else { return 0 }
        let start = Int(offset)
        let count = min(buffer.count, bytes.count - start)
        bytes.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[start..<start + count])) }
        return count
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let count = try read(at: Int64(position), into: buffer)
        position += count
        return count
    }

    func close() {}
}

// The testkit's identity and passphrase, so seeds made from its vectors get past the stanzas.
private let identity = try? AgeIdentity(parsing: "AGE-SECRET-KEY-1EGTZVFFV20835NWYV6270LXYVK2VKNX2MMDKWYKLMGR48UAWX40Q2P2LM0")
private let keys = AgeDecryptionKeys(identities: identity.map { [$0] } ?? [], passphrase: Array("password".utf8), maxWorkFactor: 10)

private func drain(_ source: ByteSource) {
    var chunk = [UInt8](repeating: 0, count: 70_000)
    while let count = try? chunk.withUnsafeMutableBytes({ try source.read(into: $0) }), count > 0 {}
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAge(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    _ = AgeFormat.isAgeFile(prefix: bytes)
    if let random = try? AgeDecryptingSource(ciphertext: MemorySource(bytes), keys: keys) {
        if let total = try? random.size() {
            var buffer = [UInt8](repeating: 0, count: 100)
            for offset in [0, total / 2, max(0, total - 10)] {
                _ = try? buffer.withUnsafeMutableBytes { try random.read(at: offset, into: $0) }
            }
        }
        drain(random)
    }
    if let stream = try? AgeDecryptingSource(stream: MemorySource(bytes), keys: keys) {
        drain(stream)
    }
    _ = try? AgeKeyFile.parseIdentities(bytes, name: "fuzz")
    _ = try? AgeKeyFile.parseRecipients(bytes, name: "fuzz")
    return 0
}
