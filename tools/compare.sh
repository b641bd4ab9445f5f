#!/usr/bin/env bash
# tools/compare.sh: forkfeed against the PyTorch DataLoader, side by side, on one folder in
# one run: the single-core probe, forkfeed-bench, then torchvision's ImageFolder through a
# DataLoader, with the same transform, workers, batch size and images. See --help.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python=/usr/bin/python3  # Debian's: the one python3-torch installs into

usage() {
  cat <<'EOF'
usage: tools/compare.sh [--data DIR] [--workers N] [--batch B] [--size S]
                        [--transform train|eval] [--dtype uint8|float32] [--epochs E]
                        [--images N] [--seed X] [--generate N] [--bin DIR] [--no-torch] [--json]

Measures, on one folder and in one run, one after the other on a warm page cache:
  1. forkfeed-bench --probe: one core decoding + transforming every file, with OpenCV's
     full decode (the reference) and with forkfeed's fused path;
  2. forkfeed-bench with N workers;
  3. the PyTorch DataLoader over torchvision's ImageFolder with the same transform
     (train: RandomResizedCrop + RandomHorizontalFlip; eval: Resize(size/0.875) +
     CenterCrop; then PILToTensor, or ToTensor + Normalize for float32), the same N
     workers, batch size, shuffle and number of images, run by /usr/bin/python3.
Both loaders are timed from the first batch asked for to the last received; the wait
per batch is the time the consumer spends asking for it. Peak memory is the largest sum
of PSS over the whole process tree (the loader and all its workers), sampled every
100 ms. It prints images/s, peak PSS and wait p50/p99 per loader, and the ratios
forkfeed / PyTorch, fused / OpenCV (single core) and forkfeed / (N x fused probe).

  --data DIR        ImageFolder root to measure (default: a generated set, see --generate)
  --workers N       decode workers of both loaders (default 2)
  --batch B         batch size (default 64)
  --size S          output height and width (default 224)
  --transform T     train or eval (default train)
  --dtype D         uint8 (NHWC for forkfeed, CHW for PyTorch) or float32 normalised (default uint8)
  --epochs E        passes over the dataset per loader (default 2)
  --images N        instead of whole epochs: the first ceil(N/B) batches per loader, and
                    N files (spread over the dataset) for the probe
  --seed X          seed of shuffles and crops (default 0)
  --generate N      without --data: images of the generated set (default 2000), written
                    once by forkfeed-mkdata to BIN/../compare-data-N, ImageNet-like
                    (baseline colour JPEGs like photographs: shorter side 256-500,
                    quality 75-95, 20 classes)
  --bin DIR         where forkfeed-bench and forkfeed-mkdata are (default: build/bin,
                    after tools/setup.sh and tools/build.sh build, as tools/demo.sh does)
  --no-torch        skip the PyTorch column
  --json            print one JSON object instead of the table
  -h, --help        this text

Without --no-torch, missing python3-torch, python3-torchvision or python3-numpy are
installed with apt-get (through sudo when not root); if that cannot be done the table
says why the PyTorch column is empty. Progress goes to stderr. Exit status: 0 measured,
1 a run failed, 2 bad arguments.

Example:
  tools/compare.sh                                  # 2000 generated images, 2 workers
  tools/compare.sh --data /data/imagenet/val --images 5000 --workers 8 --batch 256
EOF
}

say() { echo "compare.sh: $*" >&2; }
die() { say "$*"; exit 1; }
bad_usage() { say "$* (see --help)"; exit 2; }

data="" workers=2 batch=64 size=224 transform=train dtype=uint8 epochs=2 images=0 seed=0
generate=2000 bin="" torch=1 json=0
while [[ $# -gt 0 ]]; do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --no-torch) torch=0; shift; continue ;;
    --json) json=1; shift; continue ;;
    --data | --workers | --batch | --size | --transform | --dtype | --epochs | --images | --seed | \
      --generate | --bin)
      [[ $# -ge 2 ]] || bad_usage "$1 needs a value"
      ;;
    *) bad_usage "unknown argument: $1" ;;
  esac
  case $1 in
    --data) data=$2 ;;
    --workers) workers=$2 ;;
    --batch) batch=$2 ;;
    --size) size=$2 ;;
    --transform) transform=$2 ;;
    --dtype) dtype=$2 ;;
    --epochs) epochs=$2 ;;
    --images) images=$2 ;;
    --seed) seed=$2 ;;
    --generate) generate=$2 ;;
    --bin) bin=$2 ;;
  esac
  shift 2
done
for name in workers batch size epochs images seed generate; do
  [[ ${!name} =~ ^[0-9]+$ ]] || bad_usage "--$name must be a whole number, got '${!name}'"
done
for name in workers batch size epochs generate; do
  [[ ${!name} -gt 0 ]] || bad_usage "--$name must be at least 1"
done
[[ $transform == train || $transform == eval ]] || bad_usage "--transform must be train or eval, got '$transform'"
[[ $dtype == uint8 || $dtype == float32 ]] || bad_usage "--dtype must be uint8 or float32, got '$dtype'"
[[ -z $data || -d $data ]] || die "--data $data is not a folder; give an ImageFolder root (one subfolder per class)"

# Installs the Debian packages given with apt-get, through sudo when not root. Returns
# non-zero, having said why, when that cannot be done.
apt_install() {
  local sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 || { say "not root and no sudo to install $*"; return 1; }
    sudo=(sudo)
  fi
  command -v apt-get >/dev/null 2>&1 || { say "no apt-get to install $*"; return 1; }
  say "installing $* with apt-get (several hundred MB for torch; --no-torch skips this)"
  "${sudo[@]}" apt-get update -qq >&2 || { say "'apt-get update' failed"; return 1; }
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2 ||
    { say "'apt-get install $*' failed"; return 1; }
}

