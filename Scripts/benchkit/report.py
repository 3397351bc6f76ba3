"""The Markdown report, from a result's JSON document alone: what `Scripts/bench` prints and writes
beside the JSON, and what `--render-docs` puts into docs/performance.md."""

import re
import statistics

from .common import DEBIAN_PACKAGES, human_bytes
from .plan import PHASES, is_keepsake


def markdown(doc, level=2):
    """The report as Markdown, from the JSON document alone (also for --render-docs, whose
    headings start one level lower). Older documents lack some fields: those lines go."""
    if doc.get("kind") == "memory":
        return memory_markdown(doc, level)
    if doc.get("kind") == "year":
        from .year import year_markdown  # year imports this module
        return year_markdown(doc, level)
    if doc.get("kind") == "big-files":
        from .bigfiles import bigfiles_markdown  # bigfiles imports this module
        return bigfiles_markdown(doc, level)
    m, d = doc["machine"], doc["dataset"]
    v = doc["versions"]
    h = "#" * (level + 1)
    L = heading_lines(doc, level)
    ent = d["entries"]
    if d.get("kind") == "tree":
        L.append(f"- Tree: `{d['root']}` as it is on this machine (not generated, never changed by the bench): "
                 f"{human_bytes(d['bytes'])} in {d['regular_files']} files and {ent['directories']} folders, "
                 f"{ent['symlinks']} symlinks, {ent['hardlinks']} hard links"
                 + (f", {ent['other']} other entries" if ent.get("other") else "")
                 + (f", {ent['unreadable']} unreadable" if ent.get("unreadable") else ""))
    else:
        L.append(f"- Dataset (seed {d['seed']}): {human_bytes(d['bytes'])} in {d['regular_files']} files and "
                 f"{ent['directories']} folders — {ent['text']} source/text files, {ent['tiny']} tiny files, "
                 f"{ent['logs']} logs, {ent['media']} incompressible media files, {ent['binaries']} binaries, "
                 f"a {ent['deep'] // 2}-level deep tree, {ent['hardlinks']} hard links, {ent['symlinks']} symlinks")
    if doc.get("change"):
        c = doc["change"]
        L.append(f"- 1% change: {c['files']} files (the same ones every round; {human_bytes(c['bytes_of_changed_files'])} "
                 "in them) get up to 4 KiB rewritten in place and a line appended")
    L.append(f"- Versions: {v['keepsake']} (commit {(v.get('commit') or 'unknown')[:12]}), {v['tar']}, "
             f"zstd {version_number(v['zstd'])}, {v['gzip']}"
             + (f", {v['pigz']}" if v.get("pigz") else "")
             + f", restic: {v['restic']}, borg: {v['borg']}"
             + (f", age: {v['age']}" if v.get("age") else "")
             + (f", {v['seaweedfs']}" if v.get("seaweedfs") else ""))
    L += tools_lines(doc)
    cold = doc.get("cold")
    cold_rows = bool(cold) and cold.get("status") == "ok"
    if cold:
        if cold_rows:
            L.append(f"- Cold-cache rows: `{cold['how'].split(' before')[0]}` before each command of those rows "
                     "(full backup and full restore; each tool backs up again into a repository of its own and "
                     "restores from it); the next round warms the cache again")
        else:
            L.append(f"- No cold-cache rows: {cold['status']}")
    for var in doc.get("variants") or []:
        L.append(f"- Variant `{var['name']}`: keepsake with {var['spec']}, right after the plain keepsake row "
                 "in the same rounds")
    L.append(f"- Median of {doc['runs']} run{'s' if doc['runs'] != 1 else ''} (min–max), tools alternating "
             "(the order rotates every round), warm page cache" + (" except in the cold-cache rows" if cold_rows else "")
             + ", `sync` before each command. "
             f"Restores go into a tmpfs (`{doc['restore_dir']}`). CPU = user + sys of the command and its "
             "children; CPU ÷ wall = how many cores it kept busy (median of the runs' own ratios; at most "
             f"{m['cores']}.0 here); peak RSS = the largest single process (GNU time). Stored = bytes the tool's "
             "repository or archive holds (for a second backup: what it added). "
             "Ratio = Keepsake's median ÷ the row's median (below 1× is Keepsake better)"
             + ("; the rows on S3 (SeaweedFS) compare with Keepsake's S3 row." if doc["s3"].get("targets") is not None
                else "."))
    L += load_lines(doc)
    for ph in doc["phases"]:
        L.append("")
        L.append(f"{h} {ph['title']}")
        L.append("")
        L.append("| tool | wall s | CPU s | CPU ÷ wall | peak RSS | stored | Keepsake ÷ this: wall | CPU | stored |")
        L.append("|---|---|---|---|---|---|---|---|---|")
        for r in ph["rows"]:
            cell = r["label"].replace("|", "\\|")
            if r["status"] == "not installed":
                L.append(f"| {cell} | {r.get('why', 'not installed')[:160].replace('|', '/')} | | | | | | | |")
                continue
            if r["status"] == "failed":
                L.append(f"| {cell} | failed: {r['error'][:160].replace('|', '/')} | | | | | | | |")
                continue

            def rng(s, fmt):
                if not s:
                    return "—"
                if doc["runs"] == 1 or s["min"] == s["max"]:
                    return fmt(s["median"])
                return f"{fmt(s['median'])} ({fmt(s['min'])}–{fmt(s['max'])})"

            wall = rng(r["wall_seconds"], lambda x: f"{x:.2f}")
            cpu = rng(r["cpu_seconds"], lambda x: f"{x:.2f}")
            per_wall = r.get("cpu_per_wall")
            if per_wall is None and r.get("samples"):  # documents from before the column
                vals = [x["cpu"] / x["wall"] for x in r["samples"] if x.get("wall")]
                per_wall = {"median": statistics.median(vals)} if vals else None
            busy_cores = f"{per_wall['median']:.2f}" if per_wall else "—"
            rss = human_bytes(r["peak_rss_kib"]["median"] * 1024) if r.get("peak_rss_kib") else "—"
            stored = human_bytes(r["stored_bytes"]["median"]) if r.get("stored_bytes") else "—"
            ratio = r.get("keepsake_ratio", {})

            def x(key):
                return f"{ratio[key]:.2f}×" if key in ratio else ("—" if not is_keepsake(r["tool"]) else "")
            label = r["label"].replace("|", "\\|")
            label = label if not is_keepsake(r["tool"]) else f"**{label}**"
            if r["status"] == "partly failed":
                label += f" ({len(r['errors'])} run(s) failed: {r['errors'][0][:80]})"
            L.append(f"| {label} | {wall} | {cpu} | {busy_cores} | {rss} | {stored} | {x('wall_seconds')} | "
                     f"{x('cpu_seconds')} | {x('stored_bytes')} |")
    L += goals_markdown(doc, level)
    L += variants_markdown(doc, level)
    L += s3_markdown(doc, level)
    L += encryption_markdown(doc, level)
    L += notes_lines(doc)
    return "\n".join(L) + "\n"

