// Checkpoint: a loader's position as one line of JSON, and the checks that make a
// resumed loader refuse a state whose order it cannot reproduce. The dataset digest is
// dataset/dataset_digest.cpp's.
#include "loader/checkpoint.h"

#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/json_field.h"
#include "base/printable.h"

namespace forkfeed {
namespace {

constexpr int kVersion = 1;

Status not_a_state(std::string_view why) {
  return Status::InvalidArgument("not a forkfeed state: " + std::string(why));
}

// nlohmann's what() starts with "[json.exception.parse_error.101] "; the user needs only the rest.
std::string without_exception_id(const char* what) {
  std::string text = what;
  if (text.starts_with('[')) {
    const std::size_t end = text.find("] ");
    if (end != std::string::npos) text.erase(0, end + 2);
  }
  return text;
}

Status check_version(const nlohmann::json& doc) {
  const auto it = doc.find("forkfeed_state");
  if (it == doc.end()) return not_a_state("no \"forkfeed_state\" field; pass what Loader::state() returned");
  if (!it->is_number_integer() || it->get<std::int64_t>() != kVersion) {
    return not_a_state("version " + it->dump() + " is not supported; this forkfeed reads version " +
                       std::to_string(kVersion));
  }
  return Status::Ok();
}

// Every field that a state must hold, read into a Checkpoint; not yet compared with anything.
Result<Checkpoint> parse(std::string_view state) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(state.begin(), state.end());
  } catch (const nlohmann::json::parse_error& e) {
    return not_a_state("not JSON (" + printable(without_exception_id(e.what())) + ") in " +
                       quoted_start(state, 40));
  }
  if (!doc.is_object()) return not_a_state("expected a JSON object, got " + quoted_start(state, 40));
  if (Status s = check_version(doc); !s.ok()) return s;

  // The reasons of json_field and read_order_key, which name the field, become "not a state".
  Checkpoint c;
  Status s = json_field::read_unsigned(doc, "epoch", "epoch", c.epoch);
  if (s.ok()) s = json_field::read_unsigned(doc, "position", "position", c.position);
  if (!s.ok()) return not_a_state(s.message());
  Result<OrderKey> key = read_order_key(doc, "order");
  if (!key.ok()) return not_a_state(key.status().message());
  c.key = std::move(key).value();
  return c;
}

std::string on_off(bool value) { return value ? "on" : "off"; }

// A field of the OrderKey (or two, for the dataset) that a resumed loader must share:
// its value as the messages show it, and the sentence when the state's differs from
// this loader's, with {saved} and {current} standing for the two values.
struct KeyRule {
  std::string (*shown)(const OrderKey&);
  std::string_view sentence;
};

constexpr KeyRule kKeyRules[] = {
    {[](const OrderKey& k) {
       return std::to_string(k.dataset_size) + " samples, digest " + k.dataset_digest;
     },
     "the state was taken on a different dataset ({saved}) than this one ({current}); resume with the same "
     "image folder, manifest or shards: the same files and labels, in the same order, at the same paths (and "
     "shards unchanged)"},
    {[](const OrderKey& k) { return std::to_string(k.seed); },
     "the state was taken with seed {saved} but this loader has {current}; resume with seed {saved}"},
    {[](const OrderKey& k) { return std::to_string(k.world_size); },
     "the state was taken with world_size {saved} but this loader has {current}; resume with the same world "
     "size (each rank's shard depends on it)"},
    {[](const OrderKey& k) { return std::to_string(k.rank); },
     "the state was taken by rank {saved} but this loader is rank {current}; resume each rank from the state "
     "it saved"},
    {[](const OrderKey& k) { return std::to_string(k.batch_size); },
     "the state was taken with batch_size {saved} but this loader has {current}; resume with the same batch "
     "size"},
    {[](const OrderKey& k) { return on_off(k.shuffle); },
     "the state was taken with shuffle {saved} but this loader has shuffle {current}; resume with shuffle "
     "{saved}"},
    {[](const OrderKey& k) { return on_off(k.drop_last); },
     "the state was taken with drop_last {saved} but this loader has drop_last {current}; resume with "
     "drop_last {saved}"},
};

// `sentence` with {saved} and {current} replaced by the two values, which hold no braces.
std::string fill(std::string_view sentence, const std::string& saved, const std::string& current) {
  std::string out(sentence);
  const auto replace_all = [&](std::string_view name, const std::string& value) {
    for (std::size_t at = out.find(name); at != std::string::npos; at = out.find(name, at + value.size())) {
      out.replace(at, name.size(), value);
    }
  };
  replace_all("{saved}", saved);
  replace_all("{current}", current);
  return out;
}

// One sentence per field of `saved` that differs from `current`, each saying what to resume with.
std::vector<std::string> differences(const OrderKey& saved, const OrderKey& current) {
  std::vector<std::string> out;
  for (const KeyRule& rule : kKeyRules) {
    const std::string was = rule.shown(saved), is = rule.shown(current);
    if (was != is) out.push_back(fill(rule.sentence, was, is));
  }
  return out;
}

}  // namespace

std::string encode_checkpoint(const Checkpoint& checkpoint) {
  // ordered_json keeps the version first, where a reader looking at the file expects it.
  nlohmann::ordered_json doc;
  doc["forkfeed_state"] = kVersion;
  doc["epoch"] = checkpoint.epoch;
  doc["position"] = checkpoint.position;
  write_order_key(checkpoint.key, doc, "order");
  // The digest is hex, so dump() cannot meet invalid UTF-8 and throw.
  return doc.dump();
}

Result<Checkpoint> decode_checkpoint(std::string_view state, const OrderKey& current) {
  if (state.size() > kMaxStateBytes) {
    return not_a_state("it is " + std::to_string(state.size()) + " bytes, over the " +
                       std::to_string(kMaxStateBytes) + " a state can be; pass what state() returned");
  }
  try {
    Result<Checkpoint> parsed = parse(state);
    if (!parsed.ok()) return parsed;
    const std::vector<std::string> diffs = differences(parsed->key, current);
    if (diffs.empty()) return parsed;
    std::string message = diffs.front();
    for (std::size_t i = 1; i < diffs.size(); ++i) message += "; also " + diffs[i];
    return Status::InvalidArgument(std::move(message));
  } catch (const std::exception& e) {
    // parse() checks every type before reading it, so this is only a backstop (bad_alloc).
    return not_a_state(without_exception_id(e.what()));
  }
}

}  // namespace forkfeed
