// set_limit and limit_keys (daemon/limit_fields.h): a limit set from its text, by name.
#include "daemon/limit_fields.h"

#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "base/number_text.h"
#include "base/printable.h"

namespace forkfeed {

namespace {

// `text` as the value of a limit of `kind`, stored in `value`.
template <typename T>
Status assign(LimitKind kind, std::string_view text, T& value) {
  std::uint64_t n = 0;
  if (kind == LimitKind::kBytes) {
    auto bytes = parse_bytes(text);
    if (!bytes.ok()) return bytes.status();
    n = *bytes;
  } else {
    const auto whole = parse_whole_number(text, std::numeric_limits<std::uint32_t>::max());
    if (!whole)
      return Status::InvalidArgument(quoted_start(text, 40) + " is not a whole number from 0 to 4294967295");
    n = *whole;
  }
  if constexpr (std::is_same_v<T, std::chrono::milliseconds>) {
    value = std::chrono::milliseconds(n);
  } else {
    value = static_cast<T>(n);
  }
  return Status::Ok();
}

}  // namespace

Status set_limit(DaemonConfig& config, std::string_view key, std::string_view text) {
  std::optional<Status> result;
  for_each_limit(config, [&](const LimitField& field, auto& value) {
    if (field.key == key) result = assign(field.kind, text, value);
  });
  if (!result) return Status::NotFound("no limit is named '" + printable(key) + "'; use " + limit_keys());
  return *result;
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
