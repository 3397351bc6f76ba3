import Foundation
@testable import KeepsakeCLI
import XCTest

/// Every command's `--help`, and `keepsake --help`, at 80 and 50 columns as whole
/// literals: rendered in process, plain (standard output is not a terminal). A change to
/// an option, its wording or the layout shows here first.
final class HelpScreenTests: InProcessTestCase {
    // MARK: Helper

    /// Fails unless `keepsake ARGUMENTS` prints `expected` at `width` columns.
    private func assertHelp(_ arguments: [String], width: Int, _ expected: String, file: StaticString = #filePath, line: UInt = #line) {
        let run = keepsake(arguments, on: .pipe(width), expecting: .success, file: file, line: line)
        XCTAssertEqual(run.stderr, "", file: file, line: line)
        assertScreen((arguments + ["\(width)"]).joined(separator: "-"), run.stdout, expected, normalizer: .verbatim,
                     file: file, line: line)
    }

    // MARK: keepsake --help

    func testTopLevelHelp() {
        assertHelp(["--help"], width: 80, """
            OVERVIEW: Back up and restore directories as compressed, self-describing tar
                      archives.

            USAGE: keepsake <command> [options]

            COMMANDS:
              backup          Back up files and folders (or standard input) into the
                              destination.
              list            List the backups, or the files of one backup.
              restore         Restore all or part of a backup, or of an archive file.
              verify          Check that backups are intact: every file's SHA-256 and the
                              archive's own.
              prune           Remove the backups a retention policy does not keep.
              copy            Copy backups to another destination (a second disk, a bucket),
                              verified on the way.
              repair          Rebuild manifests that are missing or damaged from the
                              archives' own copies.
              diff            Show what changed between two backups.
              find            Find which backups hold a file, with each version's size, time
                              and SHA-256.
              run             Run a profile of the configuration file: backup, prune, verify
                              (for cron).
              schedule        Print a crontab line and systemd timer units that run a
                              profile (or install the crontab line).
              keygen          Make an age identity (a secret key) for encrypted backups, or
                              a signing key, and print its public key.
              completions     Print a shell completion script (bash, zsh or fish).
              help            Show help for keepsake or for one command.

            OPTIONS:
              --json          Print one JSON document on stdout instead of text.
              -q, --quiet     Print nothing but errors and warnings.
              --color <when>  Colour and styling: auto (only on a terminal, unless NO_COLOR
                              or TERM=dumb), always, or never. (default: auto)
                              (values: auto, always, never)
              --no-input      Never prompt; a missing answer is an error instead.
              -h, --help      Show help information.
              --version       Print the version and exit.

            EXIT CODES:
              0               success
              1               failure (the message says what and what to do)
              2               usage error (unknown option, bad value, missing argument)
              3               backup committed, but some files could not be read; or restore
                              finished, but some paths could not be written, existing files
                              that differ were kept, or an incremental archive's parent was
                              not next to it
              4               integrity failure: damaged, missing or unsafe content, or a
                              damaged manifest, found by verify, restore or another command
                              (never a target that refuses writes)
              5               the destination is locked by another run
              6               an encrypted backup needs an identity or passphrase that was
                              not given, or the one given does not open it
              7               a signature was asked for (--signed-by) and the backup is
                              unsigned, signed by another key, or changed since it was
                              signed
              130             interrupted (Ctrl-C or SIGTERM); nothing half-done is left

            See 'keepsake <command> --help' for help on a command.

            """)
        assertHelp(["--help"], width: 50, """
            OVERVIEW: Back up and restore directories as
                      compressed, self-describing tar
                      archives.

            USAGE: keepsake <command> [options]

            COMMANDS:
              backup          Back up files and folders (or
                              standard input) into the
                              destination.
              list            List the backups, or the files
                              of one backup.
              restore         Restore all or part of a backup,
                              or of an archive file.
              verify          Check that backups are intact:
                              every file's SHA-256 and the
                              archive's own.
              prune           Remove the backups a retention
                              policy does not keep.
              copy            Copy backups to another
                              destination (a second disk, a
                              bucket), verified on the way.
              repair          Rebuild manifests that are
                              missing or damaged from the
                              archives' own copies.
              diff            Show what changed between two
                              backups.
              find            Find which backups hold a file,
                              with each version's size, time
                              and SHA-256.
              run             Run a profile of the
                              configuration file: backup,
                              prune, verify (for cron).
              schedule        Print a crontab line and systemd
                              timer units that run a profile
                              (or install the crontab line).
              keygen          Make an age identity (a secret
                              key) for encrypted backups, or a
                              signing key, and print its
                              public key.
              completions     Print a shell completion script
                              (bash, zsh or fish).
              help            Show help for keepsake or for
                              one command.

            OPTIONS:
              --json          Print one JSON document on
                              stdout instead of text.
              -q, --quiet     Print nothing but errors and
                              warnings.
              --color <when>  Colour and styling: auto (only
                              on a terminal, unless NO_COLOR
                              or TERM=dumb), always, or never.
                              (default: auto) (values: auto,
                              always, never)
              --no-input      Never prompt; a missing answer
                              is an error instead.
              -h, --help      Show help information.
              --version       Print the version and exit.

            EXIT CODES:
              0               success
              1               failure (the message says what
                              and what to do)
              2               usage error (unknown option, bad
                              value, missing argument)
              3               backup committed, but some files
                              could not be read; or restore
                              finished, but some paths could
                              not be written, existing files
                              that differ were kept, or an
                              incremental archive's parent was
                              not next to it
              4               integrity failure: damaged,
                              missing or unsafe content, or a
                              damaged manifest, found by
                              verify, restore or another
                              command (never a target that
                              refuses writes)
              5               the destination is locked by
                              another run
              6               an encrypted backup needs an
                              identity or passphrase that was
                              not given, or the one given does
                              not open it
              7               a signature was asked for
                              (--signed-by) and the backup is
                              unsigned, signed by another key,
                              or changed since it was signed
              130             interrupted (Ctrl-C or SIGTERM);
                              nothing half-done is left

            See 'keepsake <command> --help' for help on a
            command.

            """)
    }

    // MARK: Commands

