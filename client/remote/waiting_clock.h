// WaitingClock: the time a remote Client spent waiting for its daemons, by which their
// silence and their overdue batches are judged. It runs only while a wait polls for them:
// not between two calls (a trainer's step, in which the control connection's beats are
// not read: batches may come meanwhile, the link's thread receives them), nor through a poll
// that returned long after its timeout (the process was stopped in it: Ctrl-Z, a
// debugger, a VM pause, a long GC). So a daemon is judged only by time in which the
// client could have heard it; and what arrived meanwhile is read before it is judged.
#pragma once

#include <algorithm>
#include <chrono>

namespace forkfeed {

class WaitingClock {
 public:
  using Clock = std::chrono::steady_clock;

  // A poll that returns this much after its timeout was not waiting all along.
  static constexpr Clock::duration kLate = std::chrono::seconds(1);

  // Now, on this clock (from an arbitrary start).
  Clock::time_point now() const { return Clock::time_point{} + waited_; }
  // A poll with `timeout` began at `began` and returned at `ended`: the time it waited
  // counts, up to its timeout; none of it when it returned later than its timeout by
  // kLate or more (for how long it was stopped, and when, is not known).
  void waited(Clock::time_point began, Clock::time_point ended, Clock::duration timeout) {
    const Clock::duration took = ended - began;
    if (took >= timeout + kLate) return;
    waited_ += std::clamp(took, Clock::duration::zero(), std::max(timeout, Clock::duration::zero()));
  }

 private:
  Clock::duration waited_{};
};

// `timeout` as poll()'s milliseconds: rounded up (a poll never returns before what it
// waits for is due), at most a minute, at least 0.
inline int poll_timeout_ms(WaitingClock::Clock::duration timeout) {
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(timeout).count();
  return static_cast<int>(std::clamp<std::chrono::milliseconds::rep>(ms, 0, 60000));
}

}  // namespace forkfeed
