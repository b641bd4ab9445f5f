// Numbers in text a user wrote (a config file, a flag): the whole text is the number, or
// it is no number at all — "0.5x" is not 0.5, "12 " is not 12, "010" is ten (never
// octal), "0x10" and "1e3" are not whole numbers. The callers name the key and the value.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace forkfeed {

// A whole number from 0 to `max` in decimal digits only (no sign, space or suffix).
std::optional<std::uint64_t> parse_whole_number(std::string_view text, std::uint64_t max);
// A finite real number in decimal ("0.5", "-.25", "+2", "1e-3"); not inf, nan or hex.
std::optional<double> parse_real(std::string_view text);

}  // namespace forkfeed