def notes_lines(doc):
    """The notes a run made (what it noticed), after a blank line; none: nothing."""
    if not doc["notes"]:
        return []
    return ["", "Notes:"] + [f"- {n}" for n in doc["notes"]]

def heading_lines(doc, level):
    """The title, the machine and the command line of a report."""
    m = doc["machine"]
    what = f"{doc['label']}, " if doc.get("label") else ""
    return [f"{'#' * level} Keepsake benchmark — {what}{doc['date']}", "",
            f"- Machine: {m['cores']} cores, {m['cpu_model']}, {human_bytes(m['memory_bytes'])} RAM, "
            f"{m['os']}, Linux {m['kernel']}",
            f"- Command: `{doc['command']}` ({doc['elapsed_seconds']:.0f} s in all)"]

def tools_lines(doc):
    """What was installed before the bench and what it installed."""
    tools = doc.get("tools")
    if not tools:
        return []

    def named(c):
        package = DEBIAN_PACKAGES.get(c, c)
        return c if package == c else f"{c} ({package})"
    parts = [f"there before the bench: {', '.join(named(c) for c in tools['present']) or 'none'}",
             f"installed by the bench (apt-get): {', '.join(named(c) for c in tools['installed']) or 'none'}"]
    if tools["failed"]:
        parts.append("missing: " + "; ".join(f"{c} ({why})" for c, why in tools["failed"].items()))
    if tools.get("not_used"):
        parts.append(f"not used: {tools['not_used']}")
    return [f"- Tools: {'; '.join(parts)}"]