    func testBackupHelp() {
        assertHelp(["backup", "--help"], width: 80, """
            OVERVIEW: Back up files and folders (or standard input) into the destination.

            Each backup is one pax tar archive, compressed (zstd by default), with a
            manifest holding a SHA-256 for every file. Nothing is visible in the destination
            until the backup is complete. Files that cannot be read are reported; the backup
            is still committed and the exit code is 3.

            USAGE: keepsake backup [options] [PATH...]

            ARGUMENTS:
              PATH...                 A file or folder to back up. (optional)

            OPTIONS:
              -d, --dest <where>      Where the backups are: a folder, s3://BUCKET/PREFIX,
                                      or rclone:REMOTE:PATH. (default:
                                      ${XDG_DATA_HOME:-~/.local/share}/keepsake/backups)
                                      (env: KEEPSAKE_DEST)
              --s3-endpoint <url>     The S3-compatible server for s3:// destinations
                                      (http://127.0.0.1:8333); path-style addressing.
                                      (default: AWS) (env: KEEPSAKE_S3_ENDPOINT)
              -c, --compression <codec>
                                      How to compress the archive. (default: zstd)
                                      (values: zstd, gzip, xz, lz4, none)
              -l, --level <n>         Compression level: zstd 1-19 (default 3), gzip 1-9
                                      (6), xz 0-9 (6), lz4 1-9 (1).
              -e, --exclude <pattern>
                                      Leave out paths matching a gitignore-style pattern: *,
                                      **, ?, [..], a leading / anchors to the source, a
                                      trailing / matches only folders, ! re-includes.
                                      (repeatable)
              --exclude-from <file>   Read exclude patterns from a file, one per line (#
                                      starts a comment). (repeatable)
              --exclude-caches        Leave out the contents of folders holding a valid
                                      CACHEDIR.TAG (the folder and its tag are kept).
              --exclude-if-present <name>
                                      Leave out the contents of folders holding a file of
                                      this name (the folder and the file are kept).
                                      (repeatable)
              -x, --one-file-system   Stay on the file system of each source; mount points
                                      are kept, empty.
              -t, --tag <tag>         Label the backup (shown by list). (repeatable)
              -n, --dry-run           Scan and count what would be backed up; write nothing.
              --list                  With --dry-run: print every path that would be saved
                                      ('+ PATH') and every path left out with the rule that
                                      left it out ('- PATH (rule)'); the summary goes to
                                      stderr.
              --host <name>           Record the backup as made by this host (a container, a
                                      reinstalled machine): its chain, 'latest' and prune's
                                      groups follow the name. (default: this host's name)
              --stdin                 Back up standard input (a database dump, say) as one
                                      file instead of paths.
              --stdin-name <name>     The file name standard input gets in the backup.
                                      (default: stdin)
              --threads <n>           Compressor threads (zstd and xz). (default: number of
                                      CPUs)
              --readers <n>           Files read at once, ahead of the archive (1 reads one
                                      file at a time). (default: one per CPU, 2 to 8)
              --full                  Make a full backup, starting a new chain, even when an
                                      incremental one is possible.
              --full-every <n>        Start a new chain once the current one holds this many
                                      backups. (default: 30)
              --full-if-older-than <duration>
                                      Start a new chain when the current chain's full backup
                                      is older than this (e.g. 7d, 2w, 1m). (default: 30d)
              --ignore-ctime          Decide a file is unchanged without looking at its
                                      ctime.
              --ignore-inode          Decide a file is unchanged without looking at its
                                      inode and device numbers.
              --reread                Read and hash every file, and compare contents instead
                                      of size and times.
              --lock-wait <time>      When another run holds the destination, wait this long
                                      for it (900, 90s, 15min, 2h) before exit 5.
                                      (default: 0 (fail at once))
              --progress              Report progress even when stderr is not a terminal:
                                      plain lines every few seconds (JSON Lines with
                                      --json).
              -r, --recipient <age1…>
                                      Encrypt the backup to this age public key. Only the
                                      matching identities can read it; this host needs none.
                                      (repeatable)
              -R, --recipients-file <file>
                                      Encrypt to the age public keys in this file, one per
                                      line (# comments), as age -R reads. (repeatable)
              --passphrase            Encrypt with a passphrase (age's scrypt), asked for
                                      twice on the terminal.
              --passphrase-file <file>
                                      Read the passphrase from the first line of this file
                                      (mode 0600): encrypts a backup, or opens one.
                                      (env: KEEPSAKE_PASSPHRASE_FILE)
              --no-encryption         Store this backup in the clear although this host's
                                      last backup there was encrypted.
              --signing-key <file>    Sign the backup with this key (keepsake keygen
                                      --signing; mode 0600), so a restore can prove it was
                                      made here.
              --json                  Print one JSON document on stdout instead of text.
              -q, --quiet             Print nothing but errors and warnings.
              --color <when>          Colour and styling: auto (only on a terminal, unless
                                      NO_COLOR or TERM=dumb), always, or never.
                                      (default: auto) (values: auto, always, never)
              --no-input              Never prompt; a missing answer is an error instead.
              -h, --help              Show help information.

            EXAMPLES:
              keepsake backup ~/Documents
                  Back up a folder to the default destination.

              keepsake backup /etc /home --dest /mnt/usb/backups --exclude '*.tmp'
                --exclude-caches
                  Back up two folders to a USB disk, leaving out temporary files and caches.

              pg_dump shop | keepsake backup --stdin --stdin-name shop.sql --tag db
                  Back up a database dump from a pipe.

              keepsake backup /srv --dest s3://backups/web --recipient age1…
                  Encrypt to a public key: only its identity (kept elsewhere) can read the
                  backup.

            """)
        assertHelp(["backup", "--help"], width: 50, """
            OVERVIEW: Back up files and folders (or standard
                      input) into the destination.

            Each backup is one pax tar archive, compressed
            (zstd by default), with a manifest holding a
            SHA-256 for every file. Nothing is visible in the
            destination until the backup is complete. Files
            that cannot be read are reported; the backup is
            still committed and the exit code is 3.

            USAGE: keepsake backup [options] [PATH...]

            ARGUMENTS:
              PATH...
                  A file or folder to back up. (optional)

            OPTIONS:
              -d, --dest <where>
                  Where the backups are: a folder,
                  s3://BUCKET/PREFIX, or rclone:REMOTE:PATH.
                  (default:
                  ${XDG_DATA_HOME:-~/.local/share}/keepsake/
                  backups) (env: KEEPSAKE_DEST)
              --s3-endpoint <url>
                  The S3-compatible server for s3://
                  destinations (http://127.0.0.1:8333);
                  path-style addressing. (default: AWS)
                  (env: KEEPSAKE_S3_ENDPOINT)
              -c, --compression <codec>
                  How to compress the archive. (default: zstd)
                  (values: zstd, gzip, xz, lz4, none)
              -l, --level <n>
                  Compression level: zstd 1-19 (default 3),
                  gzip 1-9 (6), xz 0-9 (6), lz4 1-9 (1).
              -e, --exclude <pattern>
                  Leave out paths matching a gitignore-style
                  pattern: *, **, ?, [..], a leading / anchors
                  to the source, a trailing / matches only
                  folders, ! re-includes. (repeatable)
              --exclude-from <file>
                  Read exclude patterns from a file, one per
                  line (# starts a comment). (repeatable)
              --exclude-caches
                  Leave out the contents of folders holding a
                  valid CACHEDIR.TAG (the folder and its tag
                  are kept).
              --exclude-if-present <name>
                  Leave out the contents of folders holding a
                  file of this name (the folder and the file
                  are kept). (repeatable)
              -x, --one-file-system
                  Stay on the file system of each source;
                  mount points are kept, empty.
              -t, --tag <tag>
                  Label the backup (shown by list).
                  (repeatable)
              -n, --dry-run
                  Scan and count what would be backed up;
                  write nothing.
              --list
                  With --dry-run: print every path that would
                  be saved ('+ PATH') and every path left out
                  with the rule that left it out ('- PATH
                  (rule)'); the summary goes to stderr.
              --host <name>
                  Record the backup as made by this host (a
                  container, a reinstalled machine): its
                  chain, 'latest' and prune's groups follow
                  the name. (default: this host's name)
              --stdin
                  Back up standard input (a database dump,
                  say) as one file instead of paths.
              --stdin-name <name>
                  The file name standard input gets in the
                  backup. (default: stdin)
              --threads <n>
                  Compressor threads (zstd and xz).
                  (default: number of CPUs)
              --readers <n>
                  Files read at once, ahead of the archive (1
                  reads one file at a time). (default: one per
                  CPU, 2 to 8)
              --full
                  Make a full backup, starting a new chain,
                  even when an incremental one is possible.
              --full-every <n>
                  Start a new chain once the current one holds
                  this many backups. (default: 30)
              --full-if-older-than <duration>
                  Start a new chain when the current chain's
                  full backup is older than this (e.g. 7d, 2w,
                  1m). (default: 30d)
              --ignore-ctime
                  Decide a file is unchanged without looking
                  at its ctime.
              --ignore-inode
                  Decide a file is unchanged without looking
                  at its inode and device numbers.
              --reread
                  Read and hash every file, and compare
                  contents instead of size and times.
              --lock-wait <time>
                  When another run holds the destination, wait
                  this long for it (900, 90s, 15min, 2h)
                  before exit 5. (default: 0 (fail at once))
              --progress
                  Report progress even when stderr is not a
                  terminal: plain lines every few seconds
                  (JSON Lines with --json).
              -r, --recipient <age1…>
                  Encrypt the backup to this age public key.
                  Only the matching identities can read it;
                  this host needs none. (repeatable)
              -R, --recipients-file <file>
                  Encrypt to the age public keys in this file,
                  one per line (# comments), as age -R reads.
                  (repeatable)
              --passphrase
                  Encrypt with a passphrase (age's scrypt),
                  asked for twice on the terminal.
              --passphrase-file <file>
                  Read the passphrase from the first line of
                  this file (mode 0600): encrypts a backup, or
                  opens one. (env: KEEPSAKE_PASSPHRASE_FILE)
              --no-encryption
                  Store this backup in the clear although this
                  host's last backup there was encrypted.
              --signing-key <file>
                  Sign the backup with this key (keepsake
                  keygen --signing; mode 0600), so a restore
                  can prove it was made here.
              --json
                  Print one JSON document on stdout instead of
                  text.
              -q, --quiet
                  Print nothing but errors and warnings.
              --color <when>
                  Colour and styling: auto (only on a
                  terminal, unless NO_COLOR or TERM=dumb),
                  always, or never. (default: auto)
                  (values: auto, always, never)
              --no-input
                  Never prompt; a missing answer is an error
                  instead.
              -h, --help
                  Show help information.

            EXAMPLES:
              keepsake backup ~/Documents
                  Back up a folder to the default destination.

              keepsake backup /etc /home --dest
                /mnt/usb/backups --exclude '*.tmp'
                --exclude-caches
                  Back up two folders to a USB disk, leaving
                  out temporary files and caches.

              pg_dump shop | keepsake backup --stdin
                --stdin-name shop.sql --tag db
                  Back up a database dump from a pipe.

              keepsake backup /srv --dest s3://backups/web
                --recipient age1…
                  Encrypt to a public key: only its identity
                  (kept elsewhere) can read the backup.

            """)
    }

    func testListHelp() {
        assertHelp(["list", "--help"], width: 80, """
            OVERVIEW: List the backups, or the files of one backup.

            Without an argument: a table of the backups in the destination, oldest first.
            With a backup id (any unique prefix, or 'latest') or an archive file: its files,
            one path per line; --long adds mode, owner, size, time and SHA-256.

            USAGE: keepsake list [options] [BACKUP]

            ARGUMENTS:
              BACKUP                  A backup id, unique id prefix, 'latest', or an archive
                                      file. (optional)

            OPTIONS:
              -d, --dest <where>      Where the backups are: a folder, s3://BUCKET/PREFIX,
                                      or rclone:REMOTE:PATH. (default:
                                      ${XDG_DATA_HOME:-~/.local/share}/keepsake/backups)
                                      (env: KEEPSAKE_DEST)
              --s3-endpoint <url>     The S3-compatible server for s3:// destinations
                                      (http://127.0.0.1:8333); path-style addressing.
                                      (default: AWS) (env: KEEPSAKE_S3_ENDPOINT)
              --profile <name>        Use this profile of the configuration file: its
                                      destination, S3 settings and keys (options given here
                                      win). (env: KEEPSAKE_PROFILE)
              --config <file>         The configuration file that defines the profiles.
                                      (default:
                                      ${XDG_CONFIG_HOME:-~/.config}/keepsake/config.toml)
                                      (env: KEEPSAKE_CONFIG)
              -l, --long              With BACKUP: show mode, owner, size, modification time
                                      and SHA-256. Without: show the HOST column even when
                                      one host made every backup.
              --wide                  With BACKUP --long: the whole SHA-256 of each file
                                      (otherwise its first 12 hex digits).
              --ids                   Without BACKUP: print only the backup ids, oldest
                                      first, one per line.
              --source <path>         Only backups of this source (or of a source holding
                                      this path): 'latest' is the newest of them.
                                      (default: any)
              --host <name>           Without BACKUP: only the backups this host made; with
                                      BACKUP, whose backup 'latest' is. (default: every
                                      host)
              -i, --identity <file>   Open encrypted backups with the age identities in this
                                      file (keepsake keygen, age-keygen). (repeatable)
                                      (env: KEEPSAKE_IDENTITY_FILE)
              --passphrase-file <file>
                                      Read the passphrase from the first line of this file
                                      (mode 0600): encrypts a backup, or opens one.
                                      (env: KEEPSAKE_PASSPHRASE_FILE)
              --json                  Print one JSON document on stdout instead of text.
              -q, --quiet             Print nothing but errors and warnings.
              --color <when>          Colour and styling: auto (only on a terminal, unless
                                      NO_COLOR or TERM=dumb), always, or never.
                                      (default: auto) (values: auto, always, never)
              --no-input              Never prompt; a missing answer is an error instead.
              -h, --help              Show help information.

            EXAMPLES:
              keepsake list
                  Show the backups in the default destination.

              keepsake list latest --long
                  Show the files of the newest backup with details.

              keepsake list /mnt/usb/host_20261129T023000Z-3f9a1c2e.tar.zst
                  Show what a lone archive file holds.

            """)
        assertHelp(["list", "--help"], width: 50, """
            OVERVIEW: List the backups, or the files of one
                      backup.

            Without an argument: a table of the backups in the
            destination, oldest first. With a backup id (any
            unique prefix, or 'latest') or an archive file:
            its files, one path per line; --long adds mode,
            owner, size, time and SHA-256.

            USAGE: keepsake list [options] [BACKUP]

            ARGUMENTS:
              BACKUP
                  A backup id, unique id prefix, 'latest', or
                  an archive file. (optional)

            OPTIONS:
              -d, --dest <where>
                  Where the backups are: a folder,
                  s3://BUCKET/PREFIX, or rclone:REMOTE:PATH.
                  (default:
                  ${XDG_DATA_HOME:-~/.local/share}/keepsake/
                  backups) (env: KEEPSAKE_DEST)
              --s3-endpoint <url>
                  The S3-compatible server for s3://
                  destinations (http://127.0.0.1:8333);
                  path-style addressing. (default: AWS)
                  (env: KEEPSAKE_S3_ENDPOINT)
              --profile <name>
                  Use this profile of the configuration file:
                  its destination, S3 settings and keys
                  (options given here win).
                  (env: KEEPSAKE_PROFILE)
              --config <file>
                  The configuration file that defines the
                  profiles. (default:
                  ${XDG_CONFIG_HOME:-~/.config}/keepsake/
                  config.toml) (env: KEEPSAKE_CONFIG)
              -l, --long
                  With BACKUP: show mode, owner, size,
                  modification time and SHA-256. Without: show
                  the HOST column even when one host made
                  every backup.
              --wide
                  With BACKUP --long: the whole SHA-256 of
                  each file (otherwise its first 12 hex
                  digits).
              --ids
                  Without BACKUP: print only the backup ids,
                  oldest first, one per line.
              --source <path>
                  Only backups of this source (or of a source
                  holding this path): 'latest' is the newest
                  of them. (default: any)
              --host <name>
                  Without BACKUP: only the backups this host
                  made; with BACKUP, whose backup 'latest' is.
                  (default: every host)
              -i, --identity <file>
                  Open encrypted backups with the age
                  identities in this file (keepsake keygen,
                  age-keygen). (repeatable)
                  (env: KEEPSAKE_IDENTITY_FILE)
              --passphrase-file <file>
                  Read the passphrase from the first line of
                  this file (mode 0600): encrypts a backup, or
                  opens one. (env: KEEPSAKE_PASSPHRASE_FILE)
              --json
                  Print one JSON document on stdout instead of
                  text.
              -q, --quiet
                  Print nothing but errors and warnings.
              --color <when>
                  Colour and styling: auto (only on a
                  terminal, unless NO_COLOR or TERM=dumb),
                  always, or never. (default: auto)
                  (values: auto, always, never)
              --no-input
                  Never prompt; a missing answer is an error
                  instead.
              -h, --help
                  Show help information.

            EXAMPLES:
              keepsake list
                  Show the backups in the default destination.

              keepsake list latest --long
                  Show the files of the newest backup with
                  details.

              keepsake list
                /mnt/usb/
                host_20261129T023000Z-3f9a1c2e.tar.zst
                  Show what a lone archive file holds.

            """)
    }

