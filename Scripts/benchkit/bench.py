"""One benchmark run: the rounds, their measurements and the JSON document they make."""

import os
import platform
import shutil
import statistics
import subprocess
import sys

from .common import (DROP_CACHES, Failed, MiB, ROOT, count_restored, describe_variant, drop_caches, first_line,
    have_command, human_bytes, install_packages, loadavg, log, run_measured, sync, why_no_cold)
from .datasets import Dataset, RealTree
from .plan import (COLD_PHASES, COLD_RUN_ORDER, ENCRYPTION_PHASES, ENCRYPTION_TARGETS, GOALS, PHASES, RUN_ORDER,
    S3_PHASES, S3_TARGETS, TREE_PHASES, is_keepsake)
from .seaweed import SeaweedFS, find_weed
from .tools import (Borg, Keepsake, KeepsakeAge, KeepsakePassphrase, KeepsakeS3, KeepsakeVariant, Restic, ResticPeer,
    ResticS3, TarGzip, TarPigz, TarZstd, ZstdRead)


class Bench:
    def __init__(self, args):
        self.args = args
        self.work = os.path.abspath(args.work)
        self.notes = []
        self.keepsake = os.path.join(ROOT, ".build", "release", "keepsake")
        self.data = RealTree(args.tree) if args.tree else Dataset(self.work, args.size, args.files, args.seed)
        self.tools = [Keepsake(self), ZstdRead(self), TarZstd(self), TarGzip(self), TarPigz(self), Restic(self),
                      Borg(self, "zstd,3"), Borg(self, None)]
        wanted = set(args.tools.split(",")) | {"keepsake"} if args.tools else None
        if wanted:
            self.tools = [t for t in self.tools if t.name in wanted]
        # Variants: right after the plain keepsake row (and its encrypted rows, inserted below).
        self.variants = args.variant or []
        at = next(i for i, t in enumerate(self.tools) if t.name == "keepsake") + 1
        self.tools[at:at] = [KeepsakeVariant(self, v) for v in self.variants]
        # Encryption rows (on unless --no-encryption): keepsake encrypted to a recipient and with a
        # passphrase, right after the plain keepsake row; restic for its full backup and restore when
        # --tools leaves it out.
        self.encryption_state = {"enabled": args.encryption is not False}
        if args.encryption is not False:
            at = next(i for i, t in enumerate(self.tools) if t.name == "keepsake") + 1
            self.tools[at:at] = [KeepsakeAge(self), KeepsakePassphrase(self)]
            if not self.tool("restic"):
                self.tools.append(ResticPeer(self))
            self.encryption_state["status"] = "ok"
        else:
            self.encryption_state["status"] = "off (--no-encryption)"
        # S3 rows: keepsake-s3 whenever S3 is on, restic-s3 too unless --tools leaves restic out.
        self.s3_server = None
        self.s3_state = {"enabled": args.s3 is not False}
        if args.s3 is not False:
            weed, looked = find_weed(args.weed)
            self.s3_state.update({"weed": weed, "looked_for": looked})
            s3_tools = [KeepsakeS3(self)]
            if not wanted or wanted & {"restic", "restic-s3"}:
                s3_tools.append(ResticS3(self))
            if weed is None:
                if args.s3:
                    sys.exit(f"bench: --s3: SeaweedFS's weed is not at {looked}; run Scripts/test-servers "
                             "(it installs .build/seaweedfs/bin/weed), or pass --weed PATH / set KEEPSAKE_WEED")
                self.s3_state["status"] = f"SeaweedFS's weed not found at {looked}"
                self.note(f"no S3 rows: SeaweedFS's weed is not at {looked}; run Scripts/test-servers (it installs "
                          ".build/seaweedfs/bin/weed), or pass --weed PATH / set KEEPSAKE_WEED")
                for t in s3_tools:
                    t.missing = "no SeaweedFS: run Scripts/test-servers"
            self.tools += s3_tools
        else:
            self.s3_state["status"] = "off (--no-s3)"
        # Cold-cache rows: the full backup and full restore of the tools that take part, again,
        # with the page cache dropped before each command.
        self.cold_state = {"enabled": args.cold is not False,
                           "how": f"sync; echo 3 > {DROP_CACHES} before each command of these rows"}
        if args.cold is False:
            self.cold_state["status"] = "off (--no-cold)"
        else:
            why = why_no_cold()
            if why:
                if args.cold:
                    sys.exit(f"bench: --cold: cannot drop the page cache: {why}")
                self.cold_state["status"] = why
                self.note(f"no cold-cache rows: {why} (run the bench as root for them)")
            else:
                self.cold_state["status"] = "ok"
                for t in self.tools:
                    if t.cold:
                        t.label = {**t.label, **{cold: t.label[base] for cold, base in COLD_PHASES.items()}}
        # A real tree is never changed (and not verified, to keep the run short).
        if args.tree:
            for t in self.tools:
                t.label = {phase: label for phase, label in t.label.items() if phase in TREE_PHASES}
        self.tools_state = None  # what install_tools found and did
        self.age_check = None  # round 0: age -d | zstd -t on keepsake's encrypted archive
        self.commit = self._commit()
        self.results = {}  # (phase, tool) -> {"runs": [...], "errors": [...]}
        self.start_load = loadavg()
        self.loads = []

    def tool(self, name):
        return next((t for t in self.tools if t.name == name), None)

    def install_tools(self, install=True):
        """Installs with apt-get what the chosen rows run (GNU time for every row), unless
        --no-install; remembers what was there and what it installed, for the report."""
        global GNU_TIME
        commands = self.commands_used()
        if install:
            self.tools_state = install_packages(sorted(commands))
        else:
            self.tools_state = {"present": sorted(c for c in commands if have_command(c)), "installed": [],
                                "failed": {c: "--no-install" for c in sorted(commands) if not have_command(c)}}
        self.tools_state["not_used"] = "hyperfine (the bench times each command itself, with GNU time)"
        for c, why in self.tools_state["failed"].items():
            self.note(f"{c} is missing ({why}): the rows that need it say 'not installed'")
        GNU_TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None
        if not GNU_TIME:
            self.note("no GNU time (/usr/bin/time): CPU and peak RSS come from wait4, which counts only the "
                      "command and the children it waited for")

    def commands_used(self):
        """The commands of DEBIAN_PACKAGES the chosen rows run."""
        return {"time", "zstd"} | {c for t in self.tools for c in t.needs}

    def note(self, text):
        if text not in self.notes:
            self.notes.append(text)
            log("note:", text)

    def tools_for(self, phase):
        out = []
        for t in self.tools:
            if phase not in t.label:
                continue
            out.append(t)
        return out

    # -- the run ---------------------------------------------------------------------------
    def build(self):
        env = dict(os.environ)
        if not shutil.which("swift"):
            for candidate in ("/opt/swift/usr/bin", "/usr/share/swift/usr/bin"):
                if os.access(os.path.join(candidate, "swift"), os.X_OK):
                    env["PATH"] = candidate + os.pathsep + env["PATH"]
                    break
        # The binary Scripts/setup and Scripts/install make: the Swift runtime linked in.
        command = ["swift", "build", "-c", "release", "--static-swift-stdlib", "--product", "keepsake"]
        log(" ".join(command))
        r = subprocess.run(command, cwd=ROOT, env=env, stdout=sys.stderr, stderr=sys.stderr)
        if r.returncode != 0:
            sys.exit("bench: the release build failed")

    def warm(self):
        # Read every file once so all tools start with a warm page cache.
        buf = bytearray(MiB)
        for dirpath, _, filenames in os.walk(self.data.root):
            for name in filenames:
                p = os.path.join(dirpath, name)
                if os.path.islink(p) or not os.path.isfile(p):
                    continue
                try:
                    with open(p, "rb", buffering=0) as f:
                        while f.readinto(buf):
                            pass
                except OSError:
                    pass

    def record(self, phase, tool, sample=None, error=None):
        entry = self.results.setdefault((phase, tool.name), {"runs": [], "errors": []})
        if sample is not None:
            entry["runs"].append(sample)
        if error is not None:
            entry["errors"].append(error)

    def measure(self, phase, tool, cmd, rnd, cwd=None):
        sync()  # writeback of the previous command is not charged to this one
        if phase in COLD_PHASES:
            try:
                drop_caches()
            except OSError as e:
                raise Failed(f"could not drop the page cache: {e.strerror or e}")
        load = loadavg()
        if load is not None:
            self.loads.append(load)
        label = f"r{rnd}-{phase}-{tool.name}"
        server = self.s3_server if getattr(tool, "s3", False) else None
        before = server.cpu_seconds() if server else None
        sample, stdout = run_measured(cmd, self.work, env=tool.env(), cwd=cwd, label=label)
        sample["round"] = rnd
        after = server.cpu_seconds() if server else None
        if before is not None and after is not None:
            sample["server_cpu"] = after - before  # what SeaweedFS spent serving this command
        return sample, stdout

    def start_s3(self, runs_root):
        """Starts the one SeaweedFS of the bench; on failure the S3 rows say why."""
        s3_tools = [t for t in self.tools if getattr(t, "s3", False) and not getattr(t, "missing", False)]
        if not s3_tools:
            return
        self.s3_server = SeaweedFS(self.s3_state["weed"], os.path.join(runs_root, "seaweedfs"),
                                   os.path.join(self.work, "logs", "seaweedfs.log"))
        self.s3_state["version"] = self.s3_server.version()
        log(f"starting SeaweedFS ({self.s3_state['version'] or self.s3_state['weed']}) on 127.0.0.1")
        try:
            self.s3_server.start()
        except (Failed, OSError) as e:
            self.s3_server.stop()
            self.s3_server = None
            why = f"SeaweedFS did not start: {e}"
            self.s3_state["status"] = why
            self.note(why)
            for t in s3_tools:
                t.missing = "SeaweedFS did not start (see the notes)"
            return
        self.s3_state["status"] = "ok"
        self.s3_state["ready_seconds"] = round(self.s3_server.ready_seconds, 1)
        log(f"SeaweedFS answers S3 at {self.s3_server.endpoint} (after {self.s3_server.ready_seconds:.1f} s)")

    def run(self):
        a = self.args
        os.makedirs(os.path.join(self.work, "logs"), exist_ok=True)
        available = []
        for t in self.tools:
            if t.available():
                available.append(t)
            else:
                t.missing = True
        restore_base = os.path.join(a.restore_dir, f"keepsake-bench-{os.getpid()}")
        need = self.data.info["bytes"] * 1.2
        free = shutil.disk_usage(a.restore_dir).free
        if free < need:
            sys.exit(f"bench: {a.restore_dir} has {human_bytes(free)} free; restores need about {human_bytes(need)}")
        log("warming the page cache")
        self.warm()
        self.change_info = None
        runs_root = os.path.join(self.work, "runs")
        if os.path.exists(runs_root):
            shutil.rmtree(runs_root)
        os.makedirs(runs_root)
        try:
            self.start_s3(runs_root)
            available = [t for t in available if not getattr(t, "missing", False)]
            # The order rotates every round; an encrypted keepsake row stays right after the plain
            # one (plain, encrypted, plain, encrypted… in the same rounds).
            units = []
            for t in available:
                lead = next((u for u in units if u[0].name == getattr(t, "follows", None)), None)
                if lead is not None:
                    lead.append(t)
                else:
                    units.append([t])
            run_order = [p for p in RUN_ORDER if any(p in t.label for t in available)]
            cold_order = [p for p in COLD_RUN_ORDER if any(p in t.label for t in available)]
            for rnd in range(a.runs):
                shift = rnd % len(units)
                order = [t for u in units[shift:] + units[:shift] for t in u]
                round_dir = os.path.join(runs_root, f"round-{rnd}")
                os.makedirs(round_dir)
                if rnd > 0 and cold_order:
                    log("warming the page cache again (the cold rows emptied it)")
                    self.warm()
                log(f"round {rnd + 1}/{a.runs}: {', '.join(t.name for t in order)}")
                live = self.prepare_all(order, round_dir, run_order)
                for phase in run_order:
                    if phase == "changed":
                        undo, n, nbytes = self.data.change()
                        self.change_info = {"files": n, "bytes_of_changed_files": nbytes}
                    try:
                        for t in live:
                            if phase not in t.label:
                                continue
                            self.run_one(phase, t, rnd, restore_base)
                    finally:
                        if phase == "changed":
                            self.data.undo(undo)
                if cold_order:
                    # Each tool backs up again into a repository of its own, then restores from it.
                    cold_dir = os.path.join(round_dir, "cold")
                    os.makedirs(cold_dir)
                    log(f"round {rnd + 1}/{a.runs}, cold cache: "
                        f"{', '.join(t.name for t in order if 'full-cold' in t.label)}")
                    live = self.prepare_all([t for t in order if "full-cold" in t.label], cold_dir, cold_order)
                    for phase in cold_order:
                        for t in live:
                            if phase in t.label:
                                self.run_one(phase, t, rnd, restore_base)
                # The repositories stay until the end: deleting gigabytes on this disk slows
                # the writes that follow (ext4 discard), which would skew the next round.
        finally:
            if self.s3_server:
                log("stopping SeaweedFS")
                self.s3_server.stop()
            if os.path.exists(restore_base):
                shutil.rmtree(restore_base)
            if not a.keep:
                shutil.rmtree(runs_root, ignore_errors=True)

    def prepare_all(self, order, round_dir, phases):
        """Prepares each tool's repository in round_dir; the phases of one that fails say why."""
        live = []
        for t in order:
            try:
                t.prepare(round_dir)
                live.append(t)
            except (subprocess.CalledProcessError, OSError) as e:
                for phase in t.label:
                    if phase in phases:
                        self.record(phase, t, error=f"setup failed: {e}")
        return live

    def run_one(self, phase, t, rnd, restore_base):
        base = COLD_PHASES.get(phase, phase)  # a cold row runs the same command as its warm one
        try:
            if base in ("full", "nochange", "changed"):
                before = t.stored() if base != "full" else 0
                sample, stdout = self.measure(phase, t, t.backup_cmd(base), rnd)
                t.after_backup(base, stdout)
                sample["stored"] = t.stored() - before
                if rnd == 0 and phase == "full" and hasattr(t, "check_with_age"):
                    t.check_with_age()
            elif base == "one":
                target = os.path.join(restore_base, t.name)
                os.makedirs(target)
                relative = self.data.small_file()
                try:
                    sample, _ = self.measure(phase, t, t.restore_one_cmd(target, relative), rnd, cwd=t.restore_cwd(target))
                    files, _ = count_restored(target)
                    if files != 1:
                        self.note(f"{t.label['one']} restored {files} files instead of {relative}")
                finally:
                    shutil.rmtree(target, ignore_errors=True)
                sample["stored"] = None
            elif base == "restore":
                target = os.path.join(restore_base, t.name)
                os.makedirs(target)
                try:
                    sample, _ = self.measure(phase, t, t.restore_cmd(target), rnd, cwd=t.restore_cwd(target))
                    if rnd == 0:
                        files, nbytes = count_restored(target)
                        want_files, want_bytes = self.data.info["regular_files"], self.data.info["bytes"]
                        if (files, nbytes) != (want_files, want_bytes):
                            self.note(f"{t.label['restore']}{' (cold)' if phase != base else ''} restored {files} "
                                      f"files, {nbytes} bytes; the {'tree' if self.data.kind == 'tree' else 'dataset'} "
                                      f"has {want_files} files, {want_bytes} bytes")
                finally:
                    shutil.rmtree(target, ignore_errors=True)
                sample["stored"] = None
            else:
                sample, _ = self.measure(phase, t, t.verify_cmd(), rnd)
                sample["stored"] = None
            self.record(phase, t, sample)
            log(f"  {phase:12} {t.name:20} {sample['wall']:8.2f} s wall {sample['cpu']:8.2f} s CPU "
                f"{sample['cpu'] / sample['wall'] if sample['wall'] else 0:5.2f} CPU÷wall "
                f"{sample['rss_kib'] / 1024:7.1f} MiB" + (f"  stored {human_bytes(sample['stored'])}" if sample.get('stored') is not None else ""))
        except Failed as e:
            self.record(phase, t, error=str(e))
            log(f"  {phase:12} {t.name:20} FAILED {e}")

    # -- reporting -------------------------------------------------------------------------
    def summary(self, phase, t):
        if getattr(t, "missing", False):
            out = {"status": "not installed"}
            if isinstance(t.missing, str):
                out["why"] = t.missing
            return out
        entry = self.results.get((phase, t.name))
        if not entry or not entry["runs"]:
            err = entry["errors"][0] if entry and entry["errors"] else "did not run"
            return {"status": "failed", "error": err}
        runs = entry["runs"]

        def stat(key):
            vals = [r[key] for r in runs if r.get(key) is not None]
            if not vals:
                return None
            return {"median": statistics.median(vals), "min": min(vals), "max": max(vals)}

        for r in runs:
            r["cpu_per_wall"] = r["cpu"] / r["wall"] if r["wall"] else None
        out = {"status": "ok" if not entry["errors"] else "partly failed", "runs": len(runs),
               "wall_seconds": stat("wall"), "cpu_seconds": stat("cpu"), "user_seconds": stat("user"),
               "sys_seconds": stat("sys"), "cpu_per_wall": stat("cpu_per_wall"), "peak_rss_kib": stat("rss_kib"),
               "stored_bytes": stat("stored"), "samples": runs}
        if entry["errors"]:
            out["errors"] = entry["errors"]
        return out

    def machine(self):
        cpu = "unknown"
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    if line.startswith("model name"):
                        cpu = line.split(":", 1)[1].strip()
                        break
        except OSError:
            pass
        mem = None
        try:
            with open("/proc/meminfo") as f:
                mem = int(f.readline().split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            pass
        return {"cores": os.cpu_count(), "cpu_model": cpu, "memory_bytes": mem, "kernel": platform.release(),
                "os": self._os_name()}

    @staticmethod
    def _os_name():
        try:
            with open("/etc/os-release") as f:
                for line in f:
                    if line.startswith("PRETTY_NAME="):
                        return line.split("=", 1)[1].strip().strip('"')
        except OSError:
            pass
        return platform.system()

    def versions(self):
        v = {"keepsake": first_line([self.keepsake, "--version"]), "tar": first_line(["tar", "--version"]),
             "zstd": first_line(["zstd", "--version"]), "gzip": first_line(["gzip", "--version"])}
        if self.tool("tar-pigz"):
            v["pigz"] = first_line(["pigz", "--version"]) if shutil.which("pigz") else "not installed"
        if self.encryption_state["enabled"]:
            v["age"] = first_line(["age", "--version"]) if shutil.which("age") else "not installed"
        v["restic"] = first_line(["restic", "version"]) if shutil.which("restic") else "not installed"
        v["borg"] = first_line(["borg", "--version"]) if shutil.which("borg") else "not installed"
        if self.s3_state.get("weed"):
            v["seaweedfs"] = self.s3_state.get("version") or "unknown"
        v["commit"] = self.commit  # as the run started (the binary was built from it)
        return v

    @staticmethod
    def _commit():
        # Read .git without running git.
        git = os.path.join(ROOT, ".git")
        try:
            if os.path.isfile(git):
                with open(git) as f:
                    git = os.path.join(ROOT, f.read().split(":", 1)[1].strip())
            with open(os.path.join(git, "HEAD")) as f:
                head = f.read().strip()
            if not head.startswith("ref:"):
                return head
            ref = head[4:].strip()
            common = git
            if os.path.exists(os.path.join(git, "commondir")):
                with open(os.path.join(git, "commondir")) as f:
                    common = os.path.normpath(os.path.join(git, f.read().strip()))
            for base in (git, common):
                p = os.path.join(base, ref)
                if os.path.exists(p):
                    with open(p) as f:
                        return f.read().strip()
            with open(os.path.join(common, "packed-refs")) as f:
                for line in f:
                    if line.strip().endswith(" " + ref):
                        return line.split()[0]
        except (OSError, IndexError):
            pass
        return None

    def report(self, command_line, started, elapsed):
        machine = self.machine()
        versions = self.versions()
        phases = []
        for phase, title in PHASES:
            rows = []
            tools = [t for t in self.tools if phase in t.label]
            if not tools:
                continue  # not measured in this run (cold rows off, a real tree's phases)
            for t in tools:
                s = self.summary(phase, t)
                s["tool"] = t.name
                s["label"] = t.label[phase]
                # The rows on S3 compare with Keepsake's S3 row, the others with Keepsake's.
                ks_name = "keepsake-s3" if getattr(t, "s3", False) else "keepsake"
                ks = self.summary(phase, self.tool(ks_name)) if self.tool(ks_name) else None
                if not is_keepsake(t.name) and s["status"] in ("ok", "partly failed") and ks and ks["status"] in ("ok", "partly failed"):
                    s["compared_with"] = ks_name
                    ratios = {}
                    for key in ("wall_seconds", "cpu_seconds", "peak_rss_kib", "stored_bytes"):
                        a, b = ks.get(key), s.get(key)
                        if a and b and b["median"]:
                            ratios[key] = a["median"] / b["median"]
                    s["keepsake_ratio"] = ratios
                rows.append(s)
            phases.append({"phase": phase, "title": title, "rows": rows})
        doc = {"date": started.isoformat(timespec="seconds"), "label": self.args.label, "quick": self.args.quick,
               "kind": self.data.kind, "command": command_line,
               "elapsed_seconds": round(elapsed, 1), "machine": machine, "versions": versions,
               "runs": self.args.runs, "restore_dir": self.args.restore_dir,
               "tools": self.tools_state, "cold": self.cold_state,
               "variants": [{"name": v["name"], "tool": f"keepsake[{v['name']}]", "env": v["env"], "args": v["args"],
                             "spec": describe_variant(v)} for v in self.variants],
               "load_average": {"at_start": self.start_load,
                                "median_while_measuring": statistics.median(self.loads) if self.loads else None,
                                "max_while_measuring": max(self.loads) if self.loads else None},
               "dataset": self.data.info, "change": self.change_info, "phases": phases,
               "s3": self.s3_report(), "encryption": self.encryption_report(), "age_check": self.age_check,
               "goals": self.ratio_report(GOALS), "variant_ratios": self.variant_report(), "notes": self.notes}
        return doc

    def runs_of(self, phase, name):
        entry = self.results.get((phase, name))
        return entry["runs"] if entry else []

    def ratio_report(self, specs):
        """Each spec's numerator ÷ denominator (medians, and each round's own ratio) with its
        target, for the phases this run measured."""
        out = []
        for spec in specs:
            phase, key, num, den = spec["phase"], spec["key"], spec["numerator"], spec["denominator"]
            if not any(phase in t.label for t in self.tools):
                continue
            t = dict(spec)
            a_vals = [r[key] for r in self.runs_of(phase, num) if r.get(key) is not None]
            b_vals = [r[key] for r in self.runs_of(phase, den) if r.get(key) is not None]
            a = statistics.median(a_vals) if a_vals else None
            b = statistics.median(b_vals) if b_vals else None
            value = a / b if a is not None and b else None
            if value is None:
                missing = num if a is None else den
                tool = self.tool(missing)
                t["why_not"] = (f"no {missing} row" if tool is None else f"{missing} not installed"
                                if getattr(tool, "missing", False) else f"{missing} failed or did not run")
            by_round = {r["round"]: r[key] for r in self.runs_of(phase, den) if r.get(key)}
            t["per_round"] = [r[key] / by_round[r["round"]] for r in self.runs_of(phase, num)
                              if r.get(key) is not None and r["round"] in by_round]
            t.update({"numerator_median": a, "denominator_median": b, "value": value})
            if value is None or spec.get("target") is None:
                t["met"] = None
            else:
                t["met"] = value <= spec["target"] if spec["comparison"] == "≤" else value < spec["target"]
            out.append(t)
        return out

    def variant_report(self):
        """Each variant ÷ the plain keepsake row, and ÷ tar+zstd where tar has the phase."""
        specs = []
        for v in self.variants:
            name = f"keepsake[{v['name']}]"
            for phase, _ in PHASES:
                if phase not in self.tool(name).label:
                    continue
                specs.append({"variant": v["name"], "measure": f"{v['name']} ÷ keepsake", "phase": phase,
                              "numerator": name, "denominator": "keepsake", "key": "wall", "unit": "×"})
                if self.tool("tar-zstd") and phase in self.tool("tar-zstd").label:
                    specs.append({"variant": v["name"], "measure": f"{v['name']} ÷ tar+zstd", "phase": phase,
                                  "numerator": name, "denominator": "tar-zstd", "key": "wall", "unit": "×"})
        return self.ratio_report(specs)

    @staticmethod
    def cpu_row(phase, tool, runs):
        """A row of a section's CPU table: the medians of `runs` of `tool` in `phase`."""
        return {"phase": phase, "tool": tool.name, "label": tool.label[phase],
                "wall_seconds": statistics.median(r["wall"] for r in runs),
                "cpu_seconds": statistics.median(r["cpu"] for r in runs),
                "cpu_per_wall": statistics.median(r["cpu"] / r["wall"] for r in runs if r["wall"])}

    def s3_report(self):
        """The S3 rows against their targets, and CPU ÷ wall of each."""
        st = self.s3_state
        out = {"status": st.get("status", "did not run"), "weed": st.get("weed"), "version": st.get("version"),
               "server": "weed mini (one node) on 127.0.0.1, data in the work folder" if st.get("weed") else None,
               "ready_seconds": st.get("ready_seconds")}
        if not st["enabled"] or not st.get("weed"):
            return out

        def runs(phase, name):
            entry = self.results.get((phase, name))
            return entry["runs"] if entry else []

        def median(phase, name, key):
            vals = [r[key] for r in runs(phase, name) if r.get(key) is not None]
            return statistics.median(vals) if vals else None

        targets = []
        for spec in S3_TARGETS:
            t = {k: v for k, v in spec.items()}
            phase, key = spec["phase"], spec["key"]
            if "denominator" in spec:
                a, b = median(phase, spec["numerator"], key), median(phase, spec["denominator"], key)
                value = a / b if a is not None and b else None
                t.update({"numerator_median": a, "denominator_median": b})
                by_round = {r["round"]: r[key] for r in runs(phase, spec["denominator"]) if r.get(key)}
                t["per_round"] = [r[key] / by_round[r["round"]] for r in runs(phase, spec["numerator"])
                                  if r.get(key) is not None and r["round"] in by_round]
            else:
                vals = [r[key] for r in runs(phase, spec["tool"]) if r.get(key) is not None]
                value = (max(vals) if spec.get("of") == "max" else statistics.median(vals)) if vals else None
                t["samples"] = vals
            t["value"] = value
            if value is None:
                t["met"] = None
            else:
                t["met"] = value <= spec["target"] if spec["comparison"] == "≤" else value < spec["target"]
            targets.append(t)
        out["targets"] = targets
        cpu_rows = []
        for phase, _ in PHASES:
            for name in ("keepsake", "keepsake-s3", "restic", "restic-s3"):
                t = self.tool(name)
                if not t or phase not in t.label or phase not in S3_PHASES:
                    continue
                rs = runs(phase, name)
                if not rs:
                    continue
                server = [r["server_cpu"] for r in rs if r.get("server_cpu") is not None]
                cpu_rows.append(self.cpu_row(phase, t, rs) | {"server_cpu_seconds": statistics.median(server) if server else None})
        out["cpu_per_wall"] = cpu_rows
        return out

    def encryption_report(self):
        """The encryption rows against their targets (encrypted ÷ plain, ÷ restic), and CPU ÷ wall of each."""
        st = self.encryption_state
        out = {"status": st["status"]}
        if not st["enabled"]:
            return out
        out["keys"] = {"recipient": "one X25519 identity from keepsake keygen for the whole bench",
                       "passphrase": "a random passphrase in a 0600 file, age scrypt"}

        def runs(phase, name):
            entry = self.results.get((phase, name))
            return entry["runs"] if entry else []

        def median(phase, name, key):
            vals = [r[key] for r in runs(phase, name) if r.get(key) is not None]
            return statistics.median(vals) if vals else None

        def why_not(name):
            t = self.tool(name)
            if t is None:
                return f"no {name} row"
            if getattr(t, "missing", False):
                return f"{name} not installed"
            return "a row failed or did not run"

        targets = []
        for spec in ENCRYPTION_TARGETS:
            t = {k: v for k, v in spec.items()}
            phase, key, num, den = spec["phase"], spec["key"], spec["numerator"], spec["denominator"]
            difference = spec.get("of") == "difference"
            a, b = median(phase, num, key), median(phase, den, key)
            if a is None or not b:
                value = None
                t["why_not"] = why_not(num if a is None else den)
            else:
                value = a - b if difference else a / b
            t.update({"numerator_median": a, "denominator_median": b})
            by_round = {r["round"]: r[key] for r in runs(phase, den) if r.get(key)}
            t["per_round"] = [(r[key] - by_round[r["round"]]) if difference else r[key] / by_round[r["round"]]
                              for r in runs(phase, num) if r.get(key) is not None and r["round"] in by_round]
            t["value"] = value
            if value is None or spec.get("target") is None:
                t["met"] = None
            else:
                t["met"] = value <= spec["target"] if spec["comparison"] == "≤" else value < spec["target"]
            targets.append(t)
        out["targets"] = targets
        cpu_rows = []
        for phase, _ in PHASES:
            if phase not in ENCRYPTION_PHASES:
                continue
            for name in ("keepsake", "keepsake-age", "keepsake-pass", "restic"):
                t = self.tool(name)
                if not t or phase not in t.label:
                    continue
                rs = runs(phase, name)
                if not rs:
                    continue
                stored = [r["stored"] for r in rs if r.get("stored") is not None]
                cpu_rows.append(self.cpu_row(phase, t, rs) | {"peak_rss_kib": statistics.median(r["rss_kib"] for r in rs),
                                                              "stored_bytes": statistics.median(stored) if stored else None})
        out["cpu_per_wall"] = cpu_rows
        return out
