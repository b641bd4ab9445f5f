// PassYield: what a pass gave its caller, for one rule (Loader and Client alike): a pass
// of which every sample was skipped is an error, not a success. on_error=skip leaves out
// bad files; when it leaves out all of them the options do not fit the data (a transform
// no image survives, a max_pixels or max_file_bytes every file exceeds), and a trainer
// that took the end of the pass for success would train on nothing and exit 0.
//
// Only a pass seen whole is judged: one resumed (or sought) past its first batch may
// have delivered its samples before, to another process.
#pragma once

#include <cstdint>

#include "forkfeed/status.h"

namespace forkfeed {

class PassYield {
 public:
  // What the caller was handed so far, over every pass: samples delivered and skipped.
  struct Counts {
    std::uint64_t delivered = 0;
    std::uint64_t skipped = 0;
  };

  // The pass starts with `position` of its batches delivered already; `so_far` the
  // counts at its start.
  void start(std::uint64_t position, Counts so_far) {
    whole_ = position == 0;
    at_start_ = so_far;
  }
  // At the end of the pass of `epoch`, with the counts `so_far`: BadData when the whole
  // pass was seen and every sample of it skipped, naming how many; Ok otherwise (an
  // empty share included).
  Status at_end(std::uint64_t epoch, Counts so_far) const;

 private:
  bool whole_ = false;
  Counts at_start_;
};

}  // namespace forkfeed