    func testRestoreHelp() {
        assertHelp(["restore", "--help"], width: 80, """
            OVERVIEW: Restore all or part of a backup, or of an archive file.

            Every file gets its name only once its SHA-256 matches the manifest: damaged or
            half-written content never lands under it (exit 4 for damage). Nothing is
            written outside the target: absolute paths, '..' and paths through symlinks are
            refused. Existing files are kept unless --overwrite says otherwise; kept files
            that differ from the backup are named (exit 3). A target that refuses writes is
            an error (exit 1), or exit 3 when only some paths could not be written. A lone
            incremental archive needs its parent's archive beside it (exit 3 without it).
            Plain tar archives (tar, tar.gz, tar.zst, tar.xz) restore too, without a
            manifest to check against.

            USAGE: keepsake restore [options] [BACKUP] [PATH...]

            ARGUMENTS:
              BACKUP                  A backup id, unique id prefix, 'latest', or an archive
                                      file. On a terminal, leave it out to pick a backup
                                      from a list. (optional)
              PATH...                 Restore only these paths (a folder brings its
                                      contents; patterns like '*.conf' allowed). (optional)

            OPTIONS:
              -d, --dest <where>      Where the backups are: a folder, s3://BUCKET/PREFIX,
                                      or rclone:REMOTE:PATH. (default:
                                      ${XDG_DATA_HOME:-~/.local/share}/keepsake/backups)
                                      (env: KEEPSAKE_DEST)
              --s3-endpoint <url>     The S3-compatible server for s3:// destinations
                                      (http://127.0.0.1:8333); path-style addressing.
                                      (default: AWS) (env: KEEPSAKE_S3_ENDPOINT)
              --profile <name>        Use this profile of the configuration file: its
                                      destination, S3 settings and keys (options given here
                                      win). (env: KEEPSAKE_PROFILE)
              --config <file>         The configuration file that defines the profiles.
                                      (default:
                                      ${XDG_CONFIG_HOME:-~/.config}/keepsake/config.toml)
                                      (env: KEEPSAKE_CONFIG)
              -C, --target <dir>      The folder to restore into; created when missing.
                                      Paths inside keep their full original path. Required
                                      to restore a whole backup ('--target .' for the
                                      current folder); on a terminal a question stands in.
                                      (default: the current folder, for chosen PATHs)
              --overwrite <when>      Replace existing files: never, if-newer (the backup's
                                      copy is newer), or always. (default: never)
                                      (values: never, if-newer, always)
              --strip-components <n>  Drop the first N folders of every path (as tar does):
                                      'home/ana/src/a.txt' with 3 lands as 'a.txt' in the
                                      target. (default: 0)
              -n, --dry-run           Read and check the archive, list what would be written
                                      and count what would be kept, write nothing.
              --same-owner            As root: also restore setuid/setgid bits, device files
                                      and extended attributes outside user.*
                                      (security.capability and the like; owners are restored
                                      as root anyway).
              -p, --same-permissions  Give entries exactly their recorded permissions;
                                      without it, users other than root get them less the
                                      umask (as with tar).
              --sync                  Wait until the target's disk holds everything restored
                                      before finishing (syncfs). Without it, as with tar,
                                      the system writes it out in its own time.
              --source <path>         Only backups of this source (or of a source holding
                                      this path): 'latest' is the newest of them.
                                      (default: any)
              --host <name>           Act on the backups this host made (hosts sharing a
                                      destination keep their own chains). (default: this
                                      host)
              --all-hosts             Act on the backups of every host in the destination.
              --progress              Report progress even when stderr is not a terminal:
                                      plain lines every few seconds (JSON Lines with
                                      --json).
              -i, --identity <file>   Open encrypted backups with the age identities in this
                                      file (keepsake keygen, age-keygen). (repeatable)
                                      (env: KEEPSAKE_IDENTITY_FILE)
              --passphrase-file <file>
                                      Read the passphrase from the first line of this file
                                      (mode 0600): encrypts a backup, or opens one.
                                      (env: KEEPSAKE_PASSPHRASE_FILE)
              --signed-by <key>       Use only backups signed by this public key
                                      ('ed25519:…', or a file holding it); others stop the
                                      command (exit 7).
              --json                  Print one JSON document on stdout instead of text.
              -q, --quiet             Print nothing but errors and warnings.
              --color <when>          Colour and styling: auto (only on a terminal, unless
                                      NO_COLOR or TERM=dumb), always, or never.
                                      (default: auto) (values: auto, always, never)
              --no-input              Never prompt; a missing answer is an error instead.
              -h, --help              Show help information.

            EXAMPLES:
              keepsake restore latest --target /tmp/restore
                  Restore the newest backup into /tmp/restore.

              keepsake restore 20261129 home/ana/notes.txt
                  Restore one file of a backup into the current folder.

              keepsake restore latest --target /
                  Put everything back where it was (existing files are kept; add --overwrite
                  always to replace them).

              keepsake restore /media/usb/host_20261129T023000Z-3f9a1c2e.tar.zst --target
                /srv
                  Restore from an archive file, with no destination at all.

            """)
        assertHelp(["restore", "--help"], width: 50, """
            OVERVIEW: Restore all or part of a backup, or of
                      an archive file.

            Every file gets its name only once its SHA-256
            matches the manifest: damaged or half-written
            content never lands under it (exit 4 for damage).
            Nothing is written outside the target: absolute
            paths, '..' and paths through symlinks are
            refused. Existing files are kept unless
            --overwrite says otherwise; kept files that differ
            from the backup are named (exit 3). A target that
            refuses writes is an error (exit 1), or exit 3
            when only some paths could not be written. A lone
            incremental archive needs its parent's archive
            beside it (exit 3 without it). Plain tar archives
            (tar, tar.gz, tar.zst, tar.xz) restore too,
            without a manifest to check against.

            USAGE: keepsake restore [options] [BACKUP]
                   [PATH...]

            ARGUMENTS:
              BACKUP
                  A backup id, unique id prefix, 'latest', or
                  an archive file. On a terminal, leave it out
                  to pick a backup from a list. (optional)
              PATH...
                  Restore only these paths (a folder brings
                  its contents; patterns like '*.conf'
                  allowed). (optional)

            OPTIONS:
              -d, --dest <where>
                  Where the backups are: a folder,
                  s3://BUCKET/PREFIX, or rclone:REMOTE:PATH.
                  (default:
                  ${XDG_DATA_HOME:-~/.local/share}/keepsake/
                  backups) (env: KEEPSAKE_DEST)
              --s3-endpoint <url>
                  The S3-compatible server for s3://
                  destinations (http://127.0.0.1:8333);
                  path-style addressing. (default: AWS)
                  (env: KEEPSAKE_S3_ENDPOINT)
              --profile <name>
                  Use this profile of the configuration file:
                  its destination, S3 settings and keys
                  (options given here win).
                  (env: KEEPSAKE_PROFILE)
              --config <file>
                  The configuration file that defines the
                  profiles. (default:
                  ${XDG_CONFIG_HOME:-~/.config}/keepsake/
                  config.toml) (env: KEEPSAKE_CONFIG)
              -C, --target <dir>
                  The folder to restore into; created when
                  missing. Paths inside keep their full
                  original path. Required to restore a whole
                  backup ('--target .' for the current
                  folder); on a terminal a question stands in.
                  (default: the current folder, for chosen
                  PATHs)
              --overwrite <when>
                  Replace existing files: never, if-newer (the
                  backup's copy is newer), or always.
                  (default: never) (values: never, if-newer,
                  always)
              --strip-components <n>
                  Drop the first N folders of every path (as
                  tar does): 'home/ana/src/a.txt' with 3 lands
                  as 'a.txt' in the target. (default: 0)
              -n, --dry-run
                  Read and check the archive, list what would
                  be written and count what would be kept,
                  write nothing.
              --same-owner
                  As root: also restore setuid/setgid bits,
                  device files and extended attributes outside
                  user.* (security.capability and the like;
                  owners are restored as root anyway).
              -p, --same-permissions
                  Give entries exactly their recorded
                  permissions; without it, users other than
                  root get them less the umask (as with tar).
              --sync
                  Wait until the target's disk holds
                  everything restored before finishing
                  (syncfs). Without it, as with tar, the
                  system writes it out in its own time.
              --source <path>
                  Only backups of this source (or of a source
                  holding this path): 'latest' is the newest
                  of them. (default: any)
              --host <name>
                  Act on the backups this host made (hosts
                  sharing a destination keep their own
                  chains). (default: this host)
              --all-hosts
                  Act on the backups of every host in the
                  destination.
              --progress
                  Report progress even when stderr is not a
                  terminal: plain lines every few seconds
                  (JSON Lines with --json).
              -i, --identity <file>
                  Open encrypted backups with the age
                  identities in this file (keepsake keygen,
                  age-keygen). (repeatable)
                  (env: KEEPSAKE_IDENTITY_FILE)
              --passphrase-file <file>
                  Read the passphrase from the first line of
                  this file (mode 0600): encrypts a backup, or
                  opens one. (env: KEEPSAKE_PASSPHRASE_FILE)
              --signed-by <key>
                  Use only backups signed by this public key
                  ('ed25519:…', or a file holding it); others
                  stop the command (exit 7).
              --json
                  Print one JSON document on stdout instead of
                  text.
              -q, --quiet
                  Print nothing but errors and warnings.
              --color <when>
                  Colour and styling: auto (only on a
                  terminal, unless NO_COLOR or TERM=dumb),
                  always, or never. (default: auto)
                  (values: auto, always, never)
              --no-input
                  Never prompt; a missing answer is an error
                  instead.
              -h, --help
                  Show help information.

            EXAMPLES:
              keepsake restore latest --target /tmp/restore
                  Restore the newest backup into /tmp/restore.

              keepsake restore 20261129 home/ana/notes.txt
                  Restore one file of a backup into the
                  current folder.

              keepsake restore latest --target /
                  Put everything back where it was (existing
                  files are kept; add --overwrite always to
                  replace them).

              keepsake restore
                /media/usb/
                host_20261129T023000Z-3f9a1c2e.tar.zst
                --target /srv
                  Restore from an archive file, with no
                  destination at all.

            """)
    }

