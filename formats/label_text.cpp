// What a label or number member says (formats/label_text.h).
#include "formats/label_text.h"

#include <limits>

#include "base/printable.h"

namespace forkfeed {

std::string label_excerpt(std::string_view bytes) {
  std::string out = "\"";
  out += printable(bytes.substr(0, 40));
  out += bytes.size() > 40 ? "...\"" : "\"";
  return out;
}

Result<std::int64_t> parse_cls(std::string_view text) {
  const std::optional<std::int64_t> label = parse_label(text);
  if (!label) return Status::BadData("is not " + std::string(kLabelRule) + ": " + label_excerpt(text));
  return *label;
}

std::optional<std::int64_t> json_label(const nlohmann::json& value) {
  const bool fits =
      value.is_number_integer() &&
      (!value.is_number_unsigned() ||
       value.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()));
  if (!fits || !valid_label(value.get<std::int64_t>())) return std::nullopt;
  return value.get<std::int64_t>();
}

std::optional<double> json_number(const nlohmann::json& value) {
  if (!value.is_number() || !std::isfinite(value.get<double>())) return std::nullopt;
  return value.get<double>();
}

Result<std::int64_t> parse_json_label(std::string_view text, const std::string& key) {
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object())
    return Status::BadData("is not a JSON object: " + label_excerpt(text));
  const auto it = doc.find(key);
  if (it == doc.end()) return Status::BadData("has no field \"" + printable(key) + "\"");
  const std::optional<std::int64_t> label = json_label(*it);
  if (!label) {
    return Status::BadData("field \"" + printable(key) + "\" is not " + std::string(kLabelRule) + ": " +
                           label_excerpt(it->dump()));
  }
  return *label;
}

}  // namespace forkfeed
