#!/usr/bin/env bash
# The README's first command: install what is missing, build (Release) into build/ the
# three programs it runs (no test), make a synthetic demo dataset once, and run
# forkfeed-bench on it.
# Extra arguments go to forkfeed-bench, e.g. tools/demo.sh --workers 4 --json
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

tools/setup.sh
# Only what the demo runs: the dataset maker, the bench and the worker it may spawn.
tools/build.sh build -DCMAKE_BUILD_TYPE=Release --targets forkfeed-mkdata forkfeed-bench forkfeed-worker

data=build/demo-data
spec="images=2000 classes=20 seed=0"
marker="$data/.forkfeed-demo-complete"
# The marker is written last, so an interrupted or differently-sized set is remade.
if [[ ! -f "$marker" || "$(cat "$marker")" != "$spec" ]]; then
  echo "demo.sh: writing the demo dataset to $data (2000 images, 20 classes)"
  rm -rf "$data"
  build/bin/forkfeed-mkdata --out "$data" --images 2000 --classes 20 --seed 0
  echo "$spec" >"$marker"
fi

exec build/bin/forkfeed-bench --data "$data" --workers 2 --batch 64 --epochs 2 "$@"
