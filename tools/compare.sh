#!/usr/bin/env bash
# tools/compare.sh: forkfeed against the PyTorch DataLoader, side by side, on one folder in
# one run: the single-core probe, forkfeed-bench, forkfeed's Python iterator, then
# torchvision's ImageFolder through a DataLoader, with the same transform, workers, batch
# size and images. See --help.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python=/usr/bin/python3  # Debian's: the one python3-torch installs into

usage() {
  cat <<'EOF'
usage: tools/compare.sh [--data DIR] [--workers N] [--batch B] [--size S]
                        [--transform train|eval] [--dtype uint8|float32|both] [--epochs E]
                        [--images N] [--seed X] [--repeat R] [--generate N] [--bin DIR]
                        [--no-torch] [--no-python] [--shards] [--json]
                        [--transforms [SPEC]]...

Measures, on one folder and in one run, one after the other on a warm page cache:
  1. forkfeed-bench --probe: one core decoding + transforming every file, with OpenCV's
     full decode (the reference) and with forkfeed's fused path, each sample written
     into the arena where step 2's workers would write it;
  2. forkfeed-bench with N workers;
  3. forkfeed from Python: forkfeed.Loader with the same options, iterated as a trainer
     does (torch tensors that are views of the batch slots), run by /usr/bin/python3
     with the package built next to --bin (BIN/../python);
  4. the PyTorch DataLoader over torchvision's ImageFolder with the same transform
     (train: RandomResizedCrop + RandomHorizontalFlip; eval: Resize(size/0.875) +
     CenterCrop; then PILToTensor, or ToTensor + Normalize for float32), the same N
     workers, batch size, shuffle and number of images, run by /usr/bin/python3.
With --shards, the same images packed into WebDataset tar shards (forkfeed-shard, once)
are read too, by forkfeed-bench with the same options right after step 2, and the table
adds that row and the ratio shards / folder.
Every loader is timed from the first batch asked for to the last received; the wait
per batch is the time the consumer spends asking for it. Peak memory is the largest sum
of PSS over the whole process tree (the loader and all its workers), sampled every
500 ms. It prints images/s, peak PSS and wait p50/p99 per loader, and the ratios
forkfeed / PyTorch, from Python / forkfeed-bench, from Python / PyTorch, fused / OpenCV
(single core) and forkfeed / (N x fused probe).

With --transforms, it measures transform pipelines instead, each written as forkfeed and
torchvision both read it ("RandomResizedCrop(224), TrivialAugmentWide(), Normalize()"):
forkfeed from Python (step 3) with transform=SPEC against the PyTorch DataLoader (step 4)
with the same text read as torchvision.transforms ops (ToTensor() put before Normalize(),
whose mean and std are ImageNet's as forkfeed's are; PILToTensor() where there is no
Normalize(), so both give the same dtype), one right after the other, and the --transform
shorthand (train) the same way. It prints per pipeline: images/s of both, forkfeed /
PyTorch, and each one's cost per sample (one worker's time, workers / images/s), with
forkfeed's set against the shorthand's: what the pipeline's ops add. --dtype does not
apply (a pipeline with Normalize() gives float32, one without uint8); --images defaults
to 512 and --repeat to 3.

  --data DIR        ImageFolder root to measure (default: a generated set, see --generate);
                    tools/compare/photo_folder.py writes one cut from photographs
  --workers N       decode workers of every loader (default 2)
  --batch B         batch size (default 64)
  --size S          output height and width (default 224)
  --transform T     train or eval (default train)
  --dtype D         uint8 (NHWC for forkfeed, CHW for PyTorch), float32 normalised (NCHW),
                    or both: each measurement for uint8 and right after for float32, a
                    table for each dtype and a last one of float32 / uint8 (default uint8)
  --epochs E        passes over the dataset per loader (default 2)
  --images N        instead of whole epochs: the first ceil(N/B) batches per loader, and
                    N files (spread over the dataset) for the probe
  --seed X          seed of shuffles and crops (default 0)
  --repeat R        every measurement R times, and each figure the median of the R runs,
                    with the range of images/s per loader; for machines whose other
                    tenants make one run vary by 10% or more (default 1)
  --generate N      without --data: images of the generated set (default 2000), written
                    once by forkfeed-mkdata to BIN/../compare-data-N, ImageNet-like
                    (baseline colour JPEGs like photographs: shorter side 256-500,
                    quality 75-95, 20 classes)
  --bin DIR         where forkfeed-bench and forkfeed-mkdata are (default: build/bin,
                    after tools/setup.sh and tools/build.sh build, as tools/demo.sh does)
  --no-torch        skip the PyTorch row
  --no-python       skip the forkfeed from Python row
  --shards          add forkfeed-bench on the same images as tar shards of 1000 samples,
                    packed once into BIN/../compare-shards/<name of the folder>
  --json            print one JSON object instead of the table
  --transforms SPEC measure the pipeline SPEC (again for more); without a SPEC, three:
                    (a) RandomResizedCrop(224), RandomHorizontalFlip()
                    (b) (a), TrivialAugmentWide(), Normalize(), RandomErasing(0.1)
                    (c) (b) with ColorJitter(0.4, 0.4, 0.4) before Normalize()
  -h, --help        this text

