// Admission: forkfeedd's limits on what all streams together may use — streams, workers,
// arena bytes — and each stream's fair share of the workers. A request over a limit is
// refused with a message naming the limit, before any memory or process exists.
#pragma once

#include <cstdint>
#include <mutex>

#include "forkfeed/options.h"
#include "forkfeed/status.h"

namespace forkfeed {

struct Limits {
  std::uint32_t max_streams = 64;
  std::uint32_t max_workers = 0;  // 0: the number of CPUs
  // One stream; 0: no cap but the fair share. Set it to max_workers / ranks when
  // several ranks start together, so the first ones cannot take every worker.
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

   private:
    friend class Admission;
    Admission* admission_ = nullptr;
    std::uint32_t workers_ = 0;
    std::uint64_t arena_bytes_ = 0;
  };

  // Admits a stream that asks for `options.workers` workers: it gets at most its fair
  // share, max_workers / (streams + 1), and max_stream_workers, and at least one while
  // one is free. The arena
  // bytes are those of `options` with the granted worker count.
  Result<Ticket> admit(const LoaderOptions& options);

  struct Totals {
    std::uint32_t streams = 0;
    std::uint32_t workers = 0;
    std::uint64_t arena_bytes = 0;
  };
  Totals totals() const;
  const Limits& limits() const { return limits_; }

 private:
  void release(const Ticket& ticket);

  Limits limits_;
  mutable std::mutex mu_;
  Totals used_;
};

}  // namespace forkfeed
