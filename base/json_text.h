// JSON that a user's file holds (a .json member, a state), parsed: the one place that
// turns nlohmann's errors into words — what and where, without its exception id, the
// bytes it read made printable — and that says, where that is the cause, that NaN,
// Infinity and numbers beyond a double's range are not JSON.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "forkfeed/status.h"

namespace forkfeed {

// The document `text` holds; BadData "not valid JSON (<why>)" when it holds none.
Result<nlohmann::json> parse_json_text(std::string_view text);

// nlohmann's what() without its "[json.exception.parse_error.101] ".
std::string without_exception_id(const char* what);

}  // namespace forkfeed
