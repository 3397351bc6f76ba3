import Foundation

/// Reads the content of several files at once, on threads of its own, ahead of the one
/// thread that writes the archive; that thread takes each file's content in the order the
/// files were submitted (scan order), as it arrives.
///
/// Reading ahead keeps several reads in flight (a cold disk serves many requests faster
/// than one at a time) and moves reading and hashing off the writing thread. Memory stays
/// bounded: bytes read but not yet written are held to `budget`; the file being written may
/// go past it by `headAllowance` of its own (so the writer always gets what it waits for,
/// and a big file read faster than it is written cannot fill memory).
final class ReadAhead: @unchecked Sendable {
    // MARK: Types

    /// Content read and not yet written: the memory it was read into and how much it holds.
    fileprivate struct Chunk {
        let memory: UnsafeMutableRawBufferPointer
        let count: Int
    }

    /// Why a reader gives up: the writer stopped the pool.
    private struct Stopped: Error {}

    // MARK: Settings

    /// Bytes read ahead and not yet written, at most.
    static let defaultBudget = 16 << 20
    private let budget: Int
    /// What the file being written may hold besides, unwritten, whatever the budget.
    static let headAllowance = 4 << 20

    // MARK: State

    /// Guards everything below and every `PrefetchedFile`'s chunks and outcome.
    fileprivate let condition = NSCondition()
    /// Files submitted; `nextToRead` is the first no reader has taken.
    private var submitted: [PrefetchedFile] = []
    private var nextToRead = 0
    /// Bytes held in chunks not yet written.
    fileprivate var buffered = 0
    fileprivate var stopped = false
    private var running = 0

    // MARK: Life cycle

    /// Starts `readers` reader threads, each with its own `SourceFileReader`.
    init(readers: Int, cancellation: CancellationFlag, readPause: TimeInterval, budget: Int = ReadAhead.defaultBudget) {
        self.budget = budget
        running = max(1, readers)
        for index in 0..<running {
            let thread = Thread { [self] in
                readFiles(with: SourceFileReader(cancellation: cancellation, readPause: readPause))
            }
            thread.name = "keepsake.reader.\(index)"
            thread.start()
        }
    }

