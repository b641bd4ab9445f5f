// Checkpoint: a state round-trips, and a state that another dataset, other order options
// or no loader at all produced is refused with an error naming what differs.
//
// Over 300 lines on purpose: one case per field a state may differ in, each refused
// with its own message; splitting it would copy the fixture.
#include "dataset/dataset_digest.h"
#include "loader/checkpoint.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "forkfeed/dataset.h"
#include "forkfeed/options.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

using Samples = std::vector<std::pair<std::string, std::int64_t>>;

// An index over `samples` through a manifest in `dir`; the files themselves need not exist.
DatasetIndex index_of(const testing::TempDir& dir, const Samples& samples) {
  const std::string manifest = dir.path() + "/manifest.tsv";
  {
    std::ofstream out(manifest, std::ios::binary | std::ios::trunc);
    for (const auto& [path, label] : samples) out << path << '\t' << label << '\n';
    EXPECT_TRUE(out.good()) << "cannot write " << manifest;
  }
  Result<DatasetIndex> index = DatasetIndex::from_manifest(manifest);
  EXPECT_TRUE(index.ok()) << index.status().message();
  return std::move(index).value_or_throw();
}

Samples three_samples() { return {{"/d/a.jpg", 0}, {"/d/b.jpg", 1}, {"/d/c d.png", 7}}; }

OrderKey some_key() {
  OrderKey key;
  key.dataset_size = 1000;
  key.dataset_digest = "0123456789abcdef";
  key.seed = 42;
  key.rank = 1;
  key.world_size = 4;
  key.batch_size = 64;
  key.shuffle = true;
  key.drop_last = false;
  return key;
}

std::string some_state() { return encode_checkpoint(Checkpoint{3, 17, some_key()}); }

void expect_not_a_state(std::string_view state, std::string_view detail = "") {
  const Result<Checkpoint> decoded = decode_checkpoint(state, some_key());
  ASSERT_FALSE(decoded.ok()) << "accepted: " << state;
  EXPECT_EQ(decoded.status().code(), Status::Code::kInvalidArgument);
  EXPECT_TRUE(decoded.status().message().starts_with("not a forkfeed state: ")) << decoded.status().message();
  EXPECT_NE(decoded.status().message().find(detail), std::string::npos)
      << "'" << detail << "' not in: " << decoded.status().message();
}

// The state with one field of the document replaced (or removed, given a discarded value).
std::string with_field(const std::vector<std::string>& path, const nlohmann::json& value) {
  nlohmann::json doc = nlohmann::json::parse(some_state());
  nlohmann::json* object = &doc;
  for (std::size_t i = 0; i + 1 < path.size(); ++i) object = &(*object)[path[i]];
  if (value.is_discarded()) {
    object->erase(path.back());
  } else {
    (*object)[path.back()] = value;
  }
  return doc.dump();
}

TEST(Checkpoint, RoundTripsEveryField) {
  OrderKey key = some_key();
  key.seed = std::numeric_limits<std::uint64_t>::max();  // beyond a double's exact integers
  key.dataset_size = 1'281'167;
  key.rank = 7;
  key.world_size = 8;
  key.batch_size = 256;
  key.shuffle = false;
  key.drop_last = true;
  const Checkpoint saved{std::numeric_limits<std::uint64_t>::max() - 1, 5004, key};

  const std::string state = encode_checkpoint(saved);
  EXPECT_TRUE(state.starts_with("{\"forkfeed_state\":1,")) << state;
  EXPECT_EQ(state.find('\n'), std::string::npos) << state;

  const Result<Checkpoint> decoded = decode_checkpoint(state, key);
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_EQ(decoded->epoch, saved.epoch);
  EXPECT_EQ(decoded->position, saved.position);
  EXPECT_EQ(decoded->key, key);
}

TEST(Checkpoint, AcceptsSurroundingWhitespaceAndUnknownFields) {
  std::string state = with_field({"written_by"}, "a later forkfeed");
  state = "  " + state + "\n";  // as read back from a file
  const Result<Checkpoint> decoded = decode_checkpoint(state, some_key());
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_EQ(decoded->epoch, 3u);
  EXPECT_EQ(decoded->position, 17u);
}

