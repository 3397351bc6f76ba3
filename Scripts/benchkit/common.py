"""What every part of the bench shares: the repository root, sizes and counts, installing the tools,
dropping the page cache, --variant specs, and running a measured command."""

import argparse
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import time

# The repository: two folders above this file (Scripts/benchkit/).
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MiB = 1024 * 1024


def log(*parts):
    print("bench:", *parts, file=sys.stderr, flush=True)


def parse_size(text):
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)(i?[bB])?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (use e.g. 300M, 1G, 50000000)")
    factor = {"": 1, "k": 1024, "m": MiB, "g": 1024 * MiB, "t": 1024 * 1024 * MiB}[m.group(2).lower()]
    return int(float(m.group(1)) * factor)


def parse_count(text):
    m = re.fullmatch(r"\s*(\d+)\s*([kK]?)\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a count: {text!r} (use e.g. 100000 or 100k)")
    return int(m.group(1)) * (1000 if m.group(2) else 1)


def human_bytes(n):
    if n is None:
        return "—"
    for unit, size in (("GiB", 1024 ** 3), ("MiB", MiB), ("KiB", 1024)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}" if abs(n) < 10 * size else f"{n / size:.1f} {unit}"
    return f"{n} B"


# ----------------------------------------------------------------------------------------
# Installing what the bench uses
# ----------------------------------------------------------------------------------------

# The command each tool needs, and the Debian package that has it. hyperfine is not used: the
# bench times each command itself (GNU time for CPU and peak RSS).
DEBIAN_PACKAGES = {"time": "time", "zstd": "zstd", "pigz": "pigz", "restic": "restic", "borg": "borgbackup",
                   "age": "age", "faketime": "faketime"}


def have_command(command):
    if command == "time":
        return os.access("/usr/bin/time", os.X_OK)
    return shutil.which(command) is not None


