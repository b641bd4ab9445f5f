#!/usr/bin/env python3
"""check_layers.py catches what it is there for, on a copy of the library's rooms.

    check_layers_test.py SOURCE_DIR [unittest arguments]

The copy (ARCHITECTURE.md and every folder with sources, build trees left out) passes;
a folder planted beside the rooms, an include that runs back up, a worker's include of the
dataset room, a circle of includes and a row of the table whose folder is gone each fail it,
named.
"""

import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

CHECK = pathlib.Path(__file__).resolve().parent / "check_layers.py"
SOURCE = None  # set by main


def run_check(root: pathlib.Path):
    done = subprocess.run([sys.executable, str(CHECK), str(root)], capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr


class CheckLayersTest(unittest.TestCase):
    def setUp(self):
        self._dir = tempfile.TemporaryDirectory()
        self.root = pathlib.Path(self._dir.name)
        shutil.copy(SOURCE / "ARCHITECTURE.md", self.root)
        keep = shutil.ignore_patterns("*.py", "*.pyi", "*.md", "*.txt", "*.json", "*.sh", "*.cmake", "*.yaml")
        for folder in SOURCE.iterdir():
            if (folder.is_dir() and not folder.name.startswith(".") and
                    not (folder / "CMakeCache.txt").exists()):
                shutil.copytree(folder, self.root / folder.name, ignore=keep, symlinks=True)

    def tearDown(self):
        self._dir.cleanup()

    def test_the_library_as_it_is_passes(self):
        code, output = run_check(self.root)
        self.assertEqual(code, 0, output)

    def test_a_folder_missing_from_the_table_fails(self):
        (self.root / "planted").mkdir()
        (self.root / "planted" / "thing.cpp").write_text("// a room nobody wrote into ARCHITECTURE.md\n")
        code, output = run_check(self.root)
        self.assertEqual(code, 1, output)
        self.assertIn("planted/ holds C++ sources but is no room of ARCHITECTURE.md's table", output)

    def test_a_build_tree_is_no_room(self):
        (self.root / "build-x" / "CMakeFiles").mkdir(parents=True)
        (self.root / "build-x" / "CMakeCache.txt").write_text("")
        (self.root / "build-x" / "CMakeFiles" / "CMakeCXXCompilerId.cpp").write_text("")
        code, output = run_check(self.root)
        self.assertEqual(code, 0, output)

    def test_an_include_up_a_layer_fails(self):
        (self.root / "base" / "planted.h").write_text('#pragma once\n#include "loader/slot_pool.h"\n')
        code, output = run_check(self.root)
        self.assertEqual(code, 1, output)
        self.assertIn("base/planted.h:2: base/ includes loader/slot_pool.h from loader/, "
                      "which is not below it", output)

    def test_a_worker_including_the_dataset_room_fails(self):
        planted = '#pragma once\n#include "dataset/image_extensions.h"\n'
        (self.root / "workers" / "planted.h").write_text(planted)
        code, output = run_check(self.root)
        self.assertEqual(code, 1, output)
        self.assertIn("workers/planted.h:2: workers/ includes dataset/image_extensions.h from dataset/, "
                      "which it is kept apart from", output)

    def test_a_circle_of_includes_fails(self):
        (self.root / "base" / "planted_a.h").write_text('#pragma once\n#include "base/planted_b.h"\n')
        (self.root / "base" / "planted_b.h").write_text('#pragma once\n#include "base/planted_a.h"\n')
        code, output = run_check(self.root)
        self.assertEqual(code, 1, output)
        self.assertIn("a circle of includes: base/planted_a.h -> base/planted_b.h -> base/planted_a.h",
                      output)

    def test_a_narrative_row_fails(self):
        text = (self.root / "ARCHITECTURE.md").read_text()
        row = "| A planted rule | `base/status.h`" + ", and then some more" * 12 + " |"
        (self.root / "ARCHITECTURE.md").write_text(text.replace("| Enum names |", row + "\n| Enum names |"))
        code, output = run_check(self.root)
        self.assertEqual(code, 1, output)
        self.assertIn(f"a row of {len(row)} characters, over 220", output)

    def test_a_row_without_its_folder_fails(self):
        shutil.rmtree(self.root / "gateway")
        code, output = run_check(self.root)
        self.assertEqual(code, 1, output)
        self.assertIn("ARCHITECTURE.md's table names gateway/, which holds no sources here", output)

    def test_an_unreadable_table_is_an_error(self):
        (self.root / "ARCHITECTURE.md").write_text("# no rooms here\n")
        code, output = run_check(self.root)
        self.assertEqual(code, 2, output)
        self.assertIn("no table under '## Rooms, bottom to top'", output)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    SOURCE = pathlib.Path(sys.argv.pop(1)).resolve()
    unittest.main()
