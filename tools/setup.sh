#!/usr/bin/env bash
# Installs the Debian packages forkfeed builds and tests with. Idempotent: when every
# package is already installed it prints nothing and touches nothing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  clang-format  # tools/check_format.sh, run by tools/test.sh
  pycodestyle  # tools/check_python_style.sh, run by tools/test.sh
  ccache  # tools/test.sh: pip's build of the Python package reuses the Release build's objects
  libopencv-dev libboost-dev libspdlog-dev libgtest-dev
  libibverbs-dev ibverbs-providers libjpeg62-turbo-dev
  libpng-dev libdeflate-dev  # masks: palette PNGs read as their indices, inflated fast
  libxxhash-dev  # a dataset's identity: its samples' content digests (XXH3, header only)
  libucx-dev  # remote/: UCX headers; libucp (libucx0) is loaded at run time for remote serving
  slurm-wlm munge  # tests/slurm: examples/slurm/remote_decode.sbatch on a one-node cluster
  libcli11-dev nlohmann-json3-dev libyaml-cpp-dev
  tar  # GNU tar: the tests read shards it writes, in every format it writes
  python3  # tools/compare.sh's memory sampler and report, and its test
  # The Python package (python/) and its tests, for /usr/bin/python3.
  python3-dev python3-pybind11 python3-numpy python3-pytest python3-torch
  python3-pip python3-setuptools python3-wheel  # pip install --no-build-isolation . (setup.py)
  python3-torchvision  # examples/train_imagenet.py (ResNet-18) and its test
)

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
  echo "setup.sh: dpkg-query/apt-get not found; forkfeed's setup expects Debian (12 or later)." >&2
  echo "setup.sh: install these packages (or their equivalents) yourself: ${packages[*]}" >&2
  exit 1
fi

missing=()
for pkg in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  if [[ "$status" != "install ok installed" ]]; then
    missing+=("$pkg")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "setup.sh: missing packages (${missing[*]}) and not root, and sudo is not available." >&2
    echo "setup.sh: as root, run: apt-get install ${missing[*]}" >&2
    exit 1
  fi
  sudo=(sudo)
fi

echo "setup.sh: installing ${#missing[@]} missing package(s): ${missing[*]}"
if ! "${sudo[@]}" apt-get update -qq; then
  echo "setup.sh: 'apt-get update' failed; check the network and /etc/apt/sources.list, then rerun." >&2
  exit 1
fi
if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "${missing[@]}"; then
  echo "setup.sh: 'apt-get install ${missing[*]}' failed; see apt's messages above." >&2
  exit 1
fi
