// JSON of the open_stream request, the order key and replies.
#include "protocol/stream_request.h"

#include <array>
#include <cstring>
#include <limits>
#include <optional>
#include <set>
#include <type_traits>

#include "base/option_names.h"
#include "base/printable.h"
#include "base/utf8.h"
#include "loader/order_key.h"
#include "loader/stats_fields.h"
#include "plan/option_fields.h"
#include "plan/option_ranges.h"

namespace forkfeed {
namespace {

using json = nlohmann::json;

Status bad_request(const std::string& what) {
  return Status::InvalidArgument("bad open_stream request: " + what);
}

Result<std::string> get_string(const json& body, const char* key) {
  const json& v = body.at(key);
  if (!v.is_string()) return bad_request(std::string(key) + " must be a string");
  return v.get<std::string>();
}

Result<bool> get_bool(const json& body, const char* key) {
  const json& v = body.at(key);
  if (!v.is_boolean()) return bad_request(std::string(key) + " must be true or false");
  return v.get<bool>();
}

Result<std::array<float, 3>> get_triple(const json& body, const char* key) {
  const json& v = body.at(key);
  if (!v.is_array() || v.size() != 3) return bad_request(std::string(key) + " must be an array of 3 numbers");
  std::array<float, 3> out{};
  for (std::size_t i = 0; i < 3; ++i) {
    if (!v[i].is_number()) return bad_request(std::string(key) + " must be an array of 3 numbers");
    out[i] = v[i].get<float>();
  }
  return out;
}

}  // namespace

json bytes_to_json(std::string_view bytes) {
  if (valid_utf8(bytes)) return std::string(bytes);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(bytes.size() * 2);
  for (const char c : bytes) {
    hex += kHex[static_cast<unsigned char>(c) >> 4];
    hex += kHex[static_cast<unsigned char>(c) & 0xF];
  }
  return json{{"bytes", std::move(hex)}};
}

Result<std::string> bytes_from_json(const json& body, const char* key) {
  const std::string must = std::string(key) + " must be a string, or {\"bytes\": \"<hex>\"}";
  if (!body.is_object() || !body.contains(key)) return Status::InvalidArgument(std::string("missing ") + key);
  const json& v = body.at(key);
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_object() || v.size() != 1 || !v.contains("bytes") || !v["bytes"].is_string())
    return Status::InvalidArgument(must);
  const std::string& hex = v["bytes"].get_ref<const std::string&>();
  if (hex.size() % 2 != 0) return Status::InvalidArgument(must + ": an odd number of hex digits");
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string bytes(hex.size() / 2, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const int hi = digit(hex[2 * i]), lo = digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return Status::InvalidArgument(must + ": lowercase hex digits only");
    bytes[i] = static_cast<char>(hi << 4 | lo);
  }
  return bytes;
}

Result<std::uint64_t> get_uint(const json& body, const char* key, std::uint64_t max) {
  if (!body.is_object() || !body.contains(key)) return Status::InvalidArgument(std::string("missing ") + key);
  const json& v = body.at(key);
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() > max) {
    return Status::InvalidArgument(std::string(key) + " must be an integer in [0, " + std::to_string(max) +
                                   "]");
  }
  return v.get<std::uint64_t>();
}

