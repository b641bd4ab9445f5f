// The JSON bodies of the protocol that carry more than a number or two: the open_stream
// request (StreamOptions and a resume state), the order key a client needs to write its
// own state(), and replies. Parsing is strict: a wrong type, a value out of range or an
// unknown key is an InvalidArgument naming it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "forkfeed/client.h"
#include "forkfeed/status.h"
#include "loader/checkpoint.h"
#include "transport/slot_fields.h"

namespace forkfeed {

struct StreamRequest {
  StreamOptions stream;
  std::string state;  // empty: start at options.epoch
  // A stream on demand: the daemon decodes only the batches the client wants (kWant),
  // and a seek starts an epoch on demand. How a fan-in client splits a rank's pass
  // among several daemons.
  bool demand = false;
};

nlohmann::json to_json(const StreamRequest& request);
Result<StreamRequest> parse_stream_request(const nlohmann::json& body);

// The open_stream reply: what a Client learns of the stream's loader.
struct StreamOpened {
  std::uint64_t stream = 0;
  // The stream's generation: 1 at open, one more at each seek (a new pass, a reset, a
  // loaded state). Every delivery carries it; the client drops records of older ones.
  std::uint64_t generation = 0;
  std::uint64_t epoch = 0;
  std::uint64_t position = 0;
  std::uint64_t batches_per_epoch = 0;
  std::uint64_t samples_per_epoch = 0;
  std::uint32_t slots = 0;
  std::uint32_t workers = 0;
  std::uint64_t classes = 0;  // 0 from a forkfeedd that does not say
  std::uint32_t size = 0;
  DType dtype = DType::kUint8;
  Layout layout = Layout::kAuto;  // resolved by the daemon; kAuto from one that does not say
  std::uint64_t arena_bytes = 0;
  // One batch slot's: a batch's pixels, labels and sample indices lie within one (what a
  // remote client's receive slots must hold).
  std::uint64_t slot_bytes = 0;
  // Left out of the dataset's index when it was built (LoaderStats::skipped_samples and
  // skipped_bytes before any batch): the part of a Client's stats that no delivery carries.
  std::uint64_t index_skipped_samples = 0;
  std::uint64_t index_skipped_bytes = 0;
  OrderKey order;
  // The class names by label when they fit in the reply (kMaxClassNameBytes); else empty
  // while `classes` is not 0.
  std::vector<std::string> class_names = {};
  // Where a schema's fields lie in each slot (count 0 without one; DeliveryRecord::
  // slot_offset says where a batch's slot begins). Read, it fits slot_bytes and batch_size.
  SlotFields fields = {};
};

// The class names an open_stream reply carries at most, in bytes: with the rest of the
// reply, well within a frame's payload. ImageNet's 1000 names take about 10 KiB.
inline constexpr std::size_t kMaxClassNameBytes = 48 * 1024;

// The reply's body (without "ok"), and back; a malformed reply is an Internal error
// naming the field. Class names are written only when they take at most
// kMaxClassNameBytes.
nlohmann::json to_json(const StreamOpened& opened);
Result<StreamOpened> parse_stream_opened(const nlohmann::json& reply);
// Whether two streams lay their fields out alike (every region where the other has it).
bool same_fields(const SlotFields& a, const SlotFields& b);

nlohmann::json to_json(const OrderKey& key);
Result<OrderKey> parse_order_key(const nlohmann::json& body);

// LoaderStats as forkfeedd's stats reply carries them (loader/stats_fields.h's names),
// and back. Reading is lenient about fields a forkfeedd of another version does not
// send (they stay 0) and strict about the type of those it does.
void write_loader_stats(const LoaderStats& stats, nlohmann::json& body);
Result<LoaderStats> parse_loader_stats(const nlohmann::json& body);

// {"ok":false,"code":"<code>","error":"<message>"}, and back.
nlohmann::json error_reply(const Status& status);
// The Status of a reply: Ok for {"ok":true,...}.
Status reply_status(const nlohmann::json& reply);

// Strings that are bytes to the system (paths, class names) need not be UTF-8, which a
// JSON string must be: such a string travels as {"bytes":"<hex>"} and reads back
// exactly; any other as a plain string.
nlohmann::json bytes_to_json(std::string_view bytes);
// The string or {"bytes":"<hex>"} at body[key]; InvalidArgument naming `key` otherwise.
Result<std::string> bytes_from_json(const nlohmann::json& body, const char* key);

// Reads an unsigned integer member of `body` that must lie in [0, max].
Result<std::uint64_t> get_uint(const nlohmann::json& body, const char* key, std::uint64_t max);

}  // namespace forkfeed
