import Foundation

/// Clients (each with its own kept-alive connection) lent to one thread at a time: the
/// part uploads and read-ahead of one backup or restore run on worker threads, and each
/// borrows a client for one request instead of opening a connection per request.
final class S3ClientPool: @unchecked Sendable {
    // MARK: State

    // `idle` is shared between threads and guarded by `lock`; clients are only ever used by
    // the thread that borrowed them.
    private let lock = NSLock()
    private var idle: [S3Client] = []
    private let template: S3Client

    /// A pool of clients like `template` (which is itself the first one lent).
    init(_ template: S3Client) {
        self.template = template
        idle = [template]
    }

    // MARK: Lending

    /// Runs `body` with a client no other thread uses meanwhile.
    func withClient<Result>(_ body: (S3Client) throws -> Result) throws -> Result {
        let client = try borrow()
        defer { giveBack(client) }
        return try body(client)
    }

    private func borrow() throws -> S3Client {
        lock.lock()
        if let client = idle.popLast() {
            lock.unlock()
            return client
        }
        lock.unlock()
        return try template.copy()
    }

    private func giveBack(_ client: S3Client) {
        lock.lock()
        // A few spare connections at most; more are closed.
        if idle.count < 8 { idle.append(client) }
        lock.unlock()
    }
}
