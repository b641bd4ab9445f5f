// StageProfile: where a sample's time goes — the read, the decode, the resize, each op of
// its pipeline, the store — summed over the samples of a run (forkfeed-bench --probe
// --profile). The hot path pays one test of a null pointer per stage when nothing is
// profiled.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/monotonic_clock.h"

namespace forkfeed {

class StageProfile {
 public:
  struct Stage {
    std::string name;
    std::uint64_t ns = 0;    // summed over its runs
    std::uint64_t runs = 0;  // samples it ran on
  };

  // The stage called `name`, added (in first-use order) when new: an index that stays valid.
  std::size_t stage(std::string_view name) {
    for (std::size_t i = 0; i < stages_.size(); ++i) {
      if (stages_[i].name == name) return i;
    }
    stages_.push_back({std::string(name)});
    return stages_.size() - 1;
  }
  void add(std::size_t stage, std::uint64_t ns) {
    stages_[stage].ns += ns;
    ++stages_[stage].runs;
  }
  const std::vector<Stage>& stages() const { return stages_; }

 private:
  std::vector<Stage> stages_;
};

// Adds the time between its construction and its destruction to a stage of `profile`;
// nothing (not even a clock read) when `profile` is null.
class StageTimer {
 public:
  StageTimer(StageProfile* profile, std::size_t stage)
      : profile_(profile), stage_(stage), start_(profile != nullptr ? monotonic_ns() : 0) {}
  ~StageTimer() {
    if (profile_ != nullptr) profile_->add(stage_, monotonic_ns() - start_);
  }
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;

 private:
  StageProfile* profile_;
  std::size_t stage_;
  std::uint64_t start_;
};

}  // namespace forkfeed