    func testVerifyHelp() {
        assertHelp(["verify", "--help"], width: 80, """
            OVERVIEW: Check that backups are intact: every file's SHA-256 and the archive's
                      own.

            Decompresses each archive completely, checks every file against the manifest,
            that every file in the manifest is present, and the archive's size and SHA-256
            recorded when it was stored. Exit 4 names each damaged backup and, where
            possible, the damaged files. With --signed-by, each backup must also be signed
            by that key and unchanged since (exit 7 names those that are not, when none is
            damaged).

            USAGE: keepsake verify [options] [BACKUP...]

            ARGUMENTS:
              BACKUP...               Backup ids, unique prefixes, 'latest', or archive
                                      files; all backups when none. (optional)

            OPTIONS:
              -d, --dest <where>      Where the backups are: a folder, s3://BUCKET/PREFIX,
                                      or rclone:REMOTE:PATH. (default:
                                      ${XDG_DATA_HOME:-~/.local/share}/keepsake/backups)
                                      (env: KEEPSAKE_DEST)
              --s3-endpoint <url>     The S3-compatible server for s3:// destinations
                                      (http://127.0.0.1:8333); path-style addressing.
                                      (default: AWS) (env: KEEPSAKE_S3_ENDPOINT)
              --profile <name>        Use this profile of the configuration file: its
                                      destination, S3 settings and keys (options given here
                                      win). (env: KEEPSAKE_PROFILE)
              --config <file>         The configuration file that defines the profiles.
                                      (default:
                                      ${XDG_CONFIG_HOME:-~/.config}/keepsake/config.toml)
                                      (env: KEEPSAKE_CONFIG)
              --progress              Report progress even when stderr is not a terminal:
                                      plain lines every few seconds (JSON Lines with
                                      --json).
              -i, --identity <file>   Open encrypted backups with the age identities in this
                                      file (keepsake keygen, age-keygen). (repeatable)
                                      (env: KEEPSAKE_IDENTITY_FILE)
              --passphrase-file <file>
                                      Read the passphrase from the first line of this file
                                      (mode 0600): encrypts a backup, or opens one.
                                      (env: KEEPSAKE_PASSPHRASE_FILE)
              --signed-by <key>       Use only backups signed by this public key
                                      ('ed25519:…', or a file holding it); others stop the
                                      command (exit 7).
              --json                  Print one JSON document on stdout instead of text.
              -q, --quiet             Print nothing but errors and warnings.
              --color <when>          Colour and styling: auto (only on a terminal, unless
                                      NO_COLOR or TERM=dumb), always, or never.
                                      (default: auto) (values: auto, always, never)
              --no-input              Never prompt; a missing answer is an error instead.
              -h, --help              Show help information.

            EXAMPLES:
              keepsake verify
                  Verify every backup in the default destination.

              keepsake verify latest --dest /mnt/usb/backups
                  Verify the newest backup on a USB disk.

            """)
        assertHelp(["verify", "--help"], width: 50, """
            OVERVIEW: Check that backups are intact: every
                      file's SHA-256 and the archive's own.

            Decompresses each archive completely, checks every
            file against the manifest, that every file in the
            manifest is present, and the archive's size and
            SHA-256 recorded when it was stored. Exit 4 names
            each damaged backup and, where possible, the
            damaged files. With --signed-by, each backup must
            also be signed by that key and unchanged since
            (exit 7 names those that are not, when none is
            damaged).

            USAGE: keepsake verify [options] [BACKUP...]

            ARGUMENTS:
              BACKUP...
                  Backup ids, unique prefixes, 'latest', or
                  archive files; all backups when none.
                  (optional)

            OPTIONS:
              -d, --dest <where>
                  Where the backups are: a folder,
                  s3://BUCKET/PREFIX, or rclone:REMOTE:PATH.
                  (default:
                  ${XDG_DATA_HOME:-~/.local/share}/keepsake/
                  backups) (env: KEEPSAKE_DEST)
              --s3-endpoint <url>
                  The S3-compatible server for s3://
                  destinations (http://127.0.0.1:8333);
                  path-style addressing. (default: AWS)
                  (env: KEEPSAKE_S3_ENDPOINT)
              --profile <name>
                  Use this profile of the configuration file:
                  its destination, S3 settings and keys
                  (options given here win).
                  (env: KEEPSAKE_PROFILE)
              --config <file>
                  The configuration file that defines the
                  profiles. (default:
                  ${XDG_CONFIG_HOME:-~/.config}/keepsake/
                  config.toml) (env: KEEPSAKE_CONFIG)
              --progress
                  Report progress even when stderr is not a
                  terminal: plain lines every few seconds
                  (JSON Lines with --json).
              -i, --identity <file>
                  Open encrypted backups with the age
                  identities in this file (keepsake keygen,
                  age-keygen). (repeatable)
                  (env: KEEPSAKE_IDENTITY_FILE)
              --passphrase-file <file>
                  Read the passphrase from the first line of
                  this file (mode 0600): encrypts a backup, or
                  opens one. (env: KEEPSAKE_PASSPHRASE_FILE)
              --signed-by <key>
                  Use only backups signed by this public key
                  ('ed25519:…', or a file holding it); others
                  stop the command (exit 7).
              --json
                  Print one JSON document on stdout instead of
                  text.
              -q, --quiet
                  Print nothing but errors and warnings.
              --color <when>
                  Colour and styling: auto (only on a
                  terminal, unless NO_COLOR or TERM=dumb),
                  always, or never. (default: auto)
                  (values: auto, always, never)
              --no-input
                  Never prompt; a missing answer is an error
                  instead.
              -h, --help
                  Show help information.

            EXAMPLES:
              keepsake verify
                  Verify every backup in the default
                  destination.

              keepsake verify latest --dest /mnt/usb/backups
                  Verify the newest backup on a USB disk.

            """)
    }

