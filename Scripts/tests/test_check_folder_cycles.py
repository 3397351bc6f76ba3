"""Tests of Scripts/check-folder-cycles on small trees of Swift files made here."""
import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(__file__), '..', 'check-folder-cycles')


def load():
    loader = importlib.machinery.SourceFileLoader('check_folder_cycles', SCRIPT)
    spec = importlib.util.spec_from_loader('check_folder_cycles', loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


class CheckFolderCyclesTests(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix='folder-cycles-')
        self.module = load()

    def tearDown(self):
        subprocess.run(['rm', '-rf', self.root], check=True)

    def write(self, path, text):
        full = os.path.join(self.root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, 'w', encoding='utf-8') as handle:
            handle.write(text)

    def run_script(self):
        return subprocess.run([sys.executable, SCRIPT, self.root], capture_output=True, text=True)

    def test_layers_that_only_look_down_pass(self):
        self.write('Low/Record.swift', 'public struct Record {}\n')
        self.write('High/Engine.swift', 'final class Engine { let record = Record() }\n')
        result = self.run_script()
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(self.module.edges_of(self.root)['High'], {'Low': {'Engine.swift: Record'}})

    def test_two_folders_naming_each_other_fail_and_say_where(self):
        self.write('Low/Record.swift', 'public struct Record { var engine: Engine? }\n')
        self.write('High/Engine.swift', 'final class Engine { let record = Record() }\n')
        result = self.run_script()
        self.assertEqual(result.returncode, 1)
        self.assertIn('High, Low', result.stderr)
        self.assertIn('Low -> High  (Record.swift: Engine)', result.stderr)

    def test_a_cycle_through_three_folders_is_found(self):
        self.write('A/One.swift', 'struct One { let two: Two }\n')
        self.write('B/Two.swift', 'struct Two { let three: Three }\n')
        self.write('C/Three.swift', 'enum Three { case one(One) }\n')
        self.assertEqual(self.module.cycles_of(self.module.edges_of(self.root)), [['A', 'B', 'C']])

    def test_names_in_comments_and_strings_are_not_uses(self):
        self.write('Low/Record.swift', '// Engine drives this.\npublic struct Record { let text = "an Engine" }\n')
        self.write('High/Engine.swift', 'final class Engine { let record = Record() } // not a Record of ours\n')
        self.assertEqual(self.run_script().returncode, 0)


if __name__ == '__main__':
    unittest.main()
