"""The year section's parts that decide its figures: the retention rules, the chain model's
accounting and the home folder's nights.

Run: python3 -m unittest discover -s Scripts/benchkit/tests -t Scripts
"""

import datetime
import hashlib
import os
import tempfile
import unittest

from benchkit import chainmodel
from benchkit.chainmodel import CANDIDATES, ChainModel, NightTree, night_date, policy_keeps
from benchkit.datasets import Dataset
from benchkit.yearhome import COMPACT_EVERY, MAIL_PER_NIGHT, MAILBOX, GeneratedSetNights, YearHome

FIRST = datetime.date(2027, 1, 1)  # a Friday


class LengthOracle:
    """Stored size = the length: the accounting checked by hand, without zstd."""

    def measure(self, datas):
        return [(hashlib.sha256(d).hexdigest(), len(d)) for d in datas]


def candidate(name):
    return next(c for c in CANDIDATES if c.name == name)


class RetentionTests(unittest.TestCase):
    def test_daily_keeps_the_newest_of_each_of_the_newest_days(self):
        dates = [night_date(FIRST, n) for n in range(1, 11)]
        self.assertEqual(policy_keeps(dates, {"day": 7}), set(range(3, 10)))

    def test_one_day_counts_once_and_count_left_keeps_the_oldest(self):
        dates = [night_date(FIRST, 1) + datetime.timedelta(hours=h) for h in range(5)]
        self.assertEqual(policy_keeps(dates, {"day": 3}), {4, 0})
        self.assertEqual(policy_keeps(dates, {"last": 2}), {4, 3})

    def test_weekly_keeps_the_newest_of_each_iso_week(self):
        # 2027-01-01 (Fri) … 2027-01-17 (Sun): weeks 2026-W53, 2027-W01, 2027-W02.
        dates = [night_date(FIRST, n) for n in range(1, 18)]
        self.assertEqual(policy_keeps(dates, {"week": 5}), {2, 9, 16, 0})

    def test_a_year_of_nights_keeps_the_policys_count(self):
        dates = [night_date(FIRST, n) for n in range(1, 366)]
        kept = policy_keeps(dates, {"day": 7, "week": 5, "month": 12, "year": 2})
        # 7 days; weeks 2 to 5 back (the first is a kept day's); months 2 to 12 back, of which
        # the newest is in a kept week; the year rule's newest is today's, its count left keeps
        # the oldest.
        self.assertIn(364, kept)
        self.assertIn(0, kept)
        self.assertEqual(len(kept), 7 + 4 + 11 - 1 + 1)