    func testPruneHelp() {
        assertHelp(["prune", "--help"], width: 80, """
            OVERVIEW: Remove the backups a retention policy does not keep.

            The rules are restic's 'forget --keep-*' rules, applied to each group of backups
            of the same host and sources (this host's only, unless --host or --all-hosts): a
            backup is kept when any rule keeps it. Counts are whole numbers of 0 or more (0
            leaves the rule unused, as in a profile), or -1 (or 'unlimited') for every
            period. A backup that a kept incremental backup needs is always kept ('needed by
            ID'), and so is a backup whose manifest cannot be read. With --identity or
            --passphrase-file, what an encrypted backup relies on is read from its encrypted
            manifest too, not only from its summary in the clear. With --signed-by, only
            backups signed by that key count for the rules; the others are kept and named
            (backups planted beside yours cannot push them out). With --profile and no rule
            given, the profile's retention policy is applied. Prune refuses to run without a
            rule, and refuses a policy that would remove every backup of a group.
            Each backup is un-committed first (its manifest removed), then its archive, so
            an interruption never leaves a listed backup without its archive.

            USAGE: keepsake prune [options]

            OPTIONS:
              -d, --dest <where>      Where the backups are: a folder, s3://BUCKET/PREFIX,
                                      or rclone:REMOTE:PATH. (default:
                                      ${XDG_DATA_HOME:-~/.local/share}/keepsake/backups)
                                      (env: KEEPSAKE_DEST)
              --s3-endpoint <url>     The S3-compatible server for s3:// destinations
                                      (http://127.0.0.1:8333); path-style addressing.
                                      (default: AWS) (env: KEEPSAKE_S3_ENDPOINT)
              --profile <name>        Use this profile of the configuration file: its
                                      destination, S3 settings and keys (options given here
                                      win). (env: KEEPSAKE_PROFILE)
              --config <file>         The configuration file that defines the profiles.
                                      (default:
                                      ${XDG_CONFIG_HOME:-~/.config}/keepsake/config.toml)
                                      (env: KEEPSAKE_CONFIG)
              --keep-last <n>         Keep the N newest backups.
              --keep-hourly <n>       Keep the newest backup of each of the N newest hours
                                      that have backups.
              --keep-daily <n>        Keep the newest backup of each of the N newest days
                                      that have backups.
              --keep-weekly <n>       Keep the newest backup of each of the N newest ISO
                                      weeks (Monday-Sunday) that have backups.
              --keep-monthly <n>      Keep the newest backup of each of the N newest months
                                      that have backups.
              --keep-yearly <n>       Keep the newest backup of each of the N newest years
                                      that have backups.
              --keep-within <duration>
                                      Keep every backup made less than this long before the
                                      newest backup: numbers with units y, m (months), w, d,
                                      h, e.g. 7d, 2w, 1y6m, 36h.
              --keep-tag <tags>       Keep every backup that carries all of these
                                      comma-separated tags ('' for backups without tags).
                                      (repeatable)
              -n, --dry-run           Show what would be kept and removed, and why; remove
                                      nothing.
              --host <name>           Act on the backups this host made (hosts sharing a
                                      destination keep their own chains). (default: this
                                      host)
              --all-hosts             Act on the backups of every host in the destination.
              --lock-wait <time>      When another run holds the destination, wait this long
                                      for it (900, 90s, 15min, 2h) before exit 5.
                                      (default: 0 (fail at once))
              -i, --identity <file>   Open encrypted backups with the age identities in this
                                      file (keepsake keygen, age-keygen). (repeatable)
                                      (env: KEEPSAKE_IDENTITY_FILE)
              --passphrase-file <file>
                                      Read the passphrase from the first line of this file
                                      (mode 0600): encrypts a backup, or opens one.
                                      (env: KEEPSAKE_PASSPHRASE_FILE)
              --signed-by <key>       Use only backups signed by this public key
                                      ('ed25519:…', or a file holding it); others stop the
                                      command (exit 7).
              --json                  Print one JSON document on stdout instead of text.
              -q, --quiet             Print nothing but errors and warnings.
              --color <when>          Colour and styling: auto (only on a terminal, unless
                                      NO_COLOR or TERM=dumb), always, or never.
                                      (default: auto) (values: auto, always, never)
              --no-input              Never prompt; a missing answer is an error instead.
              -h, --help              Show help information.

            EXAMPLES:
              keepsake prune --keep-daily 7 --keep-weekly 4 --keep-monthly 12 --dry-run
                  Show which backups a week of dailies, a month of weeklies and a year of
                  monthlies keep.

              keepsake prune --keep-last 10 --keep-tag release
                  Keep the ten newest backups and every backup tagged 'release'.

              keepsake prune --keep-within 30d --dest /mnt/usb/backups --json
                  Keep the last 30 days of backups on a USB disk; report as JSON.

            """)
        assertHelp(["prune", "--help"], width: 50, """
            OVERVIEW: Remove the backups a retention policy
                      does not keep.

            The rules are restic's 'forget --keep-*' rules,
            applied to each group of backups of the same host
            and sources (this host's only, unless --host or
            --all-hosts): a backup is kept when any rule keeps
            it. Counts are whole numbers of 0 or more (0
            leaves the rule unused, as in a profile), or -1
            (or 'unlimited') for every period. A backup that a
            kept incremental backup needs is always kept
            ('needed by ID'), and so is a backup whose
            manifest cannot be read. With --identity or
            --passphrase-file, what an encrypted backup relies
            on is read from its encrypted manifest too, not
            only from its summary in the clear. With
            --signed-by, only backups signed by that key count
            for the rules; the others are kept and named
            (backups planted beside yours cannot push them
            out). With --profile and no rule given, the
            profile's retention policy is applied. Prune
            refuses to run without a rule, and refuses a
            policy that would remove every backup of a group.
            Each backup is un-committed first (its manifest
            removed), then its archive, so an interruption
            never leaves a listed backup without its archive.

            USAGE: keepsake prune [options]

            OPTIONS:
              -d, --dest <where>
                  Where the backups are: a folder,
                  s3://BUCKET/PREFIX, or rclone:REMOTE:PATH.
                  (default:
                  ${XDG_DATA_HOME:-~/.local/share}/keepsake/
                  backups) (env: KEEPSAKE_DEST)
              --s3-endpoint <url>
                  The S3-compatible server for s3://
                  destinations (http://127.0.0.1:8333);
                  path-style addressing. (default: AWS)
                  (env: KEEPSAKE_S3_ENDPOINT)
              --profile <name>
                  Use this profile of the configuration file:
                  its destination, S3 settings and keys
                  (options given here win).
                  (env: KEEPSAKE_PROFILE)
              --config <file>
                  The configuration file that defines the
                  profiles. (default:
                  ${XDG_CONFIG_HOME:-~/.config}/keepsake/
                  config.toml) (env: KEEPSAKE_CONFIG)
              --keep-last <n>
                  Keep the N newest backups.
              --keep-hourly <n>
                  Keep the newest backup of each of the N
                  newest hours that have backups.
              --keep-daily <n>
                  Keep the newest backup of each of the N
                  newest days that have backups.
              --keep-weekly <n>
                  Keep the newest backup of each of the N
                  newest ISO weeks (Monday-Sunday) that have
                  backups.
              --keep-monthly <n>
                  Keep the newest backup of each of the N
                  newest months that have backups.
              --keep-yearly <n>
                  Keep the newest backup of each of the N
                  newest years that have backups.
              --keep-within <duration>
                  Keep every backup made less than this long
                  before the newest backup: numbers with units
                  y, m (months), w, d, h, e.g. 7d, 2w, 1y6m,
                  36h.
              --keep-tag <tags>
                  Keep every backup that carries all of these
                  comma-separated tags ('' for backups without
                  tags). (repeatable)
              -n, --dry-run
                  Show what would be kept and removed, and
                  why; remove nothing.
              --host <name>
                  Act on the backups this host made (hosts
                  sharing a destination keep their own
                  chains). (default: this host)
              --all-hosts
                  Act on the backups of every host in the
                  destination.
              --lock-wait <time>
                  When another run holds the destination, wait
                  this long for it (900, 90s, 15min, 2h)
                  before exit 5. (default: 0 (fail at once))
              -i, --identity <file>
                  Open encrypted backups with the age
                  identities in this file (keepsake keygen,
                  age-keygen). (repeatable)
                  (env: KEEPSAKE_IDENTITY_FILE)
              --passphrase-file <file>
                  Read the passphrase from the first line of
                  this file (mode 0600): encrypts a backup, or
                  opens one. (env: KEEPSAKE_PASSPHRASE_FILE)
              --signed-by <key>
                  Use only backups signed by this public key
                  ('ed25519:…', or a file holding it); others
                  stop the command (exit 7).
              --json
                  Print one JSON document on stdout instead of
                  text.
              -q, --quiet
                  Print nothing but errors and warnings.
              --color <when>
                  Colour and styling: auto (only on a
                  terminal, unless NO_COLOR or TERM=dumb),
                  always, or never. (default: auto)
                  (values: auto, always, never)
              --no-input
                  Never prompt; a missing answer is an error
                  instead.
              -h, --help
                  Show help information.

            EXAMPLES:
              keepsake prune --keep-daily 7 --keep-weekly 4
                --keep-monthly 12 --dry-run
                  Show which backups a week of dailies, a
                  month of weeklies and a year of monthlies
                  keep.

              keepsake prune --keep-last 10 --keep-tag release
                  Keep the ten newest backups and every backup
                  tagged 'release'.

              keepsake prune --keep-within 30d --dest
                /mnt/usb/backups --json
                  Keep the last 30 days of backups on a USB
                  disk; report as JSON.

            """)
    }

    func testCopyHelp() {
        assertHelp(["copy", "--help"], width: 80, """
            OVERVIEW: Copy backups to another destination (a second disk, a bucket),
                      verified on the way.

            Each archive streams from --from to --to while its size and SHA-256 are checked
            against its manifest; the manifest is stored last, so a copy is listed only once
            whole and checked. Backups --to already holds are skipped, and an incremental
            backup brings the backups it relies on, so chains arrive whole. A damaged source
            backup is not copied (exit 4); the others are.

            USAGE: keepsake copy [options] [BACKUP...]

            ARGUMENTS:
              BACKUP...            Backup ids, unique prefixes or 'latest' (this host's
                                   newest); every backup when none. (optional)

            OPTIONS:
              --from <where>       Where the backups are: a folder, s3://BUCKET/PREFIX, or
                                   rclone:REMOTE:PATH. (default: the default destination)
                                   (env: KEEPSAKE_DEST)
              --to <where>         Where to copy them (required without a profile that has
                                   one copy-to). (default: the profile's copy-to)
              --s3-endpoint <url>  The S3-compatible server for s3:// destinations
                                   (http://127.0.0.1:8333); path-style addressing.
                                   (default: AWS) (env: KEEPSAKE_S3_ENDPOINT)
              --profile <name>     Use this profile of the configuration file: its
                                   destination, S3 settings and keys (options given here
                                   win). (env: KEEPSAKE_PROFILE)
              --config <file>      The configuration file that defines the profiles.
                                   (default:
                                   ${XDG_CONFIG_HOME:-~/.config}/keepsake/config.toml)
                                   (env: KEEPSAKE_CONFIG)
              --lock-wait <time>   When another run holds the destination, wait this long
                                   for it (900, 90s, 15min, 2h) before exit 5. (default: 0
                                   (fail at once))
              --progress           Report progress even when stderr is not a terminal: plain
                                   lines every few seconds (JSON Lines with --json).
              --json               Print one JSON document on stdout instead of text.
              -q, --quiet          Print nothing but errors and warnings.
              --color <when>       Colour and styling: auto (only on a terminal, unless
                                   NO_COLOR or TERM=dumb), always, or never. (default: auto)
                                   (values: auto, always, never)
              --no-input           Never prompt; a missing answer is an error instead.
              -h, --help           Show help information.

            EXAMPLES:
              keepsake copy --to s3://backups/laptop
                  Copy every backup of the default destination to a bucket.

              keepsake copy latest --from /mnt/usb/backups --to rclone:nas:keepsake
                  Copy the newest backup (and the chain it needs) from a USB disk to a NAS.

              keepsake copy --profile home
                  Copy every backup of profile 'home' to its copy-to destination.

            """)
        assertHelp(["copy", "--help"], width: 50, """
            OVERVIEW: Copy backups to another destination (a
                      second disk, a bucket), verified on the
                      way.

            Each archive streams from --from to --to while its
            size and SHA-256 are checked against its manifest;
            the manifest is stored last, so a copy is listed
            only once whole and checked. Backups --to already
            holds are skipped, and an incremental backup
            brings the backups it relies on, so chains arrive
            whole. A damaged source backup is not copied (exit
            4); the others are.

            USAGE: keepsake copy [options] [BACKUP...]

            ARGUMENTS:
              BACKUP...
                  Backup ids, unique prefixes or 'latest'
                  (this host's newest); every backup when
                  none. (optional)

            OPTIONS:
              --from <where>
                  Where the backups are: a folder,
                  s3://BUCKET/PREFIX, or rclone:REMOTE:PATH.
                  (default: the default destination)
                  (env: KEEPSAKE_DEST)
              --to <where>
                  Where to copy them (required without a
                  profile that has one copy-to). (default: the
                  profile's copy-to)
              --s3-endpoint <url>
                  The S3-compatible server for s3://
                  destinations (http://127.0.0.1:8333);
                  path-style addressing. (default: AWS)
                  (env: KEEPSAKE_S3_ENDPOINT)
              --profile <name>
                  Use this profile of the configuration file:
                  its destination, S3 settings and keys
                  (options given here win).
                  (env: KEEPSAKE_PROFILE)
              --config <file>
                  The configuration file that defines the
                  profiles. (default:
                  ${XDG_CONFIG_HOME:-~/.config}/keepsake/
                  config.toml) (env: KEEPSAKE_CONFIG)
              --lock-wait <time>
                  When another run holds the destination, wait
                  this long for it (900, 90s, 15min, 2h)
                  before exit 5. (default: 0 (fail at once))
              --progress
                  Report progress even when stderr is not a
                  terminal: plain lines every few seconds
                  (JSON Lines with --json).
              --json
                  Print one JSON document on stdout instead of
                  text.
              -q, --quiet
                  Print nothing but errors and warnings.
              --color <when>
                  Colour and styling: auto (only on a
                  terminal, unless NO_COLOR or TERM=dumb),
                  always, or never. (default: auto)
                  (values: auto, always, never)
              --no-input
                  Never prompt; a missing answer is an error
                  instead.
              -h, --help
                  Show help information.

            EXAMPLES:
              keepsake copy --to s3://backups/laptop
                  Copy every backup of the default destination
                  to a bucket.

              keepsake copy latest --from /mnt/usb/backups
                --to rclone:nas:keepsake
                  Copy the newest backup (and the chain it
                  needs) from a USB disk to a NAS.

              keepsake copy --profile home
                  Copy every backup of profile 'home' to its
                  copy-to destination.

            """)
    }

