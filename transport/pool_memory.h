// PoolMemory: the shared memory of a pool of decode workers, on a memfd of its own — the
// pool's stop flag and one WorkerState per worker, which every loader attached to the
// pool reads (is the worker up, is it making progress, which sample has it in hand) and
// rings (its task bell). A loader's tasks, slots and index stay in its own Arena; a
// worker maps that arena when the loader attaches (PoolMessage) and serves its channel.
#pragma once

#include <atomic>
#include <cstdint>

#include "base/unique_fd.h"
#include "forkfeed/status.h"
#include "transport/arena_layout.h"
#include "transport/mapping.h"

namespace forkfeed {

inline constexpr std::uint64_t kNoLoader = ~std::uint64_t{0};
// Pools are sized by CPUs; this bounds what one memfd holds and one poll() watches.
inline constexpr std::uint32_t kMaxPoolWorkers = 1024;

struct alignas(64) WorkerState {
  // Futex word, rung by a loader that pushed a task for this worker into its arena and by
  // the pool after it sent the worker a message.
  std::atomic<std::uint32_t> bell{0};
  // Messages the pool sent on the worker's socket: the worker reads its socket when this moved.
  std::atomic<std::uint32_t> messages{0};
  // CLOCK_MONOTONIC nanoseconds of the worker's last sign of progress (started, a sample
  // begun, a task completed), for any loader; 0 until it started. A loader kills a worker
  // that holds its work and made no progress past its task_timeout.
  std::atomic<std::uint64_t> progress_ns{0};
  // The sample in hand and whose it is (kNoLoader, kNoSample between samples): after a
  // crash they name the culprit.
  std::atomic<std::uint64_t> current_loader{kNoLoader};
  std::atomic<std::uint64_t> current_sample{kNoSample};
  // How long the sample in hand should take (its loader's recent samples on this worker):
  // the other workers count it as that loader's time from its start (FairShare), so that
  // they do not all take the same loader's turn at once.
  std::atomic<std::uint64_t> sample_expected_ns{0};
};

struct PoolBlock {
  std::uint64_t magic;
  std::uint32_t version;
  std::uint32_t num_workers;
  alignas(64) std::atomic<std::uint32_t> stop{0};  // workers exit when set
};

class PoolMemory {
 public:
  // A new block for `workers` workers (at most kMaxPoolWorkers).
  static Result<PoolMemory> create(std::uint32_t workers);
  // Maps a block made by create() in another process. Takes ownership of `fd`.
  static Result<PoolMemory> attach(UniqueFd fd);

  PoolBlock& block() const { return *reinterpret_cast<PoolBlock*>(mapping_.data()); }
  std::uint32_t workers() const { return block().num_workers; }
  WorkerState& worker(std::uint32_t w) const;
  // Worker `w`'s state as at creation, for its replacement. REQUIRES: it is dead (reaped).
  void reset_worker(std::uint32_t w) const;
  int fd() const { return fd_.get(); }

 private:
  PoolMemory(UniqueFd fd, Mapping mapping) : fd_(std::move(fd)), mapping_(std::move(mapping)) {}
  UniqueFd fd_;
  Mapping mapping_;
};

}  // namespace forkfeed