[[ -x $python ]] || apt_install python3 || die "$python is needed for the memory sampler and the report"

if [[ -z $bin ]]; then
  "$root/tools/setup.sh" >&2
  "$root/tools/build.sh" "$root/build" -DCMAKE_BUILD_TYPE=Release >&2
  bin=$root/build/bin
fi
for tool in forkfeed-bench forkfeed-mkdata; do
  [[ -x $bin/$tool ]] || die "$bin/$tool not found; build forkfeed (tools/build.sh build) or pass --bin DIR"
done

if [[ -z $data ]]; then
  data=$(cd "$bin/.." && pwd)/compare-data-$generate
  spec="images=$generate classes=20 seed=0 sides=256-500 photos"
  marker="$data/.forkfeed-compare-complete"
  # The marker is written last, so an interrupted or differently made set is remade.
  if [[ ! -f $marker || "$(cat "$marker")" != "$spec" ]]; then
    say "writing $generate images to $data (once; later runs reuse them)"
    rm -rf "$data"
    "$bin/forkfeed-mkdata" --out "$data" --images "$generate" --classes 20 --seed 0 \
      --min-side 256 --max-side 500 --special-every 0 >&2
    echo "$spec" >"$marker"
  fi
fi

out=$(mktemp -d "${TMPDIR:-/tmp}/forkfeed-compare.XXXXXX")
trap 'rm -rf "$out"' EXIT

# Before anything is timed: apt would compete with the runs for the CPU.
if [[ $torch -eq 1 ]]; then
  check_torch() { "$python" -c 'import numpy, torch, torchvision' 2>/dev/null; }
  if ! check_torch; then
    if ! apt_install python3-torch python3-torchvision python3-numpy || ! check_torch; then
      echo "python3-torch, python3-torchvision and python3-numpy for $python are missing and could not be installed (see the messages above); install them, or pass --no-torch" >"$out/torch.skipped"
      torch=0
    fi
  fi
else
  echo "--no-torch" >"$out/torch.skipped"
fi

common=(--transform "$transform" --size "$size" --dtype "$dtype" --seed "$seed")
schedule="$epochs epoch(s)"
probe_args=() bench_limit=() torch_limit=()
if [[ $images -gt 0 ]]; then
  batches=$(((images + batch - 1) / batch))
  epochs=$batches  # enough: every epoch has at least one batch
  schedule="first $batches batches"
  probe_args=(--probe-limit "$images")
  bench_limit=(--stop-after-batches "$batches")
  torch_limit=(--stop-after-batches "$batches")
fi

# The loaders read files in shuffled order, --images N of them maybe not those the probe
# reads: warm the page cache with the whole set, if it fits.
data_bytes=$(du -sb "$data" | cut -f1)
available_kib=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
if [[ $((data_bytes / 1024)) -lt $((available_kib / 2)) ]]; then
  say "reading $((data_bytes >> 20)) MiB once to warm the page cache"
  find "$data" -type f -print0 | xargs -0 -r cat >/dev/null
else
  say "$data ($((data_bytes >> 20)) MiB) exceeds half the available memory: the runs read from disk"
fi

# Other work on the machine takes cores from the runs; the report shows the load.
read -r load _ </proc/loadavg
say "1/3 probe: one core, OpenCV vs fused decode, $transform ${size}x$size"
"$bin/forkfeed-bench" --probe --json --data "$data" "${common[@]}" "${probe_args[@]}" >"$out/probe.json" ||
  die "forkfeed-bench --probe failed (see above)"

say "2/3 forkfeed: $workers workers, batch $batch, $schedule"
"$python" "$root/tools/compare/peak_pss.py" --out "$out/forkfeed.pss.json" -- \
  "$bin/forkfeed-bench" --json --data "$data" --workers "$workers" --batch "$batch" --epochs "$epochs" \
  --on-error skip "${common[@]}" "${bench_limit[@]}" >"$out/forkfeed.json" ||
  die "forkfeed-bench failed (see above)"

if [[ $torch -eq 1 ]]; then
  say "3/3 PyTorch DataLoader: $workers workers, batch $batch, $schedule"
  if ! "$python" "$root/tools/compare/peak_pss.py" --out "$out/torch.pss.json" -- \
      "$python" "$root/tools/compare/torch_loader.py" --data "$data" --workers "$workers" --batch "$batch" \
      --epochs "$epochs" "${common[@]}" "${torch_limit[@]}" >"$out/torch.json"; then
    echo "torch_loader.py failed (its messages are above)" >"$out/torch.skipped"
    rm -f "$out/torch.json"
  fi
fi

sample_bytes=$((size * size * 3))
[[ $dtype == float32 ]] && sample_bytes=$((sample_bytes * 4))
"$python" - "$out/settings.json" "$data" "$transform" "$dtype" "$schedule" \
  "$load" "$workers" "$batch" "$size" "$epochs" "$images" "$seed" "$sample_bytes" "$(nproc)" <<'EOF'
import json, sys
path, data, transform, dtype, schedule, load, *numbers = sys.argv[1:]
names = ["workers", "batch", "size", "epochs", "images", "seed", "sample_bytes", "cpus"]
settings = dict(zip(names, map(int, numbers)))
settings.update(data=data, transform=transform, dtype=dtype, schedule=schedule, load_before=float(load))
with open(path, "w") as f:
    json.dump(settings, f)
EOF
report_args=()
[[ $json -eq 1 ]] && report_args=(--json)
"$python" "$root/tools/compare/report.py" "$out" "${report_args[@]}"
