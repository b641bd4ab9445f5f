// OrderKey: what decides the order of a loader's batches, and its JSON: one writer and one
// reader, for a state (loader/checkpoint.cpp) and for forkfeedd's open_stream reply
// (protocol/stream_request.cpp). A state keeps the seed at its top level, beside the
// epoch, and the rest in a member object ("order"); the reply keeps all of it in one object.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "dataset/dataset_identity.h"
#include "forkfeed/dataset.h"
#include "forkfeed/options.h"
#include "forkfeed/status.h"

namespace forkfeed {

// Everything that decides which samples come in which batch, except the epoch. Worker
// count, prefetch and transforms are not part of it: they never change the order.
struct OrderKey {
  // Which samples, in which order: dataset_identity() of the index. Two keys are of one
  // dataset when dataset_difference() finds nothing, not when every digest is equal.
  DatasetIdentity dataset;
  std::uint64_t seed = 0;
  std::uint32_t rank = 0;
  std::uint32_t world_size = 1;
  std::uint32_t batch_size = 0;
  bool shuffle = true;
  bool drop_last = false;

  bool operator==(const OrderKey&) const = default;
};

// The fields of OrderKey but the dataset, each named once: a LoaderOptions field of the
// same name. Calls visit(name, &OrderKey::field, &LoaderOptions::field, top_level) for
// each; order_key() copies them, write_order_key() and read_order_key() write and read
// them, and a resumed loader compares them (loader/checkpoint.cpp). `top_level`: a state
// keeps it beside the epoch, not under "order".
template <typename Visit>
void for_each_order_option(Visit&& visit) {
  visit("seed", &OrderKey::seed, &LoaderOptions::seed, true);
  visit("rank", &OrderKey::rank, &LoaderOptions::rank, false);
  visit("world_size", &OrderKey::world_size, &LoaderOptions::world_size, false);
  visit("batch_size", &OrderKey::batch_size, &LoaderOptions::batch_size, false);
  visit("shuffle", &OrderKey::shuffle, &LoaderOptions::shuffle, false);
  visit("drop_last", &OrderKey::drop_last, &LoaderOptions::drop_last, false);
}

// Stops compiling when OrderKey gains or loses a field: name it in for_each_order_option()
// above (or write it as the dataset is), then count it here.
inline void every_order_field_is_named(OrderKey& k) {
  [[maybe_unused]] auto& [dataset, seed, rank, world_size, batch_size, shuffle, drop_last] = k;
}

// The key of a loader over `index` with `options`. It hashes the whole index: compute it
// once per loader, not per state().
OrderKey order_key(const DatasetIndex& index, const LoaderOptions& options);

// Writes `key` into `top`: the seed there, the rest under top[order_member] (a state),
// or in `top` too when order_member is null (the open_stream reply). Only the reply
// carries dataset.legacy: a Client checks a version-1 state with it; a state of this
// version is checked by the identity. Json: nlohmann::json or ordered_json, whose order
// is the one a reader of a saved state sees.
template <typename Json>
void write_order_key(const OrderKey& key, Json& top, const char* order_member) {
  Json order;
  Json& into = order_member ? order : top;
  const DatasetIdentity& id = key.dataset;
  Json dataset;
  dataset["samples"] = id.samples;
  dataset["names"] = id.names;
  dataset["labels"] = id.labels;
  dataset["sizes"] = id.sizes;
  dataset["range_samples"] = id.range_samples;
  dataset["ranges"] = id.ranges;
  dataset["content_check"] = id.content_check;
  dataset["content"] = id.content;
  dataset["content_ranges"] = id.content_ranges;
  dataset["fields"] = id.fields;  // fields_text(): printable ASCII, which dump() takes
  if (!order_member) dataset["legacy"] = id.legacy;
  into["dataset"] = std::move(dataset);
  for_each_order_option([&](const char* name, auto field, auto, bool top_level) {
    (top_level ? top : into)[name] = key.*field;
  });
  if (order_member) top[order_member] = std::move(order);
}

// What a key's JSON holds. kCurrent: what write_order_key writes (in forkfeedd's reply,
// an older daemon's dataset may lack the content and the fields). kWithoutContent: a
// state of version 2, whose dataset had no content nor fields. kVersion1: a state of
// version 1, whose dataset was "dataset_size" and "dataset_digest" (read into
// dataset.samples and dataset.legacy).
enum class KeyForm { kCurrent, kWithoutContent, kVersion1 };

// Reads what write_order_key wrote with the same `order_member`, strictly
// (base/json_field.h): errors name the field as "order.rank", or "rank" in one object.
Result<OrderKey> read_order_key(const nlohmann::json& top, const char* order_member,
                                KeyForm form = KeyForm::kCurrent);

}  // namespace forkfeed