def load_lines(doc):
    """How busy the machine was."""
    la, m = doc["load_average"], doc["machine"]
    if la["at_start"] is None or la["median_while_measuring"] is None:
        return []
    busy = la["at_start"] > 0.5 * m["cores"] or la["median_while_measuring"] > m["cores"] + 0.5
    return [f"- Load average (1 min): {la['at_start']:.2f} when the bench started, median "
            f"{la['median_while_measuring']:.2f} (max {la['max_while_measuring']:.2f}) while measuring; the "
            "bench itself adds about 1" + (" — **other work was running: timings are noisy**" if busy else "")]

def ratio_value(t):
    """A ratio target's value cell: the ratio, the two medians and each round's ratio."""
    v = t["value"]
    if v is None:
        return f"not measured ({t.get('why_not', 'a row failed or did not run')})"
    value = f"{v:.2f}× ({t['numerator_median']:.2f} s ÷ {t['denominator_median']:.2f} s"
    if len(t["per_round"]) > 1:
        value += "; rounds " + ", ".join(f"{x:.2f}×" for x in t["per_round"])
    return value + ")"

def goals_markdown(doc, level=2):
    goals = doc.get("goals")
    if not goals:
        return []
    L = ["", f"{'#' * (level + 1)} Issue 16's goals: keepsake ÷ tar+zstd", ""]
    L.append("Keepsake's median ÷ the peer's median, side by side in the same rounds; each round's own ratio "
             "follows it. The goals were set for real trees (`--tree /usr/share`).")
    L.append("")
    L.append("| measure | value | goal | met |")
    L.append("|---|---|---|---|")
    for t in goals:
        if t.get("target") is None:
            goal, met = "—", "—"
        else:
            goal = f"{t['comparison']} {t['target']:.2f}×"
            met = "—" if t["met"] is None else ("met" if t["met"] else "**not met**")
        L.append(f"| {t['measure']} | {ratio_value(t)} | {goal} | {met} |")
    return L

def variants_markdown(doc, level=2):
    ratios = doc.get("variant_ratios")
    if not ratios:
        return []
    titles = dict(PHASES)
    rows = {(ph["phase"], r["tool"]): r for ph in doc["phases"] for r in ph["rows"]}
    L = ["", f"{'#' * (level + 1)} Variants", ""]
    L.append("Each variant is keepsake run with the settings below, in a folder of its own, right after the plain "
             "keepsake row in the same rounds. A ratio is of the two rows' medians (wall); the rounds' own ratios "
             "to the plain row follow it. Below 1× the variant is faster.")
    L.append("")
    for var in doc.get("variants") or []:
        L.append(f"- `{var['name']}`: {var['spec']}")
    L.append("")
    L.append("| row | variant | wall s | CPU ÷ wall | variant ÷ keepsake | variant ÷ tar+zstd |")
    L.append("|---|---|---|---|---|---|")
    done = set()
    for t in ratios:
        key = (t["phase"], t["variant"])
        if key in done:
            continue
        done.add(key)
        both = {x["denominator"]: x for x in ratios if (x["phase"], x["variant"]) == key}
        row = rows.get((t["phase"], t["numerator"]), {})
        wall = f"{row['wall_seconds']['median']:.2f}" if row.get("wall_seconds") else "—"
        busy = f"{row['cpu_per_wall']['median']:.2f}" if row.get("cpu_per_wall") else "—"
        vs_tar = both.get("tar-zstd")
        tar_cell = "" if vs_tar is None else (f"{vs_tar['value']:.2f}×" if vs_tar["value"] is not None else "—")
        L.append(f"| {titles.get(t['phase'], t['phase'])} | `{t['variant']}` | {wall} | {busy} | "
                 f"{ratio_value(both['keepsake']) if 'keepsake' in both else '—'} | {tar_cell} |")
    return L

