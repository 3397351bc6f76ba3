import Foundation
import KeepsakeSupport

/// Reads the content of several files at once, on threads of its own, ahead of the one
/// thread that writes the archive; that thread takes each file's content in the order the
/// files were submitted (scan order), as it arrives.
///
/// Reading ahead keeps several reads in flight (a cold disk serves many requests faster
/// than one at a time) and moves reading and hashing off the writing thread. Memory stays
/// bounded: bytes read but not yet written are held to `budget`, which only the earliest
/// file still being read (the one the writer needs soonest) may pass, by `headAllowance` at
/// most in all. So read-ahead follows scan order (a later file that filled the budget first
/// cannot keep it waiting), the writer always gets what it waits for, and a big file read
/// faster than it is written cannot fill memory. Whole-size pieces are
/// reused rather than freed: freshly mapped memory costs a page fault every 4 KiB.
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
    /// How far past the budget the earliest file still being read may take what is held.
    static let headAllowance = 4 << 20
    /// The size of a whole piece (what one read asks for at most).
    private static let pieceSize = SourceFileReader.bufferSize

    // MARK: State

    /// Guards everything below and every `PrefetchedFile`'s chunks, outcome and counts.
    fileprivate let monitor = MonitorLock(conditions: 3)
    /// Readers wait here for a file to read.
    private let workSubmitted: MonitorLock.Condition
    /// Readers wait here for room in the budget.
    private let roomFreed: MonitorLock.Condition
    /// The writer waits here for content (and `stop` for the readers to end).
    private let contentArrived: MonitorLock.Condition
    /// Files submitted; `nextToRead` is the first no reader has taken.
    private var submitted: [PrefetchedFile] = []
    private var nextToRead = 0
    /// Files taken by readers and not yet read whole, in scan order.
    private var reading: [PrefetchedFile] = []
    /// Bytes held in chunks not yet written.
    private var buffered = 0
    /// Whole-size pieces given back, for the next reads.
    private var spare: [UnsafeMutableRawBufferPointer] = []
    private var stopped = false
    private var running = 0

    // MARK: Life cycle

    /// Starts `readers` reader threads, each with its own `SourceFileReader`.
    init(readers: Int, cancellation: CancellationFlag, readPause: TimeInterval, budget: Int = ReadAhead.defaultBudget) {
        self.budget = budget
        workSubmitted = monitor.condition(0)
        roomFreed = monitor.condition(1)
        contentArrived = monitor.condition(2)
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
        monitor.lock()
        stopped = true
        monitor.broadcast(workSubmitted)
        monitor.broadcast(roomFreed)
        while running > 0 { monitor.wait(contentArrived) }
        submitted.removeAll()
        reading.removeAll()
        for piece in spare { piece.deallocate() }
        spare.removeAll()
        monitor.unlock()
    }

    // MARK: Submitting

    /// Queues `file` to be read; its content is taken with `consume`.
    func submit(_ file: SourceFileReader.OpenFile) -> PrefetchedFile {
        let prefetched = PrefetchedFile(file: file)
        monitor.withLock {
            submitted.append(prefetched)
            // Files already taken by readers are dropped from the front now and then.
            if nextToRead > 1024 && nextToRead * 2 > submitted.count {
                submitted.removeFirst(nextToRead)
                nextToRead = 0
            }
            monitor.signal(workSubmitted)
        }
        return prefetched
    }

    // MARK: Writing

    /// Whether all of `file`'s content has been read (or the read failed).
    func isComplete(_ file: PrefetchedFile) -> Bool {
        monitor.withLock { file.outcome != nil }
    }

    /// Hands `file`'s content to `body` piece by piece as it is read, and returns what the
    /// read found (or throws what stopped it: an interruption).
    func consume(_ file: PrefetchedFile, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> SourceFileReader.Content {
        monitor.lock()
        while true {
            if !file.chunks.isEmpty {
                let chunk = file.chunks.removeFirst()
                monitor.unlock()
                let written = Result { try body(UnsafeRawBufferPointer(rebasing: chunk.memory[0..<chunk.count])) }
                release(chunk.memory)
                try written.get()
                monitor.lock()
                continue
            }
            if let outcome = file.outcome {
                monitor.unlock()
                return try outcome.get()
            }
            monitor.wait(contentArrived)
        }
    }

    /// Bytes read and not yet written (for tests).
    var heldBytes: Int {
        monitor.withLock { buffered }
    }

    // MARK: Reading

    /// A reader thread: takes the next file not taken yet and reads it, until stopped.
    private func readFiles(with reader: SourceFileReader) {
        monitor.lock()
        while true {
            while !stopped && nextToRead >= submitted.count { monitor.wait(workSubmitted) }
            if stopped { break }
            let file = submitted[nextToRead]
            nextToRead += 1
            reading.append(file)
            monitor.unlock()
            var destination = Destination(pool: self, file: file)
            let outcome = Result { try reader.readContent(of: file.file, into: &destination) }
            destination.releaseUnfilled()
            monitor.lock()
            file.outcome = outcome
            reading.removeAll { $0 === file }
            monitor.signal(contentArrived)
            // The next file in scan order may now be the earliest one being read.
            monitor.broadcast(roomFreed)
        }
        running -= 1
        monitor.broadcast(contentArrived)
        monitor.unlock()
    }

    /// Memory for the next piece of `file`: waits while the budget is spent (nothing at all
    /// held is never too much), and for the earliest file being read while the allowance
    /// past the budget is.
    fileprivate func allocate(_ wanted: Int, for file: PrefetchedFile) throws -> UnsafeMutableRawBufferPointer {
        // A whole piece comes from (and goes back to) the spare ones; a small one from malloc.
        let size = wanted >= ReadAhead.pieceSize / 4 ? ReadAhead.pieceSize : wanted
        monitor.lock()
        while !stopped && !mayHold(size, more: file) { monitor.wait(roomFreed) }
        guard !stopped else {
            monitor.unlock()
            throw Stopped()
        }
        buffered += size
        let reused = size == ReadAhead.pieceSize ? spare.popLast() : nil
        monitor.unlock()
        return reused ?? UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 64)
    }

    /// Whether `file` may take `size` bytes more now (called with the lock held).
    private func mayHold(_ size: Int, more file: PrefetchedFile) -> Bool {
        if buffered == 0 || buffered + size <= budget { return true }
        // Files before it are read whole, so it is the one the writer waits for next.
        return file === reading.first && buffered + size <= budget + ReadAhead.headAllowance
    }

    /// Gives back memory a reader took with `allocate`.
    fileprivate func release(_ memory: UnsafeMutableRawBufferPointer) {
        monitor.lock()
        buffered -= memory.count
        let kept = memory.count == ReadAhead.pieceSize && !stopped
        if kept { spare.append(memory) }
        monitor.broadcast(roomFreed)
        monitor.unlock()
        if !kept { memory.deallocate() }
    }

    /// The first `count` bytes of `memory` are the next content of `file`.
    fileprivate func deliver(_ memory: UnsafeMutableRawBufferPointer, count: Int, of file: PrefetchedFile) {
        monitor.withLock {
            file.chunks.append(Chunk(memory: memory, count: count))
            monitor.signal(contentArrived)
        }
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
            if let memory = current, memory.count < wanted { releaseUnfilled() }
            let memory = try current ?? pool.allocate(max(1, wanted), for: file)
            current = memory
            return UnsafeMutableRawBufferPointer(rebasing: memory[0..<min(memory.count, max(1, wanted))])
        }

        mutating func filled(_ count: Int) throws {
            guard let memory = current else { return }
            current = nil
            pool.deliver(memory, count: count, of: file)
        }

        /// Gives back the buffer handed out last if it was never filled.
        mutating func releaseUnfilled() {
            if let memory = current { pool.release(memory) }
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

    fileprivate init(file: SourceFileReader.OpenFile) {
        self.file = file
    }

    deinit {
        for chunk in chunks { chunk.memory.deallocate() }
    }
}
