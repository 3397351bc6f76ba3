// KeepsakeSupport: the bottom layer. Byte streams (`ByteSource`, `ByteSink`,
// `RandomAccessSource`), paths as bytes (`PathBytes`, and `ArchivePath`, the one place an
// archive's paths are judged), hex, locks (`LockedValue`, `MonitorLock`), the ordered work
// pool, `CancellationFlag` and its `Interruption`, descriptor I/O, process spawning, secret
// holding, host names, timestamps, suggestions for misspelt words.
//
// Never imports another Keepsake target: everything else builds on it. docs/architecture.md
// draws the whole graph.
