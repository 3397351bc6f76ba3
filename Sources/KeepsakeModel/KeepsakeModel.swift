// KeepsakeModel: what a backup is, as data. Its id and names (`BackupID`, `BackupNaming`), its
// summary (`BackupSummary`, `BackupEncryption`), its manifest (`Manifest`, `ManifestEntry`, the
// compact `ManifestEntries`, `ManifestIndex`, the parsers and the rules every line obeys, the
// size limits), the attributes a restore gives back (`RecordedAttributes`), and retention
// (`RetentionPolicy`, `RetentionPlanner`, `DurationSpec`): values and pure decisions, no I/O
// beyond the bytes it is handed.
//
// Imports KeepsakeSupport, KeepsakeJSON and KeepsakeArchive only: never storage, the engine,
// the configuration or the terminal. docs/architecture.md draws the whole graph.
