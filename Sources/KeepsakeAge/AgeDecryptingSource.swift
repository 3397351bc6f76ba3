import Glibc
import KeepsakeSupport

/// A decrypting view of an age file: plaintext front to back (`read(into:)`) or at any plaintext offset
/// (`read(at:into:)`), decrypting only the 64 KiB chunks that hold the bytes asked for (age's chunks are
/// independent, so a partial restore of a seekable zstd archive decrypts only its frames). The header is
/// parsed and its MAC checked in init; `size()` is the plaintext size, computed from the ciphertext size
/// (and checked against it: a ciphertext size that no plaintext size maps to is `truncated`/damaged). The last
/// chunk's final flag is verified whenever it is read; a front-to-back read that ends without a final chunk is `truncated`.
///
/// Every byte handed out has been authenticated. A pipe read hands out each chunk that
/// authenticates before it reports a problem further on (as age's reference reader does); the
/// random-access reader refuses a chunk out of place (a last chunk without the final flag:
/// `truncated`; a middle chunk with it: `trailingData`) without handing it out. Errors of the
/// underlying source are passed on as they are. ASCII-armored files are recognised and read
/// front to back only.
public final class AgeDecryptingSource: RandomAccessSource {
    // MARK: Input

    private enum Input {
        /// A seekable file: chunks are fetched where they lie.
        case random(RandomAccessSource, layout: AgePayloadLayout)
        /// A pipe (or armor): chunks come in order through `sealed`.
        case stream(ByteSource)
    }

    private let input: Input
    private let cipher: AgePayloadCipher
    private let kinds: [String]
    /// Where the first chunk starts in the ciphertext (after the header and nonce).
    private let payloadStart: Int64

    /// Chunks fetched or staged together (about 1 MiB of ciphertext).
    private static let windowChunks = 16

    // MARK: Buffers

    /// The last chunk decrypted, kept so small reads do not decrypt it again.
    private let plain: UnsafeMutableRawBufferPointer
    private var plainChunk: Int64 = -1
    private var plainCount = 0
    /// Ciphertext: a window of chunks (random access) or bytes read ahead (stream).
    private let sealed: UnsafeMutableRawBufferPointer
    private var sealedFirstChunk: Int64 = -1
    private var sealedChunkCount: Int64 = 0
    private var sealedStart = 0
    private var sealedEnd = 0

    // MARK: Reading state

    /// The next plaintext offset of a front-to-back read.
    private var position: Int64 = 0
    /// Random access: the last chunk was opened with its final flag.
    private var lastChunkVerified = false
    /// Stream: the next chunk's index, whether the final chunk was handed out, whether the
    /// pipe has ended, and a problem found after the chunk now being handed out.
    private var streamChunk: Int64 = 0
    private var streamFinished = false
    private var streamAtEnd = false
    private var pendingError: AgeError?
    private var closed = false

    // MARK: Opening

    /// Opens an age file that can be read at any offset: parses the header, opens the file key
    /// with `keys`, checks the header MAC and reads the payload nonce.
    ///
    /// An ASCII-armored file (which Keepsake never writes) is read front to back only, as a pipe is.
    public convenience init(ciphertext: RandomAccessSource, keys: AgeDecryptionKeys) throws {
        let first = try ciphertext.bytes(at: 0, count: 4096)
        if AgeArmorReader.isArmored(prefix: first) {
            try self.init(pipe: AgeArmorReader(source: SequentialView(ciphertext)), prefetched: [], keys: keys)
        } else {
            try AgeArmorReader.refuseMisplacedArmor(prefix: first)
            try self.init(randomAccess: ciphertext, keys: keys)
        }
    }