def s3_markdown(doc, level=2):
    s3 = doc["s3"]
    if s3["status"].startswith("off"):
        return []
    L = ["", f"{'#' * (level + 1)} S3: SeaweedFS on loopback, targets", ""]
    if not s3.get("weed"):
        L.append(f"Not measured: {s3['status']}. Scripts/test-servers installs it at .build/seaweedfs/bin/weed "
                 "(or pass --weed PATH, or set KEEPSAKE_WEED).")
        return L
    if s3.get("targets") is None or s3["status"] != "ok":
        L.append(f"Not measured: {s3['status']}")
        return L
    L.append(f"One `weed mini` ({s3.get('version') or 'version unknown'}) on 127.0.0.1 for the whole bench, its data "
             "on the work folder's disk like the local repositories; every run backs up into a fresh prefix, every "
             "restore goes into a fresh folder of the tmpfs. A ratio is of the two rows' medians, side by side in the "
             "same rounds; each round's own ratio follows it.")
    L.append("")
    L.append("| measure | value | target | met |")
    L.append("|---|---|---|---|")
    for t in s3["targets"]:
        v = t["value"]
        if v is None:
            value = "not measured (a row failed or did not run)"
        elif t["unit"] == "×":
            value = f"{v:.2f}× ({t['numerator_median']:.2f} s ÷ {t['denominator_median']:.2f} s"
            if len(t["per_round"]) > 1:
                value += "; rounds " + ", ".join(f"{x:.2f}×" for x in t["per_round"])
            value += ")"
        elif t["unit"] == "KiB":
            value = human_bytes(v * 1024)
            if len(t["samples"]) > 1:
                value += " (runs " + ", ".join(human_bytes(x * 1024) for x in t["samples"]) + ")"
        else:
            value = f"{v:.3f} s"
            if len(t["samples"]) > 1:
                value += f" ({min(t['samples']):.3f}–{max(t['samples']):.3f})"
        target = human_bytes(t["target"] * 1024) if t["unit"] == "KiB" else (
            f"{t['target']:.2f}×" if t["unit"] == "×" else f"{t['target']} s")
        met = "—" if t["met"] is None else ("met" if t["met"] else "**not met**")
        L.append(f"| {t['measure']} | {value} | {t['comparison']} {target} | {met} |")
    if s3.get("cpu_per_wall"):
        L.append("")
        L.append(f"CPU ÷ wall of each command (median of the runs; {doc['machine']['cores']} cores, so at most "
                 f"{doc['machine']['cores']}.0), and the CPU the SeaweedFS process spent meanwhile:")
        L.append("")
        L.append("| row | wall s | CPU s | CPU ÷ wall | SeaweedFS CPU s |")
        L.append("|---|---|---|---|---|")
        for r in s3["cpu_per_wall"]:
            label = r["label"].replace("|", "\\|")
            label = label if not is_keepsake(r["tool"]) else f"**{label}**"
            server = f"{r['server_cpu_seconds']:.2f}" if r["server_cpu_seconds"] is not None else "—"
            L.append(f"| {label} | {r['wall_seconds']:.2f} | {r['cpu_seconds']:.2f} | {r['cpu_per_wall']:.2f} | {server} |")
    return L

