"""The part of Scripts/bench that CI runs: docs/performance.md rebuilt from bench-results/.

Run: python3 -m unittest discover -s Scripts/benchkit/tests -t Scripts
"""

import copy
import glob
import json
import os
import tempfile
import unittest

from benchkit import pages, report
from benchkit.common import ROOT

RESULTS = os.path.join(ROOT, "bench-results")


def committed_results():
    """(path, document) of every dated result committed in bench-results/."""
    found = []
    for path in sorted(glob.glob(os.path.join(RESULTS, "*.json"))):
        if pages.DATED.fullmatch(os.path.basename(path)):
            with open(path) as f:
                found.append((path, json.load(f)))
    return found


class ReportTests(unittest.TestCase):
    def test_every_committed_result_renders_as_its_committed_markdown(self):
        # The .md beside each dated .json is rendered from that document (by the bench, then
        # by --render-docs after a change to the layout): byte for byte what the renderer gives.
        results = committed_results()
        self.assertGreater(len(results), 0, "bench-results/ holds no dated result")
        for path, doc in results:
            with open(path[:-len(".json")] + ".md") as f:
                self.assertEqual(report.markdown(doc), f.read(), path)

    def test_headings_start_one_level_lower_for_the_page(self):
        _, doc = committed_results()[-1]
        self.assertTrue(report.markdown(doc, level=3).startswith("### Keepsake benchmark — "))
        self.assertTrue(report.markdown(doc).startswith("## Keepsake benchmark — "))


class PageTests(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        self.addCleanup(self.folder.cleanup)
        self.results = os.path.join(self.folder.name, "results")
        os.mkdir(self.results)
        # One real document, written under several dated names.
        self.doc = committed_results()[-1][1]

    def write(self, name, date, quick=False):
        doc = copy.deepcopy(self.doc)
        doc["date"], doc["quick"] = date, quick
        with open(os.path.join(self.results, name), "w") as f:
            json.dump(doc, f)

    def render(self, sections):
        text = "# Performance\n\nProse stays.\n\n" + "".join(
            f"<!-- bench-results: {what} -->\nold\n<!-- bench-results: end -->\n" for what in sections)
        return pages.render_page(text, pages.dated_results(self.results), "../bench-results/")

    def test_dated_results_are_oldest_first_and_other_files_are_ignored(self):
        self.write("2026-12-03-tree-b.json", "2026-12-03T10:00:00+00:00")
        self.write("2026-12-02-tree-a.json", "2026-12-02T10:00:00+00:00")
        self.write("latest.json", "2026-12-09T10:00:00+00:00")
        self.write("notes.json", "2026-12-09T10:00:00+00:00")
        self.assertEqual([name for name, _ in pages.dated_results(self.results)],
                         ["2026-12-02-tree-a.json", "2026-12-03-tree-b.json"])

    def test_newest_takes_the_newest_matching_label_and_leaves_the_prose(self):
        self.write("2026-12-02-tree-usr-share.json", "2026-12-02T10:00:00+00:00")
        self.write("2026-12-03-tree-usr-share.json", "2026-12-03T10:00:00+00:00")
        self.write("2026-12-04-generated-1g.json", "2026-12-04T10:00:00+00:00")
        page, problems = self.render(["newest tree-*"])
        self.assertEqual(problems, [])
        self.assertTrue(page.startswith("# Performance\n\nProse stays.\n\n"))
        self.assertIn("from [2026-12-03-tree-usr-share.json](../bench-results/2026-12-03-tree-usr-share.json)", page)
        self.assertNotIn("old\n", page)
        with open(os.path.join(self.results, "2026-12-03-tree-usr-share.json")) as f:
            self.assertIn(report.markdown(json.load(f), level=3).rstrip("\n"), page)

    def test_quick_runs_count_only_when_the_pattern_asks_for_them(self):
        self.write("2026-12-02-tree-x.json", "2026-12-02T10:00:00+00:00")
        self.write("2026-12-03-tree-x-quick.json", "2026-12-03T10:00:00+00:00", quick=True)
        page, _ = self.render(["newest tree-*"])
        self.assertIn("2026-12-02-tree-x.json", page)
        page, _ = self.render(["newest *quick"])
        self.assertIn("2026-12-03-tree-x-quick.json", page)

    def test_a_missing_result_is_a_problem_unless_the_section_says_if_any(self):
        page, problems = self.render(["newest memory-*"])
        self.assertEqual(problems, ["no dated result matches 'memory-*'"])
        self.assertIn("old\n", page)
        page, problems = self.render(["newest memory-* if any"])
        self.assertEqual(problems, [])
        self.assertIn("no dated result matches `memory-*` yet", page)

    def test_an_unknown_section_is_a_problem(self):
        _, problems = self.render(["oldest tree-*"])
        self.assertEqual(len(problems), 1)
        self.assertIn("unknown section 'oldest tree-*'", problems[0])

    def test_history_has_a_line_per_result_newest_first(self):
        self.write("2026-12-02-tree-a.json", "2026-12-02T10:00:00+00:00")
        self.write("2026-12-03-tree-b.json", "2026-12-03T10:00:00+00:00")
        page, problems = self.render(["history"])
        self.assertEqual(problems, [])
        rows = [line for line in page.split("\n") if line.startswith("| 2026-")]
        self.assertEqual([row.split(" | ")[0] for row in rows], ["| 2026-12-03", "| 2026-12-02"])

    def test_check_fails_on_a_page_edited_by_hand_and_render_fixes_it(self):
        self.write("2026-12-02-tree-a.json", "2026-12-02T10:00:00+00:00")
        page = os.path.join(self.folder.name, "performance.md")
        with open(page, "w") as f:
            f.write("# P\n\n<!-- bench-results: newest tree-* -->\nedited by hand\n<!-- bench-results: end -->\n")
        with self.assertRaises(SystemExit) as stop:
            pages.render_docs(self.results, page, check=True)
        self.assertIn("performance.md", str(stop.exception.code))
        pages.render_docs(self.results, page, check=False)
        pages.render_docs(self.results, page, check=True)  # now it is
        # The report beside a result is rebuilt from its JSON too, and checked.
        report_path = os.path.join(self.results, "2026-12-02-tree-a.md")
        with open(report_path) as f:
            self.assertEqual(f.read(), report.markdown(self.doc | {"date": "2026-12-02T10:00:00+00:00", "quick": False}))
        with open(report_path, "a") as f:
            f.write("a figure typed in\n")
        with self.assertRaises(SystemExit) as stop:
            pages.render_docs(self.results, page, check=True)
        self.assertIn("2026-12-02-tree-a.md", str(stop.exception.code))


class CommittedPageTests(unittest.TestCase):
    def test_docs_performance_is_what_the_committed_results_give(self):
        page = os.path.join(ROOT, "docs", "performance.md")
        with open(page) as f:
            text = f.read()
        link = os.path.relpath(RESULTS, os.path.dirname(page)) + "/"
        rendered, problems = pages.render_page(text, pages.dated_results(RESULTS), link)
        self.assertEqual(problems, [])
        self.assertEqual(rendered, text)


if __name__ == "__main__":
    unittest.main()