    func testRepairHelp() {
        assertHelp(["repair", "--help"], width: 80, """
            OVERVIEW: Rebuild manifests that are missing or damaged from the archives' own
                      copies.

            Every archive carries its manifest as its last entry. When the copy beside the
            archive is missing, unreadable, or names another backup, repair reads the
            archive whole, measures its size and SHA-256, and writes the manifest beside it
            again. A manifest that reads fine is never touched. Exit 4 when an archive's own
            manifest cannot be read either.

            USAGE: keepsake repair [options] [BACKUP...]

            ARGUMENTS:
              BACKUP...            Backup ids or unique prefixes to check; all archives when
                                   none. (optional)

            OPTIONS:
              -d, --dest <where>   Where the backups are: a folder, s3://BUCKET/PREFIX, or
                                   rclone:REMOTE:PATH. (default:
                                   ${XDG_DATA_HOME:-~/.local/share}/keepsake/backups)
                                   (env: KEEPSAKE_DEST)
              --s3-endpoint <url>  The S3-compatible server for s3:// destinations
                                   (http://127.0.0.1:8333); path-style addressing.
                                   (default: AWS) (env: KEEPSAKE_S3_ENDPOINT)
              --profile <name>     Use this profile of the configuration file: its
                                   destination, S3 settings and keys (options given here
                                   win). (env: KEEPSAKE_PROFILE)
              --config <file>      The configuration file that defines the profiles.
                                   (default:
                                   ${XDG_CONFIG_HOME:-~/.config}/keepsake/config.toml)
                                   (env: KEEPSAKE_CONFIG)
              --json               Print one JSON document on stdout instead of text.
              -q, --quiet          Print nothing but errors and warnings.
              --color <when>       Colour and styling: auto (only on a terminal, unless
                                   NO_COLOR or TERM=dumb), always, or never. (default: auto)
                                   (values: auto, always, never)
              --no-input           Never prompt; a missing answer is an error instead.
              -h, --help           Show help information.

            EXAMPLES:
              keepsake repair
                  Check every archive's manifest and rebuild the ones that need it.

            """)
        assertHelp(["repair", "--help"], width: 50, """
            OVERVIEW: Rebuild manifests that are missing or
                      damaged from the archives' own copies.

            Every archive carries its manifest as its last
            entry. When the copy beside the archive is
            missing, unreadable, or names another backup,
            repair reads the archive whole, measures its size
            and SHA-256, and writes the manifest beside it
            again. A manifest that reads fine is never
            touched. Exit 4 when an archive's own manifest
            cannot be read either.

            USAGE: keepsake repair [options] [BACKUP...]

            ARGUMENTS:
              BACKUP...
                  Backup ids or unique prefixes to check; all
                  archives when none. (optional)

            OPTIONS:
              -d, --dest <where>
                  Where the backups are: a folder,
                  s3://BUCKET/PREFIX, or rclone:REMOTE:PATH.
                  (default:
                  ${XDG_DATA_HOME:-~/.local/share}/keepsake/
                  backups) (env: KEEPSAKE_DEST)
              --s3-endpoint <url>
                  The S3-compatible server for s3://
                  destinations (http://127.0.0.1:8333);
                  path-style addressing. (default: AWS)
                  (env: KEEPSAKE_S3_ENDPOINT)
              --profile <name>
                  Use this profile of the configuration file:
                  its destination, S3 settings and keys
                  (options given here win).
                  (env: KEEPSAKE_PROFILE)
              --config <file>
                  The configuration file that defines the
                  profiles. (default:
                  ${XDG_CONFIG_HOME:-~/.config}/keepsake/
                  config.toml) (env: KEEPSAKE_CONFIG)
              --json
                  Print one JSON document on stdout instead of
                  text.
              -q, --quiet
                  Print nothing but errors and warnings.
              --color <when>
                  Colour and styling: auto (only on a
                  terminal, unless NO_COLOR or TERM=dumb),
                  always, or never. (default: auto)
                  (values: auto, always, never)
              --no-input
                  Never prompt; a missing answer is an error
                  instead.
              -h, --help
                  Show help information.

            EXAMPLES:
              keepsake repair
                  Check every archive's manifest and rebuild
                  the ones that need it.

            """)
    }

    func testDiffHelp() {
        assertHelp(["diff", "--help"], width: 80, """
            OVERVIEW: Show what changed between two backups.

            Compares the manifests of two backups path by path (no archive is read): paths
            added, removed, modified (content or type changed: size or SHA-256 differ) and
            changed in metadata only (mode, owner, modification time, symlink target or hard
            link), sorted by path. Content is compared by SHA-256, wherever it is stored. A
            difference is not a failure: the exit code is 0.

            USAGE: keepsake diff [options] FROM TO

            ARGUMENTS:
              FROM                    The older backup: an id, unique id prefix, 'latest',
                                      or an archive file.
              TO                      The newer backup: an id, unique id prefix, 'latest',
                                      or an archive file.

            OPTIONS:
              -d, --dest <where>      Where the backups are: a folder, s3://BUCKET/PREFIX,
                                      or rclone:REMOTE:PATH. (default:
                                      ${XDG_DATA_HOME:-~/.local/share}/keepsake/backups)
                                      (env: KEEPSAKE_DEST)
              --s3-endpoint <url>     The S3-compatible server for s3:// destinations
                                      (http://127.0.0.1:8333); path-style addressing.
                                      (default: AWS) (env: KEEPSAKE_S3_ENDPOINT)
              --profile <name>        Use this profile of the configuration file: its
                                      destination, S3 settings and keys (options given here
                                      win). (env: KEEPSAKE_PROFILE)
              --config <file>         The configuration file that defines the profiles.
                                      (default:
                                      ${XDG_CONFIG_HOME:-~/.config}/keepsake/config.toml)
                                      (env: KEEPSAKE_CONFIG)
              --source <path>         Only backups of this source (or of a source holding
                                      this path): 'latest' is the newest of them.
                                      (default: any)
              --host <name>           Only the backups this host made; 'latest' is its
                                      newest. (default: every host)
              -i, --identity <file>   Open encrypted backups with the age identities in this
                                      file (keepsake keygen, age-keygen). (repeatable)
                                      (env: KEEPSAKE_IDENTITY_FILE)
              --passphrase-file <file>
                                      Read the passphrase from the first line of this file
                                      (mode 0600): encrypts a backup, or opens one.
                                      (env: KEEPSAKE_PASSPHRASE_FILE)
              --json                  Print one JSON document on stdout instead of text.
              -q, --quiet             Print nothing but errors and warnings.
              --color <when>          Colour and styling: auto (only on a terminal, unless
                                      NO_COLOR or TERM=dumb), always, or never.
                                      (default: auto) (values: auto, always, never)
              --no-input              Never prompt; a missing answer is an error instead.
              -h, --help              Show help information.

            EXAMPLES:
              keepsake diff 20261128 latest
                  What changed between a backup of 28 November and the newest one.

              keepsake diff 20261128 20261129 --json
                  The same as one JSON document, for scripts.

            """)
        assertHelp(["diff", "--help"], width: 50, """
            OVERVIEW: Show what changed between two backups.

            Compares the manifests of two backups path by path
            (no archive is read): paths added, removed,
            modified (content or type changed: size or SHA-256
            differ) and changed in metadata only (mode, owner,
            modification time, symlink target or hard link),
            sorted by path. Content is compared by SHA-256,
            wherever it is stored. A difference is not a
            failure: the exit code is 0.

            USAGE: keepsake diff [options] FROM TO

            ARGUMENTS:
              FROM
                  The older backup: an id, unique id prefix,
                  'latest', or an archive file.
              TO
                  The newer backup: an id, unique id prefix,
                  'latest', or an archive file.

            OPTIONS:
              -d, --dest <where>
                  Where the backups are: a folder,
                  s3://BUCKET/PREFIX, or rclone:REMOTE:PATH.
                  (default:
                  ${XDG_DATA_HOME:-~/.local/share}/keepsake/
                  backups) (env: KEEPSAKE_DEST)
              --s3-endpoint <url>
                  The S3-compatible server for s3://
                  destinations (http://127.0.0.1:8333);
                  path-style addressing. (default: AWS)
                  (env: KEEPSAKE_S3_ENDPOINT)
              --profile <name>
                  Use this profile of the configuration file:
                  its destination, S3 settings and keys
                  (options given here win).
                  (env: KEEPSAKE_PROFILE)
              --config <file>
                  The configuration file that defines the
                  profiles. (default:
                  ${XDG_CONFIG_HOME:-~/.config}/keepsake/
                  config.toml) (env: KEEPSAKE_CONFIG)
              --source <path>
                  Only backups of this source (or of a source
                  holding this path): 'latest' is the newest
                  of them. (default: any)
              --host <name>
                  Only the backups this host made; 'latest' is
                  its newest. (default: every host)
              -i, --identity <file>
                  Open encrypted backups with the age
                  identities in this file (keepsake keygen,
                  age-keygen). (repeatable)
                  (env: KEEPSAKE_IDENTITY_FILE)
              --passphrase-file <file>
                  Read the passphrase from the first line of
                  this file (mode 0600): encrypts a backup, or
                  opens one. (env: KEEPSAKE_PASSPHRASE_FILE)
              --json
                  Print one JSON document on stdout instead of
                  text.
              -q, --quiet
                  Print nothing but errors and warnings.
              --color <when>
                  Colour and styling: auto (only on a
                  terminal, unless NO_COLOR or TERM=dumb),
                  always, or never. (default: auto)
                  (values: auto, always, never)
              --no-input
                  Never prompt; a missing answer is an error
                  instead.
              -h, --help
                  Show help information.

            EXAMPLES:
              keepsake diff 20261128 latest
                  What changed between a backup of 28 November
                  and the newest one.

              keepsake diff 20261128 20261129 --json
                  The same as one JSON document, for scripts.

            """)
    }

