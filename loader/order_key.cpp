// order_key() of a loader, and reading an OrderKey's JSON (the writer is a template in
// the header).
#include "loader/order_key.h"

#include <string>
#include <type_traits>

#include "base/json_field.h"
#include "base/option_names.h"
#include "base/printable.h"

namespace forkfeed {
namespace {

// The content and the fields of the "dataset" object `d` at `path`.
Status read_content(const nlohmann::json& d, const std::string& path, DatasetIdentity& id) {
  using namespace json_field;
  const auto at = [&](const char* name) { return path + "." + name; };
  Status s = read_string(d, "content_check", at("content_check"), id.content_check);
  if (s.ok() && id.content_check.empty()) {  // an identity that saw no content (a test's, say)
    s = read_string(d, "content", at("content"), id.content);
    if (s.ok()) s = read_string(d, "content_ranges", at("content_ranges"), id.content_ranges);
    if (s.ok() && (!id.content.empty() || !id.content_ranges.empty())) {
      s = Status::InvalidArgument("field \"" + at("content") + "\" must be empty without a content_check");
    }
    if (s.ok()) s = read_string(d, "fields", at("fields"), id.fields);
    return s;
  }
  if (s.ok() && !parse_content_check(id.content_check)) {
    s = Status::InvalidArgument("field \"" + at("content_check") + "\" must be " +
                                enum_names_or<ContentCheck>() + ", got \"" + printable(id.content_check) +
                                "\"");
  }
  if (s.ok()) s = read_hex(d, "content", at("content"), kDigestDigits, id.content);
  if (s.ok()) {
    s = read_hex(d, "content_ranges", at("content_ranges"), id.ranges_for_samples() * kRangeDigits,
                 id.content_ranges);
  }
  if (s.ok()) s = read_string(d, "fields", at("fields"), id.fields);
  return s;
}

// The "dataset" object write_order_key wrote at `path` ("order.dataset"); `reply`
// whether it is forkfeedd's (which holds dataset.legacy, and the content when the daemon
// is not older than the content).
Status read_identity(const nlohmann::json& object, const std::string& path, bool reply, KeyForm form,
                     DatasetIdentity& id) {
  using namespace json_field;
  const auto it = object.find("dataset");
  if (it == object.end()) return missing(path);
  if (!it->is_object())
    return Status::InvalidArgument("field \"" + path + "\" must be an object, got " + it->dump());
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
  if (s.ok() && reply) s = read_hex(d, "legacy", at("legacy"), kDigestDigits, id.legacy);
  if (s.ok() && form == KeyForm::kCurrent && (!reply || d.contains("content"))) s = read_content(d, path, id);
  return s;
}

// Reads the fields of for_each_order_option() kept at `top_level` or not, from `object`.
Status read_order_options(const nlohmann::json& object, const std::string& prefix, bool top_level,
                          OrderKey& k) {
  Status s = Status::Ok();
  for_each_order_option([&](const char* name, auto field, auto, bool top) {
    if (!s.ok() || top != top_level) return;
    const std::string path = (top ? std::string() : prefix) + name;
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(k.*field)>, bool>) {
      s = json_field::read_bool(object, name, path, k.*field);
    } else {
      s = json_field::read_unsigned(object, name, path, k.*field);
    }
  });
  return s;
}

}  // namespace

OrderKey order_key(const DatasetIndex& index, const LoaderOptions& options) {
  OrderKey key;
  key.dataset = dataset_identity(index);
  for_each_order_option([&](const char*, auto field, auto option, bool) { key.*field = options.*option; });
  return key;
}

Result<OrderKey> read_order_key(const nlohmann::json& top, const char* order_member, KeyForm form) {
  using namespace json_field;
  OrderKey k;
  if (Status s = read_order_options(top, "", true, k); !s.ok()) return s;
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
  Status s = Status::Ok();
  if (form == KeyForm::kVersion1) {
    s = read_unsigned(*order, "dataset_size", prefix + "dataset_size", k.dataset.samples);
    if (s.ok())
      s = read_hex(*order, "dataset_digest", prefix + "dataset_digest", kDigestDigits, k.dataset.legacy);
  } else {
    s = read_identity(*order, prefix + "dataset", order_member == nullptr, form, k.dataset);
  }
  if (s.ok()) s = read_order_options(*order, prefix, false, k);
  if (!s.ok()) return s;
  return k;
}

}  // namespace forkfeed
