// Loader: the in-process face of forkfeed. It forks decode workers that write samples
// straight into batch slots in shared memory, and hands out batches in order.
//
//   auto loader = forkfeed::Loader::open(options).value_or_throw();
//   for (forkfeed::Batch& batch : *loader) train(batch);   // one pass (epoch)
//
// A pass that runs to its end advances the epoch; set_epoch() chooses it explicitly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "forkfeed/batch.h"
#include "forkfeed/dataset.h"
#include "forkfeed/options.h"
#include "forkfeed/pass_iterator.h"
#include "forkfeed/status.h"
#include "forkfeed/worker_pool.h"

namespace forkfeed {

struct LoaderStats {
  std::uint64_t delivered_batches = 0;
  std::uint64_t delivered_samples = 0;
  // Samples left out (on_error=skip): those left out of the index when it was built
  // (counted once), and those that could not be decoded (counted each time one is read).
  std::uint64_t skipped_samples = 0;
  // Bytes of damaged shards from the damage on, left out of the index: their samples
  // cannot be told apart, so they are not in skipped_samples.
  std::uint64_t skipped_bytes = 0;
  std::uint64_t worker_restarts = 0;
  StartMethod start_method = StartMethod::kFork;  // how the first workers started: kFork or kSpawn
  std::uint64_t arena_bytes = 0;                  // the whole shared memory arena
  std::uint64_t index_bytes = 0;                  // of it, the dataset index: paths, slices and labels
  std::uint32_t slots = 0;
  bool pinned = false;  // the batch slots are page-locked for pin_memory_device
  // Worker time spent on this loader's tasks, counted sample by sample as the workers go
  // (work a reset cancelled or a worker's death undid included); and the time its batches
  // waited for a worker from issue to completion (in a worker's queue behind its own tasks
  // and other loaders', or set aside between samples for other loaders' turns on a shared
  // pool): nanoseconds.
  std::uint64_t worker_ns = 0;
  std::uint64_t wait_ns = 0;
  // Boxes (a boxes field) that sanitising dropped: under a pixel across, outside the
  // image, reversed or NaN, as read or as the draws left them; counted each time their
  // sample is read.
  std::uint64_t dropped_boxes = 0;
  // Batches held while every slot was (a caller keeping them all) that were copied into
  // private memory so that the pass went on, and their bytes; 0 when every batch was read
  // in place (the caller releases them sooner than prefetch runs out).
  std::uint64_t copied_batches = 0;
  std::uint64_t copied_bytes = 0;
};

class Loader {
 public:
  // Validates options, builds the index, creates the arena and starts the workers.
  static Result<std::unique_ptr<Loader>> open(const LoaderOptions& options);
  // The same, resuming from a state() taken earlier, by this process or another, with
  // any worker count: the samples delivered before it was taken followed by those
  // delivered after equal, in order, an uninterrupted run.
  static Result<std::unique_ptr<Loader>> open(const LoaderOptions& options, std::string_view state);
  // The same, on the workers of `pool`, shared with the other loaders attached to it
  // (options.workers then sizes only this loader's batch slots: workers * prefetch + 1,
  // and options.start_method is the pool's). Without a pool (null) a Loader makes its own
  // of options.workers workers.
  static Result<std::unique_ptr<Loader>> open(const LoaderOptions& options, std::shared_ptr<WorkerPool> pool);
  static Result<std::unique_ptr<Loader>> open(const LoaderOptions& options, std::string_view state,
                                              std::shared_ptr<WorkerPool> pool);
  // Stops and reaps every worker of its own pool, or detaches from a shared one; unmaps and closes the arena.
  // Batches still held by the caller stay readable until they are destroyed. In the child of a fork() it only
  // unmaps and closes that process's copies: the workers and the pass are the parent's.
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // The next batch of the current pass, or nullopt once the pass is over (the next call
  // then starts the following epoch). A batch holding a bad file is an error naming the
  // file, and the pass goes on with the batch after it. A pass that skipped every sample
  // (on_error=skip) ends in a BadData error naming the count instead of nullopt; the next
  // call starts the following epoch. A dead worker is replaced and its batches
  // re-issued; past max_worker_restarts the error stays: recreate the Loader.
  Result<std::optional<Batch>> next();
  // Makes the next() that waits for a batch, the one in progress or a later one, return
  // Status::Code::kCancelled at once instead, leaving the pass (and state()) as it was.
  // A new pass (reset, set_epoch, load_state) forgets an interrupt no wait has taken. Async-signal-safe: a
  // SIGINT handler calls it, so that a worker that is stopped or stuck does not hold up Ctrl-C.
  void interrupt();

  // Starts a new pass over `epoch`: batches prefetched for the old pass are discarded.
  // Fails only in a process other than the opener's (check_process()).
  Status set_epoch(std::uint64_t epoch);
  // Starts a fresh pass: the current epoch again if it is part-way, the next epoch if
  // all its batches were delivered; a no-op if nothing of the pass was delivered.
  // Fails only in a process other than the opener's (check_process()).
  Status reset();

  // Where the loader stands, as a small JSON document: epoch, batches delivered in the
  // pass, seed, and what decides the order (dataset, rank, world size, batch size...).
  // Taken right after the last batch of an epoch, it points at the next epoch.
  std::string state() const;
  // Resumes from `state`. A state from another dataset or from options that change the
  // order is refused with an error naming the difference, and the loader is unchanged.
  Status load_state(std::string_view state);

  // A Loader belongs to the process that opened it. Ok there; in any other (the child
  // of a fork(), which holds a copy) FailedPrecondition naming both processes, and
  // next(), set_epoch(), reset() and load_state() fail with it instead of touching the
  // parent's workers. The reads below then describe the copy.
  Status check_process() const;

  std::uint64_t epoch() const;
  // Batches in one pass of this rank.
  std::uint64_t batches_per_epoch() const;
  // Samples in one pass of this rank (including wrap-around padding).
  std::uint64_t samples_per_epoch() const;
  const DatasetIndex& dataset() const;
  LoaderStats stats() const;

  // For forkfeedd, which lends this loader's batches to another process: the arena's
  // memfd and where this process reads its batches. Every Batch's data(), labels() and
  // sample_indices() lie inside [base, base + size), but a batch made in a slot after a
  // batch held while every slot was had been copied aside (LoaderStats::copied_batches):
  // that slot is read elsewhere then. Valid while the Loader lives.
  struct SharedMemory {
    int fd = -1;
    const std::byte* base = nullptr;
    std::size_t size = 0;
    // One batch slot: a Batch's pixels, labels and sample indices lie within this many bytes.
    std::size_t slot_bytes = 0;
  };
  SharedMemory shared_memory() const;

  // Range-for over one pass. begin() is a reset(): a pass that has delivered batches
  // starts its epoch again, a finished one gives way to the next epoch, an untouched
  // one is kept with its prefetch. Errors are thrown as forkfeed::Error.
  using Iterator = PassIterator<Loader>;
  Iterator begin();
  PassEnd end() { return {}; }

  // The library's side, defined where only the library sees it (the way in for
  // forkfeedd's view of its own loaders).
  class Impl;

 private:
  explicit Loader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace forkfeed
