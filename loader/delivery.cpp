// Delivery: a completion becomes a Batch, an error, or nothing.
#include "loader/delivery.h"

#include <string>

#include "base/printable.h"
#include "loader/batch_factory.h"
#include "transport/slot_contents.h"

namespace forkfeed {

Delivery::Delivery(std::shared_ptr<Arena> arena, std::shared_ptr<SlotPool> slots, const DatasetIndex& index,
                   std::shared_ptr<spdlog::logger> log)
    : arena_(std::move(arena)), slots_(std::move(slots)), index_(index), log_(std::move(log)) {}

Result<std::optional<Batch>> Delivery::deliver(const Completion& c, std::uint64_t epoch, std::uint64_t index,
                                               detail::SlotPlace where) {
  const SlotContents slot(*arena_, c.slot);
  // A worker that fails a batch notes the culprit first; the checks catch a slot that
  // breaks the layout rule, which would be a bug of ours, never bad data.
  if (c.outcome == TaskOutcome::kFailed && slot.skipped() > 0) {
    const std::uint32_t culprit = slot.skipped() - 1;
    const Status::Code code = slot.skip_code(culprit);
    const std::string sample = printable(index_.describe(slot.skipped_index(culprit)));
    Status s =
        code == Status::Code::kBadData
            ? Status::BadData(printable(slot.skip_reason(culprit)))
                  .about(sample + " (on_error=fail; use skip to leave such files out)")
            : Status::FromCode(code, "reading " + sample + ": " + printable(slot.skip_reason(culprit)) +
                                         "; this is not the sample's fault, so it was neither delivered "
                                         "nor skipped: remove the cause, then open the loader again from "
                                         "its state(), which resumes at this batch");
    slots_->give_back(c.slot);
    return s;
  }
  if (c.outcome != TaskOutcome::kDone || !slot.complete()) {
    slots_->give_back(c.slot);
    return Status::Internal("batch " + std::to_string(index) +
                            " came back with samples neither written nor skipped; this is a forkfeed bug, "
                            "please report it with the log");
  }
  report_skipped(slot);
  const std::uint32_t count = slot.written();
  if (count == 0) {
    slots_->give_back(c.slot);
    return std::optional<Batch>();
  }
  batches_ += 1;
  samples_ += count;
  auto lease = std::make_unique<detail::PoolSlotLease>(arena_, slots_, c.slot);
  const SlotGeometry& g = arena_->control().slots;
  where.slot = g.slots_offset + std::uint64_t{c.slot} * g.slot_stride;
  where.bytes = g.slot_stride;
  const std::byte* base =
      where.window != nullptr ? where.window->origin(where.slot) + where.slot : arena_->slot(c.slot).base;
  Batch batch = BatchFactory::make(*arena_, c.slot, count, epoch, index, std::move(lease), std::move(where));
  const SlotFields& fields = arena_->control().fields;
  if (fields.count > 0) {  // written by this loader's own workers: their regions fit
    BatchFactory::add_fields(batch, base, std::shared_ptr<const SlotFields>(arena_, &fields));
  }
  return std::optional<Batch>(std::move(batch));
}

// Counts the samples left out (OnError::kSkip) and logs each file once, with why.
void Delivery::report_skipped(const SlotContents& slot) {
  for (std::uint32_t k = 0; k < slot.skipped(); ++k) {
    ++skipped_;
    const std::uint64_t sample = slot.skipped_index(k);
    if (logged_bad_.insert(sample).second) {
      log_->warn("skipped {}: {}", printable(index_.describe(sample)), printable(slot.skip_reason(k)));
    }
  }
}

void Delivery::count_into(LoaderStats& stats) const {
  stats.delivered_batches += batches_;
  stats.delivered_samples += samples_;
  stats.skipped_samples += skipped_;
}

}  // namespace forkfeed
