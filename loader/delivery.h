// Delivery: a completed batch turned into what Loader::next() hands out — a Batch that
// views its slot, the error of a failed batch naming its file, or nothing when every
// sample was skipped. Skipped samples are counted and each bad file is logged once
// (invariant 1: no skip goes unreported).
#pragma once

#include <spdlog/logger.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_set>

#include "forkfeed/batch.h"
#include "forkfeed/dataset.h"
#include "forkfeed/loader.h"
#include "loader/pass_yield.h"
#include "loader/slot_pool.h"
#include "transport/slot_contents.h"

namespace forkfeed {

class Delivery {
 public:
  // `index` must outlive this.
  Delivery(std::shared_ptr<Arena> arena, std::shared_ptr<SlotPool> slots, const DatasetIndex& index,
           std::shared_ptr<spdlog::logger> log);

  // Batch `index` of `epoch`'s pass, completed as `c`: a Batch holding its slot, or
  // nullopt if every sample was skipped; BadData for a batch failed under on_error=fail;
  // Internal for a slot that breaks the layout rule (a forkfeed bug, never bad data).
  // Unless a Batch is returned, the slot goes back to the pool. The Batch is read in
  // `where.window` and held among `where.holds` (the place's slot and bytes are c's);
  // without a window, in the arena's own mapping, never copied aside.
  Result<std::optional<Batch>> deliver(const Completion& c, std::uint64_t epoch, std::uint64_t index,
                                       detail::SlotPlace where = {});

  // Adds what was delivered and skipped so far to `stats`.
  void count_into(LoaderStats& stats) const;
  // Samples delivered and skipped so far.
  PassYield::Counts counts() const { return {samples_, skipped_}; }

 private:
  void report_skipped(const SlotContents& slot);

  std::shared_ptr<Arena> arena_;
  std::shared_ptr<SlotPool> slots_;
  const DatasetIndex& index_;
  std::shared_ptr<spdlog::logger> log_;
  std::unordered_set<std::uint64_t> logged_bad_;
  std::uint64_t batches_ = 0, samples_ = 0, skipped_ = 0;
};

}  // namespace forkfeed
