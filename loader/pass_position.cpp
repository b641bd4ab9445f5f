// PassPosition: the rules that move a pass (next, reset, set_epoch, a state, delivery, its end).
#include "loader/pass_position.h"

#include <string>

namespace forkfeed {

PassPosition::PassPosition(std::uint64_t batches_per_epoch, Seek start)
    : batches_per_epoch_(batches_per_epoch), epoch_(start.epoch), position_(start.position) {}

std::optional<PassPosition::Seek> PassPosition::on_next() const {
  if (over_) return Seek{epoch_ + 1, 0};
  return std::nullopt;
}

std::optional<PassPosition::Seek> PassPosition::on_reset() const {
  if (complete()) return Seek{epoch_ + 1, 0};
  if (moved_) return Seek{epoch_, 0};
  return std::nullopt;
}

std::optional<PassPosition::Seek> PassPosition::on_set_epoch(std::uint64_t epoch) const {
  if (epoch != epoch_ || moved_ || complete()) return Seek{epoch, 0};
  return std::nullopt;
}

Status PassPosition::check_epoch(std::uint64_t epoch, std::string_view what) {
  if (epoch < kMaxEpoch) return Status::Ok();
  return Status::InvalidArgument(std::string(what) + " " + std::to_string(epoch) +
                                 " is not below 2^62: " + "count epochs from 0");
}

Result<PassPosition::Seek> PassPosition::start_of(const Checkpoint& checkpoint,
                                                  std::uint64_t batches_per_epoch) {
  if (Status s = check_epoch(checkpoint.epoch, "the state's epoch"); !s.ok()) return s;
  if (checkpoint.position > batches_per_epoch) {
    return Status::InvalidArgument("the state's position " + std::to_string(checkpoint.position) +
                                   " is past the end of the epoch (" + std::to_string(batches_per_epoch) +
                                   " batches)");
  }
  if (checkpoint.position == batches_per_epoch) return Seek{checkpoint.epoch + 1, 0};
  return Seek{checkpoint.epoch, checkpoint.position};
}

PassPosition::Seek PassPosition::resume_point() const {
  if (complete()) return {epoch_ + 1, 0};
  return {epoch_, position_};
}

std::string PassPosition::state(const OrderKey& key) const {
  const Seek at = resume_point();
  return encode_checkpoint(Checkpoint{at.epoch, at.position, key});
}

Result<PassPosition::Seek> PassPosition::parse_state(std::string_view state, const OrderKey& key,
                                                     const DatasetIndex* index) const {
  auto checkpoint = decode_checkpoint(state, key, index);
  if (!checkpoint.ok()) return checkpoint.status();
  return start_of(*checkpoint, batches_per_epoch_);
}

std::optional<PassPosition::Seek> PassPosition::load(Seek seek) {
  if (!at(seek)) return seek;
  start(seek);
  return std::nullopt;
}

void PassPosition::start(Seek seek) {
  epoch_ = seek.epoch;
  position_ = seek.position;
  over_ = false;
  moved_ = false;
}

void PassPosition::delivered(std::uint64_t epoch, std::uint64_t index) {
  epoch_ = epoch;
  position_ = index + 1;
  over_ = false;
  moved_ = true;
}

void PassPosition::failed_at(std::uint64_t epoch, std::uint64_t index) {
  epoch_ = epoch;
  position_ = index;
  over_ = false;
}

void PassPosition::ended(std::uint64_t epoch) {
  epoch_ = epoch;
  position_ = batches_per_epoch_;
  over_ = true;
}

}  // namespace forkfeed
