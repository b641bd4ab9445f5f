// PassPosition: where the current pass stands (epoch, batches delivered, over) and the
// rules that move it, for Loader and Client alike. A pure value: it decides, its owner
// acts. When a rule answers a Seek, the owner starts the pass there (a new generation
// for a Loader, a seek request to forkfeedd for a Client) and then calls start().
//
// The rules (DESIGN.md, invariants 2 and 3):
// - the position moves when a batch is delivered, never when it is issued;
// - the call after the end of a pass starts the next epoch;
// - a reset or set_epoch of the same epoch before any batch was delivered since the
//   pass was started (at open, by a seek, by load_state) leaves it alone: prefetched
//   batches are kept, and a resumed position stays where it was resumed; so does
//   loading a state of the place the pass stands at;
// - otherwise reset() starts the epoch again, or the next one if this one is complete;
// - state() records a complete pass as the start of the next epoch; it is encoded and
//   decoded here, for Loader and Client alike.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "forkfeed/status.h"
#include "loader/checkpoint.h"
#include "plan/option_ranges.h"

namespace forkfeed {

class PassPosition {
 public:
  // Epochs lie below this (plan/option_ranges.h: the epoch option's range).
  static constexpr std::uint64_t kMaxEpoch = forkfeed::kMaxEpoch;
  // Ok for an epoch below kMaxEpoch; InvalidArgument naming `what` otherwise.
  static Status check_epoch(std::uint64_t epoch, std::string_view what);

  struct Seek {
    std::uint64_t epoch = 0;
    std::uint64_t position = 0;  // batches of the pass already delivered
    bool operator==(const Seek&) const = default;
  };

  // REQUIRES: batches_per_epoch > 0 and start.position < batches_per_epoch
  PassPosition(std::uint64_t batches_per_epoch, Seek start);

  std::uint64_t epoch() const { return epoch_; }
  // Batches of this pass delivered (or, after a seek, taken as delivered).
  std::uint64_t position() const { return position_; }
  std::uint64_t batches_per_epoch() const { return batches_per_epoch_; }
  // Every batch of the pass was delivered.
  bool complete() const { return over_ || position_ == batches_per_epoch_; }

  // Where a call must start the pass, or nullopt to leave it as it is.
  std::optional<Seek> on_next() const;
  std::optional<Seek> on_reset() const;
  std::optional<Seek> on_set_epoch(std::uint64_t epoch) const;
  // Where a checkpoint of this order starts: a position at the end of its epoch is the
  // start of the next; one past the end is refused.
  static Result<Seek> start_of(const Checkpoint& checkpoint, std::uint64_t batches_per_epoch);
  // Whether the pass stands at |seek| now (a load of it may keep what is prefetched).
  bool at(const Seek& seek) const { return seek == Seek{epoch_, position_} && !over_; }

  // What state() records: a complete pass is the next epoch at 0.
  Seek resume_point() const;
  // state(): resume_point() in the order |key|.
  std::string state(const OrderKey& key) const;
  // Where a state() starts: decoded, checked against |key| (decode_checkpoint; |index|,
  // when the caller has the one |key| was made of, names the files that differ) and
  // placed with start_of().
  Result<Seek> parse_state(std::string_view state, const OrderKey& key,
                           const DatasetIndex* index = nullptr) const;
  // A state (or a seek) to |seek| is loaded. Where the owner must start the pass, or
  // nullopt when it stands there already: then what is prefetched is kept, and the
  // position counts as resumed (start() is done here).
  std::optional<Seek> load(Seek seek);

  // The owner started the pass at |seek|, or loaded a state that found it at(seek).
  void start(Seek seek);
  // Batch |index| of |epoch|'s pass was handed to the caller.
  void delivered(std::uint64_t epoch, std::uint64_t index);
  // The pass of |epoch| failed at batch |index| (a Client learns where from forkfeedd).
  void failed_at(std::uint64_t epoch, std::uint64_t index);
  // next() told the caller that the pass of |epoch| is over.
  void ended(std::uint64_t epoch);

 private:
  std::uint64_t batches_per_epoch_;
  std::uint64_t epoch_;
  std::uint64_t position_;
  bool over_ = false;
  bool moved_ = false;  // a batch was delivered since the pass was started
};

}  // namespace forkfeed
