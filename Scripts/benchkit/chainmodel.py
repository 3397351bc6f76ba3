"""What prune could keep and free: the ways of storing a year of nightly backups that issue 34
weighs, played out on the year's real trees by accounting alone (no archive is written).

Every night's tree is a map path → content (SHA-256); the stored size of a content is what
zstd -3 makes of it, measured once (`SizeOracle`). A candidate decides, night after night, what
each backup stores itself and where it takes the rest from; then the retention policy is applied
(restic's rules, as docs/commands.md gives them) and the candidate says what stays. Its figures
are the backups kept and the bytes of content stored after the last night. Tar headers and
manifests are left out of every candidate alike; the bench sets the model of today's design
beside the real Keepsake run to show how close the accounting comes.
"""

import datetime
import hashlib
import subprocess

BLOCK = 256 * 1024
BIG_FILE = 1024 * 1024
PERIODS = ("last", "day", "week", "month", "year")


# MARK: - Retention (restic's rules)

def period_key(date, period):
    """The calendar period `date` (a datetime, UTC) falls in; weeks are ISO weeks; "last"
    makes every backup a period of its own."""
    if period == "last":
        return date.isoformat()
    if period == "day":
        return date.strftime("%Y-%m-%d")
    if period == "week":
        year, week, _ = date.isocalendar()
        return f"{year}-W{week:02d}"
    if period == "month":
        return date.strftime("%Y-%m")
    return date.strftime("%Y")


def policy_keeps(dates, counts):
    """The indexes of `dates` (oldest first) that the policy keeps: for each rule, newest
    first, the first backup of each new period until its count is used up; a rule with count
    left after its oldest period keeps the oldest backup too."""
    kept = set()
    order = sorted(range(len(dates)), key=lambda i: dates[i], reverse=True)
    for period in PERIODS:
        count = counts.get(period, 0)
        seen = None
        for i in order:
            if count == 0:
                break
            key = period_key(dates[i], period)
            if key != seen:
                kept.add(i)
                seen = key
                count -= 1
        if count > 0 and order:
            kept.add(order[-1])
    return kept


# MARK: - Stored sizes

class SizeOracle:
    """What zstd -3 makes of a content (whole, or one block of it), measured once per distinct
    content and remembered by SHA-256."""

    def __init__(self, zstd="zstd"):
        self.zstd = zstd
        self.sizes = {}

    def size(self, data):
        key = hashlib.sha256(data).hexdigest()
        if key not in self.sizes:
            out = subprocess.run([self.zstd, "-3", "-q", "-c"], input=data, stdout=subprocess.PIPE, check=True).stdout
            self.sizes[key] = len(out)
        return key, self.sizes[key]


def night_pieces(files, oracle):
    """Each file of a night (path → bytes) as the pieces a candidate stores, each (key, stored
    size): {False: whole files, True: a big file's BLOCK-sized blocks}, measured once for all
    candidates."""
    whole = {path: [oracle.size(data)] for path, data in files.items()}
    blocked = {path: ([oracle.size(data[i:i + BLOCK]) for i in range(0, len(data), BLOCK)]
                      if len(data) >= BIG_FILE else whole[path]) for path, data in files.items()}
    return {False: whole, True: blocked}


# MARK: - Candidates

class Candidate:
    """One way of storing the year. `differential`: an incremental is compared with its
    chain's full backup rather than the backup before it. `prune`: "chains" keeps every backup
    a kept one takes content from (today's prune), "fulls" keeps the full backup of each kept
    one (enough for differentials), "consolidate" keeps only the policy's backups and, of the
    ones it lets go, the content a kept backup still takes from them (moved into a
    consolidated archive). `full_every`: backups in a chain before the next full one (None:
    never). `blocks`: a big file changed stores only its changed blocks."""

    def __init__(self, name, what, prune, full_every=30, differential=False, blocks=False):
        self.name, self.what, self.prune = name, what, prune
        self.full_every, self.differential, self.blocks = full_every, differential, blocks


