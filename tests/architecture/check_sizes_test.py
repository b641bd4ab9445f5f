#!/usr/bin/env python3
"""check_sizes.py catches what it is there for, on a planted tree and on the library.

    check_sizes_test.py SOURCE_DIR [unittest arguments]

The library as it is passes with its allow-list. In a planted tree of two rooms, a file
of 501 lines and a function of 81 fail and those of 500 and 80 pass; braces in strings,
characters, raw strings and comments are no braces; classes, namespaces and initializers
are no functions, a member function defined in its class is one and a lambda is part of
its function; braces that do not match fail; an allowed offender passes and an entry
that allows nothing fails.
"""

import pathlib
import subprocess
import sys
import tempfile
import textwrap
import unittest

CHECK = pathlib.Path(__file__).resolve().parent / "check_sizes.py"
SOURCE = None  # set by main

ARCHITECTURE = """\
# planted

## Rooms, bottom to top

| layer | room | holds |
| --- | --- | --- |
| 0 | `include/forkfeed/` | the public API |
| 1 | `base/` | what every layer uses |
| above | `tools/` | what is not checked |
"""


def run_check(root: pathlib.Path, allowed: pathlib.Path = None):
    command = [sys.executable, str(CHECK), str(root)]
    if allowed is not None:
        command += ["--allowed", str(allowed)]
    done = subprocess.run(command, capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr


def function(name: str, lines: int, body: str = "") -> str:
    """A function of exactly `lines` lines, from its signature to its closing brace."""
    head = f"int {name}(int x) {{\n" + textwrap.dedent(body)
    filler = lines - head.count("\n") - 2
    assert filler >= 0, name
    return head + "  x += 1;\n" * filler + "  return x;\n}\n"


class CheckSizesTest(unittest.TestCase):
    def setUp(self):
        self._dir = tempfile.TemporaryDirectory()
        self.root = pathlib.Path(self._dir.name)
        (self.root / "ARCHITECTURE.md").write_text(ARCHITECTURE)
        (self.root / "include" / "forkfeed").mkdir(parents=True)
        (self.root / "include" / "forkfeed" / "api.h").write_text("#pragma once\nint api();\n")
        (self.root / "base").mkdir()
        (self.root / "tools").mkdir()
        self.allowed = self.root / "allowed.txt"
        self.allowed.write_text("# nothing allowed\n")

    def tearDown(self):
        self._dir.cleanup()

    def plant(self, path: str, text: str):
        (self.root / path).parent.mkdir(parents=True, exist_ok=True)
        (self.root / path).write_text(text)

    def check(self):
        return run_check(self.root, self.allowed)

    def test_the_library_as_it_is_passes(self):
        code, output = run_check(SOURCE)
        self.assertEqual(code, 0, output)
        self.assertRegex(output, r"\d+ files checked: 0 over 500 lines a file or 80 a function "
                                 "and not allowed")

    def test_a_file_of_501_lines_fails_and_of_500_passes(self):
        self.plant("base/five_hundred.h", "// a line\n" * 500)
        code, output = self.check()
        self.assertEqual(code, 0, output)
        self.plant("base/long.h", "// a line\n" * 501)
        code, output = self.check()
        self.assertEqual(code, 1, output)
        self.assertIn("base/long.h: file is 501 lines (over 500)", output)
        self.assertNotIn("five_hundred", output)

    def test_a_function_of_81_lines_fails_and_of_80_passes(self):
        self.plant("base/f.cpp", "// two functions\n\n" + function("eighty", 80) + "\n" +
                   function("too_long", 81))
        code, output = self.check()
        self.assertEqual(code, 1, output)
        self.assertIn("base/f.cpp:84: function too_long is 81 lines (over 80)", output)
        self.assertNotIn("eighty", output)

    def test_counted_from_the_template_line_of_its_signature(self):
        self.plant("include/forkfeed/t.h", "#pragma once\ntemplate <typename T = int>\n" + function("f", 80))
        code, output = self.check()
        self.assertEqual(code, 1, output)
        self.assertIn("include/forkfeed/t.h:2: function f is 81 lines (over 80)", output)

    def test_braces_in_literals_and_comments_are_no_braces(self):
        # Counted naively, every literal below opens a brace that never closes, or closes
        # the function early: the function would be miscounted, its neighbour swallowed.
        tricky = """\
          const char* open = "{ {{ \\" {";  // a comment with a brace: {
          /* and one in a block comment: {
             over two lines { */
          char brace = '{';
          char quote = '\\'';
          const char* raw = R"json({"a": {"b": "}"}})json";
          const char* raw_lines = R"(
        { a raw string over lines
        )";
          int million = 1'000'000;
        #define OPEN {
        """
        self.plant("base/literals.cpp", function("tricky", 81, tricky) + function("next_door", 3))
        code, output = self.check()
        self.assertEqual(code, 1, output)
        self.assertIn("base/literals.cpp:1: function tricky is 81 lines (over 80)", output)
        self.assertNotIn("next_door", output)
        self.assertNotIn("never", output)
        self.assertNotIn("closes", output)

    def test_classes_namespaces_and_initializers_are_no_functions(self):
        big_table = "constexpr int kTable[] = {\n" + "    1,\n" * 90 + "};\n"
        members = "".join(f"  int m{i}() const {{ return {i}; }}\n" for i in range(85))
        text = ("namespace forkfeed {\nnamespace {\n" + big_table + "}  // namespace\n\n"
                "class [[nodiscard]] Holder final : public Base {\n public:\n" + members +
                "  Holder() : a_{1}, b_(2) {}\n\n private:\n  int a_{0};\n  int b_ = 0;\n};\n\n"
                "enum class Colour : int {\n" + "  kRed,\n" * 85 + "};\n}  // namespace forkfeed\n")
        self.plant("base/scopes.h", text)
        code, output = self.check()
        self.assertEqual(code, 0, output)

    def test_a_member_function_defined_in_its_class_is_one_and_a_lambda_is_part_of_it(self):
        lambda_body = "  auto add = [&](int y) {\n" + "    y += 1;\n" * 40 + "    return y;\n  };\n"
        body = textwrap.indent(function("run", 81, lambda_body), "  ")
        self.plant("base/member.h", "#pragma once\nstruct Runner {\n" + body + "};\n")
        code, output = self.check()
        self.assertEqual(code, 1, output)
        self.assertIn("base/member.h:3: function Runner::run is 81 lines (over 80)", output)

    def test_out_of_class_members_and_constructors_keep_their_names(self):
        ctor = "Cache::Cache(int x) : a_(x), b_{x} {\n" + "  a_ += 1;\n" * 80 + "}\n"
        self.plant("base/cache.cpp", function("Cache::load", 82) + ctor)
        code, output = self.check()
        self.assertEqual(code, 1, output)
        self.assertIn("base/cache.cpp:1: function Cache::load is 82 lines (over 80)", output)
        self.assertIn("base/cache.cpp:83: function Cache::Cache is 82 lines (over 80)", output)

    def test_braces_that_do_not_match_fail(self):
        self.plant("base/open.cpp", "int f() {\n#if A\n  if (x) {\n#else\n  if (y) {\n#endif\n  }\n}\n")
        code, output = self.check()
        self.assertEqual(code, 1, output)
        self.assertIn("base/open.cpp: line 1: this brace is never closed: its functions cannot be measured",
                      output)

    def test_the_rooms_above_the_library_are_not_checked(self):
        self.plant("tools/main.cpp", function("main", 200))
        code, output = self.check()
        self.assertEqual(code, 0, output)

    def test_allowed_offenders_pass_and_pending_ones_are_printed(self):
        self.plant("base/long.h", "// a line\n" * 501)
        self.plant("base/f.cpp", function("too_long", 81) + function("whole", 90))
        self.allowed.write_text("# planted\n"
                                "pending  base/long.h  -- to split\n"
                                "pending  base/f.cpp  too_long  -- to split too\n"
                                "one-idea  base/f.cpp  whole  -- one table, read top to bottom\n")
        code, output = self.check()
        self.assertEqual(code, 0, output)
        self.assertIn("still to split (2, pending in allowed.txt):", output)
        self.assertIn("  base/long.h: file is 501 lines (over 500)", output)
        self.assertIn("  base/f.cpp:1: function too_long is 81 lines (over 80)", output)
        self.assertNotIn("whole", output)
        self.assertIn("3 allowed (2 pending), 0 stale entries", output)

    def test_an_entry_that_allows_nothing_fails(self):
        self.plant("base/f.cpp", function("short_now", 80))
        self.allowed.write_text("pending  base/f.cpp  short_now  -- was 95 lines\n"
                                "one-idea  base/gone.cpp  -- a file since removed\n")
        code, output = self.check()
        self.assertEqual(code, 1, output)
        self.assertIn("allowed.txt:1: pending entry for function short_now in base/f.cpp matches no offender "
                      "any more: remove it", output)
        self.assertIn("allowed.txt:2: one-idea entry for file base/gone.cpp matches no offender any more",
                      output)

    def test_an_entry_without_a_reason_is_an_error(self):
        self.allowed.write_text("pending  base/f.cpp  too_long\n")
        code, output = self.check()
        self.assertEqual(code, 2, output)
        self.assertIn("not 'pending|one-idea PATH [FUNCTION] -- REASON'", output)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    SOURCE = pathlib.Path(sys.argv.pop(1)).resolve()
    unittest.main()
