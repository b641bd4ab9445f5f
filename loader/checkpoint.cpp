// Checkpoint: a loader's position as one line of JSON, and the checks that make a
// resumed loader refuse a state whose order it cannot reproduce. Whether the dataset is
// the same is dataset_difference()'s (dataset/dataset_identity.h).
#include "loader/checkpoint.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <iterator>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/json_field.h"
#include "base/json_text.h"
#include "base/printable.h"

namespace forkfeed {
namespace {

// The version written; versions 1 (a digest of absolute paths for the dataset) and 2 (no
// content nor fields in the dataset's identity) are still read.
constexpr int kStateVersion = 3;
constexpr int kStateVersion2 = 2;
constexpr int kStateVersion1 = 1;

Status not_a_state(std::string_view why) {
  return Status::InvalidArgument("not a forkfeed state: " + std::string(why));
}

// The state's version: kStateVersion or kStateVersion1.
Result<int> check_version(const nlohmann::json& doc) {
  const auto it = doc.find("forkfeed_state");
  if (it == doc.end()) return not_a_state("no \"forkfeed_state\" field; pass what Loader::state() returned");
  if (!it->is_number_integer() || it->get<std::int64_t>() < kStateVersion1 ||
      it->get<std::int64_t>() > kStateVersion) {
    return not_a_state("version " + it->dump() + " is not supported; this forkfeed reads versions " +
                       std::to_string(kStateVersion1) + " to " + std::to_string(kStateVersion));
  }
  return static_cast<int>(it->get<std::int64_t>());
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
  const Result<int> version = check_version(doc);
  if (!version.ok()) return version.status();

  // The reasons of json_field and read_order_key, which name the field, become "not a state".
  Checkpoint c;
  Status s = json_field::read_unsigned(doc, "epoch", "epoch", c.epoch);
  if (s.ok()) s = json_field::read_unsigned(doc, "position", "position", c.position);
  if (!s.ok()) return not_a_state(s.message());
  const KeyForm form = *version == kStateVersion1   ? KeyForm::kVersion1
                       : *version == kStateVersion2 ? KeyForm::kWithoutContent
                                                    : KeyForm::kCurrent;
  Result<OrderKey> key = read_order_key(doc, "order", form);
  if (!key.ok()) return not_a_state(key.status().message());
  c.key = std::move(key).value();
  return c;
}

std::string on_off(bool value) { return value ? "on" : "off"; }

// A field of the OrderKey but the dataset that a resumed loader must share
// (for_each_order_option's name), and the sentence when the state's differs from this
// loader's, with {saved} and {current} standing for the two values. A field without a rule
// gets a plain sentence, after these.
struct KeyRule {
  std::string_view field;
  std::string_view sentence;
};

constexpr KeyRule kKeyRules[] = {
    {"seed", "the state was taken with seed {saved} but this loader has {current}; resume with seed {saved}"},
    {"world_size",
     "the state was taken with world_size {saved} but this loader has {current}; resume with the same world "
     "size (each rank's shard depends on it)"},
    {"rank",
     "the state was taken by rank {saved} but this loader is rank {current}; resume each rank from the state "
     "it saved"},
    {"batch_size",
     "the state was taken with batch_size {saved} but this loader has {current}; resume with the same batch "
     "size"},
    {"shuffle",
     "the state was taken with shuffle {saved} but this loader has shuffle {current}; resume with shuffle "
     "{saved}"},
    {"drop_last",
     "the state was taken with drop_last {saved} but this loader has drop_last {current}; resume with "
     "drop_last {saved}"},
};

// OrderKey field `name` of `k` as the messages show it.
std::string shown(const OrderKey& k, std::string_view name) {
  std::string out;
  for_each_order_option([&](std::string_view field_name, auto field, auto, bool) {
    if (field_name != name) return;
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(k.*field)>, bool>) {
      out = on_off(k.*field);
    } else {
      out = std::to_string(k.*field);
    }
  });
  return out;
}

bool has_rule(std::string_view field) {
  return std::any_of(std::begin(kKeyRules), std::end(kKeyRules),
                     [&](const KeyRule& rule) { return rule.field == field; });
}

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

// The sentence when the state's dataset is not this loader's, or "".
std::string dataset_sentence(const OrderKey& saved, const OrderKey& current, const DatasetIndex* index) {
  const std::string what = dataset_difference(saved.dataset, current.dataset, index);
  if (what.empty()) return what;
  if (saved.dataset.legacy_only()) {
    return "the state, written by an older forkfeed (state version 1), was taken on another dataset than "
           "this "
           "loader's: " +
           what +
           "; a version-1 state resumes only on the same files at the same absolute paths: "
           "resume it there and save a new state, which resumes wherever the files are mounted";
  }
  return "the state was taken on another dataset than this loader's: " + what +
         "; a dataset is its files' names under its root, their labels, their sizes and their bytes, "
         "wherever it is mounted: resume with the same image folder, manifest or shards (at any path)";
}

// One sentence per field of `saved` that differs from `current`, each saying what to resume with.
std::vector<std::string> differences(const OrderKey& saved, const OrderKey& current,
                                     const DatasetIndex* index) {
  std::vector<std::string> out;
  if (std::string dataset = dataset_sentence(saved, current, index); !dataset.empty()) out.push_back(dataset);
  const auto differ = [&](std::string_view field, std::string_view sentence) {
    const std::string was = shown(saved, field), is = shown(current, field);
    if (was != is) out.push_back(fill(sentence, was, is));
  };
  for (const KeyRule& rule : kKeyRules) differ(rule.field, rule.sentence);
  for_each_order_option([&](std::string_view field, auto, auto, bool) {
    if (!has_rule(field)) {
      const std::string name(field);
      differ(field, "the state was taken with " + name +
                        " {saved} but this loader has {current}; resume with " + name + " {saved}");
    }
  });
  return out;
}

}  // namespace

std::string encode_checkpoint(const Checkpoint& checkpoint) {
  // ordered_json keeps the version first, where a reader looking at the file expects it.
  nlohmann::ordered_json doc;
  doc["forkfeed_state"] = kStateVersion;
  doc["epoch"] = checkpoint.epoch;
  doc["position"] = checkpoint.position;
  write_order_key(checkpoint.key, doc, "order");
  // The digests are hex, so dump() cannot meet invalid UTF-8 and throw.
  return doc.dump();
}

Result<Checkpoint> decode_checkpoint(std::string_view state, const OrderKey& current,
                                     const DatasetIndex* index) {
  if (state.size() > kMaxStateBytes) {
    return not_a_state("it is " + std::to_string(state.size()) + " bytes, over the " +
                       std::to_string(kMaxStateBytes) + " a state can be; pass what state() returned");
  }
  try {
    Result<Checkpoint> parsed = parse(state);
    if (!parsed.ok()) return parsed;
    const std::vector<std::string> diffs = differences(parsed->key, current, index);
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