CANDIDATES = [
    Candidate("today", "chain on the newest backup, full every 30; prune keeps what kept ones take from", "chains"),
    Candidate("differential", "each incremental on its chain's full, full every 30; prune keeps kept ones' fulls",
              "fulls", differential=True),
    Candidate("consolidate", "chain, full every 30; prune keeps the policy's backups and moves what they take "
              "from the others into one archive", "consolidate"),
    Candidate("consolidate-no-fulls", "the same with one chain that never restarts", "consolidate", full_every=None),
    Candidate("differential+blocks", "differential, big files by changed 256 KiB blocks", "fulls",
              differential=True, blocks=True),
    Candidate("consolidate+blocks", "consolidate, big files by changed 256 KiB blocks", "consolidate", blocks=True),
    Candidate("consolidate-no-fulls+blocks", "consolidate, one chain, big files by changed blocks", "consolidate",
              full_every=None, blocks=True),
]


class Backup:
    def __init__(self, index, date, kind, chain, full):
        self.index, self.date, self.kind, self.chain, self.full = index, date, kind, chain, full
        # path → [(origin backup index, piece key, stored size)]
        self.entries = {}

    def own(self):
        """The pieces this backup's archive holds: (path, position) → stored size."""
        return {(p, i): size for p, pieces in self.entries.items()
                for i, (origin, _, size) in enumerate(pieces) if origin == self.index}


class ChainModel:
    """Plays one candidate through the nights: `night(date, pieces)` backs up a night's tree
    (`night_pieces`) and prunes; `stored()` and `kept()` say where it stands."""

    def __init__(self, candidate, counts):
        self.c, self.counts = candidate, counts
        self.backups = []
        self.present = []  # indexes of the backups in the destination, oldest first
        # Content still held for kept backups by ones prune let go: (origin, path, position) → size.
        self.consolidated = {}

    def night(self, date, pieces_by_kind):
        parent = self.backups[self.present[-1]] if self.present else None
        full = parent is None or (self.c.full_every is not None and parent.chain >= self.c.full_every)
        index = len(self.backups)
        b = Backup(index, date, "full" if full else "incremental", 1 if full else parent.chain + 1,
                   index if full else parent.full)
        base = None if full else (self.backups[parent.full] if self.c.differential else parent)
        for path, pieces in pieces_by_kind[self.c.blocks].items():
            old = base.entries.get(path) if base else None
            if old is None:
                b.entries[path] = [(index, k, s) for k, s in pieces]
            elif not self.c.blocks or len(pieces) == 1 or len(old) == 1:
                same = len(old) == len(pieces) and all(o[1] == k for o, (k, _) in zip(old, pieces))
                b.entries[path] = list(old) if same else [(index, k, s) for k, s in pieces]
            else:
                b.entries[path] = [old[i] if i < len(old) and old[i][1] == k else (index, k, s)
                                   for i, (k, s) in enumerate(pieces)]
        self.backups.append(b)
        self.present.append(index)
        self._prune()

    def _prune(self):
        dates = [self.backups[i].date for i in self.present]
        chosen = {self.present[i] for i in policy_keeps(dates, self.counts)}
        if self.c.prune == "chains":
            keep, todo = set(chosen), list(chosen)
            while todo:
                for pieces in self.backups[todo.pop()].entries.values():
                    for origin, _, _ in pieces:
                        if origin not in keep:
                            keep.add(origin)
                            todo.append(origin)
        elif self.c.prune == "fulls":
            keep = chosen | {self.backups[i].full for i in chosen}
        else:
            keep = chosen
            # What kept backups take from backups not kept stays, consolidated.
            needed = {}
            for i in keep:
                for path, pieces in self.backups[i].entries.items():
                    for position, (origin, _, size) in enumerate(pieces):
                        if origin not in keep:
                            needed[(origin, path, position)] = size
            self.consolidated = needed
        self.present = sorted(keep)

    def kept(self):
        return len(self.present)

    def kept_fulls(self):
        return sum(1 for i in self.present if self.backups[i].kind == "full")

    def stored(self):
        own = sum(sum(self.backups[i].own().values()) for i in self.present)
        return own + sum(self.consolidated.values())


def night_date(first, night):
    """02:00 UTC on the night's day (night 1 is `first`, a date)."""
    return datetime.datetime.combine(first + datetime.timedelta(days=night - 1), datetime.time(2, 0),
                                     tzinfo=datetime.timezone.utc)
