#!/usr/bin/env bash
# install_consumer test: installs forkfeed from BUILD_DIR into a temporary prefix, runs
# the installed tools from there (forkfeed-bench spawning forkfeed-worker, forkfeedd),
# then builds and runs a separate project that uses it through find_package(forkfeed),
# in process and through the installed daemon, and the C++ trainer of examples/. With
# --python, it then moves the prefix and imports the installed Python package from there
# (check_python_package.py).
# usage: check_consumer.sh BUILD_DIR CONSUMER_SOURCE_DIR [--python PYTHON SITE_DIR]
#   SITE_DIR: where the package is installed, relative to the prefix
set -euo pipefail

if [[ $# -ne 2 && ! ($# -eq 5 && "$3" == --python) ]]; then
  echo "usage: check_consumer.sh BUILD_DIR CONSUMER_SOURCE_DIR [--python PYTHON SITE_DIR]" >&2
  exit 2
fi
build_dir=$1
consumer_src=$2
python=${4:-}
site_dir=${5:-}
script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# Only what was installed may be found: the executables' own run path, and
# forkfeed-worker next to the installed libforkfeed.
unset LD_LIBRARY_PATH FORKFEED_WORKER FORKFEED_BIN_DIR

tmp=$(mktemp -d "${TMPDIR:-/tmp}/forkfeed-consumer.XXXXXX")
daemon_pid=
cleanup() {
  if [[ -n "$daemon_pid" ]]; then
    kill "$daemon_pid" 2>/dev/null || true
    wait "$daemon_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

cache_value() {  # cache_value NAME: the value of NAME in BUILD_DIR's CMakeCache.txt
  sed -n "s/^$1:[A-Z]*=//p" "$build_dir/CMakeCache.txt"
}

prefix=$tmp/prefix
echo "== install $build_dir -> $prefix"
cmake --install "$build_dir" --prefix "$prefix"

echo "== make a small dataset with the installed forkfeed-mkdata"
"$prefix/bin/forkfeed-mkdata" --out "$tmp/data" --images 24 --classes 3 --min-side 40 --max-side 80

echo "== run the installed forkfeed-bench, spawning the installed forkfeed-worker"
"$prefix/bin/forkfeed-bench" --data "$tmp/data" --workers 2 --batch 8 --size 32 --start-method spawn \
  --max-worker-restarts 0 --json > "$tmp/bench.json"
grep -q '"worker_restarts":0' "$tmp/bench.json" || { cat "$tmp/bench.json"; exit 1; }

echo "== a forkfeed-worker that cannot find libforkfeed fails the run at once, saying why"
if ldconfig -p 2>/dev/null | grep -q 'libforkfeed\.so'; then
  # A libforkfeed installed system-wide would be found without the run path.
  echo "skipped: ldconfig knows a libforkfeed, so a moved forkfeed-worker would still start"
else
mkdir -p "$tmp/moved/bin"
cp "$prefix/bin/forkfeed-worker" "$tmp/moved/bin/"  # its $ORIGIN/../lib has no libforkfeed
if FORKFEED_WORKER=$tmp/moved/bin/forkfeed-worker "$prefix/bin/forkfeed-bench" --data "$tmp/data" --workers 2 \
     --batch 8 --size 32 --start-method spawn 2> "$tmp/unstartable.err"; then
  echo "forkfeed-bench succeeded with a forkfeed-worker that cannot start" >&2
  exit 1
fi
for expected in "forkfeed-bench: worker" "could not start: $tmp/moved/bin/forkfeed-worker exited with code 127" \
                "libforkfeed.so.0"; do
  grep -qF "$expected" "$tmp/unstartable.err" || { cat "$tmp/unstartable.err"; echo "missing: $expected" >&2; exit 1; }
done
fi

# The build type follows the installed build's.
consumer_args=(-DCMAKE_PREFIX_PATH="$prefix")
build_type=$(cache_value CMAKE_BUILD_TYPE)
[[ -n "$build_type" ]] && consumer_args+=(-DCMAKE_BUILD_TYPE="$build_type")

echo "== configure and build the consumer against the installed package"
cmake -S "$consumer_src" -B "$tmp/consumer" -G Ninja "${consumer_args[@]}"
cmake --build "$tmp/consumer"

echo "== run the consumer, then again with workers it spawns"
"$tmp/consumer/consumer"
"$tmp/consumer/consumer" --spawn "$tmp/data" 24

echo "== build examples/cpp_trainer against the installed package, and train two epochs"
cmake -S "$script_dir/../../examples/cpp_trainer" -B "$tmp/trainer" -G Ninja "${consumer_args[@]}"
cmake --build "$tmp/trainer"
"$tmp/trainer/train" "$tmp/data" 2 2

echo "== start the installed forkfeedd and read a pass through it with the consumer"
socket=$tmp/forkfeed.sock
"$prefix/bin/forkfeedd" --socket "$socket" --log-level warn &
daemon_pid=$!
for _ in $(seq 600); do  # up to 60 s on a loaded machine
  [[ -S "$socket" ]] && break
  kill -0 "$daemon_pid" 2>/dev/null || { echo "forkfeedd exited before listening" >&2; exit 1; }
  sleep 0.1
done
[[ -S "$socket" ]] || { echo "forkfeedd did not listen on $socket" >&2; exit 1; }
"$tmp/consumer/consumer" --daemon "$socket" "$tmp/data" 24
kill -TERM "$daemon_pid"
wait "$daemon_pid"
daemon_pid=

if [[ -n "$python" ]]; then
  # Moved, so that only run paths relative to the installed files can work.
  echo "== move the prefix, then import the installed Python package from there"
  mv "$prefix" "$tmp/moved-prefix"
  mkdir "$tmp/elsewhere"
  (cd "$tmp/elsewhere" &&
   PYTHONPATH="$tmp/moved-prefix/$site_dir" "$python" -s "$script_dir/check_python_package.py" \
     "$tmp/moved-prefix" "$tmp/data" 24)
fi
echo "install_consumer: ok"