    private init(randomAccess ciphertext: RandomAccessSource, keys: AgeDecryptionKeys) throws {
        plain = .allocate(byteCount: AgeFormat.chunkSize, alignment: 16)
        sealed = .allocate(byteCount: AgeDecryptingSource.windowChunks * AgeFormat.sealedChunkSize + 1, alignment: 16)
        do {
            let total = try ciphertext.size()
            var headerBytes: [UInt8] = []
            var parsed: (AgeHeader, Int, Int)?
            var want = 4096
            while parsed == nil {
                headerBytes = try ciphertext.bytes(at: 0, count: want)
                switch try AgeHeader.parse(headerBytes, atEnd: headerBytes.count < want) {
                // Never more than one byte past the longest header: what it takes to refuse one.
                case .needMore: want = min(want * 4, AgeHeader.maxLength + 1)
                case .complete(let header, let macInputLength, let length): parsed = (header, macInputLength, length)
                }
            }
            guard let (header, macInputLength, length) = parsed else { throw AgeError.malformedHeader("the header is incomplete") }
            let nonce = try ciphertext.bytes(at: Int64(length), count: AgeFormat.payloadNonceLength)
            cipher = try AgeDecryptingSource.openPayload(header: header, macInput: headerBytes[..<macInputLength], nonce: nonce, keys: keys)
            kinds = header.stanzas.map(\.type)
            payloadStart = Int64(length + AgeFormat.payloadNonceLength)
            input = .random(ciphertext, layout: AgePayloadLayout(sealedLength: max(total - payloadStart, 0)))
        } catch {
            plain.deallocate()
            sealed.deallocate()
            throw error
        }
    }

    /// For sources that cannot seek/report size (pipes, stdin): front to back only; read(at:) and size() throw.
    /// ASCII-armored input is recognised and decoded on the way.
    public convenience init(stream: ByteSource, keys: AgeDecryptionKeys) throws {
        var first = [UInt8](repeating: 0, count: 16384)
        let got = try first.withUnsafeMutableBytes { try stream.read(into: $0) }
        first.removeSubrange(got...)
        if AgeArmorReader.isArmored(prefix: first) {
            try self.init(pipe: AgeArmorReader(prefix: first, source: stream), prefetched: [], keys: keys)
        } else {
            try AgeArmorReader.refuseMisplacedArmor(prefix: first)
            try self.init(pipe: stream, prefetched: first, keys: keys)
        }
    }