TEST(Checkpoint, PositionBeyondTheEpochIsLeftToTheCaller) {
  const Result<Checkpoint> decoded =
      decode_checkpoint(encode_checkpoint(Checkpoint{0, 1'000'000, some_key()}), some_key());
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_EQ(decoded->position, 1'000'000u);
}

struct Mismatch {
  const char* name;
  std::function<void(OrderKey&)> change;  // applied to the loader's key, not the state's
  std::vector<std::string> expected;      // all in the message
};

TEST(Checkpoint, RefusesEachOrderKeyFieldByName) {
  const std::vector<Mismatch> mismatches = {
      {"seed", [](OrderKey& k) { k.seed = 7; }, {"seed 42", "has 7", "resume with seed 42"}},
      {"rank",
       [](OrderKey& k) { k.rank = 0; },
       {"by rank 1", "is rank 0", "resume each rank from the state it saved"}},
      {"world_size", [](OrderKey& k) { k.world_size = 8; }, {"world_size 4", "has 8", "same world size"}},
      {"batch_size",
       [](OrderKey& k) { k.batch_size = 32; },
       {"the state was taken with batch_size 64 but this loader has 32; resume with the same batch size"}},
      {"shuffle",
       [](OrderKey& k) { k.shuffle = false; },
       {"shuffle on", "shuffle off", "resume with shuffle on"}},
      {"drop_last",
       [](OrderKey& k) { k.drop_last = true; },
       {"drop_last off", "drop_last on", "resume with drop_last off"}},
      {"dataset_size",
       [](OrderKey& k) { k.dataset_size = 999; },
       {"different dataset", "1000 samples, digest 0123456789abcdef", "999 samples"}},
      {"dataset_digest",
       [](OrderKey& k) { k.dataset_digest = "fedcba9876543210"; },
       {"different dataset", "digest 0123456789abcdef", "digest fedcba9876543210"}},
  };
  for (const Mismatch& m : mismatches) {
    SCOPED_TRACE(m.name);
    OrderKey current = some_key();
    m.change(current);
    const Result<Checkpoint> decoded = decode_checkpoint(some_state(), current);
    ASSERT_FALSE(decoded.ok());
    EXPECT_EQ(decoded.status().code(), Status::Code::kInvalidArgument);
    for (const std::string& part : m.expected) {
      EXPECT_NE(decoded.status().message().find(part), std::string::npos)
          << "'" << part << "' not in: " << decoded.status().message();
    }
    EXPECT_EQ(decoded.status().message().find("not a forkfeed state"), std::string::npos);
  }
}

TEST(Checkpoint, NamesEveryDifferenceAtOnce) {
  OrderKey current = some_key();
  current.rank = 0;
  current.world_size = 2;
  current.batch_size = 32;
  const Result<Checkpoint> decoded = decode_checkpoint(some_state(), current);
  ASSERT_FALSE(decoded.ok());
  for (const char* part : {"world_size 4", "rank 1", "batch_size 64"}) {
    EXPECT_NE(decoded.status().message().find(part), std::string::npos)
        << "'" << part << "' not in: " << decoded.status().message();
  }
}

// The whole message, word for word, when every field differs: the sentences come in
// the order of the rules, joined by "; also".
TEST(Checkpoint, EveryDifferenceWordForWord) {
  const OrderKey current{999, "fedcba9876543210", 7, 0, 8, 32, false, true};
  const Result<Checkpoint> decoded = decode_checkpoint(some_state(), current);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(
      decoded.status().message(),
      "the state was taken on a different dataset (1000 samples, digest 0123456789abcdef) than this one "
      "(999 samples, digest fedcba9876543210); resume with the same image folder, manifest or shards: the "
      "same files and labels, in the same order, at the same paths (and shards unchanged)"
      "; also the state was taken with seed 42 but this loader has 7; resume with seed 42"
      "; also the state was taken with world_size 4 but this loader has 8; resume with the same world size "
      "(each rank's shard depends on it)"
      "; also the state was taken by rank 1 but this loader is rank 0; resume each rank from the state it "
      "saved"
      "; also the state was taken with batch_size 64 but this loader has 32; resume with the same batch size"
      "; also the state was taken with shuffle on but this loader has shuffle off; resume with shuffle on"
      "; also the state was taken with drop_last off but this loader has drop_last on; resume with "
      "drop_last off");
}