class ChainModelTests(unittest.TestCase):
    def play(self, name, trees, counts):
        model, tree = ChainModel(candidate(name), counts), NightTree(LengthOracle())
        for n, files in enumerate(trees, start=1):
            model.night(night_date(FIRST, n), tree.update(files))
        return model

    def trees(self):
        # Night 1: a and b; every night after, a is rewritten (new content, same size); b never changes.
        return [{"a": bytes([n]) * 100, "b": b"b" * 1000} for n in range(1, 6)]

    def test_todays_prune_keeps_every_backup_a_kept_one_takes_from(self):
        model = self.play("today", self.trees(), {"last": 0, "day": 1})
        # The newest takes b from the full backup of night 1: both stay.
        self.assertEqual(model.kept(), 2)
        self.assertEqual(model.stored(), 1100 + 100)

    def test_consolidation_keeps_the_policys_backups_and_what_they_still_take(self):
        model = self.play("consolidate", self.trees(), {"day": 1})
        self.assertEqual(model.kept(), 1)
        # The newest's own a, and b moved out of the full backup it takes it from.
        self.assertEqual(model.stored(), 100 + 1000)

    def test_differential_stores_what_changed_since_the_full_and_keeps_the_full(self):
        trees = self.trees()
        trees[2]["c"] = b"c" * 50
        trees[3]["c"] = b"c" * 50
        trees[4]["c"] = b"c" * 50
        model = self.play("differential", trees, {"day": 1})
        self.assertEqual(model.kept(), 2)
        self.assertEqual(model.kept_fulls(), 1)
        # The full (a, b), the newest (a, and c: new since the full though unchanged since night 3).
        self.assertEqual(model.stored(), 1100 + 100 + 50)

    def test_blocks_store_only_the_blocks_that_changed(self):
        block = chainmodel.BLOCK
        big = bytes(range(256)) * (4 * block // 256)
        trees = [{"log": big}, {"log": big[:-block] + b"x" * block}]
        whole = self.play("consolidate", trees, {"day": 2})
        blocks = self.play("consolidate+blocks", trees, {"day": 2})
        self.assertEqual(whole.stored(), 2 * len(big))
        self.assertEqual(blocks.stored(), len(big) + block)

    def test_a_new_chain_starts_after_full_every_backups(self):
        trees = [{"a": b"a"} for _ in range(65)]
        model = self.play("today", trees, {"last": 100})
        self.assertEqual(model.kept_fulls(), 3)  # nights 1, 31, 61
        endless = self.play("consolidate-no-fulls", trees, {"last": 100})
        self.assertEqual(endless.kept_fulls(), 1)


class CountingOracle(LengthOracle):
    """A LengthOracle that remembers what it was asked to measure."""

    def __init__(self):
        self.asked = []

    def measure(self, datas):
        self.asked += datas
        return super().measure(datas)


class NightTreeTests(unittest.TestCase):
    # The oracle measures by length here: these tests run in CI's checks, before zstd is
    # installed. SizeOracle itself is what the bench's run checks against the real Keepsake.
    def test_a_night_measures_only_what_changed_and_says_what_did(self):
        oracle = CountingOracle()
        tree = NightTree(oracle)
        tree.update({"a": b"aaaa", "b": b"b", "c": b"c"})
        self.assertEqual(tree.changed, {"a", "b", "c"})
        self.assertEqual(tree.pieces[False]["a"][0][1], 4)
        oracle.asked = []
        tree.update({"a": b"aaaa", "b": b"B", "d": b"d"}, changed={"b", "d"})
        self.assertEqual(sorted(oracle.asked), [b"B", b"d"])
        self.assertEqual(tree.changed, {"b", "d"})
        self.assertEqual(tree.deleted, {"c"})
        self.assertEqual(set(tree.pieces[True]), {"a", "b", "d"})
        # Rewritten with the same bytes: measured, not changed.
        tree.update({"a": b"aaaa", "b": b"B", "d": b"d"}, changed={"a"})
        self.assertEqual(tree.changed, set())

    def test_a_big_file_is_measured_whole_and_by_blocks(self):
        tree = NightTree(LengthOracle())
        big = os.urandom(chainmodel.BIG_FILE + 100)
        tree.update({"big": big})
        self.assertEqual(tree.pieces[False]["big"][0][1], len(big))
        blocks = tree.pieces[True]["big"]
        self.assertEqual(len(blocks), chainmodel.BIG_FILE // chainmodel.BLOCK + 1)
        self.assertEqual(sum(size for _, size in blocks), len(big))


class YearHomeTests(unittest.TestCase):
    def test_the_same_seed_lives_the_same_nights_and_the_folder_holds_the_record(self):
        with tempfile.TemporaryDirectory() as work:
            homes = [YearHome(os.path.join(work, name), seed=7) for name in ("one", "two")]
            for home in homes:
                home.create()
                for night in range(2, 12):
                    home.live_night(night)
            self.assertEqual(homes[0].snapshot(), homes[1].snapshot())
            on_disk = {}
            for dirpath, _, names in os.walk(homes[0].root):
                for name in names:
                    full = os.path.join(dirpath, name)
                    with open(full, "rb") as f:
                        on_disk[os.path.relpath(full, homes[0].root)] = f.read()
            self.assertEqual(on_disk, homes[0].files)

    def test_mail_arrives_every_night_and_the_mailbox_is_compacted_each_quarter(self):
        with tempfile.TemporaryDirectory() as work:
            home = YearHome(os.path.join(work, "home"))
            home.create()
            sizes = [len(home.files[MAILBOX])]
            for night in range(2, COMPACT_EVERY + 1):
                home.live_night(night)
                sizes.append(len(home.files[MAILBOX]))
            self.assertTrue(all(b - a == MAIL_PER_NIGHT for a, b in zip(sizes[:-2], sizes[1:-1])))
            self.assertLess(sizes[-1], sizes[-2] // 2)
            self.assertIn("mailbox compacted", home.changed)


class GeneratedSetNightsTests(unittest.TestCase):
    def test_a_night_changes_what_it_says_and_the_same_seed_changes_the_same(self):
        with tempfile.TemporaryDirectory() as work:
            data = Dataset(work, 4 * 1024 * 1024, 400, 3)
            data.ensure()
            first, second = GeneratedSetNights(data.root, seed=5), GeneratedSetNights(data.root, seed=5)
            self.assertEqual(first.create(), second.create())
            before = dict(first.files)
            changed = first.live_night(2)
            self.assertEqual(changed, second.live_night(2))
            self.assertEqual(first.files, second.files)
            differing = {p for p in set(before) | set(first.files) if before.get(p) != first.files.get(p)}
            self.assertEqual(differing, changed)
            logs = [p for p in before if p.startswith("var/log/")]
            self.assertTrue(logs)
            for p in logs:
                self.assertGreaterEqual(len(first.files[p]) - len(before[p]), GeneratedSetNights.LOG_GROWTH)
                self.assertTrue(first.files[p].startswith(before[p]))


if __name__ == "__main__":
    unittest.main()
