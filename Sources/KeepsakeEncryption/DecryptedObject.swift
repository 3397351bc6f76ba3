import KeepsakeAge
import KeepsakeSupport

/// An age file's plaintext, reporting damage found while reading (a chunk that fails its
/// authentication, a truncated file) as a damaged archive, as the rest of Keepsake expects.
final class DecryptedObject: RandomAccessSource {
    /// The decrypted view.
    let source: AgeDecryptingSource
    private let name: String

    init(_ source: AgeDecryptingSource, name: String) {
        self.source = source
        self.name = name
    }

    func size() throws -> Int64 { try translating { try source.size() } }

    func read(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try translating { try source.read(at: offset, into: buffer) }
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try translating { try source.read(into: buffer) }
    }

    func close() { source.close() }

    private func translating<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as AgeError {
            throw AgeKeyring.translate(error, name: name, identities: [])
        }
    }
}