namespace {

// Every field of an open_stream request, in the order a request is written: the one
// list that encoding, decoding and the check for unknown keys share. The options marked
// kLocal (start_method, fork_hazard, pin_memory_device, log_level) are forkfeedd's to
// choose, not a client's.
template <typename Request, typename Visit>  // Request: StreamRequest, const or not
void for_each_field(Request& r, Visit&& visit) {
  visit("dataset", r.stream.dataset);
  for_each_option(r.stream.loader, [&](const char* key, auto& field, OptionScope scope) {
    if (scope == OptionScope::kStream) visit(key, field);
  });
  visit("state", r.state);
  visit("demand", r.demand);
}

// Reads body[key] into `out`, leaving the default when the key is absent. A name that
// no value of an enum has goes to `unknown_name` instead: it is reported only when
// every field has the right type.
template <typename T>
Status read_field(const json& body, const char* key, T& out, Status& unknown_name) {
  if (!body.contains(key)) return Status::Ok();
  if constexpr (std::is_same_v<T, std::string>) {
    auto v = bytes_from_json(body, key);  // paths, names: bytes to the system
    if (!v.ok()) return bad_request(v.status().message());
    out = std::move(v).value();
  } else if constexpr (std::is_same_v<T, bool>) {
    auto v = get_bool(body, key);
    if (!v.ok()) return v.status();
    out = *v;
  } else if constexpr (std::is_same_v<T, std::array<float, 3>>) {
    auto v = get_triple(body, key);
    if (!v.ok()) return v.status();
    out = *v;
  } else if constexpr (std::is_enum_v<T>) {
    auto v = get_string(body, key);
    if (!v.ok()) return v.status();
    if (v->empty()) return Status::Ok();  // the default, as when the key is absent
    const std::optional<T> parsed = parse_enum<T>(*v);
    if (!parsed && unknown_name.ok()) {
      unknown_name =
          bad_request("unknown " + std::string(key) + " '" + printable(*v) + "'; use " + enum_names_or<T>());
    }
    if (parsed) out = *parsed;
  } else {
    // The option's own range (plan/option_ranges.h), with validate()'s words, not the
    // range of its C++ type.
    const json& v = body.at(key);
    const OptionRange range = option_range<T>(key);
    const bool in = v.is_number_unsigned()  ? range.holds(v.get<std::uint64_t>())
                    : v.is_number_integer() ? range.holds(v.get<std::int64_t>())
                                            : false;
    if (!in) return bad_request(option_out_of_range(key, range, v.dump()).message());
    out = static_cast<T>(v.is_number_unsigned() ? v.get<std::uint64_t>() : v.get<std::int64_t>());
  }
  return Status::Ok();
}

}  // namespace

json to_json(const StreamRequest& r) {
  json body = json::object();
  for_each_field(r, [&](const char* key, const auto& value) {
    using T = std::remove_cvref_t<decltype(value)>;
    if constexpr (std::is_enum_v<T>) {
      body[key] = std::string(to_string(value));
    } else if constexpr (std::is_same_v<T, std::string>) {
      body[key] = bytes_to_json(value);  // a path need not be UTF-8
    } else {
      body[key] = value;
    }
  });
  return body;
}

Result<StreamRequest> parse_stream_request(const json& body) {
  if (!body.is_object()) return bad_request("the body must be a JSON object");
  static const std::set<std::string> known = [] {
    std::set<std::string> keys;
    StreamRequest r;
    for_each_field(r, [&](const char* key, const auto&) { keys.insert(key); });
    return keys;
  }();
  for (const auto& [key, value] : body.items()) {
    if (!known.contains(key))
      return bad_request("unknown field '" + printable(key) +
                         "'; is the client of another forkfeed version?");
  }
  StreamRequest r;
  Status first = Status::Ok(), unknown_name = Status::Ok();
  for_each_field(r, [&](const char* key, auto& out) {
    if (first.ok()) first = read_field(body, key, out, unknown_name);
  });
  if (!first.ok()) return first;
  if (!unknown_name.ok()) return unknown_name;
  return r;
}

json to_json(const OrderKey& k) {
  json body = json::object();
  write_order_key(k, body, nullptr);
  return body;
}

Result<OrderKey> parse_order_key(const json& body) {
  Result<OrderKey> key = read_order_key(body, nullptr);
  if (!key.ok()) {
    return Status::Internal("forkfeedd sent a malformed order key: " + key.status().message() +
                            "; is it another forkfeed version?");
  }
  return key;
}

