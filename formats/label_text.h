// What a label is, whatever gives it (a manifest line, a shard's .cls or .json member):
// a non-negative 64-bit integer, the class's position. One rule, so that the same
// samples as a manifest or as shards are taken or refused alike. And what a number
// field's decimal text is.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include <nlohmann/json.hpp>

#include "forkfeed/status.h"

namespace forkfeed {

inline constexpr std::string_view kLabelRule = "a non-negative integer";

inline bool valid_label(std::int64_t label) { return label >= 0; }

// A decimal label with ASCII whitespace around it allowed; nullopt when it is not one.
inline std::optional<std::int64_t> parse_label(std::string_view text) {
  constexpr std::string_view kSpace = " \t\n\r\f\v";
  const std::size_t first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return std::nullopt;
  text = text.substr(first, text.find_last_not_of(kSpace) - first + 1);
  std::int64_t label = -1;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, label);
  if (ec != std::errc() || ptr != end || !valid_label(label)) return std::nullopt;
  return label;
}

// A number field's value written as text (a member holding a decimal): a finite
// float64, with ASCII whitespace around it allowed; nullopt when it is not one.
inline std::optional<double> parse_number(std::string_view text) {
  constexpr std::string_view kSpace = " \t\n\r\f\v";
  const std::size_t first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return std::nullopt;
  text = text.substr(first, text.find_last_not_of(kSpace) - first + 1);
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || !std::isfinite(value)) return std::nullopt;
  return value;
}

// At most 40 bytes of a label member, quoted and printable, for a message.
std::string label_excerpt(std::string_view bytes);

// A .cls member's label: BadData "is not a non-negative integer: \"...\"" otherwise.
Result<std::int64_t> parse_cls(std::string_view text);
// The label under `key` of a .json member's object: BadData naming what is wrong otherwise.
Result<std::int64_t> parse_json_label(std::string_view text, const std::string& key);
// A JSON value as a label (an integer that is one) or as a number (a finite one); nullopt
// when it is not one.
std::optional<std::int64_t> json_label(const nlohmann::json& value);
std::optional<double> json_number(const nlohmann::json& value);

}  // namespace forkfeed
