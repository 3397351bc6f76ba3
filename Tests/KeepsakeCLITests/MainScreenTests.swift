import BackupCore
import Foundation
@testable import KeepsakeCLI
import XCTest

/// The main screens at 80 and 50 columns as whole literals, run in process against a real
/// tree and real destinations: what a person sees from backup, list, restore, verify,
/// prune, diff, find and run, bare `keepsake`, and a usage error. Summary cards are shown
/// on a terminal (`--color never`, so the literal has no escapes); tables and lists as
/// piped. Ids, times, durations, rates and the temporary folder are normalised.
final class MainScreenTests: InProcessTestCase {
    // MARK: Fixture

    /// The ids of the two backups of `src` in `dest`, oldest first.
    private var ids: [String] = []
    private var normalizer: ScreenNormalizer { ScreenNormalizer(ids: ids) }

    /// A photo's bytes: 4 KiB that do not compress (a fixed sequence, the same every run).
    private let photo = String(decoding: (0 ..< 4096).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 13) & 0x7F | 0x20 },
                               as: UTF8.self)

    /// `src` with a note, a photo with a Korean name and a report, backed up in full; then
    /// the note changed and a file added, backed up again (an incremental).
    private func makeTwoBackups() throws {
        try makeTree(path("src"), [
            "notes.txt": "Buy milk.\n",
            "photos/가족.jpg": photo,
            "docs/report.txt": String(repeating: "quarterly figures\n", count: 300),
        ])
        try fixTimes(path("src"))
        ids.append(try backupID(["backup", path("src"), "--dest", path("dest"), "--json"]))
        try makeTree(path("src"), ["notes.txt": "Buy milk and bread.\n", "docs/plan.txt": "Plan.\n"])
        try fixTimes(path("src"))
        ids.append(try backupID(["backup", path("src"), "--dest", path("dest"), "--json", "--tag", "daily"]))
    }

    /// Sets every file and folder under `root` to one modification time (2026-11-28 10:00 UTC).
    private func fixTimes(_ root: String) throws {
        let when = Date(timeIntervalSince1970: 1_795_860_000)
        let paths = [root] + (FileManager.default.subpaths(atPath: root) ?? []).map { root + "/" + $0 }
        for path in paths {
            try FileManager.default.setAttributes([.modificationDate: when], ofItemAtPath: path)
        }
    }

    private func backupID(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let run = keepsake(arguments, expecting: .success, file: file, line: line)
        let object = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        return try XCTUnwrap(object?["id"] as? String, run.description, file: file, line: line)
    }

    /// Both streams of a run as a person reads them on a terminal: errors first when it failed.
    private func both(_ run: Run) -> String { run.stdout + (run.stderr.isEmpty ? "" : "--- stderr\n" + run.stderr) }

    // MARK: Bare keepsake and a usage error

    func testShortUsage() {
        assertScreen("usage-80", keepsake([], on: .pipe(80), expecting: .success).stdout, """
            Usage: keepsake <command> [options]

            Back up and restore directories as compressed, self-describing tar archives.

              keepsake backup ~/Documents                    back up a folder
              keepsake list                                  show the backups
              keepsake restore latest --target /tmp/restore  restore the newest one

            Every command and exit code: keepsake help. One command: keepsake help COMMAND.

            """)
        assertScreen("usage-50", keepsake([], on: .pipe(50), expecting: .success).stdout, """
            Usage: keepsake <command> [options]

            Back up and restore directories as compressed,
            self-describing tar archives.

              keepsake backup ~/Documents
                  back up a folder
              keepsake list
                  show the backups
              keepsake restore latest --target /tmp/restore
                  restore the newest one

            Every command and exit code: keepsake help. One
            command: keepsake help COMMAND.

            """)
    }

    /// A typo on a terminal: the error wraps under itself, the usage follows.
    func testUsageError() {
        let typo = ["backup", "src", "--compresion", "xz", "--color", "never"]
        assertScreen("usage-error-80", both(keepsake(typo, on: .tty(80), expecting: .usage)), """
            --- stderr
            Error: Unknown option '--compresion'. Did you mean '--compression'?

            Usage: keepsake backup [options] [PATH...]
            See 'keepsake backup --help'.

            """)
        assertScreen("usage-error-50", both(keepsake(typo, on: .tty(50), expecting: .usage)), """
            --- stderr
            Error: Unknown option '--compresion'. Did you mean
                   '--compression'?

            Usage: keepsake backup [options] [PATH...]
            See 'keepsake backup --help'.

            """)
    }

    // MARK: Backup

    /// A full backup's card at 80 and 50 columns (two destinations), then an incremental one
    /// as piped output shows it.
    func testBackupSummaries() throws {
        try makeTree(path("src"), ["notes.txt": "Buy milk.\n", "photos/가족.jpg": photo])
        try fixTimes(path("src"))
        let wide = keepsake(["backup", path("src"), "--dest", path("dest"), "--color", "never"], on: .tty(80), expecting: .success)
        ids.append(try XCTUnwrap(ScreenNormalizerTestSupport.firstID(in: wide.stdout)))
        assertScreen("backup-80", wide.stdout, """
            [ DONE ]
            ╭─ Backup committed ───────────────────────────────────────╮
            │ Backup:      YYYYMMDDThhmmssZ-backup#1                   │
            │ Kind:        full                                        │
            │ Sources:     /tmp/ks-XXXXXX/src                          │
            │ Contents:    2 files, 2 folders                          │
            │ Size:        4.0 KiB → #.# KiB stored (zstd, ratio #.#×) │
            │ Time:        T.TT s (R B/s)                              │
            │ Destination: /tmp/ks-XXXXXX/dest                         │
            │ Archive:     HOST_YYYYMMDDThhmmssZ-backup#1.tar.zst      │
            ╰──────────────────────────────────────────────────────────╯

            """, normalizer: normalizer)
        let narrow = keepsake(["backup", path("src"), "--dest", path("dest50"), "--color", "never"], on: .tty(50), expecting: .success)
        ids.append(try XCTUnwrap(ScreenNormalizerTestSupport.firstID(in: narrow.stdout)))
        assertScreen("backup-50", narrow.stdout, """
            [ DONE ]
            ╭─ Backup committed ───────────────────────────╮
            │ Backup:      YYYYMMDDThhmmssZ-backup#2       │
            │ Kind:        full                            │
            │ Sources:     /tmp/ks-XXXXXX/src              │
            │ Contents:    2 files, 2 folders              │
            │ Size:        4.0 KiB → #.# KiB stored (zstd, │
            │              ratio #.#×)                     │
            │ Time:        T.TT s (R B/s)                  │
            │ Destination: /tmp/ks-XXXXXX/dest50           │
            │ Archive:                                     │
            │   HOST_YYYYMMDDThhmmssZ-backup#2.tar.zst     │
            ╰──────────────────────────────────────────────╯

            """, normalizer: normalizer)
        try makeTree(path("src"), ["notes.txt": "Buy milk and bread.\n"])
        let incremental = keepsake(["backup", path("src"), "--dest", path("dest")], on: .pipe(80), expecting: .success)
        ids.append(try XCTUnwrap(ScreenNormalizerTestSupport.firstID(in: incremental.stdout)))
        assertScreen("backup-incremental-80", incremental.stdout, """
            Backup:      YYYYMMDDThhmmssZ-backup#3
            Kind:        incremental on YYYYMMDDThhmmssZ-backup#1 (backup 2 of its chain); 1
                         new or changed file, 20 B
            Sources:     /tmp/ks-XXXXXX/src
            Contents:    2 files, 2 folders
            Size:        4.0 KiB in all, 20 B new → ### B stored (zstd, ratio <#.#×)
            Time:        T.TT s (R B/s)
            Destination: /tmp/ks-XXXXXX/dest
            Archive:     HOST_YYYYMMDDThhmmssZ-backup#3.tar.zst

            """, normalizer: normalizer)
    }

    // MARK: List, diff, find

    func testListScreens() throws {
        try makeTwoBackups()
        let list = ["list", "--dest", path("dest")]
        assertScreen("list-80", keepsake(list, on: .pipe(80), expecting: .success).stdout, """
            ID                         KIND    FILES     SIZE   STORED  SOURCES
            ─────────────────────────  ──────  ─────  ───────  ───────  ──────────────────
            YYYYMMDDThhmmssZ-backup#1  [FULL]      3  9.3 KiB  #.# KiB  /tmp/ks-XXXXXX/src
            YYYYMMDDThhmmssZ-backup#2  [INCR]      4  9.3 KiB  #.# KiB  /tmp/ks-XXXXXX/src

            """, normalizer: normalizer)
        assertScreen("list-50", keepsake(list, on: .pipe(50), expecting: .success).stdout, """
            ID                         FILES     SIZE   STORED
            ─────────────────────────  ─────  ───────  ───────
            YYYYMMDDThhmmssZ-backup#1      3  9.3 KiB  #.# KiB
            YYYYMMDDThhmmssZ-backup#2      4  9.3 KiB  #.# KiB

            """, normalizer: normalizer)
        let files = keepsake(["list", ids[1], "--dest", path("dest")], on: .pipe(80), expecting: .success)
        assertScreen("list-id-80", files.stdout, """
            tmp/ks-XXXXXX/src
            tmp/ks-XXXXXX/src/docs
            tmp/ks-XXXXXX/src/docs/plan.txt
            tmp/ks-XXXXXX/src/docs/report.txt
            tmp/ks-XXXXXX/src/notes.txt
            tmp/ks-XXXXXX/src/photos
            tmp/ks-XXXXXX/src/photos/가족.jpg

            """, normalizer: normalizer)
    }

    func testDiffAndFind() throws {
        try makeTwoBackups()
        let diff = ["diff", ids[0], ids[1], "--dest", path("dest")]
        assertScreen("diff-80", keepsake(diff, on: .pipe(80), expecting: .success).stdout, """
            STATUS    PATH                                    SIZE  WHAT CHANGED
            ────────  ───────────────────────────────  ───────────  ─────────────
            added     tmp/ks-XXXXXX/src/docs/plan.txt      - → 6 B  new file
            modified  tmp/ks-XXXXXX/src/notes.txt      10 B → 20 B  size, content
            1 added, 0 removed, 1 modified, 0 metadata only (YYYYMMDDThhmmssZ-backup#1 →
            YYYYMMDDThhmmssZ-backup#2)

            """, normalizer: normalizer)
        assertScreen("diff-50", keepsake(diff, on: .pipe(50), expecting: .success).stdout, """
            STATUS    PATH
            ────────  ───────────────────────────────
            added     tmp/ks-XXXXXX/src/docs/plan.txt
            modified  tmp/ks-XXXXXX/src/notes.txt
            1 added, 0 removed, 1 modified, 0 metadata only
            (YYYYMMDDThhmmssZ-backup#1 →
            YYYYMMDDThhmmssZ-backup#2)

            """, normalizer: normalizer)
        let find = ["find", "notes.txt", "--dest", path("dest")]
        assertScreen("find-80", both(keepsake(find, on: .pipe(80), expecting: .success)), """
            BACKUP                     PATH                         SIZE  SHA256
            ─────────────────────────  ───────────────────────────  ────  ────────────
            YYYYMMDDThhmmssZ-backup#1  tmp/ks-XXXXXX/src/notes.txt  10 B  e0caefe9dbd4
            YYYYMMDDThhmmssZ-backup#2  tmp/ks-XXXXXX/src/notes.txt  20 B  7303ffe1aa00
            --- stderr
            2 matches in 2 of 2 backups.
            Restore one with:
            keepsake restore YYYYMMDDThhmmssZ-backup#2 /tmp/ks-XXXXXX/src/notes.txt --dest /tmp/ks-XXXXXX/dest

            """, normalizer: normalizer)
        assertScreen("find-50", both(keepsake(find, on: .pipe(50), expecting: .success)), """
            BACKUP                     PATH
            ─────────────────────────  ───────────────────────
            YYYYMMDDThhmmssZ-backup#1  tmp/ks-XXXX…c/notes.txt
            YYYYMMDDThhmmssZ-backup#2  tmp/ks-XXXX…c/notes.txt
            --- stderr
            2 matches in 2 of 2 backups.
            Restore one with:
            keepsake restore YYYYMMDDThhmmssZ-backup#2 /tmp/ks-XXXXXX/src/notes.txt --dest /tmp/ks-XXXXXX/dest

            """, normalizer: normalizer)
    }

    // MARK: Restore, verify, prune

    func testRestoreVerifyAndPrune() throws {
        try makeTwoBackups()
        let restore = ["restore", "latest", "--dest", path("dest"), "--color", "never", "--target"]
        assertScreen("restore-80", keepsake(restore + [path("out80")], on: .tty(80), expecting: .success).stdout, """
            [ RESTORED ]
            ╭─ Restore ────────────────────────────────╮
            │ From:     YYYYMMDDThhmmssZ-backup#2      │
            │ Into:     /tmp/ks-XXXXXX/out80           │
            │ Restored: 4 files, 3 folders, 9.3 KiB    │
            │ Checked:  every file matched its SHA-256 │
            │ Time:     T.TT s                         │
            ╰──────────────────────────────────────────╯

            """,
                     normalizer: normalizer)
        assertScreen("restore-50", keepsake(restore + [path("out50")], on: .tty(50), expecting: .success).stdout, """
            [ RESTORED ]
            ╭─ Restore ────────────────────────────────╮
            │ From:     YYYYMMDDThhmmssZ-backup#2      │
            │ Into:     /tmp/ks-XXXXXX/out50           │
            │ Restored: 4 files, 3 folders, 9.3 KiB    │
            │ Checked:  every file matched its SHA-256 │
            │ Time:     T.TT s                         │
            ╰──────────────────────────────────────────╯

            """,
                     normalizer: normalizer)
        let verify = ["verify", "--dest", path("dest"), "--color", "never"]
        assertScreen("verify-80", keepsake(verify, on: .tty(80), expecting: .success).stdout, """
            [OK] YYYYMMDDThhmmssZ-backup#1  3 files, 9.3 KiB
            [OK] YYYYMMDDThhmmssZ-backup#2  4 files, 9.3 KiB
            [ INTACT ]
            ╭─ Verify ─────────────────────────────────────────────────╮
            │ Destination: /tmp/ks-XXXXXX/dest                         │
            │ Backups:     2 intact, 0 damaged                         │
            │ Checked:     7 files, 18.6 KiB, each against its SHA-256 │
            ╰──────────────────────────────────────────────────────────╯

            """, normalizer: normalizer)
        assertScreen("verify-50", keepsake(verify, on: .tty(50), expecting: .success).stdout, """
            [OK] YYYYMMDDThhmmssZ-backup#1  3 files, 9.3 KiB
            [OK] YYYYMMDDThhmmssZ-backup#2  4 files, 9.3 KiB
            [ INTACT ]
            ╭─ Verify ─────────────────────────────────────╮
            │ Destination: /tmp/ks-XXXXXX/dest             │
            │ Backups:     2 intact, 0 damaged             │
            │ Checked:     7 files, 18.6 KiB, each against │
            │              its SHA-256                     │
            ╰──────────────────────────────────────────────╯

            """, normalizer: normalizer)
        let prune = ["prune", "--keep-last", "1", "--dry-run", "--dest", path("dest")]
        assertScreen("prune-80", keepsake(prune, on: .pipe(80), expecting: .success).stdout, """
            ID                         CREATED           KIND  ACTION  REASON
            ─────────────────────────  ────────────────  ────  ──────  ──────────────
            YYYYMMDDThhmmssZ-backup#2  YYYY-MM-DD hh:mm  INCR  keep    last backup #1
            YYYYMMDDThhmmssZ-backup#1  YYYY-MM-DD hh:mm  FULL  remove
            Would remove 1 backup, freeing #.# KiB.

            """, normalizer: normalizer)
        assertScreen("prune-50", keepsake(prune, on: .pipe(50), expecting: .success).stdout, """
            ID                         ACTION  REASON
            ─────────────────────────  ──────  ──────────────
            YYYYMMDDThhmmssZ-backup#2  keep    last backup #1
            YYYYMMDDThhmmssZ-backup#1  remove
            Would remove 1 backup, freeing #.# KiB.

            """, normalizer: normalizer)
    }

    // MARK: Run

    /// `run --verbose`: a full backup at 80 columns, then an incremental one at 50.
    func testRunVerboseSummaries() throws {
        try makeTree(path("src"), ["notes.txt": "Buy milk.\n"])
        let config = path("config.toml")
        try """
            [profiles.home]
            sources = ["\(path("src"))"]
            destination = "\(path("dest"))"

            [profiles.home.retention]
            keep-last = 3
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let run = ["run", "home", "--config", config, "--verbose", "--color", "never"]
        assertScreen("run-80", keepsake(run, on: .tty(80), expecting: .success).stdout, """
            ╭─ Run of home ─────────────────────────────────╮
            │ Profile:     home                             │
            │ Backup:      YYYYMMDDThhmmssZ-???????? (full) │
            │ Contents:    1 file, 1 folder, 10 B           │
            │ Stored:      ### B                            │
            │ Time:        T.TT s                           │
            │ Destination: /tmp/ks-XXXXXX/dest              │
            │ Pruned:      removed 0 backups (0 B), kept 1  │
            │ Verified:    intact (1 file, 10 B)            │
            ╰───────────────────────────────────────────────╯

            """)
        assertScreen("run-50", keepsake(run, on: .tty(50), expecting: .success).stdout, """
            ╭─ Run of home ──────────────────────────────────╮
            │ Profile:     home                              │
            │ Backup:      YYYYMMDDThhmmssZ-????????         │
            │              (incremental)                     │
            │ Contents:    1 file, 1 folder, 10 B            │
            │ Stored:      ### B                             │
            │ Time:        T.TT s                            │
            │ Destination: /tmp/ks-XXXXXX/dest               │
            │ Pruned:      removed 0 backups (0 B), kept 2   │
            │ Verified:    intact (no new files; 1 file in 1 │
            │              earlier backup, checked)          │
            ╰────────────────────────────────────────────────╯

            """)
    }
}

/// Reading ids out of a screen.
enum ScreenNormalizerTestSupport {
    /// The first backup id in `text`.
    static func firstID(in text: String) -> String? {
        text.range(of: "[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}", options: .regularExpression).map { String(text[$0]) }
    }
}
