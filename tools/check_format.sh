#!/usr/bin/env bash
# Checks that every C++ file in the checkout is as clang-format (.clang-format: Google
# style, 110 columns) writes it, and names the ones that are not with the command that
# fixes them. Run by tools/test.sh before it builds. Debian 12's clang-format (14) is the
# reference: another version may lay out a few lines differently.
#   tools/check_format.sh [FILE...]   (default: every tracked .h/.cpp/.cc)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v clang-format >/dev/null 2>&1; then
  echo "check_format.sh: clang-format not found; install Debian's clang-format (tools/setup.sh does)" >&2
  exit 2
fi
if [[ $# -gt 0 ]]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files '*.h' '*.cpp' '*.cc')
fi

# One run over every file (a run per file costs 30 s); it names each line it would change.
report=$(clang-format --dry-run -Werror "${files[@]}" 2>&1) && rc=0 || rc=$?
mapfile -t unformatted < <(sed -n 's/^\([^: ]*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' <<<"$report" | sort -u)
if [[ $rc -ne 0 && ${#unformatted[@]} -eq 0 ]]; then
  echo "check_format.sh: clang-format failed (exit $rc):" >&2
  echo "$report" >&2
  exit 1
fi
if [[ ${#unformatted[@]} -gt 0 ]]; then
  echo "check_format.sh: ${#unformatted[@]} file(s) are not as $(clang-format --version | head -1) writes them:" >&2
  printf '  %s\n' "${unformatted[@]}" >&2
  echo "check_format.sh: see the changes with: clang-format --dry-run FILE; apply them with: clang-format -i FILE" >&2
  echo "(a table that reads better aligned by hand may sit between // clang-format off and on)" >&2
  exit 1
fi
echo "check_format.sh: ${#files[@]} C++ files as $(clang-format --version | head -1) writes them"
