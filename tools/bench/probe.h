// forkfeed-bench --probe: the single-core limit. Every file of the dataset is decoded and
// transformed in this process, on one thread, once through OpenCV's full decode (the
// reference) and once through the loader's fused path, into the slots of the arena a
// loader with the same options makes, as its workers would; what one core does bounds
// what N workers can, and the gap between the two paths is what the fused decode buys.
#pragma once

#include "tools/bench/flags.h"

namespace forkfeed::bench {

// Runs the probe `flags` describe (dataset, transform, --probe-limit) and prints its
// report: aligned lines, or one JSON object with --json. Files that fail to decode are
// counted and the first failure shown, not fatal. Returns the exit code: 0, or 1 when
// the options or the dataset are unusable.
int run_probe(const BenchFlags& flags);

}  // namespace forkfeed::bench