TEST(Checkpoint, OrderKeyTakesTheOptionsThatDecideTheOrder) {
  testing::TempDir dir;
  const DatasetIndex index = index_of(dir, three_samples());
  LoaderOptions options;
  options.seed = 9;
  options.rank = 2;
  options.world_size = 3;
  options.batch_size = 5;
  options.shuffle = false;
  options.drop_last = true;
  const OrderKey key = order_key(index, options);
  EXPECT_EQ(key.dataset_size, 3u);
  EXPECT_EQ(key.dataset_digest, dataset_digest(index));
  EXPECT_EQ(key.seed, 9u);
  EXPECT_EQ(key.rank, 2u);
  EXPECT_EQ(key.world_size, 3u);
  EXPECT_EQ(key.batch_size, 5u);
  EXPECT_FALSE(key.shuffle);
  EXPECT_TRUE(key.drop_last);

  // Workers, prefetch and transforms never change the order, so a state survives them.
  LoaderOptions other = options;
  other.workers = 7;
  other.prefetch = 5;
  other.transform = "eval";
  other.epoch = 4;
  EXPECT_EQ(order_key(index, other), key);
}

// A state written by one build must be read by the next: the digest's definition is
// fixed (FNV-1a 64 over little-endian length, path bytes, little-endian label).
TEST(DatasetDigest, IsFixedAcrossBuilds) {
  testing::TempDir dir;
  EXPECT_EQ(dataset_digest(index_of(dir, three_samples())), "89a56687aeb062b0");
}

TEST(DatasetDigest, RefusesAChangedDataset) {
  testing::TempDir dir;
  const DatasetIndex original = index_of(dir, three_samples());
  const OrderKey saved_key = order_key(original, LoaderOptions{});
  const std::string state = encode_checkpoint(Checkpoint{1, 0, saved_key});

  Samples path_changed = three_samples();
  path_changed[1].first = "/d/B.jpg";
  Samples label_changed = three_samples();
  label_changed[2].second = 8;
  Samples added = three_samples();
  added.emplace_back("/d/e.jpg", 0);
  Samples reordered = three_samples();
  std::swap(reordered[0], reordered[1]);
  // The same bytes, split differently between two paths.
  const Samples split_a = {{"/d/ab", 0}, {"/d/c", 0}};
  const Samples split_b = {{"/d/a", 0}, {"/d/bc", 0}};
  EXPECT_NE(dataset_digest(index_of(dir, split_a)), dataset_digest(index_of(dir, split_b)));

  for (const auto& [what, samples] :
       std::vector<std::pair<std::string, Samples>>{{"path changed", path_changed},
                                                    {"label changed", label_changed},
                                                    {"sample added", added},
                                                    {"samples swapped", reordered}}) {
    SCOPED_TRACE(what);
    const OrderKey current = order_key(index_of(dir, samples), LoaderOptions{});
    EXPECT_NE(current.dataset_digest, saved_key.dataset_digest);
    const Result<Checkpoint> decoded = decode_checkpoint(state, current);
    ASSERT_FALSE(decoded.ok());
    EXPECT_EQ(decoded.status().code(), Status::Code::kInvalidArgument);
    const std::string& message = decoded.status().message();
    EXPECT_NE(message.find("different dataset (3 samples, digest " + saved_key.dataset_digest + ")"),
              std::string::npos)
        << message;
    // (GCC 12 warns falsely about "(" + std::to_string(...): -Wrestrict.)
    const std::string theirs = std::to_string(samples.size()) + " samples, digest " + current.dataset_digest;
    EXPECT_NE(message.find("than this one (" + theirs + ")"), std::string::npos) << message;
  }

  // The same list again is accepted.
  const Result<Checkpoint> same =
      decode_checkpoint(state, order_key(index_of(dir, three_samples()), LoaderOptions{}));
  EXPECT_TRUE(same.ok()) << same.status().message();
}

