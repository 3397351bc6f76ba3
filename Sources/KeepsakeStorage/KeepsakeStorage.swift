// KeepsakeStorage: where backups live. The store protocols (`ReadableStorage`: list and open;
// `WritableStorage`: a destination, also stored to, pruned and locked) and their objects,
// errors and addresses; the destination lock and its owner record; the local stores: a local
// folder and the folder of a lone archive file (only readable). S3 and rclone are stores of
// their own targets on top of this one (KeepsakeS3, KeepsakeRclone). It stores and lists
// objects by name; it does not know what a backup holds, and never prints.
//
// Imports KeepsakeSupport, KeepsakeJSON, KeepsakeHashing and KeepsakeModel (for backup names)
// only: never HTTP, S3 or rclone, the engine, the configuration or the terminal.
// docs/architecture.md draws the whole graph.
