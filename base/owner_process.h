// OwnerProcess: the process an object that acts on other processes or on shared state
// (worker processes, a daemon stream, a page-locked arena) belongs to. After a fork()
// the child holds a copy of every such object; acting through that copy would stop the
// parent's workers, take its batches or close its stream. The copy may only let go of
// what the child itself holds: its mappings and fds.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <string>
#include <string_view>

#include "forkfeed/status.h"

namespace forkfeed {

class OwnerProcess {
 public:
  OwnerProcess() : pid_(::getpid()) {}

  pid_t pid() const { return pid_; }
  // Whether this is the process that made the object (getpid() is one cheap system call).
  bool here() const { return ::getpid() == pid_; }
  // Ok here; elsewhere FailedPrecondition: "this <what> was opened by process P; this is
  // process Q (a child of fork()): <remedy>".
  Status check(std::string_view what, std::string_view remedy) const {
    const pid_t self = ::getpid();
    if (self == pid_) return Status::Ok();
    return Status::FailedPrecondition("this " + std::string(what) + " was opened by process " +
                                      std::to_string(pid_) + "; this is process " + std::to_string(self) +
                                      " (a child of fork()), which cannot use it: " + std::string(remedy));
  }

 private:
  pid_t pid_;
};

}  // namespace forkfeed
