// The values each integer option may take, stated once. validate() checks the options
// against them, and every face that reads an integer option — Python's keywords,
// forkfeedd's requests and config defaults, the tools' flags — refuses a value outside
// with the same words, however wide the field's C++ type is: `weight=-1` and `weight=0`
// are both "an integer from 1 to 1000", never once that and once the range of uint32.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "forkfeed/status.h"

namespace forkfeed {

// Epochs lie below this, so that every epoch has a next one (no run comes near it).
inline constexpr std::uint64_t kMaxEpoch = std::uint64_t{1} << 62;

struct OptionRange {
  std::int64_t min = 0;  // the least value, 0 aside when zero_too
  std::uint64_t max = 0;
  // 0 is also allowed, meaning `zero` ("size": 0, the transform's; 8 to 4096).
  bool zero_too = false;
  std::string_view zero = {};
  std::string_view why = {};  // what the option is, said after the range; may be empty

  // Whether `value` lies in the range.
  bool holds(std::int64_t value) const;
  bool holds(std::uint64_t value) const;
  // "an integer from 1 to 1000 (a share of ...)", as "must be ..." continues it.
  std::string text() const;
};

// The range of integer option `name` (a LoaderOptions field named as for_each_option
// names it): the narrower one validate() enforces, or the whole range of the field's
// type `T`.
template <typename T>
OptionRange option_range(std::string_view name);

// The narrower range of `name`, if it has one (the one list, plan/option_ranges.cpp).
std::optional<OptionRange> narrower_option_range(std::string_view name);

// InvalidArgument "<name> must be <range>, got <got>": what every face says about a value
// of `name` outside its range (or not an integer at all), `got` as the user wrote it.
Status option_out_of_range(std::string_view name, const OptionRange& range, std::string_view got);

template <typename T>
OptionRange option_range(std::string_view name) {
  if (auto narrower = narrower_option_range(name)) return *narrower;
  return OptionRange{.min = static_cast<std::int64_t>(std::numeric_limits<T>::min()),
                     .max = static_cast<std::uint64_t>(std::numeric_limits<T>::max())};
}

// Ok if `value` lies in the range of option `name` of type T; else option_out_of_range().
template <typename T>
Status check_option(std::string_view name, T value) {
  const OptionRange range = option_range<T>(name);
  const bool in = std::is_signed_v<T> ? range.holds(static_cast<std::int64_t>(value))
                                      : range.holds(static_cast<std::uint64_t>(value));
  return in ? Status::Ok() : option_out_of_range(name, range, std::to_string(value));
}

}  // namespace forkfeed
