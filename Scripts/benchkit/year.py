"""The year section (--year [NIGHTS]): a home folder backed up every night for a year by
Keepsake, restic and borg with one retention policy, and the ways of storing it that issue 34
weighs, played out on the same trees (chainmodel.py)."""

import datetime
import json
import os
import shutil
import subprocess

from .bench import Bench
from .chainmodel import CANDIDATES, ChainModel, NightTree, SizeOracle, night_date, policy_keeps
from .common import ROOT, Failed, first_line, have_command, human_bytes, loadavg, log, run_measured, tree_size
from .datasets import Dataset
from .report import heading_lines, load_lines, notes_lines, tools_lines
from .yearhome import GeneratedSetNights, YearHome

POLICY = {"day": 7, "week": 5, "month": 12, "year": 2}
POLICY_ARGS = ["--keep-daily", "7", "--keep-weekly", "5", "--keep-monthly", "12", "--keep-yearly", "2"]
FIRST_NIGHT = datetime.date(2027, 1, 1)
# keepsake: prune with --keep-chains (every backup a kept one takes files from stays, as before
# issue 34); keepsake-consolidate: prune as it is by default (supplements, issue 34);
# keepsake-blocks: the same with `backup --blocks` (big files by their changed blocks, which
# prune moves into supplements too).
YEAR_TOOLS = ("keepsake", "keepsake-consolidate", "keepsake-blocks", "restic", "borg")
CONSOLIDATING = ("keepsake-consolidate", "keepsake-blocks")


class YearData:
    """The year's home folder: made night by night while the bench runs, so nothing to cache."""

    def __init__(self, root, seed):
        self.root, self.seed = root, seed

    def ensure(self, regenerate=False):
        pass


