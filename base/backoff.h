// Backoff: how long to wait before trying again something that keeps failing — `first`
// after one failure, twice as long after each further one, never more than `most` — so
// that a cause that goes away is noticed soon and one that stays costs little. A value:
// the caller keeps the clock.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace forkfeed {

class Backoff {
 public:
  using Duration = std::chrono::steady_clock::duration;
  // REQUIRES: 0 < first <= most.
  constexpr Backoff(Duration first, Duration most) : first_(first), most_(most) {}

  // One more failure: the wait before the next try.
  Duration failed() {
    failures_ += 1;
    wait_ = failures_ == 1 ? first_ : std::min(wait_ * 2, most_);
    return wait_;
  }
  // Starts over: the next failure waits `first` again.
  void reset() {
    failures_ = 0;
    wait_ = Duration::zero();
  }
  // Failures since the last reset(), and the wait the last one asked for (zero: none).
  std::uint32_t failures() const { return failures_; }
  Duration wait() const { return wait_; }

 private:
  Duration first_, most_;
  Duration wait_ = Duration::zero();
  std::uint32_t failures_ = 0;
};

}  // namespace forkfeed
