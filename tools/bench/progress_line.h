// ProgressLine: forkfeed-bench's live status line, redrawn in place on a terminal.
// It draws at most ~10 times a second and stays silent when stdout is not a terminal.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>

namespace forkfeed::bench {

class ProgressLine {
 public:
  using Clock = std::chrono::steady_clock;

  // `epochs` passes of `batches_per_epoch` batches each. Draws only if `enabled` and
  // stdout is a terminal.
  ProgressLine(std::uint64_t epochs, std::uint64_t batches_per_epoch, bool enabled);
  // Clears the line if it is still shown.
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // Call after each batch. `epoch` and `batch` count from 0 and name the batch just
  // received; `images` is the total delivered since the run started. The first call
  // tells how much of the schedule a resumed run found done.
  void update(std::uint64_t epoch, std::uint64_t batch, std::uint64_t images);
  // Erases the line so that whatever is printed next starts on a clean line.
  void finish();

  bool active() const { return enabled_; }

 private:
  std::string render(Clock::time_point now, std::uint64_t epoch, std::uint64_t batch,
                     std::uint64_t images) const;

  struct Point {
    Clock::time_point time;
    std::uint64_t images;
  };

  const std::uint64_t epochs_;
  const std::uint64_t batches_per_epoch_;
  const bool enabled_;
  const Clock::time_point start_;
  Clock::time_point last_draw_{};
  bool shown_ = false;
  std::uint64_t done_before_ = 0;  // batches of the schedule done before the first update
  bool first_update_ = true;
  std::deque<Point> recent_;  // one point per draw, over the last few seconds
};

}  // namespace forkfeed::bench
