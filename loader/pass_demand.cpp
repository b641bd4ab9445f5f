// PassDemand: the wanted list and its two cursors (loader/pass_demand.h).
#include "loader/pass_demand.h"

#include <string>

namespace forkfeed {

Status PassDemand::want(std::uint64_t batch) {
  if (batch >= batches_per_epoch_) {
    return Status::InvalidArgument("batch " + std::to_string(batch) + " is past the end of the epoch (" +
                                   std::to_string(batches_per_epoch_) + " batches)");
  }
  wanted_.push_back(batch);
  return Status::Ok();
}

std::optional<std::uint64_t> PassDemand::to_issue() const {
  if (issued_ == wanted_.size()) return std::nullopt;
  return wanted_[issued_];
}

std::optional<std::uint64_t> PassDemand::to_deliver() const {
  if (wanted_.empty()) return std::nullopt;
  return wanted_.front();
}

void PassDemand::delivered() {
  wanted_.pop_front();
  // A batch is delivered only after it was issued: its cursor stays at or ahead of this one.
  if (issued_ > 0) --issued_;
}

}  // namespace forkfeed
