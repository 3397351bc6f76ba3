"""A small home folder that lives through a year of nights (issue 34's year): documents edited,
added, deleted and renamed a few a night, photos now and then, and a mailbox that grows by
16 KiB a night and is compacted every quarter. Deterministic from its seed, so every tool of
the bench backs up the same trees, and the chain model (chainmodel.py) reads the same contents.
"""

import hashlib
import os
import random
import shutil

from .datasets import Words

KiB = 1024
MAILBOX = "mail/inbox.mbox"
MAIL_PER_NIGHT = 16 * KiB
FIRST_MAILBOX = 1024 * KiB
FIRST_DOCUMENTS = 150
COMPACT_EVERY = 91  # nights; the mailbox keeps its newest quarter
FOLDERS = ("documents", "documents/letters", "notes", "projects/site", "projects/thesis", "photos")


class YearHome:
    """The folder at `root`, its content by relative path (bytes), and what changed last night.

    Documents are text (the generated set's pseudo-words, datasets.Words) of 1–16 KiB or, in
    photos/, random bytes of 2–24 KiB. An edit of a text changes a paragraph or adds one (the
    whole file is written again, in place); a photo is replaced whole. One night in four only
    mail arrives. About 3 MiB on the last night of a year (the mailbox is compacted each
    quarter; the issue's folder had 7 MB)."""

    def __init__(self, root, seed=34):
        self.root = root
        self.rng = random.Random(seed)
        self.words = Words(self.rng, count=3000)
        self.files = {}
        self.changed = []
        self.serial = 0

    # MARK: - The first night

    def create(self):
        if os.path.exists(self.root):
            shutil.rmtree(self.root)
        for folder in FOLDERS + ("mail",):
            os.makedirs(os.path.join(self.root, folder))
        for _ in range(FIRST_DOCUMENTS):
            self._add()
        self._write(MAILBOX, self._text(FIRST_MAILBOX))
        self.changed = ["created"]

    # MARK: - A night

    def live_night(self, night):
        """Changes the tree as day `night` (1, 2, …) of use would."""
        self.changed = []
        if night % 4 != 3:
            for _ in range(self.rng.randint(1, 3)):
                self._edit()
            for _ in range(self.rng.randint(0, 2)):
                self._add()
            if len(self.documents()) > FIRST_DOCUMENTS - 10 and self.rng.random() < 0.6:
                self._delete()
            if self.rng.random() < 0.35:
                self._rename()
        if night % COMPACT_EVERY == 0:
            kept = self.files[MAILBOX][-len(self.files[MAILBOX]) // 4:]
            self._write(MAILBOX, kept, replace=True)
            self.changed.append("mailbox compacted")
        else:
            self._append(MAILBOX, self._text(MAIL_PER_NIGHT))

    # MARK: - What it holds

    def documents(self):
        return sorted(p for p in self.files if p != MAILBOX)

    def snapshot(self):
        """Relative path → SHA-256 (hex) of the content, for the model."""
        return {path: hashlib.sha256(data).hexdigest() for path, data in self.files.items()}

    def total_bytes(self):
        return sum(len(d) for d in self.files.values())

    # MARK: - Changes

    def _add(self):
        self.serial += 1
        folder = self.rng.choice(FOLDERS)
        if folder == "photos":
            path, data = f"{folder}/img-{self.serial:05d}.jpg", self.rng.randbytes(self.rng.randint(2 * KiB, 24 * KiB))
        else:
            path, data = f"{folder}/doc-{self.serial:05d}.txt", self._text(self.rng.randint(1 * KiB, 16 * KiB))
        self._write(path, data)
        self.changed.append(f"added {path}")

    def _edit(self):
        docs = self.documents()
        if not docs:
            return
        path = self.rng.choice(docs)
        old = self.files[path]
        if path.startswith("photos/"):
            data = self.rng.randbytes(len(old))
        elif self.rng.random() < 0.5 or len(old) < 2 * KiB:
            data = old + self._text(self.rng.randint(200, 2 * KiB))
        else:
            at = self.rng.randrange(0, len(old) - KiB)
            data = old[:at] + self._text(self.rng.randint(200, KiB)) + old[at + KiB:]
        self._write(path, data)
        self.changed.append(f"edited {path}")

    def _delete(self):
        path = self.rng.choice(self.documents())
        os.unlink(os.path.join(self.root, path))
        del self.files[path]
        self.changed.append(f"deleted {path}")

    def _rename(self):
        path = self.rng.choice(self.documents())
        self.serial += 1
        folder, name = os.path.split(path)
        new = f"{folder}/renamed-{self.serial:05d}-{name}"
        os.rename(os.path.join(self.root, path), os.path.join(self.root, new))
        self.files[new] = self.files.pop(path)
        self.changed.append(f"renamed {path}")

    def _write(self, path, data, replace=False):
        full = os.path.join(self.root, path)
        if replace:
            temporary = full + ".new"
            with open(temporary, "wb") as f:
                f.write(data)
            os.rename(temporary, full)
        else:
            with open(full, "wb") as f:
                f.write(data)
        self.files[path] = data

    def _append(self, path, data):
        with open(os.path.join(self.root, path), "ab") as f:
            f.write(data)
        self.files[path] = self.files[path] + data

    # MARK: - Content

    def _text(self, size):
        out, length = [], 0
        while length < size:
            line = self.words.sentence(6, 14) + "\n"
            out.append(line)
            length += len(line)
        return "".join(out).encode()[:size]


class GeneratedSetNights:
    """The bench's generated set (datasets.Dataset) living through nights in memory, for the
    chain model alone (nothing is written back): each night a few files are edited (up to
    4 KiB rewritten in the middle and a line appended, as the bench's 1% change does), a few
    are added (copies of an existing text with a new head) and as many deleted, and each log
    under var/log grows. The same files for the same seed."""

    EDITED = 0.002  # of the files, each night
    ADDED = 0.0005
    LOG_GROWTH = 256 * KiB

    def __init__(self, root, seed=34):
        self.root = root
        self.rng = random.Random(f"{seed}-nights")
        self.files = {}
        self.serial = 0

    def create(self):
        """Reads the set's regular files (one name of each hard-linked file). Returns the paths."""
        seen = set()
        for dirpath, dirnames, names in os.walk(self.root):
            dirnames.sort()
            for name in sorted(names):
                full = os.path.join(dirpath, name)
                st = os.lstat(full)
                if not os.path.isfile(full) or os.path.islink(full) or (st.st_dev, st.st_ino) in seen:
                    continue
                seen.add((st.st_dev, st.st_ino))
                with open(full, "rb") as f:
                    self.files[os.path.relpath(full, self.root)] = f.read()
        return set(self.files)

    def live_night(self, night):
        """Changes the set as one night would; returns the paths changed, added or deleted."""
        changed = set()
        paths = sorted(self.files)
        logs = [p for p in paths if p.startswith("var/log/")]
        others = [p for p in paths if not p.startswith("var/log/")]
        for p in self.rng.sample(others, max(1, round(len(others) * self.EDITED))):
            data = self.files[p]
            length = min(4096, len(data))
            at = self.rng.randrange(0, len(data) - length + 1) if data else 0
            self.files[p] = data[:at] + self.rng.randbytes(length) + data[at + length:] + b"\nchanged\n"
            changed.add(p)
        texts = [p for p in others if p.endswith((".py", ".md", ".c", ".txt", ".swift", ".js"))] or others
        for _ in range(max(1, round(len(others) * self.ADDED))):
            self.serial += 1
            source = self.rng.choice(texts)
            folder, name = os.path.split(source)
            new = os.path.join(folder, f"new-{night}-{self.serial}-{name}")
            self.files[new] = f"// night {night}\n".encode() + self.files[source]
            changed.add(new)
        for p in self.rng.sample(others, max(1, round(len(others) * self.ADDED))):
            if p not in changed:
                del self.files[p]
                changed.add(p)
        for p in logs:
            lines, size = [], 0
            while size < self.LOG_GROWTH:
                lines.append(f"night={night} id={self.rng.getrandbits(48):012x} status={self.rng.choice((200, 304, 404))} "
                             f"duration_ms={self.rng.randint(0, 3000) / 10}\n")
                size += len(lines[-1])
            self.files[p] += "".join(lines).encode()
            changed.add(p)
        return changed

    def total_bytes(self):
        return sum(len(d) for d in self.files.values())
