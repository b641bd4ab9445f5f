// StreamPlan::of, the one check of LoaderOptions (and validate() for the public API):
// every option checked, each error naming the option and what to do.
#include "plan/stream_plan.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "dataset/dataset_source.h"
#include "forkfeed/fields.h"
#include "forkfeed/options.h"
#include "plan/option_fields.h"
#include "plan/option_ranges.h"
#include "plan/slot_count.h"
#include "transforms/ops.h"
#include "transport/arena.h"
#include "transport/arena_layout.h"

namespace forkfeed {

Status validate(const LoaderOptions& options) {
  auto plan = StreamPlan::of(options);
  return plan.ok() ? Status::Ok() : plan.status();
}

Result<StreamPlan> StreamPlan::of(const LoaderOptions& o) {
  auto bad = [](std::string msg) { return Status::InvalidArgument(std::move(msg)); };
  if (Status s = DatasetSource::of(o).check(); !s.ok()) return s;
  // Each integer option within its range (plan/option_ranges.cpp), in the table's order.
  Status out_of_range = Status::Ok();
  for_each_option(o, [&](std::string_view name, const auto& value, OptionScope) {
    using T = std::remove_cvref_t<decltype(value)>;
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      if (out_of_range.ok()) out_of_range = check_option<T>(name, value);
    }
  });
  if (!out_of_range.ok()) return out_of_range;
  // Every slot may be queued on one worker's ring, so slots must fit in a ring.
  if (std::uint64_t{o.workers} * o.prefetch + 1 > kRingCapacity) {
    return bad("workers x prefetch = " + std::to_string(std::uint64_t{o.workers} * o.prefetch) + " exceeds " +
               std::to_string(kRingCapacity - 1) + "; lower prefetch or workers");
  }
  // The schema, parsed once; each image field's pipeline, built once: what the first
  // makes is the options' size and dtype.
  auto fields =
      o.fields.empty() ? Result<std::vector<FieldSpec>>(std::vector<FieldSpec>{}) : parse_fields(o.fields);
  if (!fields.ok()) return bad("fields: " + fields.status().message());
  auto images = plan_images(o, *fields);
  if (!images.ok()) return images.status();
  LoaderOptions resolved = o;
  resolved.size = images->front().transform.size;
  resolved.dtype = images->front().transform.dtype;
  if (resolved.size == 0 && o.fields.empty()) {
    return bad(
        "the transform makes samples of each their own size (max_size " + std::to_string(o.max_size) +
        "), which come as a list a batch: that needs fields (WebDataset shards with fields=\"image=jpg\", "
        "say), or a transform that ends in one size");
  }
  if (resolved.size != 0 && (resolved.size < 8 || resolved.size > 4096)) {
    return bad("the transform makes " + std::to_string(resolved.size) + " x " +
               std::to_string(resolved.size) + " samples; the size must be in [8, 4096]");
  }
  if (o.rank >= o.world_size) {
    return bad("rank " + std::to_string(o.rank) + " is out of range for world size " +
               std::to_string(o.world_size));
  }
  if (Status s = check_normalisation(o.mean, o.std); !s.ok()) return s;
  // Invariant 6: the arena is slots x batch bytes, all of it backed by memory.
  const std::uint64_t arena = arena_batch_bytes(resolved);
  const std::uint64_t limit = slot_memory_limit();
  if (arena > limit) {
    return Status::ResourceExhausted("the batch slots would need " + whole_mib(arena) + " (" +
                                     std::to_string(slot_count(o)) + " slots x batch " +
                                     std::to_string(o.batch_size) + " x " +
                                     std::to_string(sample_bytes(resolved.dtype, resolved.size)) +
                                     " bytes per sample), over half of this machine's " +
                                     whole_mib(2 * limit) + "; lower batch_size, size, workers or prefetch");
  }
  auto schema = dataset_schema(o, std::move(fields).value());
  if (!schema.ok()) return schema.status();
  return StreamPlan(std::move(resolved), std::move(schema).value(), std::move(images).value());
}

}  // namespace forkfeed
