#!/usr/bin/env bash
# install_consumer test: installs forkfeed from BUILD_DIR into a temporary prefix, then
# builds and runs a separate project that uses it through find_package(forkfeed).
# usage: check_consumer.sh BUILD_DIR CONSUMER_SOURCE_DIR
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: check_consumer.sh BUILD_DIR CONSUMER_SOURCE_DIR" >&2
  exit 2
fi
build_dir=$1
consumer_src=$2

tmp=$(mktemp -d "${TMPDIR:-/tmp}/forkfeed-consumer.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

cache_value() {  # cache_value NAME: the value of NAME in BUILD_DIR's CMakeCache.txt
  sed -n "s/^$1:[A-Z]*=//p" "$build_dir/CMakeCache.txt"
}

echo "== install $build_dir -> $tmp/prefix"
cmake --install "$build_dir" --prefix "$tmp/prefix"

# A sanitized libforkfeed needs the sanitizer runtimes first in the executable, so the
# consumer is built the same way; the build type follows the installed build's.
consumer_args=(-DCMAKE_PREFIX_PATH="$tmp/prefix")
build_type=$(cache_value CMAKE_BUILD_TYPE)
[[ -n "$build_type" ]] && consumer_args+=(-DCMAKE_BUILD_TYPE="$build_type")
if [[ "$(cache_value FORKFEED_SANITIZE)" == "ON" ]]; then
  consumer_args+=(-DCMAKE_CXX_FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer"
                  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined")
fi

echo "== configure and build the consumer against the installed package"
cmake -S "$consumer_src" -B "$tmp/consumer" -G Ninja "${consumer_args[@]}"
cmake --build "$tmp/consumer"

echo "== run the consumer"
"$tmp/consumer/consumer"
echo "install_consumer: ok"
