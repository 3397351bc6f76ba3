// KeepsakeS3: S3-compatible object storage as a Keepsake store (`S3Backend`, a
// `WritableStorage`): its own SigV4 signing, the XML of listings and errors, multipart uploads
// sent as they fill, ranged reads, the lock as an object written with `If-None-Match`, and the
// configuration (environment, AWS's credential and config files read by `IniFile`, a
// profile's overrides). Bounded everywhere a server could make it grow: pages, entries,
// bodies, repeated continuation tokens.
//
// Imports KeepsakeSupport, KeepsakeJSON, KeepsakeHashing, KeepsakeHTTP, KeepsakeModel (for
// backup names) and KeepsakeStorage only: never the engine, the configuration or the
// terminal. Only the CLI and the configuration name its types. docs/architecture.md draws
// the whole graph.
