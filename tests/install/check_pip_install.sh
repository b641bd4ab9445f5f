#!/usr/bin/env bash
# pip_install test: `pip install --no-build-isolation .` in the checkout, into a temporary
# --target, offline, then the installed package's checks
# (check_python_package.py) with pip's build (SOURCE_DIR/build-python/) gone and the
# target moved. $FORKFEED_CMAKE_ARGS reaches setup.py's CMake (tools/test.sh: the Release
# build's -Werror and ccache, so that pip compiles nothing build/ compiled already).
# usage: check_pip_install.sh SOURCE_DIR BIN_DIR [PYTHON]
#   BIN_DIR: a build's bin/, for forkfeed-mkdata; PYTHON: default /usr/bin/python3
set -euo pipefail

if [[ $# -lt 2 || $# -gt 3 ]]; then
  echo "usage: check_pip_install.sh SOURCE_DIR BIN_DIR [PYTHON]" >&2
  exit 2
fi
source_dir=$(cd "$1" && pwd)
bin_dir=$2
python=${3:-/usr/bin/python3}
script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

unset LD_LIBRARY_PATH FORKFEED_WORKER FORKFEED_BIN_DIR

# What pip writes in the checkout (both ignored by git), removed after; never one that was
# there before: a build-python/ that exists may be somebody's own.
pip_outputs=()
for output in "$source_dir/build-python" "$source_dir/python/forkfeed.egg-info"; do
  if [[ -e "$output" ]]; then
    [[ "$output" == */build-python ]] || continue
    echo "check_pip_install.sh: $output exists; pip's build (setup.py's build_base) goes there" \
         "and must start from nothing: remove it (or move it) and rerun" >&2
    exit 1
  fi
  pip_outputs+=("$output")
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/forkfeed-pip.XXXXXX")
trap 'rm -rf "$tmp" "${pip_outputs[@]}"' EXIT

echo "== pip install --no-build-isolation --no-index into $tmp/target"
start=$SECONDS
"$python" -m pip install --no-build-isolation --no-deps --no-index --disable-pip-version-check \
  --root-user-action=ignore --target "$tmp/target" "$source_dir"
echo "pip built and installed the package in $((SECONDS - start)) s"

echo "== make a small dataset"
"$bin_dir/forkfeed-mkdata" --out "$tmp/data" --images 24 --classes 3 --min-side 40 --max-side 80 >/dev/null

# With its build gone and the target moved, only run paths relative to the installed
# files can work.
echo "== remove the build, move the target, then import the package from there"
rm -rf "${pip_outputs[@]}"
mv "$tmp/target" "$tmp/moved-target"
mkdir "$tmp/elsewhere"
(cd "$tmp/elsewhere" &&
 PYTHONPATH="$tmp/moved-target" "$python" -s "$script_dir/check_python_package.py" "$tmp/moved-target" "$tmp/data" 24)
echo "pip_install: ok"
