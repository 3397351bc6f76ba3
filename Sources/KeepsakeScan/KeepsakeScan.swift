// KeepsakeScan: what a backup reads, found. The scanner walks each source in a stable order
// (`ScanOrder`), on descriptors (`openat`), never following a symbolic link out of it; the
// exclude rules (`ExcludeRules`, `ExcludePattern`, their glob and character classes) and the
// folders it leaves out (caches tagged `CACHEDIR.TAG`, other file systems, the destination);
// `ScannedItem`, `LeftOutPath`, `FileIdentity` and `ScanError`. It reads no file's content and
// never prints: unreadable paths become warnings (`PathWarning`), left-out ones are told.
//
// Imports KeepsakeSupport, KeepsakeArchive (entry types) and KeepsakeModel (`PathWarning`)
// only: never storage, the engine, the configuration or the terminal. docs/architecture.md
// draws the whole graph.