    /// Reads a pipe whose first bytes, `prefetched`, were already read (empty `prefetched`: none were).
    private init(pipe stream: ByteSource, prefetched: [UInt8], keys: AgeDecryptionKeys) throws {
        plain = .allocate(byteCount: AgeFormat.chunkSize, alignment: 16)
        sealed = .allocate(byteCount: AgeDecryptingSource.windowChunks * AgeFormat.sealedChunkSize + 1, alignment: 16)
        do {
            var headerBytes = prefetched
            var atEnd = false
            var parsed: (AgeHeader, Int, Int)?
            if !prefetched.isEmpty {
                if case .complete(let header, let macInputLength, let length) = try AgeHeader.parse(headerBytes, atEnd: false) {
                    parsed = (header, macInputLength, length)
                }
            }
            while parsed == nil {
                // Growing reads keep the re-parsing linear in the header's length; capped so what
                // is read past the header always fits the staging buffer.
                let piece = min(max(16384, headerBytes.count), 1 << 19)
                let old = headerBytes.count
                headerBytes.appendZeros(piece)
                let got = try headerBytes.withUnsafeMutableBytes { try stream.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[old...])) }
                headerBytes.removeLast(piece - got)
                atEnd = got == 0
                switch try AgeHeader.parse(headerBytes, atEnd: atEnd) {
                case .needMore: continue
                case .complete(let header, let macInputLength, let length): parsed = (header, macInputLength, length)
                }
            }
            guard let (header, macInputLength, length) = parsed else { throw AgeError.malformedHeader("the header is incomplete") }
            // What was read past the header is the nonce and the first chunks.
            let rest = headerBytes[length...]
            let buffer = sealed
            rest.withUnsafeBytes { if let from = $0.baseAddress { buffer.baseAddress?.copyMemory(from: from, byteCount: $0.count) } }
            var start = 0
            var end = rest.count
            var ended = atEnd
            try AgeDecryptingSource.fill(&start, &end, &ended, buffer: buffer, from: stream, atLeast: AgeFormat.payloadNonceLength)
            let nonce = Array(UnsafeRawBufferPointer(rebasing: buffer[start..<min(end, start + AgeFormat.payloadNonceLength)]))
            cipher = try AgeDecryptingSource.openPayload(header: header, macInput: headerBytes[..<macInputLength], nonce: nonce, keys: keys)
            sealedStart = start + AgeFormat.payloadNonceLength
            sealedEnd = end
            streamAtEnd = ended
            kinds = header.stanzas.map(\.type)
            payloadStart = Int64(length + AgeFormat.payloadNonceLength)
            input = .stream(stream)
        } catch {
            plain.deallocate()
            sealed.deallocate()
            throw error
        }
    }

    deinit {
        // Plaintext must not linger in freed memory.
        plain.initializeMemory(as: UInt8.self, repeating: 0)
        plain.deallocate()
        sealed.deallocate()
    }

    /// How the file was encrypted: each stanza's type in header order ("X25519" per recipient,
    /// "scrypt" for a passphrase, or a type this reader does not know), for messages such as
    /// "passphrase" or "3 recipients".
    public var stanzaKinds: [String] { kinds }

    /// "passphrase", "1 recipient" or "N recipients" (X25519 stanzas), for messages.
    public var encryptionSummary: String {
        if kinds == [AgeScryptStanza.type] { return "passphrase" }
        let count = kinds.filter { $0 == AgeX25519Stanza.type }.count
        return count == 1 ? "1 recipient" : "\(count) recipients"
    }

    /// The file key from `keys`, the MAC check, and the payload cipher.
    private static func openPayload(header: AgeHeader, macInput: ArraySlice<UInt8>, nonce: [UInt8],
                                    keys: AgeDecryptionKeys) throws -> AgePayloadCipher {
        let fileKey = try AgeFileKey.open(header, keys: keys)
        guard try AgeHeader.macMatches(header.mac, fileKey: fileKey, macInput: macInput) else { throw AgeError.headerMACMismatch }
        guard nonce.count == AgeFormat.payloadNonceLength else {
            throw AgeError.malformedHeader("the file ends before the payload's 16-byte nonce")
        }
        return try AgePayloadCipher(payloadKey: try AgeFileKey.payloadKey(fileKey: fileKey, nonce: nonce), encrypting: false)
    }

    // MARK: RandomAccessSource

    /// The plaintext size, from the ciphertext's size; `truncated` or `payloadDamaged` when no
    /// plaintext size gives that ciphertext size.
    public func size() throws -> Int64 {
        guard case .random(_, let layout) = input else {
            throw AgeError.io("the size of a piped or ASCII-armored age file is not known")
        }
        return try layout.plaintextSize()
    }

    /// Reads up to `buffer.count` plaintext bytes at `offset`; fewer only at the end.
    public func read(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard !closed else { throw AgeError.io("read after close") }
        guard case .random(let source, let layout) = input else {
            throw AgeError.io("a piped or ASCII-armored age file cannot be read at an offset")
        }
        guard offset >= 0 else { throw AgeError.io("negative offset") }
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return 0 }
        let chunkSize = Int64(AgeFormat.chunkSize)
        var done = 0
        while done < buffer.count {
            let at = offset + Int64(done)
            let chunk = at / chunkSize
            guard chunk < layout.chunkCount else { break }
            let within = Int(at % chunkSize)
            let wanted = Int((Int64(within + buffer.count - done) + chunkSize - 1) / chunkSize)
            if within == 0 && buffer.count - done >= AgeFormat.chunkSize && chunk != plainChunk {
                // A whole chunk asked for: decrypt it where the caller wants it.
                let count = try openChunk(chunk, source: source, layout: layout, wanted: wanted, into: base + done)
                done += count
                if count < AgeFormat.chunkSize { break }
                continue
            }
            if chunk != plainChunk {
                plainChunk = -1
                plainCount = try openChunk(chunk, source: source, layout: layout, wanted: wanted, into: plain.baseAddress!)
                plainChunk = chunk
            }
            guard within < plainCount else { break }
            let take = min(plainCount - within, buffer.count - done)
            (base + done).copyMemory(from: plain.baseAddress! + within, byteCount: take)
            done += take
        }
        if done == 0 && !lastChunkVerified {
            // At or past the end: the end itself must be authentic (the final flag).
            let last = max(layout.chunkCount - 1, 0)
            plainChunk = -1
            plainCount = try openChunk(last, source: source, layout: layout, wanted: 1, into: plain.baseAddress!)
            plainChunk = last
        }
        return done
    }

    /// Reads the next plaintext bytes; 0 at the end, which is reached only through a final chunk.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard !closed else { throw AgeError.io("read after close") }
        switch input {
        case .random:
            let got = try read(at: position, into: buffer)
            position += Int64(got)
            return got
        case .stream(let source):
            return try readStream(source, into: buffer)
        }
    }

    /// Closes the underlying source.
    public func close() {
        guard !closed else { return }
        closed = true
        switch input {
        case .random(let source, _): source.close()
        case .stream(let source): source.close()
        }
    }

    // MARK: Random access chunks

    /// Decrypts chunk `index` into `output` and returns its plaintext length, fetching up to
    /// `wanted` chunks of ciphertext at once when it is not already at hand.
    private func openChunk(_ index: Int64, source: RandomAccessSource, layout: AgePayloadLayout, wanted: Int,
                           into output: UnsafeMutableRawPointer) throws -> Int {
        let isLast = index == layout.chunkCount - 1
        // The last chunk of an impossible length (or none at all) cannot be opened.
        if index >= layout.chunkCount - 1, let problem = layout.problem { throw problem }
        let full = AgeFormat.sealedChunkSize
        if index < sealedFirstChunk || index >= sealedFirstChunk + sealedChunkCount {
            let count = Int64(min(max(wanted, 1), AgeDecryptingSource.windowChunks))
            let through = min(index + count, layout.chunkCount)
            let bytes = Int(through - index - 1) * full + layout.sealedLength(of: through - 1)
            sealedChunkCount = 0
            var filled = 0
            while filled < bytes {
                let got = try source.read(at: payloadStart + index * Int64(full) + Int64(filled),
                                          into: UnsafeMutableRawBufferPointer(rebasing: sealed[filled..<bytes]))
                // The file is shorter than its size said: it shrank while being read.
                guard got > 0 else { throw AgeError.truncated }
                filled += got
            }
            sealedFirstChunk = index
            sealedChunkCount = through - index
        }
        let start = Int(index - sealedFirstChunk) * full
        let ciphertext = UnsafeRawBufferPointer(rebasing: sealed[start..<(start + layout.sealedLength(of: index))])
        let count = try open(index, ciphertext: ciphertext, isLast: isLast, into: output).count
        if isLast { lastChunkVerified = true }
        return count
    }

    // MARK: Stream chunks

    private func readStream(_ source: ByteSource, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return 0 }
        var done = 0
        while done < buffer.count {
            if plainOffset < plainCount {
                let take = min(plainCount - plainOffset, buffer.count - done)
                (base + done).copyMemory(from: plain.baseAddress! + plainOffset, byteCount: take)
                plainOffset += take
                done += take
                continue
            }
            if done > 0 && buffer.count - done < AgeFormat.chunkSize { break }
            if streamFinished { break }
            if let pendingError {
                if done > 0 { break }
                throw pendingError
            }
            // Straight into the caller's buffer when a whole chunk fits there.
            let direct = buffer.count - done >= AgeFormat.chunkSize
            let target = direct ? base + done : plain.baseAddress!
            let count = try nextStreamChunk(source, into: target)
            if direct {
                done += count
            } else {
                plainCount = count
                plainOffset = 0
            }
        }
        return done
    }

    /// Stream: how much of the chunk in `plain` was handed out.
    private var plainOffset = 0

    /// Decrypts the next chunk of the stream into `output`; returns its plaintext length.
    private func nextStreamChunk(_ source: ByteSource, into output: UnsafeMutableRawPointer) throws -> Int {
        let full = AgeFormat.sealedChunkSize
        // One byte past a full chunk tells whether it is the last.
        try AgeDecryptingSource.fill(&sealedStart, &sealedEnd, &streamAtEnd, buffer: sealed, from: source, atLeast: full + 1)
        let available = sealedEnd - sealedStart
        let index = streamChunk
        guard available > 0 else { throw AgeError.truncated }
        let isLast = available <= full
        if isLast && available < ChaCha20Poly1305.tagLength { throw AgeError.truncated }
        if isLast && available == ChaCha20Poly1305.tagLength && index > 0 { throw AgeError.payloadDamaged(chunk: index) }
        let ciphertext = UnsafeRawBufferPointer(rebasing: sealed[sealedStart..<(sealedStart + min(available, full))])
        let result = try open(index, ciphertext: ciphertext, isLast: isLast, into: output, lenient: true)
        sealedStart += ciphertext.count
        streamChunk += 1
        if let problem = result.problem {
            pendingError = problem
        } else if isLast {
            streamFinished = true
        }
        return result.count
    }

    /// Reads from `source` into `buffer` until it holds `atLeast` bytes from `start` or the source ends.
    private static func fill(_ start: inout Int, _ end: inout Int, _ atEnd: inout Bool, buffer: UnsafeMutableRawBufferPointer,
                             from source: ByteSource, atLeast: Int) throws {
        guard end - start < atLeast, !atEnd else { return }
        if start > 0 {
            // Move what is left to the front, so the free space is one piece.
            if end > start, let base = buffer.baseAddress { memmove(base, base + start, end - start) }
            end -= start
            start = 0
        }
        while end < atLeast && !atEnd {
            let got = try source.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[end...]))
            if got == 0 { atEnd = true } else { end += got }
        }
    }

    // MARK: Authentication

    /// Opens chunk `index` with the flag its place calls for, and tells apart what a failure
    /// means: a last chunk that opens as a middle one was cut at a chunk boundary (`truncated`);
    /// a middle chunk that opens as final has bytes after it (`trailingData`). When `lenient`
    /// (front-to-back), such a chunk is handed out and the problem reported after it.
    private func open(_ index: Int64, ciphertext: UnsafeRawBufferPointer, isLast: Bool, into output: UnsafeMutableRawPointer,
                      lenient: Bool = false) throws -> (count: Int, problem: AgeError?) {
        let count = ciphertext.count - ChaCha20Poly1305.tagLength
        if cipher.open(chunk: index, final: isLast, ciphertext: ciphertext, into: output) { return (count, nil) }
        let other: AgeError? = isLast ? (ciphertext.count == AgeFormat.sealedChunkSize ? .truncated : nil) : .trailingData
        if let other, cipher.open(chunk: index, final: !isLast, ciphertext: ciphertext, into: output) {
            if lenient { return (count, other) }
            output.initializeMemory(as: UInt8.self, repeating: 0, count: count)
            throw other
        }
        // Never leave unauthenticated plaintext where someone might use it.
        output.initializeMemory(as: UInt8.self, repeating: 0, count: count)
        throw AgeError.payloadDamaged(chunk: index)
    }

    // MARK: Armored input

    /// A random-access source read front to back from its start (for armored files).
    private final class SequentialView: ByteSource {
        private let source: RandomAccessSource
        private var position: Int64 = 0
        init(_ source: RandomAccessSource) { self.source = source }
        func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            let got = try source.read(at: position, into: buffer)
            position += Int64(got)
            return got
        }
        func close() { source.close() }
    }
}
