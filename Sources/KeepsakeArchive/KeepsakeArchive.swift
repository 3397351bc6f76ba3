// KeepsakeArchive: tar as Keepsake writes and reads it. The pax writer (`ArchiveWriter`), the
// readers (`ArchiveReader`, Keepsake's own `KeepsakeTarReader` and libarchive's for any
// other tar), seekable zstd (frames, the seek table, parallel and ranged decoding, salvage
// of damaged frames), and the layout every Keepsake archive has (`ArchiveLayout`). It reads
// and writes entries; it does not know what a manifest says or what a backup is.
//
// Imports KeepsakeSupport, CArchive and CZstd only: never storage, the backup model or the
// engine. docs/architecture.md draws the whole graph.
