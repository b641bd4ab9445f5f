// Helpers for the tests that disturb a running loader (resets, resumes, worker deaths,
// bad files): the child processes and fds of the test process, a hang guard, and a
// record of what a loader delivered, to compare runs batch by batch.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "forkfeed/batch.h"
#include "forkfeed/loader.h"

namespace forkfeed::testing {

// Pids whose parent is `parent`, from /proc (zombies included: they are not reaped).
std::vector<pid_t> children_of(pid_t parent);
// The children of this process that are running (not zombies).
std::vector<pid_t> live_children();
// True while `pid` exists and is not a zombie.
bool alive(pid_t pid);
// The state letter of /proc/<pid>/stat ('R', 'S', 'T', 'Z', ...), or 0 if there is no such process.
char process_state(pid_t pid);
// Open fds of this process.
int open_fds();
// Polls `condition` every few milliseconds until it holds or `timeout` passes.
bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout);

// While in scope, this process can open no new fd: its soft RLIMIT_NOFILE is lowered to
// the lowest free fd number, so the next open() fails with EMFILE. The limit is put
// back when it goes.
class NoFreeFds {
 public:
  NoFreeFds();
  ~NoFreeFds();
  NoFreeFds(const NoFreeFds&) = delete;
  NoFreeFds& operator=(const NoFreeFds&) = delete;

 private:
  std::uint64_t soft_ = 0;  // the limit before
};

// While in scope, process `pid` is stopped (SIGSTOP: a hung node's forkfeedd); it goes
// on (SIGCONT) at resume() or when this goes, so that a failed test leaves no stopped
// process behind.
class StoppedProcess {
 public:
  explicit StoppedProcess(pid_t pid);
  ~StoppedProcess() { resume(); }
  StoppedProcess(const StoppedProcess&) = delete;
  StoppedProcess& operator=(const StoppedProcess&) = delete;
  void resume();

 private:
  pid_t pid_;
};

// Ends the test process with a message naming `what` if it is still in scope after
// `seconds`: a loader that hangs is a failure, not a stuck ctest. It uses alarm(), not a
// thread, so the loader still sees a single-threaded process. One at a time.
class HangGuard {
 public:
  HangGuard(unsigned seconds, const std::string& what);
  ~HangGuard();
  HangGuard(const HangGuard&) = delete;
  HangGuard& operator=(const HangGuard&) = delete;
};

// One delivered batch, copied out of shared memory.
struct BatchRecord {
  std::uint64_t epoch = 0;
  std::uint64_t position = 0;  // Batch::index()
  std::vector<std::uint64_t> indices;
  std::vector<std::int64_t> labels;
  std::vector<std::uint8_t> pixels;

  explicit BatchRecord(const Batch& batch);
  bool operator==(const BatchRecord&) const = default;
};

// Batches in delivery order.
using Batches = std::vector<BatchRecord>;

// Reads the rest of the current pass through next(), up to its end (nullopt). Fails the
// test (and stops) at an error or after `max_batches`.
Batches read_pass(Loader& loader, std::size_t max_batches = 1000);
// Reads `count` batches through next(), crossing epoch ends. Fails the test at an error.
Batches read_batches(Loader& loader, std::size_t count);

// read_pass() and read_batches() for any source of batches (a Loader, a Client): `next`
// is its next().
using NextBatch = std::function<Result<std::optional<Batch>>()>;
Batches read_pass_with(const NextBatch& next, std::size_t max_batches = 1000);
Batches read_batches_with(const NextBatch& next, std::size_t count);

// Every sample index of `run`, in order.
std::vector<std::uint64_t> indices_of(const Batches& batches);
// "" if `indices` holds each of 0..n-1 exactly once, else what is wrong.
std::string exactly_once(const std::vector<std::uint64_t>& indices, std::uint64_t n);
// "" if `got` equals `expected` batch by batch (epoch, position, indices, labels and
// pixel bytes), else the first difference.
std::string first_difference(const Batches& got, const Batches& expected);

}  // namespace forkfeed::testing
