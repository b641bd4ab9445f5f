// SlotContents: the one owner of a batch slot's bookkeeping — which samples a batch asks
// for, which were written and where, which were skipped and why. The orchestrator fills
// a slot and reads it back; the worker decodes it; both go through this type only, so
// the layout rule lives here and nowhere else (invariant 1: a label is never separated
// from its sample, and no skip goes unreported).
//
// In the slot, after a task is done:
//   indices[0, written), labels[0, written)  the decoded samples, in pixel order
//   skips[0, skipped)                        the samples left out, with the reason
// and written + skipped == requested. Skip notes have their own array: a skip can never
// land on an index or a label, whatever a cancelled task left behind.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "forkfeed/dataset.h"
#include "transport/arena.h"

namespace forkfeed {

class SlotContents {
 public:
  SlotContents(const Arena& arena, std::uint32_t slot)
      : view_(arena.slot(slot)),
        fields_(&arena.control().fields),
        skip_missing_(arena.control().missing == MissingField::kSkip),
        capacity_(arena.control().slots.batch_size),
        sample_bytes_(arena.control().slots.sample_bytes) {}

  // --- Orchestrator, before a task is issued (again, after a worker died mid-task).
  // The batch is `samples`. Those in `known_bad` are noted as skipped with the reason
  // given there, and so are those that lack a field under MissingField::kSkip; the
  // others go first in the index and label arrays, and their count,
  // returned, is what the worker decodes.
  // REQUIRES: samples.size() <= the slot's batch size.
  std::uint32_t prepare(std::span<const std::uint64_t> samples, const DatasetIndex& index,
                        const std::unordered_map<std::uint64_t, std::string>& known_bad) const;

  // --- Worker, for each i < the task's count, in order.
  std::uint64_t sample(std::uint32_t i) const { return view_.sample_indices[i]; }
  // Sample i was decoded into pixel position written().
  void keep(std::uint32_t i) const;
  // Sample i was not decoded, because `why` (its message and code).
  void skip(std::uint32_t i, const Status& why) const;
  // Where the next decoded sample's pixels go: right after those of the samples kept.
  std::byte* next_pixels() const { return view_.pixels + view_.header->written * sample_bytes_; }
  // Samples decoded into the pixels so far.
  std::uint32_t written() const { return view_.header->written; }

  // --- Worker, a schema's fields of the next sample kept (position written()): written in
  // place, as its pixels are, and given out once keep() counts the sample. What a sample
  // that fails left behind is overwritten by the next one.
  const SlotFields& fields() const { return *fields_; }
  // Where a dense field's value goes: sample_bytes of it.
  std::byte* next_dense(const FieldRegion& field) const;
  // The room left for a ragged field's value: from the end of the samples kept to the
  // end of its region.
  std::span<std::byte> next_ragged(const FieldRegion& field) const;
  // The next sample's ragged field took `bytes` of its room (REQUIRES: no more); an
  // array's `shape` and `element` type are kept with it.
  void set_ragged(const FieldRegion& field, std::uint64_t bytes, std::span<const std::int64_t> shape = {},
                  ElementType element = ElementType::kUint8) const;
  // Whether the next sample has the field (MissingField::kEmpty leaves it empty).
  void set_present(const FieldRegion& field, bool present) const;

  // --- Orchestrator, after the task.
  std::uint32_t skipped() const { return view_.header->skipped; }
  std::uint64_t skipped_index(std::uint32_t k) const { return view_.skips[k].index; }
  std::string_view skip_reason(std::uint32_t k) const;
  // Why sample k was not decoded: kBadData when the sample itself is to blame (on_error
  // decides), any other code when the machine or the dataset's files are (never skipped).
  Status::Code skip_code(std::uint32_t k) const;
  // Every sample of the batch is accounted for, as written or as skipped.
  bool complete() const;

  const SlotView& view() const { return view_; }

 private:
  void note(std::uint64_t sample, Status::Code code, std::string_view reason) const;
  std::uint64_t* offsets(const FieldRegion& field) const;

  SlotView view_;
  const SlotFields* fields_;
  bool skip_missing_;  // a sample that lacks a field is skipped here (MissingField::kSkip)
  std::uint32_t capacity_;
  std::uint64_t sample_bytes_;
};

}  // namespace forkfeed
