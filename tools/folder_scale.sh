#!/usr/bin/env bash
# tools/folder_scale.sh: how long a loader takes to open an ImageFolder of many files —
# listing them, and reading each one's size and content digest for the dataset's identity
# (docs/datasets.md, "What a dataset is") — for one build or several side by side. See --help.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python=/usr/bin/python3

usage() {
  cat <<'USAGE'
usage: tools/folder_scale.sh [--files N] [--bytes B] [--classes C] [--runs R] [--dir DIR]
                             [--content-check windows|full] [--bin DIR ...] [--keep]

Makes an ImageFolder of N files of B bytes each (a small JPEG, random bytes past its end)
in C class folders, then opens it 2R times with each build's forkfeed-bench (2 workers, one
batch read, from the page cache after an open that warms it), alternating builds run by
run: a first open (the files' content cache in DIR/cache emptied) and a cached one, and
prints each build's median times to open the loader (index, arena, workers). A build
without the content cache gives its one time twice.

  --files N       files in all (default 200000)
  --bytes B       bytes of each (default 8192)
  --classes C     class folders (default 1000)
  --runs R        opens per build (default 5)
  --dir DIR       where to put the folder (default: a temporary one, removed at the end
                  unless --keep; an existing DIR of the same files is used as it is)
  --content-check windows|full
                  passed on to each build that has the flag
  --bin DIR       a build's bin folder; give it again to compare builds (default build/bin)
  --keep          keep DIR
  -h, --help      this text

Exit status: 0 measured, 1 a run failed, 2 bad arguments.
USAGE
}

say() { echo "folder_scale.sh: $*" >&2; }
die() { say "$*"; exit 1; }
bad_usage() { say "$* (see --help)"; exit 2; }

files=200000 bytes=8192 classes=1000 runs=5 dir="" keep=0 check="" bins=()
while [[ $# -gt 0 ]]; do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --keep) keep=1; shift ;;
    --files | --bytes | --classes | --runs | --dir | --bin | --content-check)
      [[ $# -ge 2 ]] || bad_usage "$1 needs a value"
      case $1 in
        --files) files=$2 ;;
        --bytes) bytes=$2 ;;
        --classes) classes=$2 ;;
        --runs) runs=$2 ;;
        --dir) dir=$2 ;;
        --bin) bins+=("$2") ;;
        --content-check) check=$2 ;;
      esac
      shift 2 ;;
    *) bad_usage "unknown argument: $1" ;;
  esac
done
for name in files bytes classes runs; do
  [[ ${!name} =~ ^[1-9][0-9]*$ ]] || bad_usage "--$name must be a whole number >= 1, got '${!name}'"
done
[[ -z $check || $check == windows || $check == full ]] || bad_usage "--content-check is windows or full, got '$check'"
[[ ${#bins[@]} -gt 0 ]] || bins=("$root/build/bin")
for bin in "${bins[@]}"; do
  [[ -x $bin/forkfeed-bench ]] || die "$bin/forkfeed-bench not found; build forkfeed (tools/build.sh build) or pass --bin DIR"
done
if [[ -z $dir ]]; then
  dir=$(mktemp -d "${TMPDIR:-/tmp}/forkfeed-folder-scale.XXXXXX")
  [[ $keep -eq 1 ]] || trap 'rm -rf "$dir"' EXIT
fi

"$python" - "$dir/data" "$files" "$bytes" "$classes" <<'PY'
import os, sys
import io
from PIL import Image
root, files, size, classes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
marker = os.path.join(os.path.dirname(root), f"made-{files}-{size}-{classes}")
if not os.path.exists(marker):
    print(f"folder_scale.sh: writing {files} files of {size} bytes in {classes} class folders", file=sys.stderr)
    jpegs = []
    for k in range(64):  # a small JPEG each, the rest of its bytes past its end (which decoders ignore)
        out = io.BytesIO()
        Image.new("RGB", (16, 16), (k * 4, 255 - k * 4, 128)).save(out, "JPEG")
        jpegs.append(out.getvalue())
    pool = os.urandom(size * 64)
    for n in range(files):
        folder = os.path.join(root, f"class_{n % classes:04d}")
        if n < classes:
            os.makedirs(folder, exist_ok=True)
        head = jpegs[n % 64]
        at = (n * 7919) % (len(pool) - size)
        with open(os.path.join(folder, f"img_{n:08d}.jpg"), "wb") as f:
            f.write(head + pool[at:at + max(0, size - len(head))])
    open(marker, "w").close()
PY

# One open of the folder by the build in $1: its startup_s, on stdout.
open_once() {
  local flags=(--data "$dir/data" --workers 2 --batch 256 --size 16 --transform eval --stop-after-batches 1
               --log-level warn --json)
  if [[ -n $check ]] && "$1/forkfeed-bench" --help | grep -q -- --content-check; then
    flags+=(--content-check "$check")
  fi
  "$1/forkfeed-bench" "${flags[@]}" 2>/dev/null | tail -n 1 |
    "$python" -c 'import json, sys; print(json.loads(sys.stdin.read())["startup_s"])' ||
    die "forkfeed-bench of $1 failed"
}

export FORKFEED_CACHE_DIR=$dir/cache  # the files' content cache: emptied before each first open
for bin in "${bins[@]}"; do open_once "$bin" >/dev/null; done  # the page cache warm
first=() cached=()
for ((r = 0; r < runs; r++)); do
  for i in "${!bins[@]}"; do
    rm -rf "$FORKFEED_CACHE_DIR"
    first[i]+="$(open_once "${bins[i]}") "
    cached[i]+="$(open_once "${bins[i]}") "
  done
done
echo "folder_scale.sh: $files files of $bytes bytes, forkfeed-bench --workers 2, medians of $runs opens" \
  "(warm page cache; first: an empty content cache, cached: the first's)"
for i in "${!bins[@]}"; do
  "$python" -c 'import statistics, sys
for name, runs in (("first", sys.argv[2]), ("cached", sys.argv[3])):
    t = [float(x) for x in runs.split()]
    print("%-44s %-7s %7.3f s  (runs: %s)" % (sys.argv[1], name, statistics.median(t), " ".join("%.3f" % x for x in t)))' \
    "${bins[i]}" "${first[i]}" "${cached[i]}"
done
