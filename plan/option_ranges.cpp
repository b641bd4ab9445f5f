// The integer options' ranges (plan/option_ranges.h): the one list of them.
#include "plan/option_ranges.h"

#include <array>

namespace forkfeed {
namespace {

constexpr std::uint64_t kUint32 = std::numeric_limits<std::uint32_t>::max();

struct NamedRange {
  std::string_view name;
  OptionRange range;
};

// Every integer option whose allowed values are fewer than its type holds. The others
// (seed, rank — checked against world_size —, max_worker_restarts, task_timeout_ms)
// take any value of their type.
constexpr std::array kRanges = {
    NamedRange{"batch_size", {.min = 1, .max = 65536, .why = "samples per batch"}},
    NamedRange{"workers", {.min = 1, .max = kUint32, .why = "decode workers"}},
    NamedRange{"prefetch", {.min = 1, .max = kUint32, .why = "batches in flight per worker"}},
    NamedRange{"weight", {.min = 1, .max = 1000, .why = "a share of a shared pool's worker time"}},
    NamedRange{"size", {.min = 8, .max = 4096, .zero_too = true, .zero = "the transform's", .why = "pixels"}},
    NamedRange{
        "max_size",
        {.min = 8, .max = 8192, .zero_too = true, .zero = "one size for all samples", .why = "pixels"}},
    NamedRange{"epoch", {.min = 0, .max = kMaxEpoch - 1, .why = "epochs count from 0"}},
    NamedRange{"world_size", {.min = 1, .max = kUint32, .why = "ranks sharing the dataset"}},
    NamedRange{"pin_memory_device",
               {.min = -1,
                .max = std::numeric_limits<std::int32_t>::max(),
                .why = "a CUDA device ordinal, or -1 for off"}},
    NamedRange{"max_pixels", {.min = 1, .max = std::numeric_limits<std::uint64_t>::max()}},
    NamedRange{"max_file_bytes", {.min = 1, .max = std::numeric_limits<std::uint64_t>::max()}},
};

}  // namespace

bool OptionRange::holds(std::int64_t value) const {
  if (value >= 0) return holds(static_cast<std::uint64_t>(value));
  return value >= min;
}

bool OptionRange::holds(std::uint64_t value) const {
  if (value == 0 && zero_too) return true;
  return (min <= 0 || value >= static_cast<std::uint64_t>(min)) && value <= max;
}

std::string OptionRange::text() const {
  std::string t = "an integer from " + std::to_string(min) + " to " + std::to_string(max);
  if (zero_too) t = "0 (" + std::string(zero) + ") or " + t;
  if (!why.empty()) t += " (" + std::string(why) + ")";
  return t;
}

std::optional<OptionRange> narrower_option_range(std::string_view name) {
  for (const NamedRange& r : kRanges) {
    if (r.name == name) return r.range;
  }
  return std::nullopt;
}

Status option_out_of_range(std::string_view name, const OptionRange& range, std::string_view got) {
  return Status::InvalidArgument(std::string(name) + " must be " + range.text() + ", got " +
                                 std::string(got));
}

}  // namespace forkfeed
