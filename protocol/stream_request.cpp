// JSON of the open_stream request, the order key and replies.
#include "protocol/stream_request.h"

#include <array>
#include <limits>
#include <set>

#include "loader/option_names.h"
#include "transport/printable.h"

namespace forkfeed {
namespace {

using json = nlohmann::json;

Status bad(const std::string& what) { return Status::InvalidArgument("bad open_stream request: " + what); }

Result<std::string> get_string(const json& body, const char* key) {
  const json& v = body.at(key);
  if (!v.is_string()) return bad(std::string(key) + " must be a string");
  return v.get<std::string>();
}

Result<bool> get_bool(const json& body, const char* key) {
  const json& v = body.at(key);
  if (!v.is_boolean()) return bad(std::string(key) + " must be true or false");
  return v.get<bool>();
}

Result<std::array<float, 3>> get_triple(const json& body, const char* key) {
  const json& v = body.at(key);
  if (!v.is_array() || v.size() != 3) return bad(std::string(key) + " must be an array of 3 numbers");
  std::array<float, 3> out{};
  for (std::size_t i = 0; i < 3; ++i) {
    if (!v[i].is_number()) return bad(std::string(key) + " must be an array of 3 numbers");
    out[i] = v[i].get<float>();
  }
  return out;
}

}  // namespace

Result<std::uint64_t> get_uint(const json& body, const char* key, std::uint64_t max) {
  if (!body.is_object() || !body.contains(key)) return Status::InvalidArgument(std::string("missing ") + key);
  const json& v = body.at(key);
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() > max) {
    return Status::InvalidArgument(std::string(key) + " must be an integer in [0, " + std::to_string(max) +
                                   "]");
  }
  return v.get<std::uint64_t>();
}

json to_json(const StreamRequest& r) {
  const LoaderOptions& o = r.stream.loader;
  return json{{"dataset", r.stream.dataset},
              {"image_folder", o.image_folder},
              {"manifest", o.manifest},
              {"batch_size", o.batch_size},
              {"workers", o.workers},
              {"prefetch", o.prefetch},
              {"transform", std::string(to_string(o.transform))},
              {"size", o.size},
              {"dtype", std::string(to_string(o.dtype))},
              {"mean", o.mean},
              {"std", o.std},
              {"seed", o.seed},
              {"epoch", o.epoch},
              {"rank", o.rank},
              {"world_size", o.world_size},
              {"shuffle", o.shuffle},
              {"drop_last", o.drop_last},
              {"on_error", std::string(to_string(o.on_error))},
              {"max_worker_restarts", o.max_worker_restarts},
              {"task_timeout_ms", o.task_timeout_ms},
              {"max_pixels", o.max_pixels},
              {"max_file_bytes", o.max_file_bytes},
              {"state", r.state}};
}

