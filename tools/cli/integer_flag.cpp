// integer_in(): a strict decimal parse ahead of CLI11's own conversion.
#include "tools/cli/integer_flag.h"

#include <charconv>
#include <string>
#include <system_error>

#include "base/printable.h"

namespace forkfeed::cli {

CLI::Validator integer_in(const OptionRange& range) {
  auto check = [range](std::string& text) -> std::string {
    const std::string must = "must be " + range.text() + ", got ";
    const bool negative = text.starts_with('-');
    const std::string_view digits = std::string_view(text).substr(negative ? 1 : 0);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) {
      return must + "'" + printable(text) + "'";
    }
    std::uint64_t magnitude = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude);
    const bool in = ec == std::errc() && end == digits.data() + digits.size() &&
                    (negative ? magnitude <= std::uint64_t{1} << 63 &&
                                    range.holds(static_cast<std::int64_t>(0 - magnitude))
                              : range.holds(magnitude));
    if (!in) return must + text;
    // Leading zeros would make CLI11 read the number as octal.
    const std::size_t first = digits.find_first_not_of('0');
    text = (negative ? "-" : "") + std::string(first == std::string_view::npos ? "0" : digits.substr(first));
    return std::string();
  };
  return CLI::Validator(check, "", "INTEGER");
}

CLI::Validator integer_between(std::int64_t min, std::uint64_t max) {
  return integer_in(OptionRange{.min = min, .max = max});
}

}  // namespace forkfeed::cli