    func testFindHelp() {
        assertHelp(["find", "--help"], width: 80, """
            OVERVIEW: Find which backups hold a file, with each version's size, time and
                      SHA-256.

            PATTERN follows the --exclude rules: without a slash it matches a name at any
            depth (notes.txt, '*.pdf'); with a slash it matches the whole path
            (home/*/notes.txt; the leading / is optional); ** spans folders; a trailing /
            matches folders only. Every backup is searched, oldest first, from its manifest
            (no archive is read). Exit 1 when nothing matches.

            USAGE: keepsake find [options] PATTERN

            ARGUMENTS:
              PATTERN                 A name or path pattern; quote it so the shell leaves *
                                      alone.

            OPTIONS:
              -d, --dest <where>      Where the backups are: a folder, s3://BUCKET/PREFIX,
                                      or rclone:REMOTE:PATH. (default:
                                      ${XDG_DATA_HOME:-~/.local/share}/keepsake/backups)
                                      (env: KEEPSAKE_DEST)
              --s3-endpoint <url>     The S3-compatible server for s3:// destinations
                                      (http://127.0.0.1:8333); path-style addressing.
                                      (default: AWS) (env: KEEPSAKE_S3_ENDPOINT)
              --profile <name>        Use this profile of the configuration file: its
                                      destination, S3 settings and keys (options given here
                                      win). (env: KEEPSAKE_PROFILE)
              --config <file>         The configuration file that defines the profiles.
                                      (default:
                                      ${XDG_CONFIG_HOME:-~/.config}/keepsake/config.toml)
                                      (env: KEEPSAKE_CONFIG)
              --source <path>         Only backups of this source (or of a source holding
                                      this path): 'latest' is the newest of them.
                                      (default: any)
              --host <name>           Only the backups this host made; 'latest' is its
                                      newest. (default: every host)
              -i, --identity <file>   Open encrypted backups with the age identities in this
                                      file (keepsake keygen, age-keygen). (repeatable)
                                      (env: KEEPSAKE_IDENTITY_FILE)
              --passphrase-file <file>
                                      Read the passphrase from the first line of this file
                                      (mode 0600): encrypts a backup, or opens one.
                                      (env: KEEPSAKE_PASSPHRASE_FILE)
              --json                  Print one JSON document on stdout instead of text.
              -q, --quiet             Print nothing but errors and warnings.
              --color <when>          Colour and styling: auto (only on a terminal, unless
                                      NO_COLOR or TERM=dumb), always, or never.
                                      (default: auto) (values: auto, always, never)
              --no-input              Never prompt; a missing answer is an error instead.
              -h, --help              Show help information.

            EXAMPLES:
              keepsake find notes.txt
                  Every version of every file named notes.txt, in every backup.

              keepsake find '*.pdf' --dest /mnt/usb/backups
                  The PDF files in the backups on a USB disk.

              keepsake find '/home/ana/projects/**/*.swift'
                  Swift files anywhere below one folder.

            """)
        assertHelp(["find", "--help"], width: 50, """
            OVERVIEW: Find which backups hold a file, with
                      each version's size, time and SHA-256.

            PATTERN follows the --exclude rules: without a
            slash it matches a name at any depth (notes.txt,
            '*.pdf'); with a slash it matches the whole path
            (home/*/notes.txt; the leading / is optional); **
            spans folders; a trailing / matches folders only.
            Every backup is searched, oldest first, from its
            manifest (no archive is read). Exit 1 when nothing
            matches.

            USAGE: keepsake find [options] PATTERN

            ARGUMENTS:
              PATTERN
                  A name or path pattern; quote it so the
                  shell leaves * alone.

            OPTIONS:
              -d, --dest <where>
                  Where the backups are: a folder,
                  s3://BUCKET/PREFIX, or rclone:REMOTE:PATH.
                  (default:
                  ${XDG_DATA_HOME:-~/.local/share}/keepsake/
                  backups) (env: KEEPSAKE_DEST)
              --s3-endpoint <url>
                  The S3-compatible server for s3://
                  destinations (http://127.0.0.1:8333);
                  path-style addressing. (default: AWS)
                  (env: KEEPSAKE_S3_ENDPOINT)
              --profile <name>
                  Use this profile of the configuration file:
                  its destination, S3 settings and keys
                  (options given here win).
                  (env: KEEPSAKE_PROFILE)
              --config <file>
                  The configuration file that defines the
                  profiles. (default:
                  ${XDG_CONFIG_HOME:-~/.config}/keepsake/
                  config.toml) (env: KEEPSAKE_CONFIG)
              --source <path>
                  Only backups of this source (or of a source
                  holding this path): 'latest' is the newest
                  of them. (default: any)
              --host <name>
                  Only the backups this host made; 'latest' is
                  its newest. (default: every host)
              -i, --identity <file>
                  Open encrypted backups with the age
                  identities in this file (keepsake keygen,
                  age-keygen). (repeatable)
                  (env: KEEPSAKE_IDENTITY_FILE)
              --passphrase-file <file>
                  Read the passphrase from the first line of
                  this file (mode 0600): encrypts a backup, or
                  opens one. (env: KEEPSAKE_PASSPHRASE_FILE)
              --json
                  Print one JSON document on stdout instead of
                  text.
              -q, --quiet
                  Print nothing but errors and warnings.
              --color <when>
                  Colour and styling: auto (only on a
                  terminal, unless NO_COLOR or TERM=dumb),
                  always, or never. (default: auto)
                  (values: auto, always, never)
              --no-input
                  Never prompt; a missing answer is an error
                  instead.
              -h, --help
                  Show help information.

            EXAMPLES:
              keepsake find notes.txt
                  Every version of every file named notes.txt,
                  in every backup.

              keepsake find '*.pdf' --dest /mnt/usb/backups
                  The PDF files in the backups on a USB disk.

              keepsake find '/home/ana/projects/**/*.swift'
                  Swift files anywhere below one folder.

            """)
    }

    func testRunHelp() {
        assertHelp(["run", "--help"], width: 80, """
            OVERVIEW: Run a profile of the configuration file: backup, prune, verify (for
                      cron).

            Runs the profile's 'before' command (a non-zero exit stops the run with exit 1),
            backs up, prunes with the profile's retention policy, verifies the new backup,
            then runs the 'after' command with KEEPSAKE_STATUS (success or failure),
            KEEPSAKE_EXIT_CODE and KEEPSAKE_BACKUP_ID set. Prints nothing on standard output
            on success unless --verbose or --json; warnings and errors go to standard error.
            The exit code is the most severe of the steps: 130, 5, 4, 1, 3, 0 in that order.

            USAGE: keepsake run [options] PROFILE

            ARGUMENTS:
              PROFILE          The profile's name ([profiles.NAME] in the configuration
                               file).

            OPTIONS:
              --config <file>  The configuration file that defines the profiles.
                               (default: ${XDG_CONFIG_HOME:-~/.config}/keepsake/config.toml)
                               (env: KEEPSAKE_CONFIG)
              -v, --verbose    Print the summaries of the backup, the prune and the
                               verification.
              --progress       Report progress even when stderr is not a terminal: plain
                               lines every few seconds (JSON Lines with --json).
              --json           Print one JSON document on stdout instead of text.
              -q, --quiet      Print nothing but errors and warnings.
              --color <when>   Colour and styling: auto (only on a terminal, unless NO_COLOR
                               or TERM=dumb), always, or never. (default: auto)
                               (values: auto, always, never)
              --no-input       Never prompt; a missing answer is an error instead.
              -h, --help       Show help information.

            EXAMPLES:
              keepsake run home
                  Run the profile 'home' of ~/.config/keepsake/config.toml.

              30 2 * * * /usr/local/bin/keepsake run home --quiet
                  The crontab line for a nightly run (see 'keepsake schedule').

            """)
        assertHelp(["run", "--help"], width: 50, """
            OVERVIEW: Run a profile of the configuration file:
                      backup, prune, verify (for cron).

            Runs the profile's 'before' command (a non-zero
            exit stops the run with exit 1), backs up, prunes
            with the profile's retention policy, verifies the
            new backup, then runs the 'after' command with
            KEEPSAKE_STATUS (success or failure),
            KEEPSAKE_EXIT_CODE and KEEPSAKE_BACKUP_ID set.
            Prints nothing on standard output on success
            unless --verbose or --json; warnings and errors go
            to standard error. The exit code is the most
            severe of the steps: 130, 5, 4, 1, 3, 0 in that
            order.

            USAGE: keepsake run [options] PROFILE

            ARGUMENTS:
              PROFILE          The profile's name
                               ([profiles.NAME] in the
                               configuration file).

            OPTIONS:
              --config <file>  The configuration file that
                               defines the profiles. (default:
                               ${XDG_CONFIG_HOME:-~/.config}/
                               keepsake/config.toml)
                               (env: KEEPSAKE_CONFIG)
              -v, --verbose    Print the summaries of the
                               backup, the prune and the
                               verification.
              --progress       Report progress even when
                               stderr is not a terminal: plain
                               lines every few seconds (JSON
                               Lines with --json).
              --json           Print one JSON document on
                               stdout instead of text.
              -q, --quiet      Print nothing but errors and
                               warnings.
              --color <when>   Colour and styling: auto (only
                               on a terminal, unless NO_COLOR
                               or TERM=dumb), always, or
                               never. (default: auto)
                               (values: auto, always, never)
              --no-input       Never prompt; a missing answer
                               is an error instead.
              -h, --help       Show help information.

            EXAMPLES:
              keepsake run home
                  Run the profile 'home' of
                  ~/.config/keepsake/config.toml.

              30 2 * * * /usr/local/bin/keepsake run home
                --quiet
                  The crontab line for a nightly run (see
                  'keepsake schedule').

            """)
    }

