// KeepsakeRclone: any rclone remote as a Keepsake store (`RcloneBackend`, a
// `WritableStorage`): one rclone child process per call (`rclone rcat` streams an object in,
// `rclone cat` with offsets reads one), listings parsed as they stream, the lock as a file
// created only when absent, and the child processes themselves (`ChildProcess`), stopped
// with the command.
//
// Imports KeepsakeSupport, KeepsakeJSON and KeepsakeStorage only: never the engine, the
// configuration or the terminal. Only the CLI names its types. docs/architecture.md draws
// the whole graph.
