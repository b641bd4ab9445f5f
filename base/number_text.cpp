// parse_whole_number and parse_real: std::from_chars, which reads no space, no base
// prefix and no locale, and must end where the text does.
#include "base/number_text.h"

#include <charconv>
#include <cmath>
#include <system_error>

namespace forkfeed {

std::optional<std::uint64_t> parse_whole_number(std::string_view text, std::uint64_t max) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value > max) return std::nullopt;
  return value;
}

std::optional<double> parse_real(std::string_view text) {
  if (text.starts_with('+')) {
    text.remove_prefix(1);  // from_chars takes only a minus
    if (text.starts_with('-')) return std::nullopt;
  }
  if (text.empty() || text.find_first_not_of("0123456789+-.eE") != std::string_view::npos)
    return std::nullopt;
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

}  // namespace forkfeed