// ImageNet-sized lists are hashed in one pass; this runs it on 200k entries (no timing
// assertion: a slow machine must not fail it) and checks the digest does not wander.
TEST(DatasetDigest, IsStableOnALargeIndex) {
  testing::TempDir dir;
  Samples samples;
  samples.reserve(200'000);
  for (std::uint32_t i = 0; i < 200'000; ++i) {
    const std::uint32_t cls = i % 1000;
    samples.emplace_back("train/n" + std::to_string(1'440'764 + cls) + "/img_" + std::to_string(i) + ".JPEG",
                         cls);
  }
  const DatasetIndex index = index_of(dir, samples);
  ASSERT_EQ(index.size(), 200'000u);
  const std::string digest = dataset_digest(index);
  EXPECT_EQ(digest.size(), 16u);
  EXPECT_EQ(digest.find_first_not_of("0123456789abcdef"), std::string::npos) << digest;
  EXPECT_EQ(dataset_digest(index), digest);
  EXPECT_EQ(dataset_digest(index_of(dir, samples)), digest);  // rebuilt from the manifest
}

TEST(Checkpoint, RefusesWhatIsNotAState) {
  expect_not_a_state("", "not JSON");
  expect_not_a_state("garbage", "not JSON");
  expect_not_a_state("checkpoint.json", "'checkpoint.json'");  // a file name instead of its contents
  expect_not_a_state("{", "not JSON");
  expect_not_a_state("[1, 2]", "expected a JSON object");
  expect_not_a_state("42", "expected a JSON object");
  expect_not_a_state("{}", "no \"forkfeed_state\" field");
  expect_not_a_state(std::string("{\"forkfeed_state\":1,\0}", 21), "not JSON");
}

TEST(Checkpoint, RefusesEveryTruncation) {
  const std::string state = some_state();
  for (std::size_t n = 0; n < state.size(); ++n) {
    SCOPED_TRACE(n);
    expect_not_a_state(std::string_view(state).substr(0, n));
  }
}

TEST(Checkpoint, RefusesOtherVersions) {
  expect_not_a_state(with_field({"forkfeed_state"}, 2),
                     "version 2 is not supported; this forkfeed reads version 1");
  expect_not_a_state(with_field({"forkfeed_state"}, 0), "version 0");
  expect_not_a_state(with_field({"forkfeed_state"}, "1"), "version \"1\"");
  expect_not_a_state(with_field({"forkfeed_state"}, 1.5), "version 1.5");
}

TEST(Checkpoint, RefusesMissingFields) {
  const std::vector<std::vector<std::string>> fields = {
      {"forkfeed_state"},
      {"epoch"},
      {"position"},
      {"seed"},
      {"order"},
      {"order", "dataset_size"},
      {"order", "dataset_digest"},
      {"order", "rank"},
      {"order", "world_size"},
      {"order", "batch_size"},
      {"order", "shuffle"},
      {"order", "drop_last"},
  };
  for (const std::vector<std::string>& path : fields) {
    const std::string name = path.size() == 1 ? path[0] : path[0] + "." + path[1];
    SCOPED_TRACE(name);
    expect_not_a_state(with_field(path, nlohmann::json(nlohmann::json::value_t::discarded)), name);
  }
}

TEST(Checkpoint, RefusesFieldsOfTheWrongType) {
  expect_not_a_state(with_field({"epoch"}, -1),
                     "\"epoch\" must be an integer from 0 to 18446744073709551615");
  expect_not_a_state(with_field({"position"}, 2.5), "\"position\" must be an integer");
  expect_not_a_state(with_field({"seed"}, "42"), "\"seed\" must be an integer");
  expect_not_a_state(with_field({"order"}, 3), "\"order\" must be an object");
  expect_not_a_state(with_field({"order", "rank"}, 4'294'967'296ULL),
                     "\"order.rank\" must be an integer from 0 to 4294967295, got 4294967296");
  expect_not_a_state(with_field({"order", "batch_size"}, nullptr), "\"order.batch_size\" must be an integer");
  expect_not_a_state(with_field({"order", "shuffle"}, 1), "\"order.shuffle\" must be true or false");
  expect_not_a_state(with_field({"order", "dataset_digest"}, "ABCDEF0123456789"),
                     "\"order.dataset_digest\" must be 16 lowercase hex digits");
  expect_not_a_state(with_field({"order", "dataset_digest"}, "0123"), "\"order.dataset_digest\" must be 16");
}

}  // namespace
}  // namespace forkfeed
