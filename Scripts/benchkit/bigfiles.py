"""The big-files section (--big-files [NIGHTS]; issue 34, part 2, and its second table): five big
files, each changed every night the way the issue describes, backed up every night by Keepsake,
restic and borg (a destination or repository per file); the report gives what each stores a
night beside the bytes that changed (compressed with zstd -3), and what fixed-size blocks of
several sizes would store, played out on the same files by accounting alone (the choice part 2
makes); and Keepsake's restore of the last night's image beside a restore of a full backup of it."""

import hashlib
import os
import random
import shutil
import sqlite3
import subprocess

from .bench import Bench
from .common import Failed, MiB, ROOT, first_line, have_command, human_bytes, loadavg, log, run_measured, tree_size
from .report import heading_lines, load_lines, notes_lines, tools_lines, version_number

GiB = 1024 * MiB
PAGE = 4096
# The block sizes the accounting plays out (fixed-size blocks; restic's content-defined chunks,
# 512 KiB to 8 MiB, are its own row).
BLOCK_SIZES = (4 * 1024, 64 * 1024, 1024 * 1024)
BIG_TOOLS = ("keepsake", "restic", "borg")
# The five files, in the order they are made and reported (big_files below).
BIG_FILE_NAMES = ("image-runs.img", "image-pages.img", "notes.sqlite", "app.log", "insertion.bin")
# Keepsake backs each file up storing its changed blocks (part 2), recorded in the report.
KEEPSAKE_OPTIONS = ["--blocks"]
# A block's digest in a table: the first 16 bytes of its SHA-256, as the manifest's.
DIGEST_BYTES = 16


def mixed_bytes(rng, size, text_pool):
    """`size` bytes the way a disk image holds them: 64 KiB stretches of zeros (a quarter),
    random bytes (a third: compressed media, encrypted data) and text (the rest)."""
    out = bytearray()
    while len(out) < size:
        n = min(64 * 1024, size - len(out))
        kind = rng.random()
        if kind < 0.25:
            out += bytes(n)
        elif kind < 0.6:
            out += rng.randbytes(n)
        else:
            at = rng.randrange(0, len(text_pool) - n)
            out += text_pool[at:at + n]
    return bytes(out)


def text_pool(rng, size=4 * MiB):
    """Text to draw from: lines of words, like configuration, logs and documents."""
    words = ["the", "backup", "server", "request", "error", "config", "value", "user", "file", "time",
             "network", "disk", "cache", "read", "write", "open", "close", "index", "table", "page"]
    lines = []
    total = 0
    while total < size:
        line = " ".join(rng.choice(words) for _ in range(rng.randrange(4, 14))) + f" {rng.randrange(1 << 20)}\n"
        lines.append(line)
        total += len(line)
    return "".join(lines).encode()[:size]


class BigFile:
    """One big file and what happens to it every night. `change(night)` returns the bytes
    that changed that night as (offset, length) ranges of the new file, or None when only a
    comparison of the pages tells (the database)."""

    def __init__(self, name, folder, size, seed, pool):
        self.name, self.folder, self.size, self.seed, self.pool = name, folder, size, seed, pool
        self.path = os.path.join(folder, name)
        self.rng = random.Random(f"{name}-{seed}")

    def create(self):
        os.makedirs(self.folder, exist_ok=True)
        with open(self.path, "wb") as f:
            left = self.size
            while left > 0:
                n = min(8 * MiB, left)
                f.write(mixed_bytes(self.rng, n, self.pool))
                left -= n

    def describe(self):
        raise NotImplementedError

    def change(self, night):
        raise NotImplementedError


class ImageRuns(BigFile):
    """A disk image with 1% rewritten in place a night, in runs of 64 KiB to 1 MiB."""

    def describe(self):
        return f"{human_bytes(self.size)} image, 1% rewritten in place a night in runs of 64 KiB–1 MiB"

    def change(self, night):
        ranges, budget = [], self.size // 100
        with open(self.path, "r+b") as f:
            while budget > 0:
                n = min(budget, self.rng.randrange(64 * 1024, 1024 * 1024 + 1))
                at = self.rng.randrange(0, self.size - n)
                f.seek(at)
                f.write(mixed_bytes(self.rng, n, self.pool))
                ranges.append((at, n))
                budget -= n
        return ranges


