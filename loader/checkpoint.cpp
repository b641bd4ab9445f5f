// Checkpoint: a loader's position as one line of JSON, and the checks that make a
// resumed loader refuse a state whose order it cannot reproduce.
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

#include "loader/json_field.h"
#include "loader/order_key_json.h"
#include "transport/printable.h"

namespace forkfeed {
namespace {

constexpr int kVersion = 1;

class Fnv1a64 {
 public:
  void add(std::string_view bytes) {
    for (const char c : bytes) {
      hash_ ^= static_cast<unsigned char>(c);
      hash_ *= kPrime;
    }
  }
  // Little-endian, so the digest is the same on every machine that reads the state.
  void add(std::uint64_t value) {
    for (int i = 0; i < 8; ++i) {
      hash_ ^= (value >> (8 * i)) & 0xFF;
      hash_ *= kPrime;
    }
  }
  std::uint64_t value() const { return hash_; }

 private:
  static constexpr std::uint64_t kPrime = 0x100000001b3ULL;
  std::uint64_t hash_ = 0xcbf29ce484222325ULL;
};

std::string hex16(std::uint64_t value) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text(kDigestDigits, '0');
  for (std::size_t i = kDigestDigits; i-- > 0; value >>= 4) text[i] = kDigits[value & 0xF];
  return text;
}

Status not_a_state(std::string_view why) {
  return Status::InvalidArgument("not a forkfeed state: " + std::string(why));
}

// The start of `text` for an error message: enough to recognise what was passed instead.
std::string quote_start(std::string_view text) {
  constexpr std::size_t kMaxShown = 40;
  std::string q = "'";
  q += printable(text.substr(0, kMaxShown));
  q += text.size() > kMaxShown ? "...'" : "'";
  return q;
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
                       quote_start(state));
  }
  if (!doc.is_object()) return not_a_state("expected a JSON object, got " + quote_start(state));
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

// One sentence per field of `saved` that differs from `current`, each saying what to resume with.
std::vector<std::string> differences(const OrderKey& saved, const OrderKey& current) {
  std::vector<std::string> out;
  if (saved.dataset_size != current.dataset_size || saved.dataset_digest != current.dataset_digest) {
    out.push_back("the state was taken on a different dataset (" + std::to_string(saved.dataset_size) +
                  " samples, digest " + saved.dataset_digest + ") than this one (" +
                  std::to_string(current.dataset_size) + " samples, digest " + current.dataset_digest +
                  "); resume with the same image folder or manifest: the same files and labels, in the "
                  "same order, at the same paths");
  }
  if (saved.seed != current.seed) {
    out.push_back("the state was taken with seed " + std::to_string(saved.seed) + " but this loader has " +
                  std::to_string(current.seed) + "; resume with seed " + std::to_string(saved.seed));
  }
  if (saved.world_size != current.world_size) {
    out.push_back("the state was taken with world_size " + std::to_string(saved.world_size) +
                  " but this loader has " + std::to_string(current.world_size) +
                  "; resume with the same world size (each rank's shard depends on it)");
  }
  if (saved.rank != current.rank) {
    out.push_back("the state was taken by rank " + std::to_string(saved.rank) + " but this loader is rank " +
                  std::to_string(current.rank) + "; resume each rank from the state it saved");
  }
  if (saved.batch_size != current.batch_size) {
    out.push_back("the state was taken with batch_size " + std::to_string(saved.batch_size) +
                  " but this loader has " + std::to_string(current.batch_size) +
                  "; resume with the same batch size");
  }
  if (saved.shuffle != current.shuffle) {
    out.push_back("the state was taken with shuffle " + on_off(saved.shuffle) +
                  " but this loader has shuffle " + on_off(current.shuffle) + "; resume with shuffle " +
                  on_off(saved.shuffle));
  }
  if (saved.drop_last != current.drop_last) {
    out.push_back("the state was taken with drop_last " + on_off(saved.drop_last) +
                  " but this loader has drop_last " + on_off(current.drop_last) + "; resume with drop_last " +
                  on_off(saved.drop_last));
  }
  return out;
}

}  // namespace

std::string dataset_digest(const DatasetIndex& index) {
  Fnv1a64 hash;
  for (std::size_t i = 0; i < index.size(); ++i) {
    const std::string_view path = index.path(i);
    hash.add(static_cast<std::uint64_t>(path.size()));  // so "a"+"bc" and "ab"+"c" differ
    hash.add(path);
    hash.add(static_cast<std::uint64_t>(index.label(i)));
  }
  return hex16(hash.value());
}

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
