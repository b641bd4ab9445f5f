// Checkpoint: a state round-trips, and a state that another dataset, other order options
// or no loader at all produced is refused with an error naming what differs (how a state
// meets its dataset: state_dataset_test.cpp).
//
// Over 300 lines on purpose: one case per field a state may differ in, each refused
// with its own message; splitting it would copy the fixture.
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
#include "tests/testing/fake_identity.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

using Samples = testing::ManifestSamples;

DatasetIndex index_of(const testing::TempDir& dir, const Samples& samples) {
  return testing::manifest_index(dir.path(), samples);
}

Samples three_samples() { return {{"/d/a.jpg", 0}, {"/d/b.jpg", 1}, {"/d/c d.png", 7}}; }

OrderKey some_key() {
  OrderKey key;
  key.dataset = testing::fake_identity(1000, 'a');
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
  key.dataset = testing::fake_identity(1'281'167, 'e');
  key.rank = 7;
  key.world_size = 8;
  key.batch_size = 256;
  key.shuffle = false;
  key.drop_last = true;
  const Checkpoint saved{std::numeric_limits<std::uint64_t>::max() - 1, 5004, key};

  const std::string state = encode_checkpoint(saved);
  EXPECT_TRUE(state.starts_with("{\"forkfeed_state\":3,")) << state;
  EXPECT_EQ(state.find('\n'), std::string::npos) << state;
  EXPECT_LT(state.size(), 2048u) << state;

  const Result<Checkpoint> decoded = decode_checkpoint(state, key);
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_EQ(decoded->epoch, saved.epoch);
  EXPECT_EQ(decoded->position, saved.position);
  OrderKey stored = key;
  stored.dataset.legacy.clear();  // only the open_stream reply carries it
  EXPECT_EQ(decoded->key, stored);
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
      {"dataset.samples",
       [](OrderKey& k) { k.dataset = testing::fake_identity(999, 'a'); },
       {"another dataset than this loader's: 1000 samples against 999;", "at any path"}},
      {"dataset.sizes",
       [](OrderKey& k) {
         k.dataset.sizes = std::string(16, 'b');
         k.dataset.ranges.replace(3 * kRangeDigits, kRangeDigits, kRangeDigits, 'b');
       },
       {"another dataset than this loader's: sizes differ in samples 48-63;"}},
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
  const OrderKey current{testing::fake_identity(999, 'f'), 7, 0, 8, 32, false, true};
  const Result<Checkpoint> decoded = decode_checkpoint(some_state(), current);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(
      decoded.status().message(),
      "the state was taken on another dataset than this loader's: 1000 samples against 999; names, labels "
      "and sizes differ in samples 0-999; a dataset is its files' names under its root, their labels, their "
      "sizes and their bytes, wherever it is mounted: resume with the same image folder, manifest or shards "
      "(at any path)"
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
  EXPECT_EQ(key.dataset.samples, 3u);
  EXPECT_EQ(key.dataset, dataset_identity(index));
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

// A state of version 2 (before contents) holds no content nor fields: it resumes where its
// names, labels and sizes are this loader's, and is refused by them, as it always was.
TEST(Checkpoint, AVersion2StateIsComparedWithoutContents) {
  nlohmann::json doc = nlohmann::json::parse(some_state());
  doc["forkfeed_state"] = 2;
  for (const char* key : {"content_check", "content", "content_ranges", "fields"})
    doc["order"]["dataset"].erase(key);
  OrderKey current = some_key();
  current.dataset.content = std::string(kDigestDigits, 'c');  // what a version-2 state cannot tell
  const Result<Checkpoint> decoded = decode_checkpoint(doc.dump(), current);
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_FALSE(decoded->key.dataset.sees_content());
  current.dataset.sizes = std::string(kDigestDigits, 'b');
  const Result<Checkpoint> refused = decode_checkpoint(doc.dump(), current);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("sizes differ"), std::string::npos) << refused.status().message();
  EXPECT_EQ(refused.status().message().find("contents"), std::string::npos) << refused.status().message();
}

TEST(Checkpoint, RefusesWhatIsNotAState) {
  expect_not_a_state("", "not JSON");
  expect_not_a_state("garbage", "not JSON");
  expect_not_a_state("checkpoint.json", "'checkpoint.json'");  // a file name instead of its contents
  expect_not_a_state("{", "not JSON");
  expect_not_a_state("[1, 2]", "expected a JSON object");
  expect_not_a_state("42", "expected a JSON object");
  expect_not_a_state("{}", "no \"forkfeed_state\" field");
  expect_not_a_state(std::string("{\"forkfeed_state\":2,\0}", 21), "not JSON");
}

TEST(Checkpoint, RefusesEveryTruncation) {
  const std::string state = some_state();
  for (std::size_t n = 0; n < state.size(); ++n) {
    SCOPED_TRACE(n);
    expect_not_a_state(std::string_view(state).substr(0, n));
  }
}

TEST(Checkpoint, RefusesOtherVersions) {
  expect_not_a_state(with_field({"forkfeed_state"}, 4),
                     "version 4 is not supported; this forkfeed reads versions 1 to 3");
  expect_not_a_state(with_field({"forkfeed_state"}, 0), "version 0");
  expect_not_a_state(with_field({"forkfeed_state"}, "2"), "version \"2\"");
  expect_not_a_state(with_field({"forkfeed_state"}, 1.5), "version 1.5");
  // A version-2 body labelled 1 lacks what version 1 held.
  expect_not_a_state(with_field({"forkfeed_state"}, 1), "\"order.dataset_size\"");
}

TEST(Checkpoint, RefusesMissingFields) {
  const std::vector<std::vector<std::string>> fields = {
      {"forkfeed_state"},
      {"epoch"},
      {"position"},
      {"seed"},
      {"order"},
      {"order", "dataset"},
      {"order", "dataset", "samples"},
      {"order", "dataset", "names"},
      {"order", "dataset", "labels"},
      {"order", "dataset", "sizes"},
      {"order", "dataset", "range_samples"},
      {"order", "dataset", "ranges"},
      {"order", "dataset", "content_check"},
      {"order", "dataset", "content"},
      {"order", "dataset", "content_ranges"},
      {"order", "dataset", "fields"},
      {"order", "rank"},
      {"order", "world_size"},
      {"order", "batch_size"},
      {"order", "shuffle"},
      {"order", "drop_last"},
  };
  for (const std::vector<std::string>& path : fields) {
    std::string name = path[0];
    for (std::size_t i = 1; i < path.size(); ++i) name += "." + path[i];
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
  expect_not_a_state(with_field({"order", "dataset"}, "0123"), "\"order.dataset\" must be an object");
  expect_not_a_state(with_field({"order", "dataset", "names"}, "ABCDEF0123456789"),
                     "\"order.dataset.names\" must be 16 lowercase hex digits");
  expect_not_a_state(with_field({"order", "dataset", "sizes"}, "0123"), "\"order.dataset.sizes\" must be 16");
  expect_not_a_state(with_field({"order", "dataset", "range_samples"}, 8),
                     "\"order.dataset.range_samples\" must be 16 for 1000 samples, got 8");
  expect_not_a_state(with_field({"order", "dataset", "ranges"}, "abcd"),
                     "\"order.dataset.ranges\" must be 504 lowercase hex digits");
}

}  // namespace
}  // namespace forkfeed