class YearBench(Bench):
    """--year [NIGHTS]: every night the home folder changes, then each tool (in an order that
    rotates) backs it up and applies the policy — keepsake backup and prune under faketime,
    restic backup --time and forget --prune, borg create --timestamp, prune and compact — and
    every candidate of the chain model plays the same night. At the end: backups kept, bytes
    stored and the nights' total time per tool, and kept and content bytes per candidate, with
    the model of today's design set beside the real Keepsake run."""

    def __init__(self, args):
        self.args = args
        self.nights = args.year
        self.work = os.path.abspath(args.work)
        self.year_dir = os.path.join(self.work, "year")
        self.notes = []
        self.keepsake = os.path.join(ROOT, ".build", "release", "keepsake")
        self.generated = args.year_data == "generated"
        if self.generated:
            # The chain model alone: a year of the tools on a 1 GiB set would take hours.
            self.data = Dataset(self.work, args.size, args.files, args.seed)
            self.year_tools = []
        else:
            self.data = YearData(os.path.join(self.year_dir, "home"), args.seed)
            wanted = [t.strip() for t in (args.tools or ",".join(YEAR_TOOLS)).split(",") if t.strip()]
            self.year_tools = [t for t in YEAR_TOOLS if t in wanted or t == "keepsake"]
        self.tools, self.variants = [], []
        self.tools_state = None
        self.commit = self._commit()
        self.totals = {t: {"wall": 0.0, "cpu": 0.0, "commands": 0, "failures": []} for t in self.year_tools}
        self.start_load = loadavg()
        self.loads = []
        self.models = [ChainModel(c, POLICY) for c in CANDIDATES]
        self.curve = []  # every 30 nights: night, kept and stored per tool and candidate
        self.end = {}

    def commands_used(self):
        if self.generated:
            return {"time", "zstd"}
        return {"time", "zstd", "faketime"} | ({"restic"} if "restic" in self.year_tools else set()) \
            | ({"borg"} if "borg" in self.year_tools else set())

    def versions(self):
        v = {"keepsake": first_line([self.keepsake, "--version"]), "commit": self.commit}
        if not self.generated:
            v["faketime"] = first_line(["dpkg-query", "-W", "-f", "faketime ${Version}", "faketime"])
        if "restic" in self.year_tools:
            v["restic"] = first_line(["restic", "version"]) if shutil.which("restic") else "not installed"
        if "borg" in self.year_tools:
            v["borg"] = first_line(["borg", "--version"]) if shutil.which("borg") else "not installed"
        return v

    # MARK: - Running

    def run(self):
        if os.path.exists(self.year_dir):
            shutil.rmtree(self.year_dir)
        os.makedirs(os.path.join(self.work, "logs"), exist_ok=True)
        self.dest = os.path.join(self.year_dir, "keepsake")
        self.consolidated_dest = os.path.join(self.year_dir, "keepsake-consolidate")
        self.blocks_dest = os.path.join(self.year_dir, "keepsake-blocks")
        self.restic_repo = os.path.join(self.year_dir, "restic")
        self.borg_repo = os.path.join(self.year_dir, "borg")
        self.env = {"RESTIC_PASSWORD": "keepsake-bench", "RESTIC_CACHE_DIR": os.path.join(self.year_dir, "restic-cache"),
                    "BORG_PASSPHRASE": "", "BORG_BASE_DIR": os.path.join(self.year_dir, "borg-home"),
                    "BORG_UNKNOWN_UNENCRYPTED_REPO_ACCESS_IS_OK": "yes", "BORG_RELOCATED_REPO_ACCESS_IS_OK": "yes",
                    "XDG_CACHE_HOME": os.path.join(self.year_dir, "cache"),
                    # faketime moves only the clock: by default it shifts the times stat(2) gives
                    # too, by a different amount each night, and every file would look changed.
                    "NO_FAKE_STAT": "1", "DONT_FAKE_MONOTONIC": "1"}
        for t in ("restic", "borg"):
            if t in self.year_tools and not have_command(t):
                self.year_tools.remove(t)
                del self.totals[t]
                self.note(f"{t} is missing: the year runs without it")
        if not have_command("faketime") and not self.generated:
            raise SystemExit("bench: --year needs faketime (apt-get install faketime) to date Keepsake's backups")
        if "restic" in self.year_tools:
            self._setup(["restic", "-r", self.restic_repo, "init", "-q"])
        if "borg" in self.year_tools:
            self._setup(["borg", "init", "--encryption", "none", self.borg_repo])
        home = GeneratedSetNights(self.data.root, seed=self.args.seed) if self.generated \
            else YearHome(self.data.root, seed=self.args.seed)
        tree = NightTree(SizeOracle())
        for night in range(1, self.nights + 1):
            changed = None
            if night == 1:
                home.create()
            elif self.generated:
                changed = home.live_night(night)
            else:
                home.live_night(night)
            date = night_date(FIRST_NIGHT, night)
            turn = night % max(1, len(self.year_tools))
            order = self.year_tools[turn:] + self.year_tools[:turn]
            load = loadavg()
            if load is not None:
                self.loads.append(load)
            for tool in order:
                self.night_of(tool, night, date)
            tree.update(home.files, changed)
            for model in self.models:
                model.night(date, tree)
            if night % 30 == 0 or night == self.nights:
                self.curve.append(self.standing(night))
                point = self.curve[-1]
                log(f"night {night}/{self.nights}: " + ", ".join(
                    [f"{t} {point['tools'][t]['kept']} kept {human_bytes(point['tools'][t]['stored'])}"
                     for t in self.year_tools]
                    + [f"{c} {s['kept']} kept {human_bytes(s['stored'])}" for c, s in point["candidates"].items()
                       if c.startswith("consolidate")]))
        # The repositories stay until report() has measured them (then go, unless --keep).
        self.end = {"tree_bytes": home.total_bytes(), "files": len(home.files),
                    "tree_compressed": sum(size for pieces in tree.pieces[False].values() for _, size in pieces)}
        if "keepsake" in self.year_tools:
            self.end["restored"] = self.check_restore(home, night_date(FIRST_NIGHT, self.nights))
        if "keepsake-consolidate" in self.year_tools:
            self.end["restored_consolidated"] = self.check_restore(home, night_date(FIRST_NIGHT, self.nights),
                                                                   tool="keepsake-consolidate")
        if "keepsake-blocks" in self.year_tools:
            self.end["restored_blocks"] = self.check_restore(home, night_date(FIRST_NIGHT, self.nights),
                                                             tool="keepsake-blocks")

    def _setup(self, cmd):
        r = subprocess.run(cmd, env={**os.environ, **self.env}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            raise SystemExit(f"bench: {' '.join(cmd)} failed: {r.stdout.decode(errors='replace')[-300:]}")

    def commands(self, tool, night, date):
        stamp = date.strftime("%Y-%m-%d %H:%M:%S")
        if tool.startswith("keepsake"):
            clock = ["faketime", "-f", "@" + stamp]
            dest = self.dest_of(tool)
            chains = [] if tool in CONSOLIDATING else ["--keep-chains"]
            # Big files by their changed blocks is the default since this row was added.
            blocks = ["--blocks"] if tool == "keepsake-blocks" else ["--no-blocks"]
            return [clock + [self.keepsake, "backup", "-q", "-d", dest] + blocks + [self.data.root],
                    clock + [self.keepsake, "prune", "-q", "-d", dest] + chains + POLICY_ARGS]
        if tool == "restic":
            return [["restic", "-r", self.restic_repo, "backup", "-q", "--host", "year", "--time", stamp, self.data.root],
                    ["restic", "-r", self.restic_repo, "forget", "-q", "--prune"] + POLICY_ARGS]
        return [["borg", "create", "--compression", "zstd,3", "--timestamp", date.strftime("%Y-%m-%dT%H:%M:%S"),
                 f"{self.borg_repo}::night-{night:03d}", self.data.root],
                ["borg", "prune"] + POLICY_ARGS + [self.borg_repo],
                ["borg", "compact", self.borg_repo]]

    def night_of(self, tool, night, date):
        total = self.totals[tool]
        for i, cmd in enumerate(self.commands(tool, night, date)):
            try:
                sample, _ = run_measured(cmd, self.work, env=self.env, label=f"year-{tool}-{i}")
                total["wall"] += sample["wall"]
                total["cpu"] += sample["cpu"]
                total["commands"] += 1
            except Failed as e:
                total["failures"].append(f"night {night}: {' '.join(cmd[:3])}…: {e}")
                log(f"  night {night}: {tool} FAILED {e}")

    # MARK: - Measuring

    def dest_of(self, tool):
        """Where a Keepsake row keeps its backups."""
        return {"keepsake-consolidate": self.consolidated_dest, "keepsake-blocks": self.blocks_dest}.get(tool, self.dest)

    def kept_of(self, tool):
        env = {**os.environ, **self.env}
        try:
            if tool.startswith("keepsake"):
                out = subprocess.run([self.keepsake, "list", "--json", "-d", self.dest_of(tool)], env=env,
                                     stdout=subprocess.PIPE, check=True).stdout
                rows = json.loads(out)["backups"]
                return len(rows), sum(1 for r in rows if r.get("kind") == "full")
            if tool == "restic":
                out = subprocess.run(["restic", "-r", self.restic_repo, "snapshots", "--json"], env=env,
                                     stdout=subprocess.PIPE, check=True).stdout
                return len(json.loads(out)), None
            out = subprocess.run(["borg", "list", "--json", self.borg_repo], env=env, stdout=subprocess.PIPE,
                                 check=True).stdout
            return len(json.loads(out)["archives"]), None
        except (subprocess.CalledProcessError, ValueError, KeyError) as e:
            self.note(f"counting {tool}'s backups failed: {e}")
            return None, None

    def stored_of(self, tool):
        path = {"keepsake": getattr(self, "dest", ""), "keepsake-consolidate": getattr(self, "consolidated_dest", ""),
                "keepsake-blocks": getattr(self, "blocks_dest", ""), "restic": getattr(self, "restic_repo", ""), "borg": getattr(self, "borg_repo", "")}[tool]
        return tree_size(path) if os.path.exists(path) else 0

    def standing(self, night):
        tools = {}
        for t in self.year_tools:
            kept, fulls = self.kept_of(t)
            tools[t] = {"kept": kept, "fulls": fulls, "stored": self.stored_of(t), "wall": round(self.totals[t]["wall"], 2)}
        return {"night": night, "tools": tools,
                "candidates": {m.c.name: {"kept": m.kept(), "stored": m.stored()} for m in self.models}}

    def check_restore(self, home, date, tool="keepsake"):
        """The last night's backup restores to exactly the tree (Keepsake's only: the bench
        measures the others, the test suite checks them). On the last night's clock: its
        backups are dated in the future of the real one."""
        target = os.path.join(self.year_dir, "restore-check")
        clock = ["faketime", "-f", "@" + (date + datetime.timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S")]
        r = subprocess.run(clock + [self.keepsake, "restore", "-q", "-d", self.dest_of(tool), "latest", "-C", target],
                           env={**os.environ, **self.env}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            self.note(f"restoring {tool}'s last backup failed: {r.stdout.decode(errors='replace')[-200:]}")
            return False
        found = {}
        for dirpath, _, names in os.walk(target):
            for name in names:
                full = os.path.join(dirpath, name)
                with open(full, "rb") as f:
                    found[os.path.relpath(full, target)] = f.read()
        prefix = self.data.root.lstrip("/") + "/"
        found = {p[len(prefix):] if p.startswith(prefix) else p: d for p, d in found.items()}
        shutil.rmtree(target, ignore_errors=True)
        if found != home.files:
            self.note(f"{tool}'s last backup restored {len(found)} files; the tree holds {len(home.files)} "
                      "(or their bytes differ)")
            return False
        return True

    # MARK: - Report

    def report(self, command_line, started, elapsed):
        last = self.curve[-1] if self.curve else None
        model_today = next(m for m in self.models if m.c.name == "today")
        expected_policy = len(policy_keeps([night_date(FIRST_NIGHT, n) for n in range(1, self.nights + 1)], POLICY))
        tools = {}
        for t in self.year_tools:
            total = self.totals[t]
            tools[t] = {**(last["tools"][t] if last else {}), "total_wall_seconds": round(total["wall"], 1),
                        "total_cpu_seconds": round(total["cpu"], 1), "commands": total["commands"],
                        "failures": total["failures"][:5], "failure_count": len(total["failures"])}
        candidates = [{"name": m.c.name, "what": m.c.what, "kept": m.kept(), "kept_fulls": m.kept_fulls(),
                       "stored": m.stored()} for m in self.models]
        year = {"nights": self.nights, "data": "generated" if self.generated else "home", "policy": POLICY,
                "policy_keeps": expected_policy, "first_night": FIRST_NIGHT.isoformat(), "tools": tools,
                "candidates": candidates, "curve": self.curve, **self.end}
        if "keepsake" in tools:
            year["model_today_vs_keepsake"] = {"model_content": model_today.stored(),
                                               "keepsake_stored": tools["keepsake"].get("stored"),
                                               "model_kept": model_today.kept(),
                                               "keepsake_kept": tools["keepsake"].get("kept")}
        if self.generated:
            year["changes"] = {"edited": GeneratedSetNights.EDITED, "added": GeneratedSetNights.ADDED,
                               "deleted": GeneratedSetNights.ADDED, "log_growth": GeneratedSetNights.LOG_GROWTH}
        if not self.args.keep:
            shutil.rmtree(self.year_dir, ignore_errors=True)
        dataset = {"kind": "year", "root": self.data.root, "seed": self.args.seed,
                   "bytes": self.end.get("tree_bytes", 0), "regular_files": self.end.get("files", 0)}
        if self.generated:
            dataset["generated"] = {"size": self.args.size, "files": self.args.files}
        return {"date": started.isoformat(timespec="seconds"), "label": self.args.label, "quick": False,
                "kind": "year", "command": command_line, "elapsed_seconds": round(elapsed, 1),
                "machine": self.machine(), "versions": self.versions(), "runs": 1, "tools": self.tools_state,
                "load_average": {"at_start": self.start_load,
                                 "median_while_measuring": sorted(self.loads)[len(self.loads) // 2] if self.loads else None,
                                 "max_while_measuring": max(self.loads) if self.loads else None},
                "dataset": dataset, "year": year, "phases": [], "notes": self.notes}


def year_markdown(doc, level=2):
    """The year report as Markdown, from the JSON document alone."""
    y, v = doc["year"], doc["versions"]
    h = "#" * (level + 1)
    generated = y.get("data") == "generated"
    L = heading_lines(doc, level)
    if generated:
        c = y["changes"]
        L.append(f"- The year (seed {doc['dataset']['seed']}): {y['nights']} nights of the bench's generated set "
                 f"({human_bytes(doc['dataset']['generated']['size'])}, about {doc['dataset']['generated']['files']} "
                 f"files), changed in memory every night: {c['edited']:.1%} of the files edited (4 KiB rewritten, "
                 f"a line appended), {c['added']:.2%} added and as many deleted, each log grown by "
                 f"{human_bytes(c['log_growth'])}; {y['files']} files, {human_bytes(doc['dataset']['bytes'])} on the "
                 "last night (Scripts/benchkit/yearhome.py, `GeneratedSetNights`). The chain model alone: no tool runs")
    else:
        L.append(f"- The year (seed {doc['dataset']['seed']}): {y['nights']} nights from {y['first_night']}, a home "
                 f"folder of {y.get('files', '?')} files, {human_bytes(doc['dataset']['bytes'])} on the last night "
                 "(documents edited, added, deleted and renamed a few a night, photos replaced, a mailbox growing by "
                 "16 KiB a night and compacted every 91 nights; Scripts/benchkit/yearhome.py)")
    L.append("- Policy: keep-daily 7, keep-weekly 5, keep-monthly 12, keep-yearly 2, applied every night after "
             f"the backup; on these dates it names {y['policy_keeps']} backups")
    versions = [f"{v['keepsake']} (commit {(v.get('commit') or 'unknown')[:12]})"]
    versions += [v[k] for k in ("restic", "borg", "faketime") if v.get(k)]
    L.append(f"- Versions: {', '.join(versions)}")
    L += tools_lines(doc)
    L += load_lines(doc)
    restic = y["tools"].get("restic", {})
    if y["tools"]:
        L.append("")
        L.append(f"{h} Each tool, every night: backup, then the policy")
        L.append("")
        consolidating = ("keepsake-consolidate: the same with `prune` as it is by default (supplements, issue 34); "
                         if "keepsake-consolidate" in y["tools"] else "")
        consolidating += ("keepsake-blocks: the same with `backup --blocks` (big files by their changed blocks, "
                          "moved into supplements by prune too); " if "keepsake-blocks" in y["tools"] else "")
        L.append("Keepsake: `backup` and `prune --keep-chains` under `faketime` (the night's 02:00 UTC); " + consolidating
                 + "restic: `backup --time` "
                 "and `forget --prune`; borg: `create --compression zstd,3 --timestamp`, `prune` and `compact`. "
                 "Kept = backups listed after the last night; stored = bytes in the destination or repository; "
                 "time = the nights' commands added up (wall, then CPU).")
        L.append("")
        L.append("| tool | kept | of them full | stored | stored ÷ restic | nights' wall s | wall ÷ restic | CPU s | "
                 "failed commands |")
        L.append("|---|---|---|---|---|---|---|---|---|")
        for name, t in y["tools"].items():
            def ratio(key):
                return f"{t[key] / restic[key]:.2f}×" if restic.get(key) and t.get(key) is not None else "—"
            L.append(f"| {name} | {t.get('kept', '—')} | {t.get('fulls') if t.get('fulls') is not None else '—'} | "
                     f"{human_bytes(t.get('stored', 0))} | {ratio('stored')} | {t['total_wall_seconds']:.1f} | "
                     f"{ratio('total_wall_seconds')} | {t['total_cpu_seconds']:.1f} | {t['failure_count']} |")
    L.append("")
    L.append(f"{h} The candidates of issue 34, played on the same trees")
    L.append("")
    text = ("Accounting only (chainmodel.py): each backup stores what its design says, each content at what "
            "`zstd -3` makes of it; tar headers and manifests are left out of every row alike. "
            "÷ tree = content stored ÷ the last night's tree at what `zstd -3` makes of each file "
            f"({human_bytes(y.get('tree_compressed', 0))}).")
    m = y.get("model_today_vs_keepsake")
    if m:
        text += (f" The model of today's design keeps {m['model_kept']} backups and "
                 f"{human_bytes(m['model_content'])} of content; the real Keepsake run keeps {m['keepsake_kept']} in "
                 f"{human_bytes(m['keepsake_stored'] or 0)}.")
    L.append(text)
    L.append("")
    L.append("| candidate | how | kept | of them full | content stored | ÷ tree |"
             + (" ÷ restic's repository |" if restic else ""))
    L.append("|---|---|---|---|---|---|" + ("---|" if restic else ""))
    for c in y["candidates"]:
        per_tree = f"{c['stored'] / y['tree_compressed']:.2f}×" if y.get("tree_compressed") else "—"
        row = f"| {c['name']} | {c['what']} | {c['kept']} | {c['kept_fulls']} | {human_bytes(c['stored'])} | {per_tree} |"
        if restic:
            row += f" {c['stored'] / restic['stored']:.2f}× |" if restic.get("stored") else " — |"
        L.append(row)
    L.append("")
    L.append(f"{h} Through the year (every 30 nights)")
    L.append("")
    names = list(y["tools"]) + [c["name"] for c in y["candidates"]
                                if c["name"] in ("consolidate+blocks", "consolidate-no-fulls+blocks")]
    L.append("| night | " + " | ".join(f"{n} kept / stored" for n in names) + " |")
    L.append("|---|" + "---|" * len(names))
    for point in y["curve"]:
        cells = []
        for n in names:
            s = point["tools"].get(n) or point["candidates"].get(n)
            cells.append(f"{s['kept']} / {human_bytes(s['stored'])}")
        L.append(f"| {point['night']} | " + " | ".join(cells) + " |")
    if "restored" in y:
        L.append("")
        L.append(f"Keepsake's last backup restored to exactly the last night's tree: "
                 f"{'yes' if y.get('restored') else '**no**'}"
                 + (f"; with consolidation: {'yes' if y['restored_consolidated'] else '**no**'}"
                    if "restored_consolidated" in y else "")
                 + (f"; with blocks: {'yes' if y['restored_blocks'] else '**no**'}" if "restored_blocks" in y else "")
                 + ".")
    L += notes_lines(doc)
    return "\n".join(L) + "\n"