namespace {

// Every field of the open_stream reply but the order key, shared by writing and reading.
template <typename Opened, typename Visit>
void for_each_reply_field(Opened& o, Visit&& visit) {
  constexpr std::uint64_t k32 = std::numeric_limits<std::uint32_t>::max();
  constexpr std::uint64_t k64 = std::numeric_limits<std::uint64_t>::max();
  visit("stream", o.stream, k64);
  visit("generation", o.generation, k64);
  visit("epoch", o.epoch, k64);
  visit("position", o.position, k64);
  visit("batches_per_epoch", o.batches_per_epoch, k64);
  visit("samples_per_epoch", o.samples_per_epoch, k64);
  visit("slots", o.slots, k32);
  visit("workers", o.workers, k32);
  visit("classes", o.classes, k64);
  visit("size", o.size, k32);
  visit("arena_bytes", o.arena_bytes, k64);
  visit("slot_bytes", o.slot_bytes, k64);
  visit("index_skipped_samples", o.index_skipped_samples, k64);
  visit("index_skipped_bytes", o.index_skipped_bytes, k64);
}

// Fields an older forkfeedd does not send: they stay 0.
bool optional_reply_field(std::string_view key) {
  return key == "classes" || key == "slot_bytes" || key == "index_skipped_samples" ||
         key == "index_skipped_bytes";
}

// A slot's fields in the reply: one object a field, every member of FieldRegion by name.
template <typename Region, typename Visit>
void for_each_region_number(Region& r, Visit&& visit) {
  visit("ragged", r.ragged);
  visit("rank", r.rank);
  visit("sample_bytes", r.sample_bytes);
  visit("values", r.values);
  visit("capacity", r.capacity);
  visit("offsets", r.offsets);
  visit("shapes", r.shapes);
  visit("present", r.present);
}

json fields_to_json(const SlotFields& fields) {
  json all = json::array();
  for (const FieldRegion& r : fields.regions()) {
    json f{{"name", std::string(r.field_name())},
           {"kind", std::string(to_string(r.kind))},
           {"element", std::string(to_string(r.element))},
           {"shape", json(std::vector<std::int64_t>(r.shape, r.shape + kMaxFieldRank))}};
    for_each_region_number(r, [&](const char* key, auto value) { f[key] = value; });
    all.push_back(std::move(f));
  }
  return all;
}

// What the reply says of the fields; the caller checks that they fit the slots.
Result<SlotFields> fields_from_json(const json& all) {
  if (!all.is_array() || all.size() > kMaxSlotFields) {
    return Status::InvalidArgument("fields must be an array of at most " + std::to_string(kMaxSlotFields));
  }
  SlotFields fields;
  for (const json& f : all) {
    FieldRegion& r = fields.fields[fields.count++];
    r = FieldRegion{};
    if (!f.is_object() || !f.contains("name") || !f["name"].is_string() || !f.contains("kind") ||
        !f["kind"].is_string() || !f.contains("element") || !f["element"].is_string() ||
        !f.contains("shape") || !f["shape"].is_array() || f["shape"].size() != kMaxFieldRank) {
      return Status::InvalidArgument("a field must have a name, kind, element and shape");
    }
    const std::string name = f["name"].get<std::string>();
    if (name.empty() || name.size() >= kFieldNameBytes)
      return Status::InvalidArgument("a field's name must have 1 to " + std::to_string(kFieldNameBytes - 1) +
                                     " bytes");
    std::memcpy(r.name, name.data(), name.size());
    const auto kind = parse_field_kind(f["kind"].get<std::string>());
    if (!kind) return Status::InvalidArgument("field '" + printable(name) + "' has an unknown kind");
    r.kind = *kind;
    bool element = false;
    for (auto e = std::uint8_t{0}; e <= static_cast<std::uint8_t>(ElementType::kFloat64) && !element; ++e) {
      element = to_string(static_cast<ElementType>(e)) == f["element"].get<std::string>();
      if (element) r.element = static_cast<ElementType>(e);
    }
    if (!element) return Status::InvalidArgument("field '" + printable(name) + "' has an unknown element");
    for (std::size_t d = 0; d < kMaxFieldRank; ++d) {
      if (!f["shape"][d].is_number_integer())
        return Status::InvalidArgument("a field's shape holds integers");
      r.shape[d] = f["shape"][d].get<std::int64_t>();
    }
    Status first = Status::Ok();
    for_each_region_number(r, [&](const char* key, auto& out) {
      auto v = get_uint(f, key, std::numeric_limits<std::remove_reference_t<decltype(out)>>::max());
      if (!v.ok() && first.ok()) first = v.status();
      if (v.ok()) out = static_cast<std::remove_reference_t<decltype(out)>>(*v);
    });
    if (!first.ok()) return first;
  }
  return fields;
}

}  // namespace

json to_json(const StreamOpened& o) {
  json body = json::object();
  for_each_reply_field(o, [&](const char* key, const auto& value, std::uint64_t) { body[key] = value; });
  body["dtype"] = std::string(to_string(o.dtype));
  body["layout"] = std::string(to_string(o.layout));
  body["order"] = to_json(o.order);
  if (o.fields.count > 0) body["fields"] = fields_to_json(o.fields);
  std::size_t name_bytes = 0;
  for (const std::string& name : o.class_names) name_bytes += name.size() + 4;  // quotes, comma, slack
  if (!o.class_names.empty() && name_bytes <= kMaxClassNameBytes) {
    json names = json::array();
    for (const std::string& name : o.class_names)
      names.push_back(bytes_to_json(name));  // folder names: bytes
    body["class_names"] = std::move(names);
  }
  return body;
}

bool same_fields(const SlotFields& a, const SlotFields& b) { return fields_to_json(a) == fields_to_json(b); }

