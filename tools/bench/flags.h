// BenchFlags: forkfeed-bench's command line, parsed into loader options and run settings.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "forkfeed/client.h"
#include "forkfeed/options.h"
#include "plan/stream_plan.h"

namespace forkfeed::bench {

struct BenchFlags {
  LoaderOptions options;           // resolved when they are valid (the size and dtype the transform makes)
  std::optional<StreamPlan> plan;  // the options checked and planned once, when they are valid
  // The whole schedule: passes run while the loader's epoch is below it, so a resumed
  // run finishes the epochs the interrupted one would have.
  std::uint64_t epochs = 1;
  bool json = false;
  bool fork_report = false;                   // print ForkSafety's report and exit
  bool probe = false;                         // the single-core limit probe instead of a loader run
  std::uint64_t probe_limit = 0;              // 0: probe every file
  bool profile = false;                       // with probe: the fused path's time per stage too
  std::string dump_path;                      // empty: no --dump-indices
  std::string daemon_socket;                  // empty: an in-process Loader; else through forkfeedd
  std::vector<std::string> remote_addresses;  // or through remote forkfeedds (HOST:PORT each, over UCX;
                                              // several: one stream drawn from all, a fan-in)
  std::string dataset;                        // a dataset named in forkfeedd's config (--daemon, --remote)
  std::string token_file;                     // --remote's token; empty: $FORKFEED_TOKEN_FILE
  std::chrono::milliseconds connect_timeout = kDefaultConnectTimeout;  // for forkfeedd's answer
  std::chrono::milliseconds overdue =
      kDefaultOverdue;                   // --remote: a daemon's silence before its batches move
  std::string resume_path;               // empty: start from the beginning
  std::string save_state_path;           // empty: save no state
  std::uint64_t stop_after_batches = 0;  // 0: run the whole schedule
  std::uint64_t step_ms = 0;             // the batch held this long after it is read (a training step)
};

// Fills `flags`; returns the exit code when the program should end now (--help, bad flags).
std::optional<int> parse_flags(int argc, char** argv, BenchFlags& flags);

}  // namespace forkfeed::bench
