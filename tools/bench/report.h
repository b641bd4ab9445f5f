// RunReport: what forkfeed-bench measured, printed for people (aligned lines) or for
// scripts (one JSON object on one line).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "forkfeed/client.h"
#include "forkfeed/loader.h"
#include "forkfeed/options.h"

namespace forkfeed::bench {

struct RunReport {
  // What ran.
  LoaderOptions options;
  std::uint64_t epochs_requested = 0;
  std::uint64_t dataset_size = 0;
  std::size_t classes = 0;  // 0 for a manifest
  LoaderStats stats;
  std::string resumed_from;                // the --resume file; empty: started from the beginning
  std::string saved_state;                 // the --save-state file written; empty: none
  std::vector<RemoteDaemonStats> daemons;  // --remote: what each remote forkfeedd delivered
  std::string served_dataset;              // --daemon, --remote: the dataset's name there

  // What was measured. `epochs` counts passes finished by this run; the first may have
  // begun in the run that saved the --resume state.
  std::uint64_t start_epoch = 0;  // the loader's epoch when it opened
  std::uint64_t images = 0;
  std::uint64_t batches = 0;
  std::uint64_t epochs = 0;
  double startup_s = 0;         // Loader::open: index, arena, workers
  double wall_s = 0;            // from the first next() to the end of the last batch
  std::vector<double> wait_ms;  // time spent in each next() that returned a batch
  bool interrupted = false;     // by Ctrl-C
  bool stopped = false;         // by --stop-after-batches
  // --fields: the bytes each field delivered, in the batches' order of fields ("__key__"
  // last); empty without fields.
  struct FieldBytes {
    std::string name;
    std::uint64_t bytes = 0;
  };
  std::vector<FieldBytes> field_bytes;
};

// Nearest-rank percentile, p in [0, 100]; 0 for no values.
double percentile(std::vector<double> values, double p);

// A few aligned "name  value" lines.
void print_human(const RunReport& report, std::FILE* out);
// One JSON object, no newline.
std::string json_line(const RunReport& report);

// Seconds from `start` until now: how every duration of a run (and of --probe) is measured.
double seconds_since(std::chrono::steady_clock::time_point start);
// A run that failed: "forkfeed-bench: MESSAGE" (printable()) on stderr; returns the exit
// status that says so, for main() to return.
int fail(const std::string& message);

}  // namespace forkfeed::bench
