// order_key() of a loader, and reading an OrderKey's JSON (the writer is a template in
// the header).
#include "loader/order_key.h"

#include <string>

#include "base/json_field.h"

namespace forkfeed {
namespace {

// The "dataset" object write_order_key wrote at `path` ("order.dataset"); `legacy`
// whether it must hold dataset.legacy (the reply's).
Status read_identity(const nlohmann::json& object, const std::string& path, bool legacy, DatasetIdentity& id) {
  using namespace json_field;
  const auto it = object.find("dataset");
  if (it == object.end()) return missing(path);
  if (!it->is_object()) return Status::InvalidArgument("field \"" + path + "\" must be an object, got " + it->dump());
  const nlohmann::json& d = *it;
  const auto at = [&](const char* name) { return path + "." + name; };
  Status s = read_unsigned(d, "samples", at("samples"), id.samples);
  if (s.ok()) s = read_hex(d, "names", at("names"), kDigestDigits, id.names);
  if (s.ok()) s = read_hex(d, "labels", at("labels"), kDigestDigits, id.labels);
  if (s.ok()) s = read_hex(d, "sizes", at("sizes"), kDigestDigits, id.sizes);
  if (s.ok()) s = read_unsigned(d, "range_samples", at("range_samples"), id.range_samples);
  if (!s.ok()) return s;
  // The cut follows from the count, so that two identities of one count compare range by range.
  const std::uint64_t range = identity_range_samples(id.samples);
  if (id.range_samples != range) {
    return Status::InvalidArgument("field \"" + at("range_samples") + "\" must be " + std::to_string(range) +
                                   " for " + std::to_string(id.samples) + " samples, got " +
                                   std::to_string(id.range_samples));
  }
  s = read_hex(d, "ranges", at("ranges"), id.ranges_for_samples() * kRangeDigits, id.ranges);
  if (s.ok() && legacy) s = read_hex(d, "legacy", at("legacy"), kDigestDigits, id.legacy);
  return s;
}

}  // namespace

OrderKey order_key(const DatasetIndex& index, const LoaderOptions& options) {
  OrderKey key;
  key.dataset = dataset_identity(index);
  key.seed = options.seed;
  key.rank = options.rank;
  key.world_size = options.world_size;
  key.batch_size = options.batch_size;
  key.shuffle = options.shuffle;
  key.drop_last = options.drop_last;
  return key;
}

Result<OrderKey> read_order_key(const nlohmann::json& top, const char* order_member, bool version1) {
  using namespace json_field;
  OrderKey k;
  if (Status s = read_unsigned(top, "seed", "seed", k.seed); !s.ok()) return s;
  const nlohmann::json* order = &top;
  std::string prefix;
  if (order_member) {
    const auto it = top.find(order_member);
    if (it == top.end()) return missing(order_member);
    if (!it->is_object()) {
      return Status::InvalidArgument("field \"" + std::string(order_member) + "\" must be an object, got " +
                                     it->dump());
    }
    order = &*it;
    prefix = std::string(order_member) + ".";
  }
  const auto path = [&](const char* name) { return prefix + name; };
  Status s = Status::Ok();
  if (version1) {
    s = read_unsigned(*order, "dataset_size", path("dataset_size"), k.dataset.samples);
    if (s.ok()) s = read_hex(*order, "dataset_digest", path("dataset_digest"), kDigestDigits, k.dataset.legacy);
  } else {
    s = read_identity(*order, path("dataset"), order_member == nullptr, k.dataset);
  }
  if (s.ok()) s = read_unsigned(*order, "rank", path("rank"), k.rank);
  if (s.ok()) s = read_unsigned(*order, "world_size", path("world_size"), k.world_size);
  if (s.ok()) s = read_unsigned(*order, "batch_size", path("batch_size"), k.batch_size);
  if (s.ok()) s = read_bool(*order, "shuffle", path("shuffle"), k.shuffle);
  if (s.ok()) s = read_bool(*order, "drop_last", path("drop_last"), k.drop_last);
  if (!s.ok()) return s;
  return k;
}

}  // namespace forkfeed
