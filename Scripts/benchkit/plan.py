"""What a run measures: the phases, the rows that count as keepsake, and the targets and goals the
report sets the rows against."""


def is_keepsake(name):
    """Keepsake's own rows (bold, no ratio of their own) and the variants of it."""
    return name in KEEPSAKE_ROWS or name.startswith("keepsake[")


KEEPSAKE_ROWS = ("keepsake", "keepsake-s3", "keepsake-age", "keepsake-pass")
S3_PHASES = ("full", "restore", "one")
# What the S3 rows are held to. A ratio is of the two rows' medians (their per-round ratios
# are reported beside it); the peak RSS is the largest of the runs.
S3_TARGETS = [
    {"id": "backup_s3_vs_local", "measure": "full backup: keepsake to S3 ÷ keepsake to a local folder (wall)",
     "phase": "full", "numerator": "keepsake-s3", "denominator": "keepsake", "key": "wall", "comparison": "≤",
     "target": 1.25, "unit": "×"},
    {"id": "backup_s3_peak_rss", "measure": "full backup to S3: keepsake's peak RSS (largest run)",
     "phase": "full", "tool": "keepsake-s3", "key": "rss_kib", "of": "max", "comparison": "<",
     "target": 128 * 1024, "unit": "KiB"},
    {"id": "restore_s3_vs_local", "measure": "full restore: keepsake from S3 ÷ keepsake from a local folder (wall)",
     "phase": "restore", "numerator": "keepsake-s3", "denominator": "keepsake", "key": "wall", "comparison": "≤",
     "target": 1.25, "unit": "×"},
    {"id": "one_file_s3", "measure": "one small file restored from S3 (wall, median)",
     "phase": "one", "tool": "keepsake-s3", "key": "wall", "comparison": "<", "target": 0.3, "unit": "s"},
    {"id": "backup_keepsake_vs_restic_s3", "measure": "full backup to S3: keepsake ÷ restic (wall)",
     "phase": "full", "numerator": "keepsake-s3", "denominator": "restic-s3", "key": "wall", "comparison": "≤",
     "target": 0.5, "unit": "×"},
    {"id": "restore_keepsake_vs_restic_s3", "measure": "full restore from S3: keepsake ÷ restic (wall)",
     "phase": "restore", "numerator": "keepsake-s3", "denominator": "restic-s3", "key": "wall", "comparison": "≤",
     "target": 0.5, "unit": "×"},
]
ENCRYPTION_PHASES = ("full", "restore", "one")
# What the encryption rows are held to (same reading as S3_TARGETS; no "target": printed only).
ENCRYPTION_TARGETS = [
    {"id": "backup_age_vs_plain", "measure": "full backup: keepsake encrypted to a recipient ÷ plain (wall)",
     "phase": "full", "numerator": "keepsake-age", "denominator": "keepsake", "key": "wall", "comparison": "≤",
     "target": 1.10, "unit": "×"},
    {"id": "restore_age_vs_plain", "measure": "full restore: keepsake from the encrypted backup ÷ from the plain one (wall)",
     "phase": "restore", "numerator": "keepsake-age", "denominator": "keepsake", "key": "wall", "comparison": "≤",
     "target": 1.10, "unit": "×"},
    {"id": "one_file_age_vs_plain", "measure": "one small file: from the encrypted backup ÷ from the plain one (wall)",
     "phase": "one", "numerator": "keepsake-age", "denominator": "keepsake", "key": "wall", "comparison": "≤",
     "target": 1.20, "unit": "×"},
    {"id": "backup_age_vs_restic", "measure": "full backup: keepsake encrypted ÷ restic (always encrypted) (wall)",
     "phase": "full", "numerator": "keepsake-age", "denominator": "restic", "key": "wall", "unit": "×"},
    {"id": "restore_age_vs_restic", "measure": "full restore: keepsake encrypted ÷ restic (wall)",
     "phase": "restore", "numerator": "keepsake-age", "denominator": "restic", "key": "wall", "unit": "×"},
    {"id": "backup_passphrase_vs_plain", "measure": "full backup: keepsake with a passphrase (scrypt) ÷ plain (wall)",
     "phase": "full", "numerator": "keepsake-pass", "denominator": "keepsake", "key": "wall", "unit": "×"},
    {"id": "backup_passphrase_minus_age", "measure": "full backup: passphrase − recipient (wall; scrypt once per object)",
     "phase": "full", "numerator": "keepsake-pass", "denominator": "keepsake-age", "key": "wall", "of": "difference",
     "unit": "s"},
]

# Issue 16's goals, measured against tar+zstd in the same rounds (no "target": printed only).
GOALS = [
    {"id": "full_warm_vs_tar", "measure": "full backup, warm cache: keepsake ÷ tar -I 'zstd -T0 -3' (wall)",
     "phase": "full", "numerator": "keepsake", "denominator": "tar-zstd", "key": "wall", "comparison": "≤",
     "target": 0.9, "unit": "×"},
    {"id": "full_cold_vs_tar", "measure": "full backup, cold cache: keepsake ÷ tar -I 'zstd -T0 -3' (wall)",
     "phase": "full-cold", "numerator": "keepsake", "denominator": "tar-zstd", "key": "wall", "comparison": "≤",
     "target": 0.7, "unit": "×"},
    {"id": "restore_warm_vs_tar", "measure": "full restore into a tmpfs: keepsake ÷ tar -xf (.tar.zst) (wall)",
     "phase": "restore", "numerator": "keepsake", "denominator": "tar-zstd", "key": "wall", "comparison": "≤",
     "target": 0.8, "unit": "×"},
    {"id": "restore_cold_vs_tar", "measure": "full restore, cold cache: keepsake ÷ tar -xf (.tar.zst) (wall)",
     "phase": "restore-cold", "numerator": "keepsake", "denominator": "tar-zstd", "key": "wall", "unit": "×"},
    {"id": "nochange_vs_restic", "measure": "no-change incremental: keepsake ÷ restic (wall)",
     "phase": "nochange", "numerator": "keepsake", "denominator": "restic", "key": "wall", "unit": "×"},
]

PHASES = [
    ("full", "Full backup"),
    ("full-cold", "Full backup, cold cache"),
    ("nochange", "No-change second backup"),
    ("changed", "Second backup after changing 1% of the files"),
    ("restore", "Full restore into a tmpfs"),
    ("restore-cold", "Full restore into a tmpfs, cold cache"),
    ("one", "Restore one small file (late in the tree) into a tmpfs"),
    ("verify", "Verify"),
]
# The order phases run in within a round: restore and verify use the full backup, before
# the incrementals add to the repositories. The cold-cache rows come last, each tool backing
# up into a repository of its own again (and restoring from that), with the page cache dropped
# before every command; the next round starts by warming the cache again.
RUN_ORDER = ["full", "restore", "one", "verify", "nochange", "changed"]
COLD_RUN_ORDER = ["full-cold", "restore-cold"]
COLD_PHASES = {"full-cold": "full", "restore-cold": "restore"}  # cold phase -> what it runs
# A real tree (--tree) is never changed, and is not verified (to keep the run short).
TREE_PHASES = ("full", "full-cold", "restore", "restore-cold", "one", "nochange")