def encryption_markdown(doc, level=2):
    enc = doc["encryption"]
    if enc["status"].startswith("off"):
        return []
    L = ["", f"{'#' * (level + 1)} Encryption (age v1): encrypted ÷ plain, targets", ""]
    L.append("The same data set backed up by keepsake encrypted to an age recipient (`--recipient age1…`, X25519; "
             "restored with `--identity FILE`) and with a passphrase (`--passphrase-file FILE`, scrypt), each into "
             "a folder of its own, in the same rounds as the plain keepsake row and right after it (plain, "
             "encrypted, plain, encrypted…); restic, which always encrypts, runs in the same rounds. A ratio is of "
             "the two rows' medians; each round's own ratio follows it. Restoring one file decrypts only the 64 KiB "
             "age chunks that hold its frames. A passphrase costs one scrypt run (about a second) once per object "
             "it encrypts — the archive and the manifest beside it — whatever the size of the backup; the "
             "difference row shows it.")
    L.append("")
    L.append("| measure | value | target | met |")
    L.append("|---|---|---|---|")
    for t in enc["targets"]:
        v = t["value"]
        if v is None:
            value = f"not measured ({t.get('why_not', 'a row failed or did not run')})"
        elif t["unit"] == "×":
            value = f"{v:.2f}× ({t['numerator_median']:.2f} s ÷ {t['denominator_median']:.2f} s"
            if len(t["per_round"]) > 1:
                value += "; rounds " + ", ".join(f"{x:.2f}×" for x in t["per_round"])
            value += ")"
        else:
            value = f"{v:+.2f} s ({t['numerator_median']:.2f} s − {t['denominator_median']:.2f} s"
            if len(t["per_round"]) > 1:
                value += "; rounds " + ", ".join(f"{x:+.2f} s" for x in t["per_round"])
            value += ")"
        if t.get("target") is None:
            target, met = "—", "—"
        else:
            target = f"{t['comparison']} {t['target']:.2f}×" if t["unit"] == "×" else f"{t['comparison']} {t['target']} s"
            met = "—" if t["met"] is None else ("met" if t["met"] else "**not met**")
        L.append(f"| {t['measure']} | {value} | {target} | {met} |")
    if enc.get("cpu_per_wall"):
        L.append("")
        L.append(f"CPU ÷ wall of each command (median of the runs; {doc['machine']['cores']} cores, so at most "
                 f"{doc['machine']['cores']}.0):")
        L.append("")
        L.append("| row | wall s | CPU s | CPU ÷ wall | peak RSS | stored |")
        L.append("|---|---|---|---|---|---|")
        for r in enc["cpu_per_wall"]:
            label = r["label"].replace("|", "\\|")
            label = label if not is_keepsake(r["tool"]) else f"**{label}**"
            stored = human_bytes(r["stored_bytes"]) if r["stored_bytes"] is not None else "—"
            L.append(f"| {label} | {r['wall_seconds']:.2f} | {r['cpu_seconds']:.2f} | {r['cpu_per_wall']:.2f} | "
                     f"{human_bytes(r['peak_rss_kib'] * 1024)} | {stored} |")
    if doc.get("age_check"):
        L.append("")
        L.append(f"`age -d -i FILE ARCHIVE | zstd -t` on keepsake's encrypted archive (round 1): {doc['age_check']}.")
    return L

def version_number(line):
    if not line:
        return "?"
    m = re.search(r"v(\d+\.\d+\.\d+)", line)
    return m.group(1) if m else line



