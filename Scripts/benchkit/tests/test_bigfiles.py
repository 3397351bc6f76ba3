"""The big-files section's files and accounting (benchkit/bigfiles.py), at a tiny scale: each
file changes every night as the issue describes, the same seed makes the same bytes, and the
block model counts what a change touches."""

import hashlib
import os
import random
import shutil
import sqlite3
import tempfile
import unittest

from benchkit.bigfiles import (BIG_FILE_NAMES, PAGE, BlockModel, big_files, changed_blocks, changed_pages, merged,
                               page_digests, text_pool)

# 1 MiB images and 256 KiB others.
SCALE = 1 / 4096


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class BigFilesTests(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="bigfiles-test-")
        self.pool = text_pool(random.Random("pool"), size=512 * 1024)

    def tearDown(self):
        shutil.rmtree(self.root, ignore_errors=True)

    def files(self, seed=1, under="a"):
        made = big_files(os.path.join(self.root, under), SCALE, seed, self.pool)
        for f in made:
            f.create()
        return {type(f).__name__: f for f in made}

    def test_the_names_big_only_takes_are_the_five_files(self):
        self.assertEqual(tuple(f.name for f in big_files(self.root, SCALE, 1, self.pool)), BIG_FILE_NAMES)

    def test_the_same_seed_makes_the_same_files_and_nights(self):
        first, second = self.files(under="a"), self.files(under="b")
        self.assertEqual(os.path.getsize(first["ImageRuns"].path), 1024 * 1024)
        self.assertLess(os.path.getsize(first["GrowingLog"].path) - 256 * 1024, 300)
        for name in first:
            if name == "Database":
                continue  # SQLite writes its own header fields; its rows are what the seed makes
            self.assertEqual(digest(first[name].path), digest(second[name].path), name)
            first[name].change(2)
            second[name].change(2)
            self.assertEqual(digest(first[name].path), digest(second[name].path), f"{name}, night 2")

    def test_an_image_rewritten_in_runs_changes_one_percent_in_place(self):
        image = self.files()["ImageRuns"]
        before = page_digests(image.path)
        ranges = image.change(2)
        self.assertEqual(os.path.getsize(image.path), image.size)
        self.assertEqual(sum(n for _, n in ranges), image.size // 100)
        pages = changed_pages(before, page_digests(image.path))
        covered = {p for at, n in ranges for p in range(at // PAGE, (at + n - 1) // PAGE + 1)}
        self.assertTrue(pages and set(pages) <= covered, (pages, sorted(covered)))

    def test_an_image_rewritten_by_pages_changes_one_percent_of_its_pages(self):
        image = self.files()["ImagePages"]
        before = page_digests(image.path)
        ranges = image.change(2)
        self.assertEqual(len(ranges), image.size // PAGE // 100)
        self.assertTrue(all(at % PAGE == 0 and n == PAGE for at, n in ranges))
        self.assertEqual(changed_pages(before, page_digests(image.path)), [at // PAGE for at, _ in ranges])

    def test_a_log_grows_at_its_end_and_an_insertion_moves_the_second_half(self):
        files = self.files()
        log_file = files["GrowingLog"]
        with open(log_file.path, "rb") as f:
            old = f.read()
        ranges = log_file.change(2)
        with open(log_file.path, "rb") as f:
            new = f.read()
        self.assertEqual(new[:len(old)], old)
        self.assertEqual(ranges, [(len(old), len(new) - len(old))])
        self.assertLess(len(new) - len(old) - log_file.size // 100, 300)
        self.assertTrue(new.endswith(b"\n"))

        inserted = files["Insertion"]
        with open(inserted.path, "rb") as f:
            old = f.read()
        ((at, n),) = inserted.change(2)
        with open(inserted.path, "rb") as f:
            new = f.read()
        self.assertEqual((at, n), (len(old) // 2 // PAGE * PAGE, inserted.size // 1024))
        self.assertEqual(new[:at], old[:at])
        self.assertEqual(new[at + n:], old[at:])

    def test_a_database_takes_updates_and_inserts(self):
        database = self.files()["Database"]
        self.assertGreaterEqual(os.path.getsize(database.path), database.size)
        rows = database.rows
        before = page_digests(database.path)
        self.assertIsNone(database.change(2))
        after = page_digests(database.path)
        changed = changed_pages(before, after)
        self.assertTrue(0 < len(changed) < len(after), changed)
        db = sqlite3.connect(database.path)
        self.assertEqual(db.execute("SELECT count(*) FROM notes").fetchone()[0], database.rows)
        db.close()
        self.assertGreater(database.rows, rows)

    def test_blocks_are_counted_from_the_pages_that_changed(self):
        self.assertEqual(changed_blocks([0, 1, 15, 16, 40], 64 * 1024, 100), [0, 1, 2])
        self.assertEqual(changed_blocks([99, 100], 128 * 1024, 100), [3])
        self.assertEqual(merged([(8, 4), (0, 8), (20, 2), (21, 5)]), [(0, 12), (20, 6)])
        image = self.files()["ImagePages"]
        before = page_digests(image.path)
        with open(image.path, "r+b") as f:
            f.seek(70 * 1024)
            f.write(b"x" * 100)
        after = page_digests(image.path)
        pages = changed_pages(before, after)
        self.assertEqual(pages, [17])
        night = BlockModel(64 * 1024).night(image.path, pages, len(after))
        self.assertEqual(night["blocks"], 1)
        self.assertEqual(night["table"], 16, "the digest of the one block stored")
        self.assertTrue(0 < night["content"] <= 64 * 1024 + 64, night)


if __name__ == "__main__":
    unittest.main()
