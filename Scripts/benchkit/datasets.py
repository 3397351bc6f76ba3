"""The data the bench backs up: the seeded generated set, a real tree (--tree), and the memory set
(--memory)."""

import datetime
import json
import os
import random
import shutil
import stat
import sys
import time

from .common import MiB, human_bytes, log


GENERATOR_VERSION = 1  # bump when the dataset generator changes: cached datasets are then rebuilt

SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "ta", "vo", "shi", "dra", "pel", "quin", "zor", "tek",
             "bal", "cor", "fen", "gil", "hap", "jor", "lex", "mon", "nix", "orb", "pra", "sul",
             "tor", "ux", "vel", "wen", "yar", "zel", "ar", "em", "is", "on", "ul")


class Words:
    def __init__(self, rng, count=4000):
        seen = set()
        words = []
        while len(words) < count:
            w = "".join(rng.choice(SYLLABLES) for _ in range(rng.choice((1, 2, 2, 3, 3, 4))))
            if w not in seen:
                seen.add(w)
                words.append(w)
        self.words = words
        self.rng = rng

    def word(self):
        return self.rng.choice(self.words)

    def ident(self):
        parts = [self.word() for _ in range(self.rng.choice((1, 2, 2, 3)))]
        return parts[0] + "".join(p.capitalize() for p in parts[1:])

    def type_name(self):
        return "".join(self.word().capitalize() for _ in range(self.rng.choice((1, 2, 3))))

    def sentence(self, lo=4, hi=16):
        s = " ".join(self.word() for _ in range(self.rng.randint(lo, hi)))
        return s.capitalize() + self.rng.choice((".", ".", ".", ",", "?", ":"))


def code_line_pools(rng, words, per_language=12000):
    w = words
    r = rng

    def n():
        return str(r.choice((0, 1, 2, 8, 16, 42, 64, 100, 255, 1024, r.randint(0, 99999))))

    templates = {
        "swift": [
            lambda: f"import {w.type_name()}",
            lambda: f"struct {w.type_name()}: {w.type_name()} {{",
            lambda: f"    let {w.ident()}: {w.type_name()}",
            lambda: f"    var {w.ident()} = {w.type_name()}()",
            lambda: f"    func {w.ident()}(_ {w.ident()}: {w.type_name()}) throws -> {w.type_name()} {{",
            lambda: f"        let {w.ident()} = try {w.ident()}.{w.ident()}({w.ident()}: {n()})",
            lambda: f"        guard let {w.ident()} = {w.ident()} else {{ return nil }}",
            lambda: f"        if {w.ident()} > {n()} {{ {w.ident()} += {n()} }}",
            lambda: f"        for {w.ident()} in {w.ident()}.{w.ident()} {{",
            lambda: f"            {w.ident()}.append({w.ident()}[{n()}])",
            lambda: f"        return {w.type_name()}({w.ident()}: {w.ident()}, {w.ident()}: {n()})",
            lambda: f"    /// {w.sentence()}",
            lambda: f"        // {w.sentence()}",
            lambda: "        }", lambda: "    }", lambda: "}", lambda: "",
        ],
        "py": [
            lambda: f"import {w.word()}",
            lambda: f"from {w.word()}.{w.word()} import {w.type_name()}, {w.ident()}",
            lambda: f"class {w.type_name()}({w.type_name()}):",
            lambda: f"    def {w.word()}_{w.word()}(self, {w.word()}, {w.word()}={n()}):",
            lambda: f"        {w.word()} = self.{w.word()}_{w.word()}({w.word()}, {n()})",
            lambda: f"        if {w.word()} is None or {w.word()} > {n()}:",
            lambda: f"            raise {w.type_name()}Error(\"{w.sentence()}\")",
            lambda: f"        for {w.word()} in {w.word()}.{w.word()}():",
            lambda: f"            self.{w.word()}[{w.word()}] = {w.word()}.get(\"{w.word()}\", {n()})",
            lambda: f"        return {{\"{w.word()}\": {w.word()}, \"{w.word()}\": {n()}}}",
            lambda: f"    # {w.sentence()}",
            lambda: f"    \"\"\"{w.sentence(6, 20)}\"\"\"",
            lambda: "", lambda: "",
        ],
        "c": [
            lambda: f"#include <{w.word()}/{w.word()}.h>",
            lambda: f"#define {w.word().upper()}_{w.word().upper()} {n()}",
            lambda: f"static int {w.word()}_{w.word()}(struct {w.word()} *{w.word()}, size_t {w.word()})",
            lambda: "{", lambda: "}", lambda: "",
            lambda: f"    if ({w.word()}->{w.word()} < {n()})",
            lambda: f"        return -{w.word().upper()};",
            lambda: f"    {w.word()}->{w.word()}[{w.word()}] = {w.word()}_{w.word()}({w.word()}, {n()});",
            lambda: f"    for (size_t i = 0; i < {w.word()}; i++) {{",
            lambda: f"        {w.word()} += {w.word()}[i] * {n()};",
            lambda: "    }",
            lambda: f"    /* {w.sentence()} */",
            lambda: f"    memcpy({w.word()}, {w.word()}, sizeof(*{w.word()}) * {n()});",
        ],
        "js": [
            lambda: f"import {{ {w.ident()}, {w.ident()} }} from './{w.word()}/{w.word()}.js';",
            lambda: f"export function {w.ident()}({w.ident()}, {w.ident()} = {n()}) {{",
            lambda: f"  const {w.ident()} = await {w.ident()}.{w.ident()}({{ {w.ident()}: {n()} }});",
            lambda: f"  if (!{w.ident()}) throw new Error('{w.sentence()}');",
            lambda: f"  return {w.ident()}.map(({w.word()}) => {w.word()}.{w.ident()} + {n()});",
            lambda: f"  // {w.sentence()}",
            lambda: "}", lambda: "", lambda: "  });",
            lambda: f"  {w.ident()}.on('{w.word()}', () => {{",
        ],
        "md": [
            lambda: f"# {w.sentence(2, 5)}", lambda: f"## {w.sentence(2, 6)}", lambda: "",
            lambda: w.sentence(8, 24) + " " + w.sentence(8, 24),
            lambda: w.sentence(10, 30),
            lambda: f"- {w.sentence(3, 12)}",
            lambda: f"- `{w.ident()}`: {w.sentence(3, 10)}",
            lambda: f"    {w.word()} --{w.word()} {w.word()}/{w.word()}",
        ],
    }
    pools = {}
    for lang, tpl in templates.items():
        pools[lang] = [r.choice(tpl)() for _ in range(per_language)]
    return pools


