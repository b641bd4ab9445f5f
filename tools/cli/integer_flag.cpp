// integer_between(): a strict decimal parse ahead of CLI11's own conversion.
#include "tools/cli/integer_flag.h"

#include <charconv>
#include <string>
#include <system_error>

#include "base/printable.h"

namespace forkfeed::cli {

CLI::Validator integer_between(std::int64_t min, std::uint64_t max) {
  const std::string range = "an integer from " + std::to_string(min) + " to " + std::to_string(max);
  auto check = [min, max, range](std::string& text) -> std::string {
    const bool negative = text.starts_with('-');
    const std::string_view digits = std::string_view(text).substr(negative ? 1 : 0);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) {
      return "must be " + range + ", got '" + printable(text) + "'";
    }
    if (negative && min >= 0) return "must not be negative, got " + text;
    std::uint64_t magnitude = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude);
    const bool too_big =
        ec == std::errc::result_out_of_range || end != digits.data() + digits.size() ||
        (negative ? magnitude > static_cast<std::uint64_t>(-(min + 1)) + 1 : magnitude > max);
    if (too_big) return "must be " + range + ", got " + text;
    // Leading zeros would make CLI11 read the number as octal.
    const std::size_t first = digits.find_first_not_of('0');
    text = (negative ? "-" : "") + std::string(first == std::string_view::npos ? "0" : digits.substr(first));
    return std::string();
  };
  return CLI::Validator(check, "", "INTEGER");
}

}  // namespace forkfeed::cli
