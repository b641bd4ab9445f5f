// WorkerOverride: a shell script spawned in place of forkfeed-worker, through
// $FORKFEED_WORKER, for the tests of workers that start slowly or cannot start at all.
#pragma once

#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "tests/testing/temp_dataset.h"

namespace forkfeed::testing {

// Points FORKFEED_WORKER at a shell script `name` in `bin` ("#!/bin/sh" then `body`)
// while in scope, so that a spawn launcher starts it in place of forkfeed-worker.
class WorkerOverride {
 public:
  WorkerOverride(const TempDir& bin, const std::string& name, const std::string& body)
      : path_(bin.path() + "/" + name) {
    {
      std::ofstream script(path_);
      script << "#!/bin/sh\n" << body;
    }
    ok_ = ::chmod(path_.c_str(), 0755) == 0 && ::setenv("FORKFEED_WORKER", path_.c_str(), 1) == 0;
  }
  ~WorkerOverride() { ::unsetenv("FORKFEED_WORKER"); }
  WorkerOverride(const WorkerOverride&) = delete;
  WorkerOverride& operator=(const WorkerOverride&) = delete;
  // False if the script could not be made executable or FORKFEED_WORKER set.
  bool ok() const { return ok_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool ok_ = false;
};

}  // namespace forkfeed::testing
