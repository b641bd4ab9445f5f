// Strict reads of one field of a JSON object, for documents another process or an older
// run wrote: a field that is missing, of another type or out of range is an
// InvalidArgument naming it by `path` ("order.rank"), and nothing is read unchecked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "forkfeed/status.h"

namespace forkfeed::json_field {

inline Status missing(std::string_view path) {
  return Status::InvalidArgument("missing field \"" + std::string(path) + "\"");
}

// An unsigned integer no larger than T's maximum.
template <typename T>
Status read_unsigned(const nlohmann::json& object, const char* name, std::string_view path, T& out) {
  const auto it = object.find(name);
  if (it == object.end()) return missing(path);
  if (!it->is_number_unsigned() || it->get<std::uint64_t>() > std::numeric_limits<T>::max()) {
    return Status::InvalidArgument("field \"" + std::string(path) + "\" must be an integer from 0 to " +
                                   std::to_string(std::numeric_limits<T>::max()) + ", got " + it->dump());
  }
  out = static_cast<T>(it->get<std::uint64_t>());
  return Status::Ok();
}

inline Status read_bool(const nlohmann::json& object, const char* name, std::string_view path, bool& out) {
  const auto it = object.find(name);
  if (it == object.end()) return missing(path);
  if (!it->is_boolean()) {
    return Status::InvalidArgument("field \"" + std::string(path) + "\" must be true or false, got " +
                                   it->dump());
  }
  out = it->get<bool>();
  return Status::Ok();
}

// A string of exactly `digits` lowercase hex digits.
inline Status read_hex(const nlohmann::json& object, const char* name, std::string_view path,
                       std::size_t digits, std::string& out) {
  const auto it = object.find(name);
  if (it == object.end()) return missing(path);
  const bool hex =
      it->is_string() && it->get_ref<const std::string&>().size() == digits &&
      it->get_ref<const std::string&>().find_first_not_of("0123456789abcdef") == std::string::npos;
  if (!hex) {
    return Status::InvalidArgument("field \"" + std::string(path) + "\" must be " + std::to_string(digits) +
                                   " lowercase hex digits, got " + it->dump());
  }
  out = it->get<std::string>();
  return Status::Ok();
}

// A string of at most `max_bytes` bytes.
inline Status read_string(const nlohmann::json& object, const char* name, std::string_view path,
                          std::string& out, std::size_t max_bytes = 4096) {
  const auto it = object.find(name);
  if (it == object.end()) return missing(path);
  if (!it->is_string() || it->get_ref<const std::string&>().size() > max_bytes) {
    return Status::InvalidArgument("field \"" + std::string(path) + "\" must be a string of at most " +
                                   std::to_string(max_bytes) + " bytes, got " +
                                   (it->is_string()
                                        ? "one of " + std::to_string(it->get_ref<const std::string&>().size())
                                        : it->dump()));
  }
  out = it->get<std::string>();
  return Status::Ok();
}

}  // namespace forkfeed::json_field
