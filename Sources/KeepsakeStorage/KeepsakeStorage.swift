// KeepsakeStorage: where backups live. The store protocol (`WritableStorage`) and its objects,
// errors and addresses; the destination lock and its owner record; the backends: a local
// folder, the folder of a lone archive file (read only), S3-compatible object storage (its own
// SigV4 signing and XML over KeepsakeHTTP) and rclone remotes (a child process per call). It
// stores and lists objects by name; it does not know what a backup holds, and never prints.
//
// Imports KeepsakeSupport, KeepsakeJSON, KeepsakeHashing, KeepsakeHTTP and KeepsakeModel (for
// backup names) only: never the engine, the configuration or the terminal. docs/architecture.md
// draws the whole graph.