EXTENSIONS = {"swift": ("swift",), "py": ("py",), "c": ("c", "h"), "js": ("js", "ts"), "md": ("md", "txt", "rst")}
TINY_NAMES = ("package.json", "LICENSE", "index.js", ".npmignore", "README", "__init__.py", "VERSION",
              ".gitkeep", "config.yml", "AUTHORS", "setup.cfg", "Makefile", ".editorconfig", "CHANGES")
LEVELS = ("INFO", "INFO", "INFO", "INFO", "DEBUG", "DEBUG", "WARN", "ERROR")
PATHS = ("/api/v1/users", "/api/v1/orders", "/api/v2/search", "/health", "/static/app.js", "/login",
         "/api/v1/items", "/metrics", "/api/v2/upload")


class Dataset:
    """A deterministic tree: source code and text, logs, media-like blobs, binaries,
    a deep tree, many tiny files, hard links and symlinks."""

    kind = "generated"

    def __init__(self, work, size, files, seed):
        self.size, self.files, self.seed = size, files, seed
        key = f"v{GENERATOR_VERSION}-{size}-{files}-s{seed}"
        self.base = os.path.join(work, f"dataset-{key}")
        self.root = os.path.join(self.base, "data")
        # tar archives it as NAME from PARENT (tar -C PARENT NAME).
        self.parent, self.name = self.base, "data"
        self.stamp = os.path.join(self.base, "dataset.json")
        self.dirty = os.path.join(self.base, "MODIFIED")
        self.info = None

    def ready(self):
        if os.path.exists(self.dirty) or not os.path.exists(self.stamp):
            return False
        try:
            with open(self.stamp) as f:
                info = json.load(f)
        except (OSError, ValueError):
            return False
        if any(info.get(key) != value for key, value in self.stamp_fields().items()):
            return False
        self.info = info
        return True

    def stamp_fields(self):
        """What a cached dataset's dataset.json must say to be reused."""
        return {"generator": GENERATOR_VERSION, "size": self.size, "files": self.files, "seed": self.seed}

    def describe(self):
        return f"{human_bytes(self.size)} in about {self.files} files, seed {self.seed}"

    def ensure(self, regenerate=False):
        if not regenerate and self.ready():
            log(f"reusing dataset {self.root}")
            return
        if os.path.exists(self.base):
            shutil.rmtree(self.base)
        os.makedirs(self.root)
        started = time.perf_counter()
        log(f"generating dataset ({self.describe()}) in {self.root}")
        self.info = self._generate()
        self.info["generation_seconds"] = round(time.perf_counter() - started, 1)
        with open(self.stamp, "w") as f:
            json.dump(self.info, f, indent=1)
        log(f"dataset ready in {self.info['generation_seconds']} s: {self.info['regular_files']} files, "
            f"{human_bytes(self.info['bytes'])}")

    def small_file(self):
        """A small regular file near the end of the tree in sorted order (where a tar must
        decompress nearly everything before it), relative to the dataset root."""
        if getattr(self, "_small", None) is None:
            self._small = last_small_file(self.root)
        return self._small

    # -- generation ------------------------------------------------------------------------
    def _generate(self):
        rng = random.Random(self.seed)
        words = Words(rng)
        pools = code_line_pools(rng, words)
        S, N = self.size, self.files
        root = self.root
        counts = {"text": 0, "tiny": 0, "logs": 0, "media": 0, "binaries": 0, "deep": 0,
                  "hardlinks": 0, "symlinks": 0, "directories": 0}
        sizes = {k: 0 for k in counts}
        self._dir_mtimes = []
        self._mtime_base = 1_700_000_000 * 10 ** 9

        def mtime_ns():
            return self._mtime_base + rng.randrange(0, 3 * 365 * 86400) * 10 ** 9 + rng.randrange(10 ** 9)

        def mkdir(path):
            if not os.path.isdir(path):
                os.makedirs(path)

        def write(path, data, mode=0o644):
            with open(path, "wb") as f:
                f.write(data)
            os.chmod(path, mode)
            t = mtime_ns()
            os.utime(path, ns=(t, t))

        # Budgets.
        n_logs = 2 if S < 64 * MiB else 4
        b_logs = int(S * 0.20)
        b_media = int(S * 0.33)
        b_bin = int(S * 0.07)
        n_media = max(3, min(int(N * 0.02), round(b_media / (4 * MiB))))
        n_bin = max(2, min(int(N * 0.01), round(b_bin / MiB)))
        n_links = max(3, round(N * 0.005))
        n_tiny = round(N * 0.35)
        depth = 48
        n_deep = depth * 2
        n_text = max(10, N - n_logs - n_media - n_bin - 2 * n_links - n_tiny - n_deep)
        b_tiny = n_tiny * 120
        b_deep = n_deep * 3000
        b_text = max(n_text * 200, S - b_logs - b_media - b_bin - b_tiny - b_deep)

        # Source code and text, in a project-like tree.
        text_sizes = [min(2 * MiB, max(40, int(rng.lognormvariate(8.7, 1.3)))) for _ in range(n_text)]
        for _ in range(3):
            scale = b_text / sum(text_sizes)
            text_sizes = [min(4 * MiB, max(40, int(s * scale))) for s in text_sizes]
        dirs = [os.path.join(root, "src")]
        mkdir(dirs[0])
        current = dirs[0]
        text_paths = []
        special = ["café notes", "日本語", "spaced name", "ÅÄÖ"]
        for i, size in enumerate(text_sizes):
            if rng.random() < 1 / 14 or i == 0:
                parent = rng.choice(dirs[-40:]) if rng.random() < 0.8 else rng.choice(dirs)
                if parent.count(os.sep) - root.count(os.sep) > 9:
                    parent = dirs[0]
                name = special.pop() if special and rng.random() < 0.02 else words.word()
                current = os.path.join(parent, name)
                if current in dirs:
                    current = current + f"-{i}"
                mkdir(current)
                dirs.append(current)
            lang = rng.choice(("swift", "py", "c", "js", "md", "md", "py", "c"))
            ext = rng.choice(EXTENSIONS[lang])
            path = os.path.join(current, f"{words.word()}_{i}.{ext}")
            write(path, self._text(rng, words, pools[lang], size, lang), 0o755 if rng.random() < 0.03 else 0o644)
            text_paths.append(path)
            counts["text"] += 1
            sizes["text"] += size

        # Many tiny files, in package-like folders.
        vendor = os.path.join(root, "vendor")
        made = 0
        while made < n_tiny:
            pkg = os.path.join(vendor, f"{words.word()}-{words.word()}-{made}")
            mkdir(pkg)
            dirs.append(pkg)
            for name in TINY_NAMES[: rng.randint(4, len(TINY_NAMES))]:
                if made >= n_tiny:
                    break
                size = rng.choice((0, 1, 12, 40, 90, 150, 300, 600))
                data = (words.sentence(1, 40) * 8).encode()[:size]
                write(os.path.join(pkg, name), data)
                made += 1
                sizes["tiny"] += len(data)
        counts["tiny"] = made

        # A few large compressible logs.
        logdir = os.path.join(root, "var", "log")
        mkdir(logdir)
        for i in range(n_logs):
            target = b_logs // n_logs
            path = os.path.join(logdir, f"app-{i}.log")
            self._write_log(path, rng, words, target)
            t = mtime_ns()
            os.utime(path, ns=(t, t))
            counts["logs"] += 1
            sizes["logs"] += target

        # Incompressible media-like blobs.
        mediadir = os.path.join(root, "media")
        raw = [rng.uniform(0, 1) for _ in range(n_media)]
        media_sizes = [int(32 * 1024 * (2048 ** x)) for x in raw]  # 32 KiB .. 64 MiB, log-uniform
        scale = b_media / sum(media_sizes)
        media_sizes = [max(4096, int(s * scale)) for s in media_sizes]
        for i, size in enumerate(media_sizes):
            kind = rng.choice(("photos", "photos", "video", "audio"))
            ext = {"photos": "jpg", "video": "mp4", "audio": "ogg"}[kind]
            header = {"jpg": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00", "mp4": b"\x00\x00\x00\x20ftypisom",
                      "ogg": b"OggS\x00\x02"}[ext]
            d = os.path.join(mediadir, kind)
            mkdir(d)
            path = os.path.join(d, f"IMG_{i:05d}.{ext}")
            with open(path, "wb") as f:
                f.write(header)
                left = size - len(header)
                while left > 0:
                    n = min(left, 4 * MiB)
                    f.write(rng.randbytes(n))
                    left -= n
            t = mtime_ns()
            os.utime(path, ns=(t, t))
            counts["media"] += 1
            sizes["media"] += size

        # Semi-compressible binaries (build outputs, databases).
        bindir = os.path.join(root, "build", "out")
        mkdir(bindir)
        symbols = [f"_{words.ident()}_{words.type_name()}".encode() for _ in range(400)]
        for i in range(n_bin):
            size = b_bin // n_bin
            parts, have = [], 0
            while have < size:
                k = rng.random()
                if k < 0.45:
                    chunk = rng.randbytes(rng.choice((512, 1024, 4096)))
                elif k < 0.7:
                    chunk = bytes(rng.choice((64, 512, 4096)))
                else:
                    chunk = b"\x00".join(rng.choices(symbols, k=rng.randint(8, 60)))
                parts.append(chunk)
                have += len(chunk)
            ext = rng.choice(("o", "so", "db", "bin"))
            write(os.path.join(bindir, f"{words.word()}-{i}.{ext}"), b"".join(parts)[:size], 0o755 if ext == "so" else 0o644)
            counts["binaries"] += 1
            sizes["binaries"] += size

        # A deep tree.
        d = os.path.join(root, "deep")
        for level in range(depth):
            d = os.path.join(d, f"level-{level:02d}-{words.word()}")
            mkdir(d)
            dirs.append(d)
            for j in range(2):
                size = rng.randint(500, 5500)
                write(os.path.join(d, f"{words.word()}-{j}.md"), self._text(rng, words, pools["md"], size, "md"))
                counts["deep"] += 1
                sizes["deep"] += size

        # Hard links and symlinks.
        linkdir = os.path.join(root, "links")
        mkdir(linkdir)
        for i in range(n_links):
            src = rng.choice(text_paths)
            os.link(src, os.path.join(linkdir, f"hard-{i}-{os.path.basename(src)}"))
            counts["hardlinks"] += 1
        for i in range(n_links):
            if i == 0:
                target = "../no/such/file"  # one dangling symlink
            elif i % 5 == 0:
                target = os.path.relpath(rng.choice(dirs), linkdir)
            else:
                target = os.path.relpath(rng.choice(text_paths), linkdir)
            os.symlink(target, os.path.join(linkdir, f"sym-{i}"))
            counts["symlinks"] += 1

        # Folder times last, deepest first.
        all_dirs = []
        for dirpath, dirnames, _ in os.walk(root):
            all_dirs.append(dirpath)
        for dirpath in sorted(all_dirs, key=lambda p: -p.count(os.sep)):
            t = mtime_ns()
            os.utime(dirpath, ns=(t, t))
        counts["directories"] = len(all_dirs)

        regular, total = self._scan()
        return {"generator": GENERATOR_VERSION, "size": self.size, "files": self.files, "seed": self.seed,
                "root": self.root, "regular_files": regular, "bytes": total,
                "entries": {k: v for k, v in counts.items()}, "bytes_by_kind": sizes}

    def _text(self, rng, words, pool, size, lang):
        head = {"md": f"# {words.sentence(2, 6)}\n\n",
                "py": f"# {words.sentence()}\n# Copyright {rng.randint(1999, 2025)} {words.type_name()}\n\n"}.get(
            lang, f"// {words.sentence()}\n// Copyright {rng.randint(1999, 2025)} {words.type_name()}\n\n")
        lines = rng.choices(pool, k=max(1, size // 30))
        text = (head + "\n".join(lines) + "\n").encode()
        while len(text) < size:
            text += ("\n".join(rng.choices(pool, k=max(1, (size - len(text)) // 30 + 1))) + "\n").encode()
        return text[:size]

    def _write_log(self, path, rng, words, target):
        t = 1_735_689_600_000  # ms
        services = [words.word() for _ in range(12)]
        messages = [words.sentence(3, 10) for _ in range(300)]
        written = 0
        with open(path, "w", buffering=4 * MiB) as f:
            while written < target:
                batch = []
                for _ in range(2000):
                    t += rng.randint(0, 40)
                    ts = datetime.datetime.fromtimestamp(t / 1000, datetime.timezone.utc)
                    line = (f"{ts:%Y-%m-%dT%H:%M:%S}.{t % 1000:03d}Z {rng.choice(LEVELS)} "
                            f"[{rng.choice(services)}-{rng.randint(1, 16)}] {rng.choice(messages)} "
                            f"path={rng.choice(PATHS)}/{rng.randint(1, 50000)} id={rng.getrandbits(48):012x} "
                            f"status={rng.choice((200, 200, 200, 201, 204, 304, 404, 500))} "
                            f"duration_ms={rng.randint(0, 3000) / 10}\n")
                    batch.append(line)
                chunk = "".join(batch)
                if written + len(chunk) > target:
                    chunk = chunk[: target - written]
                f.write(chunk)
                written += len(chunk)

    def _scan(self):
        regular, total = 0, 0
        for dirpath, dirnames, filenames in os.walk(self.root):
            for name in filenames:
                st = os.lstat(os.path.join(dirpath, name))
                if stat.S_ISREG(st.st_mode):
                    regular += 1
                    total += st.st_size
        return regular, total

    # -- the 1% change ---------------------------------------------------------------------
    def regular_files(self):
        out, seen = [], set()
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames.sort()
            for name in sorted(filenames):
                p = os.path.join(dirpath, name)
                st = os.lstat(p)
                if stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    out.append(p)
        return out

    def change(self, fraction=0.01):
        """Changes `fraction` of the files (the same files every time, chosen by the seed):
        rewrites up to 4 KiB in the middle and appends a line. Returns what undo() needs."""
        files = self.regular_files()
        rng = random.Random(f"{self.seed}-change")
        chosen = sorted(rng.sample(files, max(1, round(len(files) * fraction))))
        open(self.dirty, "w").close()
        undo, changed_bytes = [], 0
        for p in chosen:
            st = os.stat(p)
            length = min(4096, st.st_size)
            offset = rng.randrange(0, st.st_size - length + 1) if st.st_size else 0
            with open(p, "r+b") as f:
                f.seek(offset)
                old = f.read(length)
                f.seek(offset)
                f.write(rng.randbytes(length))
                f.seek(0, os.SEEK_END)
                f.write(b"\nchanged by Scripts/bench\n")
            undo.append((p, offset, old, st.st_size, st.st_atime_ns, st.st_mtime_ns))
            changed_bytes += st.st_size
        return undo, len(chosen), changed_bytes

    def undo(self, undo):
        for p, offset, old, size, atime, mtime in undo:
            with open(p, "r+b") as f:
                f.seek(offset)
                f.write(old)
                f.truncate(size)
            os.utime(p, ns=(atime, mtime))
        os.unlink(self.dirty)


def last_small_file(root):
    """The last small regular file (≤ 16 KiB, one link) of root in sorted walk order,
    relative to root."""
    chosen = None
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            try:
                st = os.lstat(full)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and 0 < st.st_size <= 16 * 1024 and st.st_nlink == 1:
                chosen = os.path.relpath(full, root)
    return chosen


class RealTree:
    """A tree the bench did not make (--tree PATH, e.g. /usr/share), measured as it is: never
    changed, so no 1%-change row; counted once at the start."""
    kind = "tree"

    def __init__(self, path):
        self.root = os.path.abspath(path).rstrip("/") or "/"
        self.parent, self.name = os.path.split(self.root)
        self.base = self.parent
        self.info = None

    def ensure(self, regenerate=False):
        if not os.path.isdir(self.root) or not self.name:
            sys.exit(f"bench: --tree {self.root}: not a folder below / (the bench archives it as NAME from its parent)")
        started = time.perf_counter()
        log(f"counting {self.root}")
        regular = total = dirs = symlinks = others = hardlinks = unreadable = 0
        seen = set()
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirs += 1
            for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
                try:
                    st = os.lstat(os.path.join(dirpath, name))
                except OSError:
                    unreadable += 1
                    continue
                if stat.S_ISREG(st.st_mode):
                    regular += 1
                    total += st.st_size
                    if st.st_nlink > 1:
                        if (st.st_dev, st.st_ino) in seen:
                            hardlinks += 1
                        seen.add((st.st_dev, st.st_ino))
                    if not os.access(os.path.join(dirpath, name), os.R_OK):
                        unreadable += 1
                elif stat.S_ISLNK(st.st_mode):
                    symlinks += 1
                else:
                    others += 1
        self.info = {"kind": "tree", "root": self.root, "regular_files": regular, "bytes": total,
                     "entries": {"directories": dirs, "symlinks": symlinks, "hardlinks": hardlinks, "other": others,
                                 "unreadable": unreadable},
                     "scan_seconds": round(time.perf_counter() - started, 1)}
        log(f"{self.root}: {regular} files, {human_bytes(total)}, {dirs} folders, {symlinks} symlinks "
            f"({self.info['scan_seconds']} s to count)")

    def small_file(self):
        if getattr(self, "_small", None) is None:
            self._small = last_small_file(self.root)
        return self._small


MEMORY_GENERATOR_VERSION = 1  # bump when the memory set's generator changes: cached sets are then rebuilt
MEMORY_FILES_PER_FOLDER = 100
MEMORY_FOLDERS_PER_GROUP = 25
# The memory set's file kinds: extension, weight, the line pool of its text. `find` looks for
# the rare one (about 2% of the files).
MEMORY_KINDS = (("md", 16, "md"), ("txt", 12, "md"), ("rst", 6, "md"), ("py", 16, "py"), ("c", 10, "c"),
                ("h", 8, "c"), ("js", 10, "js"), ("ts", 6, "js"), ("swift", 14, "swift"), ("json", 2, None))
MEMORY_FIND_PATTERN = "*.json"


class MemorySet(Dataset):
    """The memory section's tree (--memory N): N small text files (200 B to 6000 B, log-uniform;
    source code, prose, a little JSON) in folders of 100, 25 folders to a group; deterministic
    from the seed, cached under the work folder like the generated set. Many entries and little
    data: what makes a manifest large."""

    kind = "memory"

    def __init__(self, work, files, seed):
        self.size, self.files, self.seed = None, files, seed
        self.base = os.path.join(work, f"dataset-memory-v{MEMORY_GENERATOR_VERSION}-{files}-s{seed}")
        self.root = os.path.join(self.base, "data")
        self.parent, self.name = self.base, "data"
        self.stamp = os.path.join(self.base, "dataset.json")
        self.dirty = os.path.join(self.base, "MODIFIED")  # never written: the memory set is never changed
        self.info = None

    def stamp_fields(self):
        return {"generator": MEMORY_GENERATOR_VERSION, "kind": "memory", "files": self.files, "seed": self.seed}

    def describe(self):
        return f"{self.files} small files in folders of {MEMORY_FILES_PER_FOLDER}, seed {self.seed}"

    def _generate(self):
        rng = random.Random(f"memory-{self.seed}")
        words = Words(rng)
        pools = code_line_pools(rng, words, per_language=4000)
        extensions = [k[0] for k in MEMORY_KINDS]
        weights = [k[1] for k in MEMORY_KINDS]
        pool_of = {k[0]: k[2] for k in MEMORY_KINDS}
        mtime_base = 1_700_000_000 * 10 ** 9
        by_extension = {ext: 0 for ext in extensions}
        total, folders = 0, []
        group = folder = None
        for i in range(self.files):
            if i % MEMORY_FILES_PER_FOLDER == 0:
                n = i // MEMORY_FILES_PER_FOLDER
                if n % MEMORY_FOLDERS_PER_GROUP == 0:
                    group = os.path.join(self.root, f"{words.word()}-{n // MEMORY_FOLDERS_PER_GROUP:03d}")
                    os.makedirs(group)
                    folders.append(group)
                folder = os.path.join(group, f"{words.word()}-{n:05d}")
                os.mkdir(folder)
                folders.append(folder)
            ext = rng.choices(extensions, weights)[0]
            size = int(200 * 30 ** rng.random())  # 200 B .. 6000 B, log-uniform
            if pool_of[ext] is None:
                doc = {words.word(): {"id": rng.randrange(10 ** 6), "name": words.ident(), "note": words.sentence(),
                                      "tags": [words.word() for _ in range(rng.randint(1, 6))]}
                       for _ in range(max(1, size // 120))}
                data = json.dumps(doc, indent=2).encode()[:size]
            else:
                data = self._text(rng, words, pools[pool_of[ext]], size, pool_of[ext])
            path = os.path.join(folder, f"{words.word()}_{i:06d}.{ext}")
            with open(path, "wb") as f:
                f.write(data)
            os.chmod(path, 0o644)
            t = mtime_base + rng.randrange(0, 3 * 365 * 86400) * 10 ** 9 + rng.randrange(10 ** 9)
            os.utime(path, ns=(t, t))
            by_extension[ext] += 1
            total += len(data)
        # Folder times last, deepest first.
        folders.append(self.root)
        for path in sorted(folders, key=lambda p: -p.count(os.sep)):
            t = mtime_base + rng.randrange(0, 3 * 365 * 86400) * 10 ** 9
            os.utime(path, ns=(t, t))
        return {"generator": MEMORY_GENERATOR_VERSION, "kind": "memory", "files": self.files, "seed": self.seed,
                "root": self.root, "regular_files": self.files, "bytes": total,
                "file_sizes": "200 B to 6000 B, log-uniform", "files_per_folder": MEMORY_FILES_PER_FOLDER,
                "folders_per_group": MEMORY_FOLDERS_PER_GROUP,
                "entries": {"directories": len(folders), "by_extension": by_extension}}
