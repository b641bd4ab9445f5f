// set_limit and limit_keys (daemon/limit_fields.h): a limit set from its text, by name.
#include "daemon/limit_fields.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "base/printable.h"

namespace forkfeed {

Status set_limit(DaemonConfig& config, std::string_view key, std::string_view text) {
  Status result = Status::NotFound("no limit is named '" + printable(key) + "'; use " + limit_keys());
  for_each_limit(config, [&](const LimitField& field, auto& value) {
    if (field.key != key) return;
    if (field.kind == LimitKind::kBytes) {
      auto bytes = parse_bytes(text);
      result = bytes.ok() ? (value = static_cast<std::remove_cvref_t<decltype(value)>>(*bytes), Status::Ok())
                          : bytes.status();
      return;
    }
    const bool digits = !text.empty() && text.size() <= 10 &&
                        std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
    const std::uint64_t n = digits ? std::stoull(std::string(text)) : 0;
    if (!digits || n > std::numeric_limits<std::uint32_t>::max()) {
      result = Status::InvalidArgument(quoted_start(text, 40) + " is not a whole number from 0 to 4294967295");
      return;
    }
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(value)>, std::chrono::milliseconds>) {
      value = std::chrono::milliseconds(n);
    } else {
      value = static_cast<std::remove_cvref_t<decltype(value)>>(n);
    }
    result = Status::Ok();
  });
  return result;
}

std::string limit_keys() {
  std::vector<std::string_view> keys;
  const DaemonConfig defaults;
  for_each_limit(defaults, [&](const LimitField& field, const auto&) { keys.push_back(field.key); });
  std::string out;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    out += i == 0 ? "" : (i + 1 == keys.size() ? " or " : ", ");
    out += keys[i];
  }
  return out;
}

}  // namespace forkfeed
