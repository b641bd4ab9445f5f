// Admission: forkfeedd's limits on what all streams together may use — streams and arena
// bytes — and the cap on each stream's share of the one pool of workers they all share.
// A request over a limit is refused with a message naming the limit, before any memory
// or process exists. Workers are never a reason to refuse: a stream's tasks wait their
// turn in the pool.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "forkfeed/options.h"
#include "forkfeed/status.h"

namespace forkfeed {

struct Limits {
  std::uint32_t max_streams = 64;
  std::uint32_t max_workers = 0;  // the pool's size; 0: the number of CPUs
  // The most workers one stream may keep busy at once (its tasks in flight: this times
  // prefetch); 0: max_workers. Its batch slots are its own options' either way, and the
  // pool shares its workers fairly.
  std::uint32_t max_stream_workers = 0;
  std::uint64_t max_arena_bytes = 0;         // all streams; 0: half of the machine's memory
  std::uint64_t max_stream_arena_bytes = 0;  // one stream; 0: max_arena_bytes
};

class Admission {
 public:
  explicit Admission(Limits limits);

  // What one admitted stream holds; handed back when destroyed.
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& other) noexcept;
    Ticket& operator=(Ticket&& other) noexcept;
    ~Ticket();
    std::uint32_t workers() const { return workers_; }
    std::uint64_t arena_bytes() const { return arena_bytes_; }
    // Adds `bytes` to what the stream holds, within the same limits as admit(): the
    // slots' regions of a schema's fields, known once its index is (`what` names the
    // largest, for the refusal). A ticket of no Admission takes anything.
    Status grow(std::uint64_t bytes, const std::string& what);

   private:
    friend class Admission;
    Admission* admission_ = nullptr;
    std::uint32_t workers_ = 0;
    std::uint64_t arena_bytes_ = 0;
  };

  // Admits a stream that asks for `options.workers` workers: how many it keeps busy at
  // once is capped at that, max_stream_workers and max_workers (Ticket::workers). The
  // arena bytes are those of `options`: its slots, workers x prefetch + 1, as asked.
  Result<Ticket> admit(const LoaderOptions& options);

  struct Totals {
    std::uint32_t streams = 0;
    std::uint32_t workers = 0;  // the streams' caps, summed: may exceed max_workers
    std::uint64_t arena_bytes = 0;
  };
  Totals totals() const;
  const Limits& limits() const { return limits_; }

 private:
  Status grow(Ticket& ticket, std::uint64_t bytes, const std::string& what);
  void release(const Ticket& ticket);

  Limits limits_;
  mutable std::mutex mu_;
  Totals used_;
};

}  // namespace forkfeed
