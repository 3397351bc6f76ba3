import KeepsakeModel
/// What the engine tells its caller while it works. The engine never prints: the command
/// line decides how (and whether) to show each event.
public enum EngineEvent: Sendable {
    /// Something went wrong with one path, and the run goes on.
    case warning(PathWarning)
    /// A fact worth telling (leftovers cleaned up).
    case notice(String)
    /// Something the user should know even in quiet mode (a stale lock taken over); it
    /// does not make the run fail.
    case caution(String)
    /// How far the run has come.
    case progress(ProgressSnapshot)
    /// One step of a run of several (`RunWorkflow`: backup, prune, verify) is over: a
    /// progress display can be cleared before the next.
    case stepFinished(String)
}

/// A progress report; totals are nil when unknown.
public struct ProgressSnapshot: Sendable, Equatable {
    /// Entries done: files, folders, links and the rest.
    public var entriesDone: Int64
    /// Of those, regular files (what a progress line calls "files").
    public var filesDone: Int64
    public var bytesDone: Int64
    public var totalBytes: Int64?
    public var currentPath: String

    /// Creates a snapshot.
    public init(entriesDone: Int64, filesDone: Int64, bytesDone: Int64, totalBytes: Int64?, currentPath: String) {
        self.entriesDone = entriesDone
        self.filesDone = filesDone
        self.bytesDone = bytesDone
        self.totalBytes = totalBytes
        self.currentPath = currentPath
    }
}

/// Receives engine events. Called on the engine's thread.
public protocol EngineEventSink: AnyObject {
    /// Handles one event.
    func handle(_ event: EngineEvent)
}