def memory_markdown(doc, level=2):
    """The memory report as Markdown, from the JSON document alone (markdown hands a
    document of kind "memory" here)."""
    d, mem, v = doc["dataset"], doc["memory"], doc["versions"]
    goal_mib = mem["goal_kib"] // 1024
    L = heading_lines(doc, level)
    ext = d["entries"]["by_extension"]
    L.append(f"- Memory set (seed {d['seed']}): {d['regular_files']} small text files of {d['file_sizes']} "
             f"({human_bytes(d['bytes'])} in all: "
             + ", ".join(f"{n} .{e}" for e, n in sorted(ext.items(), key=lambda x: -x[1]))
             + f") in folders of {d['files_per_folder']}, {d['folders_per_group']} folders to a group; "
             f"{mem['entries']} entries with the {d['entries']['directories']} folders")
    L.append(f"- Versions: {v['keepsake']} (commit {(v.get('commit') or 'unknown')[:12]})"
             + (f", {v['time']}" if v.get("time") else ""))
    L += tools_lines(doc)
    L.append(f"- {doc['runs']} round{'s' if doc['runs'] != 1 else ''}: in each, the first two commands fill a fresh "
             "destination (`DEST`) with a full backup of the set (`SOURCE`) and a no-change incremental (their ids: "
             "`FULL`, `INCR`), and the others read them. `TARGET` is a fresh folder of the tmpfs "
             f"(`{doc['restore_dir']}`), `PATH` one small file late in the tree "
             f"(`{mem['small_file']}`); `find` matches {mem['find_matches']} paths in the two backups. Warm "
             "page cache, `sync` before each command, stdout to a file. Peak RSS = GNU time's `%M` (the largest "
             "single process), the largest of the rounds (each round's in brackets when they differ); wall = "
             "median (min–max) — the machine is shared, so wall times only show the scale")
    L += load_lines(doc)
    L.append("")
    L.append(f"{'#' * (level + 1)} Peak memory of each command: goal under {goal_mib} MiB for "
             f"{mem['goal_entries']} entries")
    L.append("")
    if mem["entries"] < mem["goal_entries"]:
        L.append(f"This run has {mem['entries']} entries, fewer than the goal's {mem['goal_entries']}: "
                 "a command under the goal here may not be under it there.")
        L.append("")
    L.append(f"| command | what | peak RSS MiB | wall s | under {goal_mib} MiB |")
    L.append("|---|---|---|---|---|")
    for r in mem["rows"]:
        command = f"`{r['command']}`"
        if r["status"] == "failed":
            L.append(f"| {command} | {r['what']} | failed: {r['error'][:160].replace('|', '/')} | | |")
            continue
        rss = r["peak_rss_kib"]
        peak = f"{rss['max'] / 1024:.1f}"
        per_round = [f"{s['rss_kib'] / 1024:.1f}" for s in r["samples"]]
        if len(set(per_round)) > 1:
            peak += " (" + ", ".join(per_round) + ")"
        wall = r["wall_seconds"]
        wall_cell = f"{wall['median']:.2f}"
        if f"{wall['min']:.2f}" != f"{wall['max']:.2f}":
            wall_cell += f" ({wall['min']:.2f}–{wall['max']:.2f})"
        met = "yes" if r["under_goal"] else "**no**"
        what = r["what"]
        if r["status"] == "partly failed":
            what += f" ({len(r['errors'])} run(s) failed: {r['errors'][0][:80].replace('|', '/')})"
        L.append(f"| {command} | {what} | {peak} | {wall_cell} | {met} |")
    L.append("")
    if mem["largest"]:
        verdict = {True: " Issue 16's goal: met.", False: " Issue 16's goal: **not met**."}.get(mem.get("met"), "")
        L.append(f"{mem['under_goal']} of {mem['commands']} commands under {goal_mib} MiB"
                 + (f" ({mem['failed']} failed or did not run)" if mem.get("failed") else "")
                 + f"; the largest peak: `{mem['largest']['command']}`, "
                 f"{mem['largest']['peak_rss_kib'] / 1024:.1f} MiB.{verdict}")
    else:
        L.append("No command ran.")
    L += notes_lines(doc)
    return "\n".join(L) + "\n"
