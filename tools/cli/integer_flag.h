// integer_of(): the check every integer flag of every tool takes. CLI11 2.1 converts with
// strtoull/strtoll, which saturate ("--seed 18446744073709551616" became 2^64 - 1), wrap
// negative values into 64-bit unsigned ones, and read "010" as octal; this refuses all of
// it, naming the flag's range.
#pragma once

#include <concepts>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include <CLI/CLI.hpp>

#include "plan/option_ranges.h"

namespace forkfeed::cli {

// A validator admitting only a plain decimal integer in `range` ("-" only when its min
// < 0): no sign otherwise, no space, no octal or hex, no overflow.
CLI::Validator integer_in(const OptionRange& range);
CLI::Validator integer_between(std::int64_t min, std::uint64_t max);

template <typename T>
struct IntegerFlag {
  using type = T;
};
template <typename T>
struct IntegerFlag<std::optional<T>> {
  using type = T;
};
template <typename T>
struct IntegerFlag<std::vector<T>> {
  using type = T;
};

// The integer_between() check for the variable an option fills: `int`, `std::uint64_t`,
// or an optional or vector of one. Usage: app.add_option("--seed", seed)->check(integer_of(seed)).
template <typename V>
requires std::integral<typename IntegerFlag<V>::type> CLI::Validator integer_of(const V&) {
  using T = typename IntegerFlag<V>::type;
  return integer_between(static_cast<std::int64_t>(std::numeric_limits<T>::min()),
                         static_cast<std::uint64_t>(std::numeric_limits<T>::max()));
}

// The check of a flag that sets LoaderOptions field `option` (its for_each_option name):
// the option's own range and words, as validate() and every other face say them.
template <typename T>
requires std::integral<T> CLI::Validator option_integer(std::string_view option, const T&) {
  return integer_in(option_range<T>(option));
}

}  // namespace forkfeed::cli
