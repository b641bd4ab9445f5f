// order_key() of a loader, and reading an OrderKey's JSON (the writer is a template in
// the header).
#include "loader/order_key.h"

#include <string>

#include "base/json_field.h"
#include "dataset/dataset_digest.h"

namespace forkfeed {

OrderKey order_key(const DatasetIndex& index, const LoaderOptions& options) {
  OrderKey key;
  key.dataset_size = index.size();
  key.dataset_digest = dataset_digest(index);
  key.seed = options.seed;
  key.rank = options.rank;
  key.world_size = options.world_size;
  key.batch_size = options.batch_size;
  key.shuffle = options.shuffle;
  key.drop_last = options.drop_last;
  return key;
}

Result<OrderKey> read_order_key(const nlohmann::json& top, const char* order_member) {
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
  Status s = read_unsigned(*order, "dataset_size", path("dataset_size"), k.dataset_size);
  if (s.ok()) s = read_hex(*order, "dataset_digest", path("dataset_digest"), kDigestDigits, k.dataset_digest);
  if (s.ok()) s = read_unsigned(*order, "rank", path("rank"), k.rank);
  if (s.ok()) s = read_unsigned(*order, "world_size", path("world_size"), k.world_size);
  if (s.ok()) s = read_unsigned(*order, "batch_size", path("batch_size"), k.batch_size);
  if (s.ok()) s = read_bool(*order, "shuffle", path("shuffle"), k.shuffle);
  if (s.ok()) s = read_bool(*order, "drop_last", path("drop_last"), k.drop_last);
  if (!s.ok()) return s;
  return k;
}

}  // namespace forkfeed