Result<StreamRequest> parse_stream_request(const json& body) {
  if (!body.is_object()) return bad("the body must be a JSON object");
  static const std::set<std::string> known = {"dataset",
                                              "image_folder",
                                              "manifest",
                                              "batch_size",
                                              "workers",
                                              "prefetch",
                                              "transform",
                                              "size",
                                              "dtype",
                                              "mean",
                                              "std",
                                              "seed",
                                              "epoch",
                                              "rank",
                                              "world_size",
                                              "shuffle",
                                              "drop_last",
                                              "on_error",
                                              "max_worker_restarts",
                                              "task_timeout_ms",
                                              "max_pixels",
                                              "max_file_bytes",
                                              "state"};
  for (const auto& [key, value] : body.items()) {
    if (!known.contains(key))
      return bad("unknown field '" + printable(key) + "'; is the client of another forkfeed version?");
  }
  StreamRequest r;
  LoaderOptions& o = r.stream.loader;
  constexpr std::uint64_t u32 = std::numeric_limits<std::uint32_t>::max();
  constexpr std::uint64_t u64 = std::numeric_limits<std::uint64_t>::max();
  auto uint = [&](const char* key, std::uint64_t max, auto& out) -> Status {
    if (!body.contains(key)) return Status::Ok();  // the default
    auto v = get_uint(body, key, max);
    if (!v.ok()) return bad(v.status().message());
    out = static_cast<std::remove_reference_t<decltype(out)>>(*v);
    return Status::Ok();
  };
  auto str = [&](const char* key, std::string& out) -> Status {
    if (!body.contains(key)) return Status::Ok();
    auto v = get_string(body, key);
    if (!v.ok()) return v.status();
    out = std::move(v).value();
    return Status::Ok();
  };
  auto boolean = [&](const char* key, bool& out) -> Status {
    if (!body.contains(key)) return Status::Ok();
    auto v = get_bool(body, key);
    if (!v.ok()) return v.status();
    out = *v;
    return Status::Ok();
  };
  auto triple = [&](const char* key, std::array<float, 3>& out) -> Status {
    if (!body.contains(key)) return Status::Ok();
    auto v = get_triple(body, key);
    if (!v.ok()) return v.status();
    out = *v;
    return Status::Ok();
  };
  std::string transform, dtype, on_error;
  for (Status s : {str("dataset", r.stream.dataset),
                   str("image_folder", o.image_folder),
                   str("manifest", o.manifest),
                   uint("batch_size", u32, o.batch_size),
                   uint("workers", u32, o.workers),
                   uint("prefetch", u32, o.prefetch),
                   str("transform", transform),
                   uint("size", u32, o.size),
                   str("dtype", dtype),
                   triple("mean", o.mean),
                   triple("std", o.std),
                   uint("seed", u64, o.seed),
                   uint("epoch", u64, o.epoch),
                   uint("rank", u32, o.rank),
                   uint("world_size", u32, o.world_size),
                   boolean("shuffle", o.shuffle),
                   boolean("drop_last", o.drop_last),
                   str("on_error", on_error),
                   uint("max_worker_restarts", u32, o.max_worker_restarts),
                   uint("task_timeout_ms", u32, o.task_timeout_ms),
                   uint("max_pixels", u64, o.max_pixels),
                   uint("max_file_bytes", u64, o.max_file_bytes),
                   str("state", r.state)}) {
    if (!s.ok()) return s;
  }
  if (!transform.empty()) {
    auto t = parse_transform(transform);
    if (!t) return bad("unknown transform '" + printable(transform) + "'; use " + enum_names_or<TransformKind>());
    o.transform = *t;
  }
  if (!dtype.empty()) {
    auto d = parse_dtype(dtype);
    if (!d) return bad("unknown dtype '" + printable(dtype) + "'; use " + enum_names_or<DType>());
    o.dtype = *d;
  }
  if (!on_error.empty()) {
    auto e = parse_on_error(on_error);
    if (!e) return bad("unknown on_error '" + printable(on_error) + "'; use " + enum_names_or<OnError>());
    o.on_error = *e;
  }
  return r;
}

json to_json(const OrderKey& k) {
  return json{{"dataset_size", k.dataset_size},
              {"dataset_digest", k.dataset_digest},
              {"seed", k.seed},
              {"rank", k.rank},
              {"world_size", k.world_size},
              {"batch_size", k.batch_size},
              {"shuffle", k.shuffle},
              {"drop_last", k.drop_last}};
}

Result<OrderKey> parse_order_key(const json& body) {
  try {
    OrderKey k;
    k.dataset_size = body.at("dataset_size").get<std::uint64_t>();
    k.dataset_digest = body.at("dataset_digest").get<std::string>();
    k.seed = body.at("seed").get<std::uint64_t>();
    k.rank = body.at("rank").get<std::uint32_t>();
    k.world_size = body.at("world_size").get<std::uint32_t>();
    k.batch_size = body.at("batch_size").get<std::uint32_t>();
    k.shuffle = body.at("shuffle").get<bool>();
    k.drop_last = body.at("drop_last").get<bool>();
    return k;
  } catch (const json::exception& e) {
    return Status::Internal(std::string("forkfeedd sent a malformed order key: ") + e.what());
  }
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
  return Status::FromCode(Status::CodeNamed(code), reply.value("error", std::string("forkfeedd refused the request")));
}

}  // namespace forkfeed
