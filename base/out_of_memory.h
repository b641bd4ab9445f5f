// An allocation that failed (std::bad_alloc from a vector, a string, an index under a
// memory limit) as an error value: opening a loader or serving a request then fails
// with a message naming what was being built, instead of aborting the process.
#pragma once

#include <string>
#include <string_view>

#include "forkfeed/status.h"

namespace forkfeed {

// ResourceExhausted: "out of memory <doing>; ...". Call it in a catch (std::bad_alloc&):
// what was being built is freed by then, so the message itself can be made.
inline Status out_of_memory(std::string_view doing) {
  return Status::ResourceExhausted("out of memory " + std::string(doing) +
                                   "; free memory or raise this process's limit (ulimit -v, the job's "
                                   "memory request), or open a smaller dataset");
}

}  // namespace forkfeed
