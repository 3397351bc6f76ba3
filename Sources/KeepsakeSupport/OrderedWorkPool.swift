import Foundation

/// Runs jobs on worker threads and hands their results back in the order they were
/// submitted. One owner thread submits and takes; only the jobs run elsewhere.
package final class OrderedWorkPool<Output: Sendable>: @unchecked Sendable {
    // MARK: State

    // `finished` is shared with the workers and guarded by `condition`; `submitted` and
    // `delivered` belong to the owner thread.
    private let condition = NSCondition()
    private var finished: [Int: Output] = [:]
    private var submitted = 0
    private var delivered = 0
    private let queue = DispatchQueue(label: "keepsake.workers", attributes: .concurrent)
    /// How many jobs may be running or waiting to be taken at once.
    package let capacity: Int

    /// A pool that lets `capacity` jobs be outstanding.
    package init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    // MARK: Submitting

    /// Jobs submitted and not yet taken.
    package var outstanding: Int { submitted - delivered }

    /// Whether the owner should take a result before submitting another job.
    package var isFull: Bool { outstanding >= capacity }

    /// Starts `job` on a worker.
    package func submit(_ job: @escaping @Sendable () -> Output) {
        let index = submitted
        submitted += 1
        queue.async { [self] in
            let output = job()
            condition.lock()
            finished[index] = output
            condition.broadcast()
            condition.unlock()
        }
    }

    // MARK: Taking

    /// The next result in order when it is ready, without waiting.
    package func takeIfReady() -> Output? {
        guard outstanding > 0 else { return nil }
        condition.lock()
        defer { condition.unlock() }
        guard let output = finished.removeValue(forKey: delivered) else { return nil }
        delivered += 1
        return output
    }

    /// The next result in order, waiting for it; nil when nothing is outstanding.
    package func take() -> Output? {
        guard outstanding > 0 else { return nil }
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let output = finished.removeValue(forKey: delivered) {
                delivered += 1
                return output
            }
            condition.wait()
        }
    }
}