Without --no-torch, missing python3-torch, python3-torchvision or python3-numpy are
installed with apt-get (through sudo when not root); if that cannot be done the table
says why the PyTorch row is empty, as it says why the Python row is when the forkfeed
package is not built. Progress goes to stderr. Exit status: 0 measured,
1 a run failed, 2 bad arguments.

Example:
  tools/compare.sh                                  # 2000 generated images, 2 workers
  tools/compare.sh --data /data/imagenet/val --images 5000 --workers 8 --batch 256
  tools/compare.sh --transforms                     # the three pipelines above
  tools/compare.sh --transforms "RandomResizedCrop(176), RandomHorizontalFlip(), AutoAugment(), Normalize()"
EOF
}

say() { echo "compare.sh: $*" >&2; }
die() { say "$*"; exit 1; }
bad_usage() { say "$* (see --help)"; exit 2; }

data="" workers=2 batch=64 size=224 transform=train dtype=uint8 epochs=2 images=0 seed=0 repeat=1
generate=2000 bin="" torch=1 from_python=1 json=0 shards=0
pipelines=() given=()  # --transforms' specs; the options given
while [[ $# -gt 0 ]]; do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --transforms)
      # Its value is optional: the next argument, unless that is the next option.
      if [[ $# -ge 2 && $2 != --* ]]; then
        [[ -n $2 ]] || bad_usage "--transforms needs a pipeline, e.g. \"RandomResizedCrop(224), RandomHorizontalFlip()\""
        pipelines+=("$2")
        shift 2
      else
        pipelines+=(default)
        shift
      fi
      continue
      ;;
    --no-torch) torch=0; shift; continue ;;
    --no-python) from_python=0; shift; continue ;;
    --shards) shards=1; shift; continue ;;
    --json) json=1; shift; continue ;;
    --data | --workers | --batch | --size | --transform | --dtype | --epochs | --images | --seed | \
      --repeat | --generate | --bin)
      [[ $# -ge 2 ]] || bad_usage "$1 needs a value"
      ;;
    *) bad_usage "unknown argument: $1" ;;
  esac
  given+=("$1")
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
    --repeat) repeat=$2 ;;
    --generate) generate=$2 ;;
    --bin) bin=$2 ;;
  esac
  shift 2
done
for name in workers batch size epochs images seed repeat generate; do
  [[ ${!name} =~ ^[0-9]+$ ]] || bad_usage "--$name must be a whole number, got '${!name}'"
done
for name in workers batch size epochs repeat generate; do
  [[ ${!name} -gt 0 ]] || bad_usage "--$name must be at least 1"
done
[[ $transform == train || $transform == eval ]] || bad_usage "--transform must be train or eval, got '$transform'"
[[ $dtype == uint8 || $dtype == float32 || $dtype == both ]] ||
  bad_usage "--dtype must be uint8, float32 or both, got '$dtype'"
