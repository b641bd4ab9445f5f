// A state and its dataset: it resumes on the same files at another path, is refused on
// other files with a message naming what changed and where, and a state of version 1 (a
// digest of absolute paths) still resumes where nothing moved.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "forkfeed/dataset.h"
#include "forkfeed/options.h"
#include "loader/checkpoint.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

using Samples = testing::ManifestSamples;

DatasetIndex index_of(const testing::TempDir& dir, const Samples& samples) {
  return testing::manifest_index(dir.path(), samples);
}

Samples three_samples() { return {{"/d/a.jpg", 0}, {"/d/b.jpg", 1}, {"/d/c d.png", 7}}; }

// A state of version 1 names its dataset by a digest of absolute paths and labels, whose
// definition is fixed (FNV-1a 64 over little-endian length, path bytes, little-endian
// label): such states, written before dataset identities, are checked with it.
TEST(LegacyState, TheDigestOfVersion1IsFixed) {
  testing::TempDir dir;
  EXPECT_EQ(dataset_identity(index_of(dir, three_samples())).legacy, "89a56687aeb062b0");
}

// What forkfeed before version-2 states wrote for a loader of `key` at `epoch`, `position`.
std::string version1_state(const OrderKey& key, std::uint64_t epoch, std::uint64_t position) {
  nlohmann::ordered_json doc;
  doc["forkfeed_state"] = 1;
  doc["epoch"] = epoch;
  doc["position"] = position;
  doc["seed"] = key.seed;
  doc["order"] = {
      {"dataset_size", key.dataset.samples}, {"dataset_digest", key.dataset.legacy}, {"rank", key.rank},
      {"world_size", key.world_size},        {"batch_size", key.batch_size},         {"shuffle", key.shuffle},
      {"drop_last", key.drop_last}};
  return doc.dump();
}

TEST(LegacyState, AVersion1StateResumesWhereNothingMovedAndIsRefusedElsewhereSayingWhy) {
  testing::TempDir dir;
  const DatasetIndex index = index_of(dir, three_samples());
  const std::string state = version1_state(order_key(index, LoaderOptions{}), 4, 1);
  const Result<Checkpoint> same = decode_checkpoint(state, order_key(index, LoaderOptions{}));
  ASSERT_TRUE(same.ok()) << same.status().message();
  EXPECT_EQ(same->epoch, 4u);
  EXPECT_EQ(same->position, 1u);

  Samples moved = three_samples();
  for (auto& [path, label] : moved) path.replace(0, 2, "/mnt");
  Samples relabelled = three_samples();
  relabelled[0].second = 5;
  for (const auto& [what, samples] :
       std::vector<std::pair<std::string, Samples>>{{"moved", moved}, {"relabelled", relabelled}}) {
    SCOPED_TRACE(what);
    const DatasetIndex other = index_of(dir, samples);
    const Result<Checkpoint> refused = decode_checkpoint(state, order_key(other, LoaderOptions{}), &other);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), Status::Code::kInvalidArgument);
    const std::string& message = refused.status().message();
    for (const std::string& part : std::vector<std::string>{
             "written by an older forkfeed (state version 1)", "absolute paths or labels differ",
             "digest " + dataset_identity(index).legacy + " against " + dataset_identity(other).legacy,
             "resume it there and save a new state"}) {
      EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
    }
  }
}

// The same files at another path are the same dataset: a state moves with them.
TEST(StateDataset, AStateResumesOnTheSameFilesAtAnotherPath) {
  testing::TempDir dir;
  for (const char* folder : {"/a", "/b"}) {
    ASSERT_EQ(std::filesystem::create_directories(dir.path() + folder + "/cls"), true);
    std::ofstream(dir.path() + folder + "/cls/x.jpg") << "twelve bytes";
  }
  const auto index_in = [&](const char* folder) {
    const std::string manifest = dir.path() + folder + "/list.tsv";
    std::ofstream(manifest) << "cls/x.jpg\t3\n" << dir.path() << folder << "/cls/x.jpg\t4\n";
    return DatasetIndex::from_manifest(manifest).value_or_throw();
  };
  const DatasetIndex a = index_in("/a"), b = index_in("/b");
  EXPECT_EQ(a.name(1), "cls/x.jpg") << "an absolute path under the manifest's folder is named from it";
  EXPECT_EQ(a.bytes(0), 12u);
  const std::string state = encode_checkpoint(Checkpoint{2, 1, order_key(a, LoaderOptions{})});
  const Result<Checkpoint> decoded = decode_checkpoint(state, order_key(b, LoaderOptions{}), &b);
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_EQ(decoded->epoch, 2u);

  // Other bytes under the same names are another dataset; the message names the file.
  std::ofstream(dir.path() + "/b/cls/x.jpg") << "re-encoded: fourteen bytes";
  const DatasetIndex changed = index_in("/b");
  const Result<Checkpoint> refused = decode_checkpoint(state, order_key(changed, LoaderOptions{}), &changed);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find(
                "another dataset than this loader's: sizes differ in samples 0-1 (cls/x.jpg .. cls/x.jpg)"),
            std::string::npos)
      << refused.status().message();
}

TEST(StateDataset, RefusesAChangedDatasetNamingWhatChanged) {
  testing::TempDir dir;
  const DatasetIndex original = index_of(dir, three_samples());
  const std::string state = encode_checkpoint(Checkpoint{1, 0, order_key(original, LoaderOptions{})});

  Samples path_changed = three_samples();
  path_changed[1].first = "/d/B.jpg";
  Samples label_changed = three_samples();
  label_changed[2].second = 8;
  Samples added = three_samples();
  added.emplace_back("/d/e.jpg", 0);
  Samples reordered = three_samples();
  std::swap(reordered[0], reordered[1]);
  for (const auto& [what, samples, expected] : std::vector<std::tuple<std::string, Samples, std::string>>{
           {"path changed", path_changed, "names differ in sample 1 (/d/B.jpg)"},
           {"label changed", label_changed, "labels differ in sample 2 (/d/c d.png)"},
           {"sample added", added,
            "3 samples against 4; names, labels and sizes differ in sample 3 (/d/e.jpg)"},
           {"samples swapped", reordered, "names and labels differ in samples 0-1 (/d/b.jpg .. /d/a.jpg)"}}) {
    SCOPED_TRACE(what);
    const DatasetIndex changed = index_of(dir, samples);
    const Result<Checkpoint> decoded =
        decode_checkpoint(state, order_key(changed, LoaderOptions{}), &changed);
    ASSERT_FALSE(decoded.ok());
    EXPECT_EQ(decoded.status().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(decoded.status().message().find("another dataset than this loader's: " + expected + ";"),
              std::string::npos)
        << decoded.status().message();
  }

  // The same list again is accepted.
  const Result<Checkpoint> same =
      decode_checkpoint(state, order_key(index_of(dir, three_samples()), LoaderOptions{}));
  EXPECT_TRUE(same.ok()) << same.status().message();
}

}  // namespace
}  // namespace forkfeed