    /// Stops the readers (a file being read is left unfinished) and waits until every one
    /// has ended; content read and not written is freed with its file.
    func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        while running > 0 { condition.wait() }
        submitted.removeAll()
        condition.unlock()
    }

    // MARK: Submitting

    /// Queues `file` to be read; its content is taken with `consume`.
    func submit(_ file: SourceFileReader.OpenFile) -> PrefetchedFile {
        let prefetched = PrefetchedFile(file: file)
        condition.lock()
        submitted.append(prefetched)
        // Files already taken by readers are dropped from the front now and then.
        if nextToRead > 1024 && nextToRead * 2 > submitted.count {
            submitted.removeFirst(nextToRead)
            nextToRead = 0
        }
        condition.signal()
        condition.unlock()
        return prefetched
    }

    // MARK: Writing

    /// Whether all of `file`'s content has been read (or the read failed).
    func isComplete(_ file: PrefetchedFile) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return file.outcome != nil
    }

    /// Hands `file`'s content to `body` piece by piece as it is read, and returns what the
    /// read found (or throws what stopped it: an interruption).
    func consume(_ file: PrefetchedFile, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> SourceFileReader.Content {
        condition.lock()
        // Its reader may now go past the budget: nothing else can be written before it.
        file.isBeingWritten = true
        condition.broadcast()
        while true {
            if !file.chunks.isEmpty {
                let chunk = file.chunks.removeFirst()
                condition.unlock()
                let written = Result { try body(UnsafeRawBufferPointer(rebasing: chunk.memory[0..<chunk.count])) }
                release(chunk.memory, of: file)
                try written.get()
                condition.lock()
                continue
            }
            if let outcome = file.outcome {
                condition.unlock()
                return try outcome.get()
            }
            condition.wait()
        }
    }

    /// Bytes read and not yet written (for tests).
    var heldBytes: Int {
        condition.lock()
        defer { condition.unlock() }
        return buffered
    }

    // MARK: Reading

    /// A reader thread: takes the next file not taken yet and reads it, until stopped.
    private func readFiles(with reader: SourceFileReader) {
        condition.lock()
        while true {
            while !stopped && nextToRead >= submitted.count { condition.wait() }
            if stopped { break }
            let file = submitted[nextToRead]
            nextToRead += 1
            condition.unlock()
            var destination = Destination(pool: self, file: file)
            let outcome = Result { try reader.readContent(of: file.file, into: &destination) }
            destination.releaseUnfilled()
            condition.lock()
            file.outcome = outcome
            condition.broadcast()
        }
        running -= 1
        condition.broadcast()
        condition.unlock()
    }

    /// Memory for the next piece of `file`: waits while the budget is spent (nothing at all
    /// held is never too much), and for the file being written while its own allowance is.
    fileprivate func allocate(_ wanted: Int, for file: PrefetchedFile) throws -> UnsafeMutableRawBufferPointer {
        condition.lock()
        while !stopped && !mayHold(wanted, more: file) { condition.wait() }
        guard !stopped else {
            condition.unlock()
            throw Stopped()
        }
        buffered += wanted
        file.held += wanted
        condition.unlock()
        return UnsafeMutableRawBufferPointer.allocate(byteCount: wanted, alignment: 64)
    }

    /// Whether `file` may take `wanted` bytes more now (called with the lock held).
    private func mayHold(_ wanted: Int, more file: PrefetchedFile) -> Bool {
        if buffered == 0 || buffered + wanted <= budget { return true }
        return file.isBeingWritten && file.held + wanted <= ReadAhead.headAllowance
    }

    /// Frees memory `file` took with `allocate`.
    fileprivate func release(_ memory: UnsafeMutableRawBufferPointer, of file: PrefetchedFile) {
        memory.deallocate()
        condition.lock()
        buffered -= memory.count
        file.held -= memory.count
        condition.broadcast()
        condition.unlock()
    }

    /// The first `count` bytes of `memory` are the next content of `file`.
    fileprivate func deliver(_ memory: UnsafeMutableRawBufferPointer, count: Int, of file: PrefetchedFile) {
        condition.lock()
        file.chunks.append(Chunk(memory: memory, count: count))
        condition.broadcast()
        condition.unlock()
    }

    /// Hands a reader chunks of its own, straight into the file's queue.
    private struct Destination: ContentDestination {
        let pool: ReadAhead
        let file: PrefetchedFile
        var current: UnsafeMutableRawBufferPointer?

        init(pool: ReadAhead, file: PrefetchedFile) {
            self.pool = pool
            self.file = file
        }

        mutating func buffer(wanted: Int) throws -> UnsafeMutableRawBufferPointer {
            // A buffer handed out and not filled (a read that failed and is retried) is reused.
            if let memory = current {
                if memory.count >= wanted { return UnsafeMutableRawBufferPointer(rebasing: memory[0..<max(1, wanted)]) }
                releaseUnfilled()
            }
            let memory = try pool.allocate(max(1, wanted), for: file)
            current = memory
            return memory
        }

        mutating func filled(_ count: Int) throws {
            guard let memory = current else { return }
            current = nil
            pool.deliver(memory, count: count, of: file)
        }

        /// Frees the buffer handed out last if it was never filled.
        mutating func releaseUnfilled() {
            if let memory = current { pool.release(memory, of: file) }
            current = nil
        }
    }
}

/// A file submitted to `ReadAhead`: its content as read so far, and how the read ended.
/// Everything but `file` is guarded by the pool's lock.
final class PrefetchedFile: @unchecked Sendable {
    /// The open file (its header says what to store).
    let file: SourceFileReader.OpenFile
    fileprivate var chunks: [ReadAhead.Chunk] = []
    fileprivate var outcome: Result<SourceFileReader.Content, Error>?
    fileprivate var isBeingWritten = false
    /// Bytes taken for its chunks and not yet given back.
    fileprivate var held = 0

    fileprivate init(file: SourceFileReader.OpenFile) {
        self.file = file
    }

    deinit {
        for chunk in chunks { chunk.memory.deallocate() }
    }
}