def install_packages(commands, attempts=4):
    """Installs the Debian packages of the commands not found (idempotent): apt-get update, then
    apt-get install -y, retried when the mirror does not resolve (from the second try on, apt
    fetches as root rather than as its sandbox user _apt, as Scripts/setup does). As root, or
    through `sudo -n` otherwise. Returns {"present", "installed", "failed": {command: why}}."""
    out = {"present": sorted(c for c in commands if have_command(c)), "installed": [], "failed": {}}
    missing = sorted(c for c in commands if not have_command(c))
    if not missing:
        return out
    packages = sorted({DEBIAN_PACKAGES[c] for c in missing})
    if os.geteuid() == 0:
        prefix = []
    elif shutil.which("sudo") and subprocess.run(["sudo", "-n", "true"], stdout=subprocess.DEVNULL,
                                                  stderr=subprocess.DEVNULL).returncode == 0:
        prefix = ["sudo", "-n"]
    else:
        for c in missing:
            out["failed"][c] = "not root and no password-less sudo: apt-get install " + DEBIAN_PACKAGES[c]
        return out
    if not shutil.which("apt-get"):
        for c in missing:
            out["failed"][c] = "no apt-get on this machine"
        return out
    log(f"installing {' '.join(packages)} with apt-get (for {', '.join(missing)})")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    options, why = [], ""
    for attempt in range(1, attempts + 1):
        steps = [prefix + ["apt-get"] + options + ["update", "-qq"],
                 prefix + ["apt-get"] + options + ["install", "-y", "-qq"] + packages]
        ok = True
        for step in steps:
            r = subprocess.run(step, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
            # apt-get update exits 0 when the mirror does not resolve (a warning): read what it says.
            if r.returncode != 0 or "Temporary failure resolving" in r.stdout or "Could not resolve" in r.stdout:
                ok = False
                lines = [l for l in r.stdout.strip().splitlines() if l.strip()]
                verb = "update" if "update" in step else "install"
                why = f"apt-get {verb}: exit {r.returncode}: " + " / ".join(lines[-2:])[-200:]
                break
        if ok:
            break
        options = ["-o", "APT::Sandbox::User=root"]
        if attempt < attempts:
            log(f"apt-get failed (attempt {attempt}: {why}); retrying in {attempt * 15} s")
            time.sleep(attempt * 15)
    for c in missing:
        if have_command(c):
            out["installed"].append(c)
        else:
            out["failed"][c] = why or f"apt-get install {DEBIAN_PACKAGES[c]} did not provide {c}"
    return out


# ----------------------------------------------------------------------------------------
# Cold cache
# ----------------------------------------------------------------------------------------

DROP_CACHES = "/proc/sys/vm/drop_caches"


def drop_caches():
    """sync, then drop the page cache, dentries and inodes. Raises OSError when it cannot."""
    sync()
    with open(DROP_CACHES, "w") as f:
        f.write("3\n")


def why_no_cold():
    """None when the page cache can be dropped here, else why not (tried once)."""
    if os.geteuid() != 0:
        return f"not root: dropping the page cache ({DROP_CACHES}) needs root"
    try:
        drop_caches()
    except OSError as e:
        return f"cannot write {DROP_CACHES}: {e.strerror or e}"
    return None


# ----------------------------------------------------------------------------------------
# Variants: extra keepsake rows (--variant NAME:SPEC)
# ----------------------------------------------------------------------------------------

VARIANT_COMMANDS = ("backup", "restore", "verify")


def parse_variant(text):
    """NAME:ITEM[,ITEM…] where an ITEM is ENV=VALUE (set in the environment of every command of
    the row; keepsake ignores variables it does not know), `backup ARGS…`, `restore ARGS…`,
    `verify ARGS…` (extra arguments, shell-quoted, for those commands; restore means both the
    full restore and the one-file restore) or `binary PATH` (another keepsake executable runs
    the row). A comma always separates items."""
    name, sep, spec = text.partition(":")
    if not sep or not re.fullmatch(r"[A-Za-z0-9._=+-]+", name) or not spec.strip():
        raise argparse.ArgumentTypeError(
            f"not a variant: {text!r} (use NAME:ENV=VALUE[,ENV=VALUE…] and/or NAME:backup ARGS…, e.g. "
            "readers=4:KEEPSAKE_READERS=4; NAME of letters, digits and ._=+-)")
    env, args, binary = {}, {c: [] for c in VARIANT_COMMANDS}, None
    for item in spec.split(","):
        item = item.strip()
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", item)
        if m:
            env[m.group(1)] = m.group(2)
            continue
        try:
            words = shlex.split(item)
        except ValueError as e:
            raise argparse.ArgumentTypeError(f"variant {name}: {item!r}: {e}")
        if len(words) > 1 and words[0] in VARIANT_COMMANDS:
            args[words[0]] += words[1:]
            continue
        if len(words) == 2 and words[0] == "binary":
            # Another build (an earlier commit's, for a refactor's before and after) in the
            # same rounds as this one's.
            if not (os.path.isfile(words[1]) and os.access(words[1], os.X_OK)):
                raise argparse.ArgumentTypeError(f"variant {name}: {words[1]!r} is not an executable file")
            binary = os.path.abspath(words[1])
            continue
        raise argparse.ArgumentTypeError(
            f"variant {name}: {item!r} is neither ENV=VALUE, 'binary PATH' nor 'backup|restore|verify ARGS…'")
    return {"name": name, "env": env, "args": args, "binary": binary}


def describe_variant(v):
    parts = [f"{k}={shlex.quote(val)}" for k, val in v["env"].items()]
    parts += [f"{c} {' '.join(shlex.quote(a) for a in v['args'][c])}" for c in VARIANT_COMMANDS if v["args"][c]]
    if v.get("binary"):
        parts.append(f"binary {shlex.quote(v['binary'])}")
    return ", ".join(parts)


# ----------------------------------------------------------------------------------------
# Measuring
# ----------------------------------------------------------------------------------------

GNU_TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None  # again after installing


class Failed(Exception):
    pass


def command_env(env):
    """The bench's environment with env's entries set (a None value: left out)."""
    full_env = dict(os.environ)
    for key, value in (env or {}).items():
        if value is None:
            full_env.pop(key, None)
        else:
            full_env[key] = value
    return full_env


def run_measured(cmd, work, env=None, cwd=None, label="run"):
    """Runs cmd (argv list), returns wall, user, sys, peak RSS (KiB) and stdout.
    CPU and RSS come from GNU time (-f '%U %S %M'): CPU includes waited-for children; RSS is
    the largest single process of the command (for a pipeline, the largest of its processes)."""
    out_path = os.path.join(work, "logs", f"{label}.out")
    err_path = os.path.join(work, "logs", f"{label}.err")
    time_path = os.path.join(work, "logs", f"{label}.time")
    full_env = command_env(env)
    argv = ([GNU_TIME, "-f", "%e %U %S %M", "-o", time_path] if GNU_TIME else []) + cmd
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=full_env, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
    with open(out_path, "rb") as f:
        stdout = f.read()
    if proc.returncode != 0:
        with open(err_path, "rb") as f:
            lines = f.read().decode(errors="replace").strip().splitlines()
        tail = " / ".join(l for l in lines if not l.startswith("Command exited"))[-300:]
        raise Failed(f"exit {proc.returncode}: {tail or '(no message)'}")
    if GNU_TIME:
        with open(time_path) as f:
            fields = f.read().split()[-4:]
        user, sys_, rss = float(fields[1]), float(fields[2]), int(fields[3])
    else:
        user, sys_, rss = usage.ru_utime, usage.ru_stime, usage.ru_maxrss
    return {"wall": wall, "user": user, "sys": sys_, "cpu": user + sys_, "rss_kib": rss}, stdout


def first_line(cmd):
    """The first line a command prints (stdout and stderr), for version strings; None when it
    cannot run, prints nothing or takes longer than 20 s."""
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=20)
        return r.stdout.strip().splitlines()[0] if r.stdout.strip() else None
    except (OSError, subprocess.TimeoutExpired):
        return None


def tree_size(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    total = 0
    for dirpath, _, filenames in os.walk(path):
        for name in filenames:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except FileNotFoundError:
                pass
    return total


def count_restored(path):
    regular, total = 0, 0
    for dirpath, _, filenames in os.walk(path):
        for name in filenames:
            st = os.lstat(os.path.join(dirpath, name))
            if stat.S_ISREG(st.st_mode):
                regular += 1
                total += st.st_size
    return regular, total


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def sync():
    subprocess.run(["sync"], check=False)
