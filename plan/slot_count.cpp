// How many batch slots a loader's arena holds, and what they cost (plan/slot_count.h).
#include "plan/slot_count.h"

#include <unistd.h>

#include <algorithm>

#include "transport/arena.h"
#include "transport/arena_layout.h"

namespace forkfeed {

std::uint64_t arena_batch_bytes(const LoaderOptions& o) {
  return std::uint64_t{slot_count(o)} * o.batch_size * sample_bytes(o.dtype, o.size);
}

namespace {

// The field whose region weighs most, for a message: the ragged one with the largest
// batch, since a dense field's size follows from its shape.
std::string largest_field(const ArenaSpec& spec) {
  const FieldDemand* largest = nullptr;
  for (const FieldDemand& d : spec.fields) {
    if (d.ragged && (largest == nullptr || d.ragged_bytes > largest->ragged_bytes)) largest = &d;
  }
  if (largest == nullptr) return "the fields beside the first image and label";
  if (largest->kind == FieldKind::kImage || largest->kind == FieldKind::kMask) {  // of each their own size
    return "field '" + largest->name + "' takes up to " + whole_mib(largest->ragged_bytes) + " a batch, " +
           std::to_string(spec.batch_size) + " samples of max_size a side: lower max_size";
  }
  const bool boxes = largest->kind == FieldKind::kBoxes || largest->kind == FieldKind::kPerBox;
  return "field '" + largest->name + "' takes up to " + whole_mib(largest->ragged_bytes) + " a batch, " +
         (boxes ? "what the numbers in" : "the sum of") + " its " + std::to_string(spec.batch_size) +
         " largest members" +
         (boxes ? " could hold (its .json members hold more than its boxes: give them "
                  "members of their own, or read them from .npy members)"
                : "");
}

}  // namespace

std::string whole_mib(std::uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

std::uint64_t slot_memory_limit() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) / 2
                               : std::uint64_t{1} << 34;
}

FieldBytesBudget memory_budget(const LoaderOptions& o) {
  return [images = arena_batch_bytes(o)](std::uint64_t field_bytes, const std::string& what) {
    const std::uint64_t limit = slot_memory_limit();
    if (images + field_bytes <= limit) return Status::Ok();
    return Status::ResourceExhausted("the batch slots would need " + whole_mib(images + field_bytes) + " (" +
                                     whole_mib(images) + " of images, " + whole_mib(field_bytes) +
                                     " of fields: " + what + "), over half of this machine's " +
                                     whole_mib(2 * limit) +
                                     "; lower batch_size, workers or prefetch, or refuse large members "
                                     "with max_file_bytes");
  };
}

Status charge_field_bytes(const ArenaSpec& spec, const FieldBytesBudget& budget) {
  if (spec.fields.empty()) return Status::Ok();
  ArenaSpec images = spec;
  images.fields.clear();
  const Result<std::uint64_t> with = Arena::slot_stride(spec), without = Arena::slot_stride(images);
  if (!with.ok()) return with.status();
  if (!without.ok()) return without.status();
  const std::uint64_t bytes = std::uint64_t{spec.num_slots} * (*with - std::min(*with, *without));
  return bytes == 0 ? Status::Ok() : budget(bytes, largest_field(spec));
}

}  // namespace forkfeed
