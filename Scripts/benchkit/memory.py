"""The memory section (--memory N): peak RSS of every command that reads a manifest."""

import json
import os
import shlex
import shutil
import statistics
import sys

from .bench import Bench
from .common import Failed, GNU_TIME, ROOT, count_restored, first_line, human_bytes, loadavg, log, run_measured, sync
from .datasets import MEMORY_FIND_PATTERN, MemorySet


MEMORY_GOAL_KIB = 64 * 1024  # issue 16: every command under 64 MiB for 100,000 entries
MEMORY_GOAL_ENTRIES = 100000
# Every keepsake command that reads a manifest, in the order a round runs them: (id, what, the
# arguments). A round makes a fresh destination DEST; its first two rows put a full backup and a
# no-change incremental of the memory set (SOURCE) in it, whose ids are FULL and INCR; the others
# read them. TARGET is a fresh folder of the tmpfs, PATH one small file late in the tree,
# PATTERN the find pattern (MEMORY_FIND_PATTERN).
MEMORY_COMMANDS = [
    ("backup-full", "full backup", "backup --json -d DEST SOURCE"),
    ("backup-incremental", "incremental backup, nothing changed", "backup --json -d DEST SOURCE"),
    ("list", "the backups", "list -d DEST"),
    ("list-id", "the paths of a backup", "list -d DEST INCR"),
    ("list-long", "the paths with mode, owner, size, time and SHA-256", "list -d DEST INCR --long"),
    ("list-json", "the paths as JSON", "list -d DEST INCR --json"),
    ("find", "the paths matching a pattern, in both backups", "find -d DEST PATTERN"),
    ("diff", "what changed between the two backups (nothing)", "diff -d DEST FULL INCR"),
    ("verify", "both backups, archives read whole", "verify -q -d DEST"),
    ("restore-full", "the full backup, into a tmpfs", "restore -q -d DEST FULL -C TARGET"),
    ("restore-incremental", "the incremental (its files from the full backup's archive), into a tmpfs",
     "restore -q -d DEST INCR -C TARGET"),
    ("restore-one", "one small file late in the tree, from the incremental", "restore -q -d DEST INCR PATH -C TARGET"),
    ("prune-dry-run", "retention decisions (both kept), nothing removed", "prune -d DEST --dry-run --keep-last 1"),
]


def memory_command_line(template, pattern=MEMORY_FIND_PATTERN):
    """A MEMORY_COMMANDS template as it is shown: keepsake, the pattern filled in and quoted."""
    return "keepsake " + " ".join(shlex.quote(pattern) if w == "PATTERN" else w for w in template.split())


