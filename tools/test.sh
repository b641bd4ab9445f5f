#!/usr/bin/env bash
# The README's second command, and what CI runs (.ci/run): install what is missing, check
# that every C++ file is as clang-format writes it (tools/check_format.sh) and every Python
# file as pycodestyle asks (tools/check_python_style.sh), then
#  1. build/, Release with -Werror: what users install (libforkfeed, the tools, the Python
#     package), tested as they use it: every Python suite, the install check, and what
#     only a plain build can check (compare_test, a few cases; tests/cpp_suites.cmake);
#  2. `pip install .` of the Python package into a temporary folder, and its checks;
#  3. build-asan/, AddressSanitizer and UndefinedBehaviorSanitizer: every other C++ suite.
# A C++ suite runs once, under the sanitizers, which check what a plain run checks and
# more. Not checked here: most C++ suites against the -O3 libforkfeed (the Python suites
# drive it), and the extension's own C++ under the sanitizers (see step 3). Exits non-zero
# on any failure.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

SECONDS=0
phase="start"
phase() {
  phase=$1
  printf '\n==== [%4ds] %s ====\n' "$SECONDS" "$phase"
}
on_exit() {
  local rc=$?
  if [[ $rc -eq 0 ]]; then
    printf '\n==== test.sh: all phases passed in %dm%02ds ====\n' $((SECONDS / 60)) $((SECONDS % 60))
  else
    printf '\n==== test.sh: FAILED in phase "%s" (exit %d) after %dm%02ds ====\n' \
      "$phase" "$rc" $((SECONDS / 60)) $((SECONDS % 60)) >&2
  fi
}
trap on_exit EXIT

phase "setup: Debian packages"
tools/setup.sh

phase "check: clang-format over every C++ file"
tools/check_format.sh

phase "check: pycodestyle over every Python file"
tools/check_python_style.sh

# Through ccache, whose cache lives in build/: pip's build (below) compiles the same
# sources with the same flags, and takes them from there instead of compiling them again.
# Depend mode: a miss costs one compile, not a preprocessing run more (13% of it). The
# sloppiness lets ccache cache the suites compiled with their precompiled header
# (tests/cpp_suites.cmake); without it, it compiles them every time.
export CCACHE_DIR="$PWD/build/ccache" CCACHE_DEPEND=1 CCACHE_SLOPPINESS=pch_defines,time_macros
release_args=(-DFORKFEED_WERROR=ON -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)  # build/'s, and pip's

phase "build: build/ (Release, -Werror; of the C++ tests, the plain-build ones)"
tools/build.sh build -DCMAKE_BUILD_TYPE=Release "${release_args[@]}" -DFORKFEED_CPP_TESTS=OFF

phase "test: build/"
ctest --test-dir build --output-on-failure -j2

# Not a ctest entry: it writes in the checkout (build-python/, removed after), and a
# cold cache makes it build libforkfeed from scratch (3.5 CPU minutes), which would crowd
# the timed tests running beside it.
phase "test: pip install --no-build-isolation . (Python package)"
FORKFEED_CMAKE_ARGS="${release_args[*]}" tests/install/check_pip_install.sh . build/bin /usr/bin/python3

# LeakSanitizer stops the process with ptrace-like machinery at exit; under ptrace
# (a debugger, strace) and in some sandboxes that fails ("LeakSanitizer has encountered
# a fatal error") and every test would fail for a reason that is not ours. Probe it
# with a program that leaks nothing, and turn leak detection off only if it cannot run.
phase "probe: LeakSanitizer"
detect_leaks=1
probe_dir=$(mktemp -d)
printf 'int main() { return 0; }\n' >"$probe_dir/probe.cpp"
if ! "${CXX:-c++}" -fsanitize=address "$probe_dir/probe.cpp" -o "$probe_dir/probe" ||
   ! ASAN_OPTIONS=detect_leaks=1 "$probe_dir/probe" >"$probe_dir/log" 2>&1; then
  detect_leaks=0
  echo "LeakSanitizer does not work in this environment; running with detect_leaks=0:"
  sed 's/^/  /' "$probe_dir/log" 2>/dev/null || true
else
  echo "LeakSanitizer works: detect_leaks=1"
fi
rm -rf "$probe_dir"

# For every sanitized process the tests start.
export ASAN_OPTIONS="detect_leaks=${detect_leaks}:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

# -O1 -g1 (line tables, enough for sanitizer stack traces) instead of RelWithDebInfo's
# -O2 -g: on CI's 2 cores it compiles in about 60% of the time. FORKFEED_SANITIZE then
# keeps -O1 for libforkfeed only and compiles the rest (tests, tools, the extension) at
# -O0, in about half the time again.
# Without the Python package: the extension's build and its two sanitized suites
# (python/CMakeLists.txt) cost about 40 s, which CI's 20 minutes do not hold today. The
# extension's own C++ is then not sanitized in CI; -DFORKFEED_PYTHON=ON here runs them.
phase "build: build-asan/ (-O1 -g1 libforkfeed, -O0 the rest, ASan+UBSan, -Werror; no Python package)"
tools/build.sh build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
  -DFORKFEED_SANITIZE=ON -DFORKFEED_WERROR=ON -DFORKFEED_PYTHON=OFF

phase "test: build-asan/ (ASAN_OPTIONS=$ASAN_OPTIONS)"
ctest --test-dir build-asan --output-on-failure -j2
