#!/usr/bin/env bash
# Checks every tracked Python file (python/, tools/, tests/, examples/, setup.py) with
# Debian's pycodestyle at 110 columns, the C++'s width (.clang-format), and compiles each
# (a syntax error fails here, before anything is built). Run by tools/test.sh after
# tools/check_format.sh.
#   tools/check_python_style.sh [FILE...]   (default: every tracked .py)
#
# The codes: pycodestyle's own defaults, every E and W but those it leaves out itself
# (E121 E123 E126 E226 E24 E704 W503 W504: the hanging-indent and operator-break choices
# PEP 8 leaves open, W503 and W504 each other's opposite), less three that ask for other
# code rather than other layout, which the tree has a few of and a layout check should
# not rewrite: E721 (comparing types), E731 (a lambda given a name), E741 (a name such as
# `l`). So E501 (a line over 110 columns), E9 (a file that does not tokenize) and the
# indentation, blank-line and whitespace codes the tree already kept are checked. The
# stub (.pyi) is not: stubs are written one definition a line, as typeshed writes them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

ignored=E121,E123,E126,E226,E24,E704,W503,W504,E721,E731,E741

if ! command -v pycodestyle >/dev/null 2>&1; then
  echo "check_python_style.sh: pycodestyle not found; install Debian's pycodestyle (tools/setup.sh does)" >&2
  exit 2
fi
if [[ $# -gt 0 ]]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files '*.py')
fi

# Compiled in memory: no __pycache__ is written into the checkout.
if ! python3 - "${files[@]}" <<'EOF'; then
import sys
failed = False
for path in sys.argv[1:]:
    try:
        with open(path, "rb") as f:
            compile(f.read(), path, "exec")
    except (SyntaxError, ValueError) as e:
        print(f"{path}: does not compile: {e}", file=sys.stderr)
        failed = True
sys.exit(1 if failed else 0)
EOF
  echo "check_python_style.sh: fix the syntax errors above" >&2
  exit 1
fi

if ! report=$(pycodestyle --max-line-length=110 --ignore="$ignored" "${files[@]}" 2>&1); then
  echo "$report" >&2
  count=$(grep -c . <<<"$report" || true)
  echo "check_python_style.sh: pycodestyle $(pycodestyle --version) flags $count line(s)" \
    "(max-line-length 110, ignoring $ignored)" >&2
  echo "check_python_style.sh: split a long string by implicit concatenation" \
    "(\"a \" \"b\"), which keeps its value" >&2
  exit 1
fi
echo "check_python_style.sh: ${#files[@]} Python files compile and pass" \
  "pycodestyle $(pycodestyle --version) (max-line-length 110)"