class ImagePages(BigFile):
    """A disk image with 1% of its 4 KiB pages rewritten a night, uniformly: the worst case
    for any block size above a page."""

    def describe(self):
        return f"{human_bytes(self.size)} image, 1% of its 4 KiB pages rewritten a night, spread uniformly"

    def change(self, night):
        pages = self.size // PAGE
        chosen = sorted(self.rng.sample(range(pages), max(1, pages // 100)))
        with open(self.path, "r+b") as f:
            for page in chosen:
                f.seek(page * PAGE)
                f.write(mixed_bytes(self.rng, PAGE, self.pool))
        return [(page * PAGE, PAGE) for page in chosen]


class Database(BigFile):
    """A SQLite database (the sqlite3 library Python carries) that receives updates to 0.5% of
    its rows and 0.25% more rows a night."""

    def describe(self):
        return (f"{human_bytes(self.size)} SQLite database, 0.5% of its rows updated and 0.25% more inserted a night "
                "(Python's sqlite3)")

    def create(self):
        os.makedirs(self.folder, exist_ok=True)
        if os.path.exists(self.path):
            os.unlink(self.path)
        db = sqlite3.connect(self.path)
        db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT, body BLOB)")
        rows = 0
        while os.path.getsize(self.path) < self.size:
            db.executemany("INSERT INTO notes (title, body) VALUES (?, ?)",
                           [(f"note {rows + i}", self.body()) for i in range(2000)])
            db.commit()
            rows += 2000
        self.rows = rows
        db.close()

    def body(self):
        return mixed_bytes(self.rng, self.rng.randrange(1024, 6 * 1024), self.pool)

    def change(self, night):
        db = sqlite3.connect(self.path)
        for row in self.rng.sample(range(1, self.rows + 1), max(1, self.rows // 200)):
            db.execute("UPDATE notes SET body = ? WHERE id = ?", (self.body(), row))
        added = max(1, self.rows // 400)
        db.executemany("INSERT INTO notes (title, body) VALUES (?, ?)",
                       [(f"note {self.rows + i}", self.body()) for i in range(added)])
        self.rows += added
        db.commit()
        db.close()
        return None


class GrowingLog(BigFile):
    """A log with lines appended a night (10 MiB for a 1 GiB log)."""

    def create(self):
        os.makedirs(self.folder, exist_ok=True)
        with open(self.path, "wb") as f:
            f.write(self.lines(self.size))

    def lines(self, size):
        """Log lines of at least `size` bytes in all."""
        levels = ["INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"]
        out, total, stamp = [], 0, self.rng.randrange(1 << 30)
        while total < size:
            stamp += self.rng.randrange(1, 2000)
            at = self.rng.randrange(0, len(self.pool) - 200)
            message = self.pool[at:at + self.rng.randrange(40, 160)].replace(b"\n", b" ")
            line = b"%d %s worker-%d: " % (stamp, self.rng.choice(levels).encode(), self.rng.randrange(16)) + message + b"\n"
            out.append(line)
            total += len(line)
        # Whole lines: a little over `size`.
        return b"".join(out)

    def describe(self):
        return f"{human_bytes(self.size)} log, {human_bytes(self.size // 100)} appended a night"

    def change(self, night):
        start = os.path.getsize(self.path)
        grown = self.lines(self.size // 100)
        with open(self.path, "ab") as f:
            f.write(grown)
        return [(start, len(grown))]


class Insertion(BigFile):
    """A file with 1 MiB (for a 1 GiB file) inserted in its middle a night."""

    def describe(self):
        return f"{human_bytes(self.size)} file, {human_bytes(self.size // 1024)} inserted in its middle a night"

    def change(self, night):
        size = os.path.getsize(self.path)
        middle = size // 2 // PAGE * PAGE
        inserted = mixed_bytes(self.rng, self.size // 1024, self.pool)
        temporary = self.path + ".new"
        with open(self.path, "rb") as src, open(temporary, "wb") as dst:
            copied = 0
            while copied < middle:
                chunk = src.read(min(8 * MiB, middle - copied))
                dst.write(chunk)
                copied += len(chunk)
            dst.write(inserted)
            shutil.copyfileobj(src, dst, 8 * MiB)
        os.replace(temporary, self.path)
        return [(middle, len(inserted))]


def big_files(root, scale, seed, pool):
    """The issue's five files at `scale` of their sizes (4 GiB images, 1 GiB others), each in
    a folder of its own."""
    def at(size):
        return max(64 * PAGE, int(size * scale) // PAGE * PAGE)
    return [ImageRuns("image-runs.img", os.path.join(root, "image-runs"), at(4 * GiB), seed, pool),
            ImagePages("image-pages.img", os.path.join(root, "image-pages"), at(4 * GiB), seed, pool),
            Database("notes.sqlite", os.path.join(root, "database"), at(GiB), seed, pool),
            GrowingLog("app.log", os.path.join(root, "log"), at(GiB), seed, pool),
            Insertion("insertion.bin", os.path.join(root, "insertion"), at(GiB), seed, pool)]


def page_digests(path):
    """A digest per 4 KiB page of the file (the last page may be short)."""
    digests = []
    with open(path, "rb") as f:
        while True:
            chunk = f.read(8 * MiB)
            if not chunk:
                break
            view = memoryview(chunk)
            for at in range(0, len(chunk), PAGE):
                digests.append(hashlib.blake2b(view[at:at + PAGE], digest_size=16).digest())
    return digests


def changed_pages(before, after):
    """The pages of the new file whose bytes are not those at the same place before."""
    return [i for i, digest in enumerate(after) if i >= len(before) or before[i] != digest]


def changed_blocks(pages, block, page_count):
    """The blocks of `block` bytes that hold any of the changed `pages` of a file of
    `page_count` pages."""
    per = block // PAGE
    return sorted({p // per for p in pages if p < page_count})


def compressed_size(path, ranges):
    """What `zstd -3` makes of the bytes of `ranges` of the file, one after the other."""
    if not ranges:
        return 0
    proc = subprocess.Popen(["sh", "-c", "zstd -3 -q -c | wc -c"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    with open(path, "rb") as f:
        for at, n in ranges:
            f.seek(at)
            left = n
            while left > 0:
                chunk = f.read(min(8 * MiB, left))
                if not chunk:
                    break
                proc.stdin.write(chunk)
                left -= len(chunk)
    out, _ = proc.communicate()
    return int(out.strip() or 0)


def merged(ranges):
    """Ranges sorted, touching ones joined."""
    out = []
    for at, n in sorted(ranges):
        if out and at <= out[-1][0] + out[-1][1]:
            last_at, last_n = out[-1]
            out[-1] = (last_at, max(last_at + last_n, at + n) - last_at)
        else:
            out.append((at, n))
    return out


class BlockModel:
    """What a backup storing fixed-size blocks would store a night: the blocks holding a
    changed page, compressed with zstd -3, and the table stored as changes (the digests of
    those blocks)."""

    def __init__(self, block):
        self.block = block

    def night(self, path, pages, page_count):
        blocks = changed_blocks(pages, self.block, page_count)
        size = os.path.getsize(path)
        ranges = merged([(b * self.block, min(self.block, size - b * self.block)) for b in blocks])
        table = len(blocks) * DIGEST_BYTES
        return {"blocks": len(blocks), "content": compressed_size(path, ranges), "table": table}


class BigFilesData:
    """The files are made when the section runs: nothing to cache."""

    def __init__(self, root):
        self.root = root

    def ensure(self, regenerate=False):
        pass


class BigFilesBench(Bench):
    """--big-files [NIGHTS]: the five files made, then every night each changes and each tool
    backs it up into a destination or repository of its own (in an order that rotates); the
    bytes each adds are measured, and the block models play the night from the pages that
    changed. After the last night, Keepsake restores the image (runs) from its chain and from
    a full backup of it, each timed."""

    def __init__(self, args):
        self.args = args
        self.nights = args.big_files
        self.scale = args.big_scale
        self.work = os.path.abspath(args.work)
        self.big_dir = os.path.join(self.work, "big-files")
        self.data = BigFilesData(os.path.join(self.big_dir, "files"))
        self.notes = []
        self.keepsake = os.path.join(ROOT, ".build", "release", "keepsake")
        wanted = [t.strip() for t in (args.tools or ",".join(BIG_TOOLS)).split(",") if t.strip()]
        self.big_tools = [t for t in BIG_TOOLS if t in wanted or t == "keepsake"]
        self.tools, self.variants = [], []
        self.tools_state = None
        self.commit = self._commit()
        self.start_load = loadavg()
        self.loads = []
        self.files = []
        self.results = {}
        self.restore = {}

    def commands_used(self):
        return {"time", "zstd"} | set(t for t in self.big_tools if t != "keepsake")

    def versions(self):
        v = {"keepsake": first_line([self.keepsake, "--version"]), "commit": self.commit,
             "zstd": first_line(["zstd", "--version"]), "sqlite": sqlite3.sqlite_version}
        if "restic" in self.big_tools:
            v["restic"] = first_line(["restic", "version"]) if shutil.which("restic") else "not installed"
        if "borg" in self.big_tools:
            v["borg"] = first_line(["borg", "--version"]) if shutil.which("borg") else "not installed"
        return v

    # MARK: - Running

    def run(self):
        if os.path.exists(self.big_dir):
            shutil.rmtree(self.big_dir)
        os.makedirs(os.path.join(self.work, "logs"), exist_ok=True)
        self.env = {"RESTIC_PASSWORD": "keepsake-bench", "RESTIC_CACHE_DIR": os.path.join(self.big_dir, "restic-cache"),
                    "BORG_PASSPHRASE": "", "BORG_BASE_DIR": os.path.join(self.big_dir, "borg-home"),
                    "BORG_UNKNOWN_UNENCRYPTED_REPO_ACCESS_IS_OK": "yes",
                    "XDG_CACHE_HOME": os.path.join(self.big_dir, "cache")}
        for t in ("restic", "borg"):
            if t in self.big_tools and not have_command(t):
                self.big_tools.remove(t)
                self.note(f"{t} is missing: the big files run without it")
        pool = text_pool(random.Random(f"pool-{self.args.seed}"))
        self.files = big_files(self.data.root, self.scale, self.args.seed, pool)
        only = [n.strip() for n in (getattr(self.args, "big_only", None) or "").split(",") if n.strip()]
        if only:
            self.files = [f for f in self.files if f.name in only]
        for f in self.files:
            log(f"making {f.name} ({human_bytes(f.size)})")
            f.create()
            self.results[f.name] = {"describe": f.describe(), "size": f.size, "nights": []}
            for t in self.big_tools:
                if t == "restic":
                    self._setup(["restic", "-r", self.repo(t, f), "init", "-q"])
                elif t == "borg":
                    self._setup(["borg", "init", "--encryption", "none", self.repo(t, f)])
        digests = {f.name: page_digests(f.path) for f in self.files}
        models = [BlockModel(b) for b in BLOCK_SIZES]
        for night in range(1, self.nights + 1):
            if night > 1 and not self.room_for_a_night(night):
                break
            load = loadavg()
            if load is not None:
                self.loads.append(load)
            turn = night % len(self.big_tools)
            order = self.big_tools[turn:] + self.big_tools[:turn]
            for f in self.files:
                ranges = None if night == 1 else f.change(night)
                after = page_digests(f.path)
                pages = list(range(len(after))) if night == 1 else changed_pages(digests[f.name], after)
                digests[f.name] = after
                if ranges is None:
                    ranges = merged([(p * PAGE, PAGE) for p in pages])
                record = {"night": night, "bytes": os.path.getsize(f.path), "changed_pages": len(pages),
                          "changed_bytes": sum(n for _, n in ranges),
                          "changed_compressed": compressed_size(f.path, ranges), "tools": {}, "models": {}}
                for tool in order:
                    record["tools"][tool] = self.back_up(tool, f, night)
                if night > 1:
                    for model in models:
                        record["models"][str(model.block)] = model.night(f.path, pages, len(after))
                self.results[f.name]["nights"].append(record)
                log(f"night {night}/{self.nights} {f.name}: changed {human_bytes(record['changed_compressed'])} "
                    "compressed; " + ", ".join(f"{t} +{human_bytes(r['added'])}" for t, r in record["tools"].items()))
        self.restore = self.time_restores(self.files[0])

    def room_for_a_night(self, night):
        """Whether the work folder's disk has room for another night: a copy of every file for
        each tool and one more (a night can store a file whole in each, and the insertion
        rewrites its file beside it). Else the nights stop there, with a note, and the report
        covers those run: a full disk fails every tool at once (and everything else on it)."""
        need = (len(self.big_tools) + 1) * sum(f.size for f in self.files)
        free = shutil.disk_usage(self.big_dir).free
        if free >= need:
            return True
        self.note(f"stopped before night {night}: {human_bytes(free)} free in {self.big_dir}, and a night may take "
                  f"{human_bytes(need)} (fewer --tools, or a smaller --big-scale, take less)")
        return False

    def repo(self, tool, f):
        return os.path.join(self.big_dir, "repos", f"{tool}-{os.path.basename(f.folder)}")

    def _setup(self, cmd):
        r = subprocess.run(cmd, env={**os.environ, **self.env}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            raise SystemExit(f"bench: {' '.join(cmd)} failed: {r.stdout.decode(errors='replace')[-300:]}")

    def back_up(self, tool, f, night):
        """Backs the file's folder up with `tool`; what it added to its repository, and how long it took."""
        repo = self.repo(tool, f)
        before = tree_size(repo) if os.path.exists(repo) else 0
        if tool == "keepsake":
            cmd = [self.keepsake, "backup", "-q", *KEEPSAKE_OPTIONS, "-d", repo, f.folder]
        elif tool == "restic":
            cmd = ["restic", "-r", repo, "backup", "-q", "--host", "big", f.folder]
        else:
            cmd = ["borg", "create", "--compression", "zstd,3", f"{repo}::night-{night:02d}", f.folder]
        try:
            sample, _ = run_measured(cmd, self.work, env=self.env, label=f"big-{tool}-{night}")
        except Failed as e:
            self.note(f"night {night}: {tool} on {f.name} failed: {e}")
            return {"added": 0, "wall": None, "failed": True}
        return {"added": tree_size(repo) - before, "wall": round(sample["wall"], 2), "cpu": round(sample["cpu"], 2)}

    def time_restores(self, image):
        """Keepsake's restore of the image's last backup (its chain) beside a restore of a full
        backup of the same file; both restored files checked against it."""
        full = os.path.join(self.big_dir, "repos", "keepsake-full")
        try:
            run_measured([self.keepsake, "backup", "-q", "--full", "-d", full, image.folder], self.work, env=self.env,
                         label="big-full-backup")
        except Failed as e:
            self.note(f"the full backup of {image.name} failed: {e}")
            return {}
        want = hashlib.sha256()
        with open(image.path, "rb") as f:
            for chunk in iter(lambda: f.read(8 * MiB), b""):
                want.update(chunk)
        out = {}
        for name, dest in (("chain", self.repo("keepsake", image)), ("full", full)):
            target = os.path.join(self.args.restore_dir, f"keepsake-big-restore-{os.getpid()}")
            shutil.rmtree(target, ignore_errors=True)
            try:
                sample, _ = run_measured([self.keepsake, "restore", "-q", "-d", dest, "latest", "-C", target], self.work,
                                         env=self.env, label=f"big-restore-{name}")
                got = hashlib.sha256()
                with open(os.path.join(target, image.path.lstrip("/")), "rb") as f:
                    for chunk in iter(lambda: f.read(8 * MiB), b""):
                        got.update(chunk)
                out[name] = {"wall": round(sample["wall"], 2), "cpu": round(sample["cpu"], 2),
                             "exact": got.digest() == want.digest()}
            except (Failed, OSError) as e:
                self.note(f"restoring {image.name} from the {name} backup failed: {e}")
            finally:
                shutil.rmtree(target, ignore_errors=True)
        return out

    # MARK: - Report

    def report(self, command_line, started, elapsed):
        if not self.args.keep:
            shutil.rmtree(self.big_dir, ignore_errors=True)
        total = sum(f["size"] for f in self.results.values())
        dataset = {"kind": "big-files", "root": self.data.root, "seed": self.args.seed, "bytes": total,
                   "regular_files": len(self.results), "scale": self.scale}
        return {"date": started.isoformat(timespec="seconds"), "label": self.args.label, "quick": False,
                "kind": "big-files", "command": command_line, "elapsed_seconds": round(elapsed, 1),
                "machine": self.machine(), "versions": self.versions(), "runs": 1, "tools": self.tools_state,
                "load_average": {"at_start": self.start_load,
                                 "median_while_measuring": sorted(self.loads)[len(self.loads) // 2] if self.loads else None,
                                 "max_while_measuring": max(self.loads) if self.loads else None},
                "dataset": dataset, "big_files": {"nights": self.nights, "tools": self.big_tools,
                                                  "keepsake_options": KEEPSAKE_OPTIONS,
                                                  "block_sizes": list(BLOCK_SIZES), "model_tables": "changes",
                                                  "files": self.results,
                                                  "restore": self.restore},
                "phases": [], "notes": self.notes}


def per_night(values):
    """The mean of a list of numbers (0 for none)."""
    return sum(values) / len(values) if values else 0


def bigfiles_markdown(doc, level=2):
    """The big-files report as Markdown, from the JSON document alone."""
    b, v = doc["big_files"], doc["versions"]
    h = "#" * (level + 1)
    L = heading_lines(doc, level)
    scale = doc["dataset"].get("scale", 1)
    L.append(f"- The files (seed {doc['dataset']['seed']}, at {scale:g} of the issue's sizes): "
             + "; ".join(f"`{name}`: {f['describe']}" for name, f in b["files"].items())
             + f"; {b['nights']} nights, the first a full backup of each")
    versions = [f"{v['keepsake']} (commit {(v.get('commit') or 'unknown')[:12]})"]
    versions += [v[k] for k in ("restic", "borg") if v.get(k)]
    versions += [f"zstd {version_number(v['zstd'])}" if v.get("zstd") else "zstd", f"SQLite {v.get('sqlite')}"]
    L.append(f"- Versions: {', '.join(versions)}")
    L += tools_lines(doc)
    L += load_lines(doc)
    L.append("")
    L.append(f"{h} Stored per night (nights 2–{b['nights']}, mean)")
    L.append("")
    L.append("Changed = the bytes that changed that night (the ranges written; for the database, the 4 KiB pages "
             "that differ), compressed with `zstd -3`. Each tool: what its destination or repository grew by"
             + (f" (Keepsake's backups with `{' '.join(b['keepsake_options'])}`)" if b.get("keepsake_options") else "")
             + (". Fixed blocks: the blocks holding a changed page, compressed with `zstd -3`, plus a 16-byte digest "
                "for each (a table stored as changes; accounting only: what Keepsake would store with that block size)."
                if b.get("model_tables") == "changes" else
                ". Fixed blocks: the blocks holding a changed page, compressed with `zstd -3`, plus the file's whole "
                "table of SHA-256 block digests (accounting only: what part 2 would store with that block size)."))
    L.append("")
    models = [str(size) for size in b["block_sizes"]]
    L.append("| file | changed | " + " | ".join(b["tools"]) + " | "
             + " | ".join(f"fixed {human_bytes(int(m))}" for m in models) + " |")
    L.append("|---|---|" + "---|" * (len(b["tools"]) + len(models)))
    goals = []
    for name, f in b["files"].items():
        later = [n for n in f["nights"] if n["night"] > 1]
        changed = per_night([n["changed_compressed"] for n in later])
        tools = {t: per_night([n["tools"].get(t, {}).get("added", 0) for n in later]) for t in b["tools"]}
        blocks = {m: per_night([n["models"][m]["content"] + n["models"][m]["table"] for n in later if m in n["models"]])
                  for m in models}
        L.append(f"| `{name}` | {human_bytes(changed)} | " + " | ".join(human_bytes(tools[t]) for t in b["tools"])
                 + " | " + " | ".join(human_bytes(blocks[m]) for m in models) + " |")
        goals.append((name, changed, tools, blocks))
    L.append("")
    L.append(f"{h} Against the issue's goals")
    L.append("")
    L.append("Goals: for the image rewritten in runs, the database and the log, stored per night ≤ restic's and "
             "≤ 1.5× changed; for the image rewritten by pages, ≤ 0.5× restic's; for the insertion, what each "
             "stores is reported. Ratios per night, mean of nights 2 on.")
    L.append("")
    rows = ["keepsake"] + [f"fixed {human_bytes(int(m))}" for m in models]
    L.append("| file | " + " | ".join(f"{r} ÷ restic | {r} ÷ changed" for r in rows) + " |")
    L.append("|---|" + "---|---|" * len(rows))
    for name, changed, tools, blocks in goals:
        restic = tools.get("restic")
        cells = []
        for r, value in [("keepsake", tools["keepsake"])] + [(m, blocks[m]) for m in models]:
            cells.append(f"{value / restic:.2f}×" if restic else "—")
            cells.append(f"{value / changed:.2f}×" if changed else "—")
        L.append(f"| `{name}` | " + " | ".join(cells) + " |")
    r = b.get("restore") or {}
    if r.get("chain") and r.get("full"):
        L.append("")
        first = next(iter(b['files']))
        L.append(f"Restore of `{first}` as of the last night: from its chain "
                 f"{r['chain']['wall']:.2f} s, from a full backup of it {r['full']['wall']:.2f} s "
                 f"({r['chain']['wall'] / r['full']['wall']:.2f}×"
                 + ("; goal ≤ 1.3×" if first.startswith("image") else "") + "); restored exactly: "
                 f"{'yes' if r['chain']['exact'] and r['full']['exact'] else '**no**'}.")
    L += notes_lines(doc)
    return "\n".join(L) + "\n"
