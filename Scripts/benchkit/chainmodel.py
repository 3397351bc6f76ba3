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
import os
import subprocess
import tempfile

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
    content and remembered by SHA-256. `measure` takes many at once: one zstd process for a
    night's new contents, however many."""

    def __init__(self, zstd="zstd"):
        self.zstd = zstd
        self.sizes = {}

    def measure(self, datas):
        """(key, stored size) of each of `datas`, in order."""
        keys = [hashlib.sha256(d).hexdigest() for d in datas]
        todo = {k: d for k, d in zip(keys, datas) if k not in self.sizes}
        if todo:
            with tempfile.TemporaryDirectory(prefix="keepsake-chainmodel-") as folder:
                for k, d in todo.items():
                    with open(os.path.join(folder, k), "wb") as f:
                        f.write(d)
                subprocess.run([self.zstd, "-3", "-q", "-r", "--rm", folder], check=True)
                for k in todo:
                    self.sizes[k] = os.path.getsize(os.path.join(folder, k + ".zst"))
        return [(k, self.sizes[k]) for k in keys]

    def size(self, data):
        return self.measure([data])[0]


class NightTree:
    """The tree of the night being played, as the pieces a candidate stores, each
    (key, stored size): `pieces[False]` a file whole, `pieces[True]` a big file's BLOCK-sized
    blocks. `update(files, changed)` moves it to the next night, measuring only what changed;
    `changed` and `deleted` are then the paths that differ from the night before."""

    def __init__(self, oracle):
        self.oracle = oracle
        self.pieces = {False: {}, True: {}}
        self.changed, self.deleted = set(), set()

    def update(self, files, changed=None):
        """`files`: path → bytes, the whole tree; `changed`: the paths that may differ from
        the night before (None: any may)."""
        whole, blocked = self.pieces[False], self.pieces[True]
        self.deleted = {p for p in whole if p not in files}
        for p in self.deleted:
            del whole[p], blocked[p]
        candidates = files.keys() if changed is None else [p for p in changed if p in files]
        datas, owners = [], []
        for p in candidates:
            data = files[p]
            owners.append((p, False, None))
            datas.append(data)
            if len(data) >= BIG_FILE:
                for i in range(0, len(data), BLOCK):
                    owners.append((p, True, i // BLOCK))
                    datas.append(data[i:i + BLOCK])
        measured = self.oracle.measure(datas)
        new_whole, new_blocks = {}, {}
        for (p, is_block, _), piece in zip(owners, measured):
            if is_block:
                new_blocks.setdefault(p, []).append(piece)
            else:
                new_whole[p] = (piece,)
        self.changed = set()
        for p, piece in new_whole.items():
            if whole.get(p) != piece:
                self.changed.add(p)
            whole[p] = piece
            blocked[p] = tuple(new_blocks[p]) if p in new_blocks else piece
        return self


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
    """One backup as a candidate made it: for every path, its pieces, each (the backup whose
    archive holds it, key, stored size); unchanged paths share the tuple of the backup they
    were taken from, so a night costs what changed."""

    def __init__(self, index, date, kind, chain, full, entries, touched=None):
        self.index, self.date, self.kind, self.chain, self.full = index, date, kind, chain, full
        self.entries = entries
        # What this archive holds: pieces of the paths it touched (all of them for a full one).
        paths = entries.keys() if touched is None else (p for p in touched if p in entries)
        self.own_bytes = sum(size for p in paths for origin, _, size in entries[p] if origin == index)
        self._relies = None

    def relies(self):
        """The other backups whose archives hold a piece of this one."""
        if self._relies is None:
            self._relies = {origin for pieces in self.entries.values() for origin, _, _ in pieces} - {self.index}
        return self._relies


class ChainModel:
    """Plays one candidate through the nights: `night(date, tree)` backs up a night's tree (a
    `NightTree`) and prunes; `stored()` and `kept()` say where it stands."""

    def __init__(self, candidate, counts):
        self.c, self.counts = candidate, counts
        self.backups = {}  # index → Backup, only those in the destination (and their fulls)
        self.present = []  # indexes of the backups in the destination, oldest first
        self.count = 0
        # Paths changed or deleted since the newest chain's full backup (for differentials).
        self.since_full = set()

    def night(self, date, tree):
        pieces = tree.pieces[self.c.blocks]
        parent = self.backups[self.present[-1]] if self.present else None
        full = parent is None or (self.c.full_every is not None and parent.chain >= self.c.full_every)
        index = self.count
        self.count += 1
        if full:
            entries = {p: tuple((index, k, s) for k, s in ps) for p, ps in pieces.items()}
            self.since_full = set()
            b = Backup(index, date, "full", 1, index, entries)
        else:
            self.since_full |= tree.changed | tree.deleted
            base = self.backups[parent.full] if self.c.differential else parent
            touched = self.since_full if self.c.differential else (tree.changed | tree.deleted)
            entries = dict(base.entries)
            for p in touched:
                if p not in pieces:
                    entries.pop(p, None)
                    continue
                old, new = base.entries.get(p), pieces[p]
                if old is None:
                    entries[p] = tuple((index, k, s) for k, s in new)
                elif not self.c.blocks or len(new) == 1 or len(old) == 1:
                    same = len(old) == len(new) and all(o[1] == k for o, (k, _) in zip(old, new))
                    entries[p] = old if same else tuple((index, k, s) for k, s in new)
                else:
                    entries[p] = tuple(old[i] if i < len(old) and old[i][1] == k else (index, k, s)
                                       for i, (k, s) in enumerate(new))
            b = Backup(index, date, "incremental", parent.chain + 1, parent.full, entries, touched)
        self.backups[index] = b
        self.present.append(index)
        self._prune()

    def _prune(self):
        dates = [self.backups[i].date for i in self.present]
        chosen = {self.present[i] for i in policy_keeps(dates, self.counts)}
        if self.c.prune == "chains":
            keep, todo = set(chosen), list(chosen)
            while todo:
                for origin in self.backups[todo.pop()].relies():
                    if origin not in keep:
                        keep.add(origin)
                        todo.append(origin)
        elif self.c.prune == "fulls":
            keep = chosen | {self.backups[i].full for i in chosen}
        else:
            keep = chosen  # what they take from the others stays, consolidated (see stored())
        self.present = sorted(keep)
        # A chain's full backup is still needed to build differentials on while its chain
        # runs; every other backup let go is forgotten.
        newest_full = self.backups[self.present[-1]].full
        self.backups = {i: b for i, b in self.backups.items() if i in keep or i == newest_full}

    def kept(self):
        return len(self.present)

    def kept_fulls(self):
        return sum(1 for i in self.present if self.backups[i].kind == "full")

    def consolidated(self):
        """What kept backups take from backups prune let go: (origin, path, position) → size."""
        keep = set(self.present)
        return {(origin, path, position): size for i in self.present
                for path, pieces in self.backups[i].entries.items()
                for position, (origin, _, size) in enumerate(pieces) if origin not in keep}

    def stored(self):
        own = sum(self.backups[i].own_bytes for i in self.present)
        return own + (sum(self.consolidated().values()) if self.c.prune == "consolidate" else 0)


def night_date(first, night):
    """02:00 UTC on the night's day (night 1 is `first`, a date)."""
    return datetime.datetime.combine(first + datetime.timedelta(days=night - 1), datetime.time(2, 0),
                                     tzinfo=datetime.timezone.utc)