Result<StreamOpened> parse_stream_opened(const json& reply) {
  auto malformed = [](const std::string& why) {
    return Status::Internal("forkfeedd sent a malformed open_stream reply: " + why +
                            "; is it another forkfeed version?");
  };
  StreamOpened o;
  Status first = Status::Ok();
  for_each_reply_field(o, [&](const char* key, auto& out, std::uint64_t max) {
    if (!first.ok() || (optional_reply_field(key) && !reply.contains(key))) return;
    auto v = get_uint(reply, key, max);
    if (v.ok())
      out = static_cast<std::remove_reference_t<decltype(out)>>(*v);
    else
      first = malformed(v.status().message());
  });
  if (!first.ok()) return first;
  const auto dtype = reply.contains("dtype") && reply["dtype"].is_string()
                         ? parse_dtype(reply["dtype"].get<std::string>())
                         : std::nullopt;
  if (!dtype) return malformed("dtype must be one of " + enum_names_or<DType>());
  o.dtype = *dtype;
  if (reply.contains("layout")) {  // an older forkfeedd does not say: the dtype's default
    const auto layout =
        reply["layout"].is_string() ? parse_layout(reply["layout"].get<std::string>()) : std::nullopt;
    if (!layout) return malformed("layout must be one of " + enum_names_or<Layout>());
    o.layout = *layout;
  }
  if (reply.contains("class_names")) {  // absent: too many to send, or an older forkfeedd
    const json& names = reply["class_names"];
    if (!names.is_array() || names.size() != o.classes) return malformed("class_names must list every class");
    for (const json& name : names) {
      auto bytes = bytes_from_json(json{{"class_name", name}}, "class_name");
      if (!bytes.ok()) return malformed(bytes.status().message());
      o.class_names.push_back(std::move(bytes).value());
    }
  }
  if (!reply.contains("order")) return malformed("missing order");
  auto order = parse_order_key(reply["order"]);
  if (!order.ok()) return order.status();
  o.order = std::move(order).value();
  if (reply.contains("fields")) {  // absent: no schema
    auto fields = fields_from_json(reply["fields"]);
    if (!fields.ok()) return malformed(fields.status().message());
    // Checked once here, for every reader of the reply's layout: no delivery can then
    // make a client read outside a slot.
    if (!fields->fit(o.slot_bytes, o.order.batch_size))
      return malformed("its fields' regions do not lie inside a slot of " + std::to_string(o.slot_bytes) +
                       " bytes");
    o.fields = *fields;
  }
  return o;
}

void write_loader_stats(const LoaderStats& stats, json& body) {
  for_each_stat(stats, [&](const char* key, const auto& value) {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(value)>, StartMethod>) {
      body[key] = std::string(to_string(value));
    } else {
      body[key] = value;
    }
  });
}

Result<LoaderStats> parse_loader_stats(const json& body) {
  LoaderStats stats;
  stats.start_method = StartMethod::kSpawn;  // an older forkfeedd, which always spawned, does not say
  Status first = Status::Ok();
  for_each_stat(stats, [&](const char* key, auto& out) {
    using T = std::remove_cvref_t<decltype(out)>;
    if (!first.ok() || !body.contains(key)) return;
    const json& v = body[key];
    if constexpr (std::is_same_v<T, StartMethod>) {
      const auto method = v.is_string() ? parse_start_method(v.get<std::string>()) : std::nullopt;
      if (method)
        out = *method;
      else
        first = Status::Internal(std::string("forkfeedd sent malformed stats: ") + key +
                                 " is not a start method");
    } else if constexpr (std::is_same_v<T, bool>) {
      if (v.is_boolean())
        out = v.get<bool>();
      else
        first =
            Status::Internal(std::string("forkfeedd sent malformed stats: ") + key + " is not true or false");
    } else {
      auto n = get_uint(body, key, std::numeric_limits<T>::max());
      if (n.ok())
        out = static_cast<T>(*n);
      else
        first = Status::Internal("forkfeedd sent malformed stats: " + n.status().message());
    }
  });
  if (!first.ok()) return first;
  return stats;
}

json error_reply(const Status& status) {
  return json{{"ok", false}, {"code", Status::CodeName(status.code())}, {"error", status.message()}};
}

Status reply_status(const json& reply) {
  if (!reply.is_object() || !reply.contains("ok") || !reply["ok"].is_boolean()) {
    return Status::Internal("forkfeedd sent a malformed reply");
  }
  if (reply["ok"].get<bool>()) return Status::Ok();
  const std::string code = reply.value("code", std::string("internal"));
  return Status::FromCode(Status::CodeNamed(code),
                          reply.value("error", std::string("forkfeedd refused the request")));
}

}  // namespace forkfeed