class MemoryBench(Bench):
    """--memory N: every keepsake command that reads a manifest, run against a destination holding
    a full backup and a no-change incremental of N small files, with GNU time's peak RSS (%M),
    set against issue 16's goal (under 64 MiB for 100,000 entries). Nothing else runs: no peers,
    no S3, no cold cache (the page cache is never dropped), no variants."""

    def __init__(self, args):
        self.args = args
        self.work = os.path.abspath(args.work)
        self.notes = []
        self.keepsake = os.path.join(ROOT, ".build", "release", "keepsake")
        self.data = MemorySet(self.work, args.memory, args.seed)
        self.tools, self.variants = [], []
        self.tools_state = None
        self.commit = self._commit()
        self.results = {}  # command id -> {"runs": [...], "errors": [...]}
        self.start_load = loadavg()
        self.loads = []
        self.checks = {}

    def commands_used(self):
        return {"time"}

    def versions(self):
        # Debian's GNU time calls itself "time (GNU Time) UNKNOWN": its package has the version.
        package = first_line(["dpkg-query", "-W", "-f", "${Version}", "time"]) if shutil.which("dpkg-query") else None
        gnu_time = (f"GNU time {package}" if package else first_line([GNU_TIME, "--version"])) if GNU_TIME else None
        return {"keepsake": first_line([self.keepsake, "--version"]), "time": gnu_time, "commit": self.commit}

    def run(self):
        a = self.args
        os.makedirs(os.path.join(self.work, "logs"), exist_ok=True)
        restore_base = os.path.join(a.restore_dir, f"keepsake-bench-memory-{os.getpid()}")
        # A tmpfs file takes at least a page.
        need = (self.data.info["bytes"] + 4096 * self.data.info["regular_files"]) * 1.2
        free = shutil.disk_usage(a.restore_dir).free
        if free < need:
            sys.exit(f"bench: {a.restore_dir} has {human_bytes(free)} free; restores need about {human_bytes(need)}")
        log("warming the page cache")
        self.warm()
        self.small = self.data.small_file()
        self.find_matches = 2 * self.data.info["entries"]["by_extension"].get(MEMORY_FIND_PATTERN[2:], 0)
        runs_root = os.path.join(self.work, "memory-runs")
        if os.path.exists(runs_root):
            shutil.rmtree(runs_root)
        os.makedirs(runs_root)
        try:
            for rnd in range(a.runs):
                log(f"round {rnd + 1}/{a.runs}: {len(MEMORY_COMMANDS)} commands on {self.data.files} files")
                dest = os.path.join(runs_root, f"round-{rnd}")
                ids = {}
                for command_id, _, template in MEMORY_COMMANDS:
                    self.run_command(command_id, template, rnd, dest, ids, restore_base)
                # The destinations stay until the end, as in the other sections.
        finally:
            if os.path.exists(restore_base):
                shutil.rmtree(restore_base)
            if not a.keep:
                shutil.rmtree(runs_root, ignore_errors=True)

    def run_command(self, command_id, template, rnd, dest, ids, restore_base):
        entry = self.results.setdefault(command_id, {"runs": [], "errors": []})
        target = os.path.join(restore_base, command_id)
        values = {"DEST": dest, "SOURCE": self.data.root, "TARGET": target, "PATTERN": MEMORY_FIND_PATTERN,
                  "PATH": os.path.join(self.data.root, self.small), **ids}
        words = template.split()
        missing = [w for w in ("FULL", "INCR") if w in words and w not in ids]
        if missing:
            entry["errors"].append(f"no {' and no '.join(missing)} backup (its row failed)")
            log(f"  {command_id:20} skipped: no {' and no '.join(missing)} backup")
            return
        cmd = [self.keepsake] + [values.get(w, w) for w in words]
        if "TARGET" in words:
            os.makedirs(target)
        try:
            sync()  # writeback of the previous command is not charged to this one
            load = loadavg()
            if load is not None:
                self.loads.append(load)
            sample, stdout = run_measured(cmd, self.work, label=f"memory-r{rnd}-{command_id}")
            sample["round"] = rnd
            self.check(command_id, rnd, stdout, target, ids)
            entry["runs"].append(sample)
            log(f"  {command_id:20} {sample['rss_kib'] / 1024:7.1f} MiB peak RSS {sample['wall']:8.2f} s wall "
                f"{sample['cpu']:8.2f} s CPU")
        except Failed as e:
            entry["errors"].append(str(e))
            log(f"  {command_id:20} FAILED {e}")
        finally:
            if "TARGET" in words:
                shutil.rmtree(target, ignore_errors=True)

    def check(self, command_id, rnd, stdout, target, ids):
        """What each command did, checked after it is timed: the backups' ids and kinds, what was
        restored, how many paths were found. A mismatch is a note, not a failure."""
        info = self.data.info
        if command_id.startswith("backup-"):
            try:
                doc = json.loads(stdout)
            except ValueError:
                raise Failed("backup --json printed no JSON")
            want = "full" if command_id == "backup-full" else "incremental"
            if doc.get("kind") != want:
                self.note(f"{command_id} made a {doc.get('kind')} backup, not a {want} one")
            ids["FULL" if command_id == "backup-full" else "INCR"] = doc["id"]
        elif command_id in ("restore-full", "restore-incremental"):
            files, nbytes = count_restored(target)
            if (files, nbytes) != (info["regular_files"], info["bytes"]):
                self.note(f"{command_id} restored {files} files, {nbytes} bytes; the memory set has "
                          f"{info['regular_files']} files, {info['bytes']} bytes")
        elif command_id == "restore-one":
            files, _ = count_restored(target)
            if files != 1:
                self.note(f"restore-one restored {files} files instead of {self.small}")
        elif command_id == "find":
            # A table: a heading, a rule, then a row per match.
            found = max(0, len(stdout.decode(errors="replace").splitlines()) - 2)
            if found != self.find_matches:
                self.note(f"find {MEMORY_FIND_PATTERN} printed {found} rows; the two backups hold "
                          f"{self.find_matches} matching paths")
            self.checks["find_rows"] = found
        elif command_id == "list-id":
            lines = len(stdout.splitlines())
            if lines < info["regular_files"]:
                self.note(f"list INCR printed {lines} lines; the memory set has {info['regular_files']} files")
            self.checks["list_lines"] = lines

    def report(self, command_line, started, elapsed):
        rows = []
        for command_id, what, template in MEMORY_COMMANDS:
            entry = self.results.get(command_id, {"runs": [], "errors": ["did not run"]})
            runs = entry["runs"]
            row = {"id": command_id, "what": what, "command": memory_command_line(template), "runs": len(runs)}
            if not runs:
                row.update({"status": "failed", "error": entry["errors"][0] if entry["errors"] else "did not run"})
                rows.append(row)
                continue

            def stat(key):
                vals = [r[key] for r in runs]
                return {"max": max(vals), "median": statistics.median(vals), "min": min(vals)}

            row.update({"status": "ok" if not entry["errors"] else "partly failed",
                        "peak_rss_kib": stat("rss_kib"), "wall_seconds": stat("wall"), "cpu_seconds": stat("cpu"),
                        "under_goal": max(r["rss_kib"] for r in runs) < MEMORY_GOAL_KIB, "samples": runs})
            if entry["errors"]:
                row["errors"] = entry["errors"]
            rows.append(row)
        measured = [r for r in rows if r.get("peak_rss_kib")]
        largest = max(measured, key=lambda r: r["peak_rss_kib"]["max"]) if measured else None
        info = self.data.info
        entries = info["regular_files"] + info["entries"]["directories"]
        under = sum(1 for r in measured if r["under_goal"])
        failed = sum(1 for r in rows if r["status"] != "ok")
        # Met or not only with the goal's number of entries (or more) and every command measured.
        met = (under == len(rows)) if entries >= MEMORY_GOAL_ENTRIES and not failed else None
        memory = {"goal": f"every command under {MEMORY_GOAL_KIB // 1024} MiB for {MEMORY_GOAL_ENTRIES} entries "
                          "(issue 16)",
                  "goal_kib": MEMORY_GOAL_KIB, "goal_entries": MEMORY_GOAL_ENTRIES,
                  "entries": entries, "met": met,
                  "find_pattern": MEMORY_FIND_PATTERN, "find_matches": self.find_matches,
                  "small_file": self.small, "checks": self.checks, "rows": rows,
                  "under_goal": under, "failed": failed, "commands": len(rows),
                  "largest": {"id": largest["id"], "command": largest["command"],
                              "peak_rss_kib": largest["peak_rss_kib"]["max"]} if largest else None}
        return {"date": started.isoformat(timespec="seconds"), "label": self.args.label, "quick": False,
                "kind": "memory", "command": command_line, "elapsed_seconds": round(elapsed, 1),
                "machine": self.machine(), "versions": self.versions(), "runs": self.args.runs,
                "restore_dir": self.args.restore_dir, "tools": self.tools_state,
                "load_average": {"at_start": self.start_load,
                                 "median_while_measuring": statistics.median(self.loads) if self.loads else None,
                                 "max_while_measuring": max(self.loads) if self.loads else None},
                "dataset": info, "memory": memory, "phases": [], "notes": self.notes}