    func testScheduleHelp() {
        assertHelp(["schedule", "--help"], width: 80, """
            OVERVIEW: Print a crontab line and systemd timer units that run a profile (or
                      install the crontab line).

            Give one of --hourly [MM], --daily HH:MM or --weekly DAY HH:MM. The lines call
            this keepsake binary by its absolute path with the absolute path of the
            configuration file, so they work from cron's bare environment. --install
            replaces any earlier crontab line of the profile (the one ending with
            '# keepsake:PROFILE') with the new one; without cron, use the systemd units.

            USAGE: keepsake schedule [options] PROFILE [TIME]

            ARGUMENTS:
              PROFILE          The profile's name ([profiles.NAME] in the configuration
                               file).
              TIME             The minute for --hourly (default 0), or HH:MM for --weekly.
                               (optional)

            OPTIONS:
              --hourly         Every hour, at minute TIME (default 0).
              --daily <HH:MM>  Every day at this time.
              --weekly <day>   Every week on this day (mon, tue, …, sun) at TIME (HH:MM).
              --config <file>  The configuration file that defines the profiles.
                               (default: ${XDG_CONFIG_HOME:-~/.config}/keepsake/config.toml)
                               (env: KEEPSAKE_CONFIG)
              --install        Install the crontab line in your crontab (replacing the
                               profile's earlier line).
              --json           Print one JSON document on stdout instead of text.
              -q, --quiet      Print nothing but errors and warnings.
              --color <when>   Colour and styling: auto (only on a terminal, unless NO_COLOR
                               or TERM=dumb), always, or never. (default: auto)
                               (values: auto, always, never)
              --no-input       Never prompt; a missing answer is an error instead.
              -h, --help       Show help information.

            EXAMPLES:
              keepsake schedule home --daily 02:30
                  Print the lines for a run every night at 02:30.

              keepsake schedule home --hourly 15 --install
                  Run every hour at :15, from your crontab.

              keepsake schedule db --weekly sun 03:00
                  Print the lines for a run every Sunday at 03:00.

            """)
        assertHelp(["schedule", "--help"], width: 50, """
            OVERVIEW: Print a crontab line and systemd timer
                      units that run a profile (or install the
                      crontab line).

            Give one of --hourly [MM], --daily HH:MM or
            --weekly DAY HH:MM. The lines call this keepsake
            binary by its absolute path with the absolute path
            of the configuration file, so they work from
            cron's bare environment. --install replaces any
            earlier crontab line of the profile (the one
            ending with '# keepsake:PROFILE') with the new
            one; without cron, use the systemd units.

            USAGE: keepsake schedule [options] PROFILE [TIME]

            ARGUMENTS:
              PROFILE          The profile's name
                               ([profiles.NAME] in the
                               configuration file).
              TIME             The minute for --hourly
                               (default 0), or HH:MM for
                               --weekly. (optional)

            OPTIONS:
              --hourly         Every hour, at minute TIME
                               (default 0).
              --daily <HH:MM>  Every day at this time.
              --weekly <day>   Every week on this day (mon,
                               tue, …, sun) at TIME (HH:MM).
              --config <file>  The configuration file that
                               defines the profiles. (default:
                               ${XDG_CONFIG_HOME:-~/.config}/
                               keepsake/config.toml)
                               (env: KEEPSAKE_CONFIG)
              --install        Install the crontab line in
                               your crontab (replacing the
                               profile's earlier line).
              --json           Print one JSON document on
                               stdout instead of text.
              -q, --quiet      Print nothing but errors and
                               warnings.
              --color <when>   Colour and styling: auto (only
                               on a terminal, unless NO_COLOR
                               or TERM=dumb), always, or
                               never. (default: auto)
                               (values: auto, always, never)
              --no-input       Never prompt; a missing answer
                               is an error instead.
              -h, --help       Show help information.

            EXAMPLES:
              keepsake schedule home --daily 02:30
                  Print the lines for a run every night at
                  02:30.

              keepsake schedule home --hourly 15 --install
                  Run every hour at :15, from your crontab.

              keepsake schedule db --weekly sun 03:00
                  Print the lines for a run every Sunday at
                  03:00.

            """)
    }

    func testKeygenHelp() {
        assertHelp(["keygen", "--help"], width: 80, """
            OVERVIEW: Make an age identity (a secret key) for encrypted backups, or a
                      signing key, and print its public key.

            Backups encrypted with '--recipient age1…' can be read only with the identity
            that key belongs to: keep the identity file away from the hosts that make the
            backups (they need only the public key), and keep a copy somewhere safe —
            without it the backups cannot be read. The file is the same as age-keygen
            writes; age -d -i FILE reads the archives too. A signing key (--signing) is the
            other way round: it stays on the host that makes the backups (backup
            --signing-key FILE), and whoever restores checks them with its public key
            (restore --signed-by ed25519:…), which refuses a backup anyone else wrote. The
            file is a PEM key as openssl genpkey writes it.

            USAGE: keepsake keygen [options]

            OPTIONS:
              -o, --output <file>  Write the identity to this new file (mode 0600; an
                                   existing file is never replaced) and print only the
                                   public key.
              --signing            Make a signing key instead: backups made with
                                   --signing-key FILE can then be proved to come from this
                                   host with --signed-by and the public key printed
                                   (ed25519:…).
              --json               Print one JSON document on stdout instead of text.
              -q, --quiet          Print nothing but errors and warnings.
              --color <when>       Colour and styling: auto (only on a terminal, unless
                                   NO_COLOR or TERM=dumb), always, or never. (default: auto)
                                   (values: auto, always, never)
              --no-input           Never prompt; a missing answer is an error instead.
              -h, --help           Show help information.

            EXAMPLES:
              keepsake keygen --output ~/keepsake-identity.txt
                  Make an identity; the public key (age1…) is printed for --recipient.

              keepsake restore latest --identity ~/keepsake-identity.txt --target
                /tmp/restore
                  Restore an encrypted backup with it.

              keepsake keygen --signing --output /etc/keepsake/signing-key.pem
                  Make a signing key for 'backup --signing-key'; the public key (ed25519:…)
                  is printed for --signed-by.

            """)
        assertHelp(["keygen", "--help"], width: 50, """
            OVERVIEW: Make an age identity (a secret key) for
                      encrypted backups, or a signing key, and
                      print its public key.

            Backups encrypted with '--recipient age1…' can be
            read only with the identity that key belongs to:
            keep the identity file away from the hosts that
            make the backups (they need only the public key),
            and keep a copy somewhere safe — without it the
            backups cannot be read. The file is the same as
            age-keygen writes; age -d -i FILE reads the
            archives too. A signing key (--signing) is the
            other way round: it stays on the host that makes
            the backups (backup --signing-key FILE), and
            whoever restores checks them with its public key
            (restore --signed-by ed25519:…), which refuses a
            backup anyone else wrote. The file is a PEM key as
            openssl genpkey writes it.

            USAGE: keepsake keygen [options]

            OPTIONS:
              -o, --output <file>
                  Write the identity to this new file (mode
                  0600; an existing file is never replaced)
                  and print only the public key.
              --signing
                  Make a signing key instead: backups made
                  with --signing-key FILE can then be proved
                  to come from this host with --signed-by and
                  the public key printed (ed25519:…).
              --json
                  Print one JSON document on stdout instead of
                  text.
              -q, --quiet
                  Print nothing but errors and warnings.
              --color <when>
                  Colour and styling: auto (only on a
                  terminal, unless NO_COLOR or TERM=dumb),
                  always, or never. (default: auto)
                  (values: auto, always, never)
              --no-input
                  Never prompt; a missing answer is an error
                  instead.
              -h, --help
                  Show help information.

            EXAMPLES:
              keepsake keygen --output ~/keepsake-identity.txt
                  Make an identity; the public key (age1…) is
                  printed for --recipient.

              keepsake restore latest --identity
                ~/keepsake-identity.txt --target /tmp/restore
                  Restore an encrypted backup with it.

              keepsake keygen --signing --output
                /etc/keepsake/signing-key.pem
                  Make a signing key for 'backup
                  --signing-key'; the public key (ed25519:…)
                  is printed for --signed-by.

            """)
    }

    func testCompletionsHelp() {
        assertHelp(["completions", "--help"], width: 80, """
            OVERVIEW: Print a shell completion script (bash, zsh or fish).

            Completes commands, options, option values (codecs, overwrite modes, colour
            modes) and backup ids.

            USAGE: keepsake completions [options] SHELL

            ARGUMENTS:
              SHELL           bash, zsh or fish.

            OPTIONS:
              --json          Print one JSON document on stdout instead of text.
              -q, --quiet     Print nothing but errors and warnings.
              --color <when>  Colour and styling: auto (only on a terminal, unless NO_COLOR
                              or TERM=dumb), always, or never. (default: auto)
                              (values: auto, always, never)
              --no-input      Never prompt; a missing answer is an error instead.
              -h, --help      Show help information.

            EXAMPLES:
              keepsake completions bash >
                ~/.local/share/bash-completion/completions/keepsake
                  Install bash completion for your user.

              keepsake completions zsh > "${fpath[1]}/_keepsake"
                  Install zsh completion.

              keepsake completions fish > ~/.config/fish/completions/keepsake.fish
                  Install fish completion.

            """)
        assertHelp(["completions", "--help"], width: 50, """
            OVERVIEW: Print a shell completion script (bash,
                      zsh or fish).

            Completes commands, options, option values
            (codecs, overwrite modes, colour modes) and backup
            ids.

            USAGE: keepsake completions [options] SHELL

            ARGUMENTS:
              SHELL           bash, zsh or fish.

            OPTIONS:
              --json          Print one JSON document on
                              stdout instead of text.
              -q, --quiet     Print nothing but errors and
                              warnings.
              --color <when>  Colour and styling: auto (only
                              on a terminal, unless NO_COLOR
                              or TERM=dumb), always, or never.
                              (default: auto) (values: auto,
                              always, never)
              --no-input      Never prompt; a missing answer
                              is an error instead.
              -h, --help      Show help information.

            EXAMPLES:
              keepsake completions bash >
                ~/.local/share/bash-completion/completions/
                keepsake
                  Install bash completion for your user.

              keepsake completions zsh >
                "${fpath[1]}/_keepsake"
                  Install zsh completion.

              keepsake completions fish >
                ~/.config/fish/completions/keepsake.fish
                  Install fish completion.

            """)
    }

    func testHelpHelp() {
        assertHelp(["help", "--help"], width: 80, """
            OVERVIEW: Show help for keepsake or for one command.

            USAGE: keepsake help [options] [COMMAND]

            ARGUMENTS:
              COMMAND         The command to explain. (optional)

            OPTIONS:
              --man           Print the keepsake(1) manual page (roff), for 'man -l -' or to
                              install.
              --json          Print one JSON document on stdout instead of text.
              -q, --quiet     Print nothing but errors and warnings.
              --color <when>  Colour and styling: auto (only on a terminal, unless NO_COLOR
                              or TERM=dumb), always, or never. (default: auto)
                              (values: auto, always, never)
              --no-input      Never prompt; a missing answer is an error instead.
              -h, --help      Show help information.

            EXAMPLES:
              keepsake help restore
                  Explain the restore command.

              keepsake help --man | man -l -
                  Read the whole manual page.

            """)
        assertHelp(["help", "--help"], width: 50, """
            OVERVIEW: Show help for keepsake or for one
                      command.

            USAGE: keepsake help [options] [COMMAND]

            ARGUMENTS:
              COMMAND         The command to explain.
                              (optional)

            OPTIONS:
              --man           Print the keepsake(1) manual
                              page (roff), for 'man -l -' or
                              to install.
              --json          Print one JSON document on
                              stdout instead of text.
              -q, --quiet     Print nothing but errors and
                              warnings.
              --color <when>  Colour and styling: auto (only
                              on a terminal, unless NO_COLOR
                              or TERM=dumb), always, or never.
                              (default: auto) (values: auto,
                              always, never)
              --no-input      Never prompt; a missing answer
                              is an error instead.
              -h, --help      Show help information.

            EXAMPLES:
              keepsake help restore
                  Explain the restore command.

              keepsake help --man | man -l -
                  Read the whole manual page.

            """)
    }
}