[[ -z $data || -d $data ]] || die "--data $data is not a folder; give an ImageFolder root (one subfolder per class)"

was_given() { [[ " ${given[*]} " == *" $1 "* ]]; }
if [[ ${#pipelines[@]} -gt 0 ]]; then
  if [[ " ${pipelines[*]} " == *" default "* ]]; then
    flip="RandomResizedCrop(224), RandomHorizontalFlip()"
    pipelines=("$flip" "$flip, TrivialAugmentWide(), Normalize(), RandomErasing(0.1)"
               "$flip, TrivialAugmentWide(), ColorJitter(0.4, 0.4, 0.4), Normalize(), RandomErasing(0.1)")
  fi
  ! was_given --dtype ||
    bad_usage "--dtype does not apply to --transforms: a pipeline with Normalize() gives float32, one without uint8"
  [[ $shards -eq 0 ]] || bad_usage "--shards does not apply to --transforms"
  [[ $torch -eq 1 || $from_python -eq 1 ]] ||
    bad_usage "--transforms compares forkfeed from Python with PyTorch: with --no-torch and --no-python nothing is left"
  was_given --images || images=512
  was_given --repeat || repeat=3
fi

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
tools=(forkfeed-bench forkfeed-mkdata)
[[ $shards -eq 1 ]] && tools+=(forkfeed-shard)
for tool in "${tools[@]}"; do
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

# The same images as tar shards, packed once; forkfeed-shard keeps the shards already there.
shard_spec=""
if [[ $shards -eq 1 ]]; then
  shard_dir=$(cd "$bin/.." && pwd)/compare-shards/$(basename "$(cd "$data" && pwd)")
  marker="$shard_dir/.forkfeed-compare-complete"
  if [[ ! -f $marker || "$(head -1 "$marker")" != "$(cd "$data" && pwd)" ]]; then
    say "packing $data into tar shards in $shard_dir (once; later runs reuse them)"
    rm -rf "$shard_dir"
    mkdir -p "$shard_dir"
    "$bin/forkfeed-shard" --from "$data" --out "$shard_dir/shard-%06d.tar" --shard-size 1000 >&2 ||
      die "forkfeed-shard failed (see above)"
    (cd "$data" && pwd) >"$marker"
  fi
  shard_spec=$shard_dir
fi

out=$(mktemp -d "${TMPDIR:-/tmp}/forkfeed-compare.XXXXXX")
trap 'rm -rf "$out"' EXIT

# Before anything is timed: apt would compete with the runs for the CPU.
torch_skipped=""
if [[ $torch -eq 1 ]]; then
  check_torch() { "$python" -c 'import numpy, torch, torchvision' 2>/dev/null; }
  if ! check_torch; then
    if ! apt_install python3-torch python3-torchvision python3-numpy || ! check_torch; then
      torch_skipped="python3-torch, python3-torchvision and python3-numpy for $python are missing and could not be installed (see the messages above); install them, or pass --no-torch"
      torch=0
    fi
  fi
else
  torch_skipped="--no-torch"
fi

# The forkfeed package built next to the binaries (tools/build.sh puts it in BUILD/python).
python_path=$(cd "$bin/.." && pwd)/python
python_skipped=""
if [[ $from_python -eq 0 ]]; then
  python_skipped="--no-python"
elif ! PYTHONPATH=$python_path "$python" -c 'import forkfeed, torch' 2>/dev/null; then
  python_skipped="the forkfeed package is not in $python_path or does not import with $python (build it with python3-dev, python3-pybind11 and python3-torch installed: tools/setup.sh)"
  from_python=0
fi

schedule="$epochs epoch(s)"
probe_args=() limit=()
if [[ $images -gt 0 ]]; then
  batches=$(((images + batch - 1) / batch))
  epochs=$batches  # enough: every epoch has at least one batch
  schedule="first $batches batches"
  probe_args=(--probe-limit "$images")
  limit=(--stop-after-batches "$batches")
fi

# The loaders read files in shuffled order, --images N of them maybe not those the probe
# reads: warm the page cache with the whole set, if it fits.
data_bytes=$(du -sb "$data" ${shard_spec:+"$shard_spec"} | awk '{n += $1} END {print n}')
available_kib=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
if [[ $((data_bytes / 1024)) -lt $((available_kib / 2)) ]]; then
  say "reading $((data_bytes >> 20)) MiB once to warm the page cache"
  find "$data" ${shard_spec:+"$shard_spec"} -type f -print0 | xargs -0 -r cat >/dev/null
else
  say "$data ($((data_bytes >> 20)) MiB) exceeds half the available memory: the runs read from disk"
fi

# Every 500 ms: reading smaps_rollup walks page tables, and a tree with torch imported
# (1700 mappings a process) costs about 21 ms of kernel time per sample against the C++
# bench's 8 ms; at 100 ms that tax alone took ~10% of a core from the Python row.
sample_pss=("$python" "$root/tools/compare/peak_pss.py" --interval-ms 500)

# The measurements, in order. Each runs for every dtype back to back, so that float32 /
# uint8 compares runs seconds apart, not minutes.
steps=(probe forkfeed)
[[ ${#pipelines[@]} -gt 0 ]] && steps=()  # pipelines: the two Python rows only
[[ -n $shard_spec ]] && steps+=(shards)
[[ $from_python -eq 1 ]] && steps+=(python)
[[ $torch -eq 1 ]] && steps+=(torch)

# Runs step $1 for dtype $2, leaving its JSON files in the folder $3 for report.py; $4
# prefixes the progress line ("run 2/3, "); $5, if given, is the transform (default --transform's).
measure() {
  local step=$1 dtype=$2 dir=$3 run=$4 transform=${5:-$transform}
  local common=(--transform "$transform" --size "$size" --dtype "$dtype" --seed "$seed")
  local loader_args=(--data "$data" --workers "$workers" --batch "$batch" --epochs "$epochs" "${common[@]}" "${limit[@]}")
  local what="$run$dtype, $step:"
  [[ -z ${5:-} ]] || what="$run$step:"  # a pipeline makes its own dtype
  case $step in
    probe)
      say "$what one core, OpenCV vs fused decode, $transform ${size}x$size"
      # --workers and --batch: the samples go where this step's workers would write them.
      "$bin/forkfeed-bench" --probe --json --data "$data" --workers "$workers" --batch "$batch" "${common[@]}" \
        "${probe_args[@]}" >"$dir/probe.json" ||
        die "forkfeed-bench --probe failed (see above)"
      ;;
    forkfeed)
      say "$what forkfeed-bench, $workers workers, batch $batch, $schedule"
      "${sample_pss[@]}" --out "$dir/forkfeed.pss.json" -- \
        "$bin/forkfeed-bench" --json --on-error skip "${loader_args[@]}" >"$dir/forkfeed.json" ||
        die "forkfeed-bench failed (see above)"
      ;;
    shards)
      say "$what forkfeed-bench on tar shards, $workers workers, batch $batch, $schedule"
      local shard_args=("${loader_args[@]}")
      shard_args[1]=$shard_spec shard_args[0]=--shards
      "${sample_pss[@]}" --out "$dir/shards.pss.json" -- \
        "$bin/forkfeed-bench" --json --on-error skip "${shard_args[@]}" >"$dir/shards.json" ||
        die "forkfeed-bench --shards failed (see above)"
      ;;
    python)
      say "$what forkfeed from Python, $workers workers, batch $batch, $schedule"
      if ! PYTHONPATH=$python_path "${sample_pss[@]}" --out "$dir/python.pss.json" -- \
          "$python" "$root/tools/compare/forkfeed_python.py" "${loader_args[@]}" >"$dir/python.json"; then
        echo "forkfeed_python.py failed (its messages are above)" >"$dir/python.skipped"
        rm -f "$dir/python.json"
      fi
      ;;
    torch)
      say "$what PyTorch DataLoader, $workers workers, batch $batch, $schedule"
      if ! "${sample_pss[@]}" --out "$dir/torch.pss.json" -- \
          "$python" "$root/tools/compare/torch_loader.py" "${loader_args[@]}" >"$dir/torch.json"; then
        echo "torch_loader.py failed (its messages are above)" >"$dir/torch.skipped"
        rm -f "$dir/torch.json"
      fi
      ;;
  esac
}

# The settings of dtype $1's run folder $2, with the load average $3 seen before the run.
write_settings() {
  local dtype=$1 dir=$2 load=$3
  local sample_bytes=$((size * size * 3))
  [[ $dtype == float32 ]] && sample_bytes=$((sample_bytes * 4))
  [[ -z $torch_skipped ]] || echo "$torch_skipped" >"$dir/torch.skipped"
  [[ -z $python_skipped ]] || echo "$python_skipped" >"$dir/python.skipped"
  "$python" - "$dir/settings.json" "$data" "$transform" "$dtype" "$schedule" \
    "$load" "$workers" "$batch" "$size" "$epochs" "$images" "$seed" "$sample_bytes" "$(nproc)" <<'EOF'
import json, sys
path, data, transform, dtype, schedule, load, *numbers = sys.argv[1:]
names = ["workers", "batch", "size", "epochs", "images", "seed", "sample_bytes", "cpus"]
settings = dict(zip(names, map(int, numbers)))
settings.update(data=data, transform=transform, dtype=dtype, schedule=schedule, load_before=float(load))
with open(path, "w") as f:
    json.dump(settings, f)
EOF
}

# --transforms: in each run, each pipeline's two rows one right after the other, the
# shorthand first; pipeline_report.py prints them.
if [[ ${#pipelines[@]} -gt 0 ]]; then
  all=("$transform" "${pipelines[@]}")
  read -r load _ </proc/loadavg
  "$python" - "$out/settings.json" "$data" "$schedule" "$load" "$workers" "$batch" "$size" "$images" "$seed" \
    "$repeat" "$(nproc)" "${all[@]}" <<'EOF'
import json, sys
path, data, schedule, load, *rest = sys.argv[1:]
names = ["workers", "batch", "size", "images", "seed", "repeat", "cpus"]
settings = dict(zip(names, map(int, rest[:len(names)])))
settings.update(data=data, schedule=schedule, load_before=float(load), pipelines=rest[len(names):])
with open(path, "w") as f:
    json.dump(settings, f)
EOF
  for ((r = 1; r <= repeat; r++)); do
    for i in "${!all[@]}"; do
      dir=$out/run$r/p$i
      mkdir -p "$dir"
      [[ -z $torch_skipped ]] || echo "$torch_skipped" >"$dir/torch.skipped"
      [[ -z $python_skipped ]] || echo "$python_skipped" >"$dir/python.skipped"
      for step in "${steps[@]}"; do
        measure "$step" uint8 "$dir" "run $r/$repeat, pipeline $i/$((${#all[@]} - 1)), " "${all[$i]}"
      done
    done
  done
  report_args=()
  [[ $json -eq 1 ]] && report_args=(--json)
  "$python" "$root/tools/compare/pipeline_report.py" "$out" "${report_args[@]}"
  exit
fi

dtypes=("$dtype")
[[ $dtype == both ]] && dtypes=(uint8 float32)
for ((r = 1; r <= repeat; r++)); do
  label=""
  [[ $repeat -gt 1 ]] && label="run $r/$repeat, "
  # Other work on the machine takes cores from the runs; the report shows the load.
  read -r load _ </proc/loadavg
  for d in "${dtypes[@]}"; do
    mkdir -p "$out/$d/run$r"
    write_settings "$d" "$out/$d/run$r" "$load"
  done
  for step in "${steps[@]}"; do
    for d in "${dtypes[@]}"; do
      measure "$step" "$d" "$out/$d/run$r" "$label"
    done
  done
done
dirs=()
for d in "${dtypes[@]}"; do
  dirs+=("$out/$d")
done
report_args=()
[[ $json -eq 1 ]] && report_args=(--json)
"$python" "$root/tools/compare/report.py" "${dirs[@]}" "${report_args[@]}"
