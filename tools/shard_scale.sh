#!/usr/bin/env bash
# tools/shard_scale.sh: how a sharded dataset of millions of samples opens — the first
# time, when every tar header is read, and again from the index cache — and what its
# index costs in the loader's shared memory. See --help.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python=/usr/bin/python3

usage() {
  cat <<'USAGE'
usage: tools/shard_scale.sh [--samples N] [--per-shard K] [--dir DIR] [--bin DIR] [--keep]

Makes a dataset of N samples in N/K tar shards of K samples each, then opens it twice
with forkfeed-bench (2 workers, one batch read): first with an empty index cache, so
every shard is scanned, then again, from the cache. It prints, for each open, the time
forkfeed-bench took to open the loader (index, arena, workers), the peak memory of the
process tree (PSS, sampled every 100 ms), and the bytes per sample of the dataset index
in the arena.

The content repeats: one shard of K small images (forkfeed-mkdata --format wds) is
written once and every other shard is a copy of it (cp --reflink=auto: on btrfs or XFS a
copy costs no disk; elsewhere about 2.5 KB a sample). Copies, not hard links: forkfeed
refuses one file under two names as a dataset's shards, since its samples would be read
twice. Each shard is indexed and cached on its own, as distinct shards would be.

  --samples N    samples in all, a multiple of K (default 1000000)
  --per-shard K  samples per shard (default 1000)
  --dir DIR      where to put the shards and the cache (default: a temporary folder,
                 removed at the end unless --keep)
  --bin DIR      where forkfeed-bench and forkfeed-mkdata are (default build/bin)
  --keep         keep DIR
  -h, --help     this text

Exit status: 0 measured, 1 a run failed, 2 bad arguments.
USAGE
}

say() { echo "shard_scale.sh: $*" >&2; }
die() { say "$*"; exit 1; }
bad_usage() { say "$* (see --help)"; exit 2; }

samples=1000000 per_shard=1000 dir="" bin=$root/build/bin keep=0
while [[ $# -gt 0 ]]; do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --keep) keep=1; shift ;;
    --samples | --per-shard | --dir | --bin)
      [[ $# -ge 2 ]] || bad_usage "$1 needs a value"
      case $1 in
        --samples) samples=$2 ;;
        --per-shard) per_shard=$2 ;;
        --dir) dir=$2 ;;
        --bin) bin=$2 ;;
      esac
      shift 2 ;;
    *) bad_usage "unknown argument: $1" ;;
  esac
done
for name in samples per_shard; do
  [[ ${!name} =~ ^[1-9][0-9]*$ ]] || bad_usage "--${name//_/-} must be a whole number >= 1, got '${!name}'"
done
[[ $((samples % per_shard)) -eq 0 ]] || bad_usage "--samples $samples is not a multiple of --per-shard $per_shard"
for tool in forkfeed-bench forkfeed-mkdata; do
  [[ -x $bin/$tool ]] || die "$bin/$tool not found; build forkfeed (tools/build.sh build) or pass --bin DIR"
done
if [[ -z $dir ]]; then
  dir=$(mktemp -d "${TMPDIR:-/tmp}/forkfeed-shard-scale.XXXXXX")
  [[ $keep -eq 1 ]] || trap 'rm -rf "$dir"' EXIT
fi
mkdir -p "$dir/shards" "$dir/cache"
shards=$((samples / per_shard))

say "writing one shard of $per_shard images"
"$bin/forkfeed-mkdata" --format wds --out "$dir/one" --images "$per_shard" --classes 10 --min-side 16 \
  --max-side 24 --special-every 0 --shard-size "$per_shard" >&2
[[ -f $dir/one/shard-000000.tar ]] || die "forkfeed-mkdata wrote no $dir/one/shard-000000.tar"
say "copying it as $shards shards ($samples samples)"
for ((i = 0; i < shards; i++)); do
  printf -v path '%s/shards/shard-%06d.tar' "$dir" "$i"
  [[ -e $path ]] || cp --reflink=auto "$dir/one/shard-000000.tar" "$path"
done

open_once() {
  local name=$1
  say "$name open of $samples samples in $shards shards"
  FORKFEED_CACHE_DIR=$dir/cache "$python" "$root/tools/compare/peak_pss.py" --interval-ms 100 \
    --out "$dir/$name.pss.json" -- "$bin/forkfeed-bench" --shards "$dir/shards" --workers 2 --batch 256 \
    --size 16 --transform eval --stop-after-batches 1 --log-level warn --json >"$dir/$name.json" ||
    die "forkfeed-bench failed (see above)"
}
rm -rf "$dir/cache"/*
open_once first
open_once cached

"$python" - "$dir" <<'PY'
import json, os, sys
d = sys.argv[1]
def load(name):
    with open(os.path.join(d, name)) as f:
        return json.loads(f.read().strip().splitlines()[-1])
rows = []
for name in ("first", "cached"):
    run, tree = load(name + ".json"), load(name + ".pss.json")
    rows.append((name, run, tree))
n = rows[0][1]["dataset_size"]
print(f"shard_scale.sh: {n} samples in tar shards, forkfeed-bench --workers 2 (opening, then one batch)")
print(f"{'open':<8}{'open s':>10}{'peak PSS':>14}{'index B/sample':>16}")
for name, run, tree in rows:
    per = run["index_bytes"] / run["dataset_size"]
    print(f"{name:<8}{run['startup_s']:>10.2f}{tree['peak_pss_bytes'] / 2**20:>10.0f} MiB{per:>16.1f}")
PY
