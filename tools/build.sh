#!/usr/bin/env bash
# Configures (Ninja) and builds forkfeed:
#   tools/build.sh BUILD_DIR [extra cmake args] [--targets TARGET...]
# The build type is Release unless the extra args set CMAKE_BUILD_TYPE. With --targets,
# only those targets (and what they need) are built; without, everything, tests included.
# Shared by demo.sh and test.sh so the configure/build logic lives in one place.
set -euo pipefail

if [[ $# -lt 1 ]]; then
  echo "usage: tools/build.sh BUILD_DIR [extra cmake args] [--targets TARGET...]" >&2
  exit 2
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=$1
shift

args=()
targets=()
while [[ $# -gt 0 ]]; do
  if [[ "$1" == --targets ]]; then
    shift
    targets=("$@")
    break
  fi
  args+=("$1")
  shift
done
has_build_type=0
for arg in "${args[@]}"; do
  [[ "$arg" == -DCMAKE_BUILD_TYPE=* || "$arg" == -DCMAKE_BUILD_TYPE:*=* ]] && has_build_type=1
done
if [[ $has_build_type -eq 0 ]]; then
  args=(-DCMAKE_BUILD_TYPE=Release "${args[@]}")
fi

# A build dir made earlier with another generator cannot be switched to Ninja in place.
cache="$build_dir/CMakeCache.txt"
if [[ -f "$cache" ]] && ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$cache"; then
  echo "build.sh: $build_dir was configured with another CMake generator; remove it and rerun." >&2
  exit 1
fi

cmake -S "$root" -B "$build_dir" -G Ninja "${args[@]}"
cmake --build "$build_dir" --parallel "$(nproc)" ${targets[@]+--target "${targets[@]}"}
