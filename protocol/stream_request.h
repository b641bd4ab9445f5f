// The JSON bodies of the protocol that carry more than a number or two: the open_stream
// request (StreamOptions and a resume state), the order key a client needs to write its
// own state(), and replies. Parsing is strict: a wrong type, a value out of range or an
// unknown key is an InvalidArgument naming it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "forkfeed/client.h"
#include "forkfeed/status.h"
#include "loader/checkpoint.h"

namespace forkfeed {

struct StreamRequest {
  StreamOptions stream;
  std::string state;  // empty: start at options.epoch
};

nlohmann::json to_json(const StreamRequest& request);
Result<StreamRequest> parse_stream_request(const nlohmann::json& body);

nlohmann::json to_json(const OrderKey& key);
Result<OrderKey> parse_order_key(const nlohmann::json& body);

// {"ok":false,"code":"<code>","error":"<message>"}, and back.
nlohmann::json error_reply(const Status& status);
// The Status of a reply: Ok for {"ok":true,...}.
Status reply_status(const nlohmann::json& reply);

// Reads an unsigned integer member of `body` that must lie in [0, max].
Result<std::uint64_t> get_uint(const nlohmann::json& body, const char* key, std::uint64_t max);

}  // namespace forkfeed
