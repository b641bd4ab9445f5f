// forkfeed-bench --probe from the outside: both decode paths measured over every file,
// a file that cannot be decoded counted and named without failing the probe.
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/testing/command.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

constexpr std::uint32_t kImages = 24;  // good ones; one bad file comes on top
constexpr char kBadName[] = "zz_not_an_image.jpg";

class ProbeTest : public ::testing::Test {
 protected:
  // One dataset for the whole suite: the probes only read it.
  static void SetUpTestSuite() {
    dataset_dir_ = new testing::TempDir();
    root_ = new std::string(testing::make_image_folder(dataset_dir_->path(), kImages, 3));
    std::ofstream(*root_ + "/class_000/" + kBadName) << "this is text, not a JPEG";
  }
  static void TearDownTestSuite() {
    delete root_;
    delete dataset_dir_;
  }
  const std::string& root() const { return *root_; }

  testing::CommandOutcome probe(std::vector<std::string> args) {
    args.insert(args.begin(), std::string(FORKFEED_BIN_DIR) + "/forkfeed-bench");
    return testing::run_command(args, dir_.path());
  }

  testing::TempDir dir_;  // per test: captured output

 private:
  static testing::TempDir* dataset_dir_;
  static std::string* root_;
};

testing::TempDir* ProbeTest::dataset_dir_ = nullptr;
std::string* ProbeTest::root_ = nullptr;

nlohmann::json last_json_line(const std::string& out) {
  const std::size_t start = out.find_last_of('\n', out.size() >= 2 ? out.size() - 2 : 0);
  return nlohmann::json::parse(out.substr(start == std::string::npos ? 0 : start + 1));
}

TEST_F(ProbeTest, JsonReportsBothRatesOverEveryFileAndCountsTheBadOne) {
  const testing::CommandOutcome o = probe({"--probe", "--json", "--data", root()});
  ASSERT_TRUE(o.exited && o.code == 0) << o.describe();
  const nlohmann::json j = last_json_line(o.out);
  EXPECT_EQ(j["dataset_size"], kImages + 1) << j;
  EXPECT_EQ(j["probed"], kImages + 1) << j;
  EXPECT_GT(j["bytes"].get<std::uint64_t>(), 0u) << j;
  for (const char* path : {"opencv", "fused"}) {
    const nlohmann::json& p = j[path];
    EXPECT_GT(p["images_per_s"].get<double>(), 0.0) << path << ": " << j;
    EXPECT_EQ(p["decoded"], kImages) << path << ": " << j;
    EXPECT_EQ(p["failed"], 1) << path << ": " << j;
    ASSERT_TRUE(p["first_error"].is_string()) << path << ": " << j;
    EXPECT_NE(p["first_error"].get<std::string>().find(kBadName), std::string::npos) << path << ": " << j;
  }
  EXPECT_GT(j["fused_over_opencv"].get<double>(), 0.0) << j;
  EXPECT_EQ(j["transform"], "train") << j;
}

TEST_F(ProbeTest, HumanReportShowsRatesRatioAndTheFailure) {
  const testing::CommandOutcome o =
      probe({"--probe", "--data", root(), "--transform", "eval", "--size", "64"});
  ASSERT_TRUE(o.exited && o.code == 0) << o.describe();
  for (const char* text :
       {"opencv", "fused", "images/s on one core", "fused/opencv", kBadName, "eval 64x64"}) {
    EXPECT_NE(o.out.find(text), std::string::npos) << text << "\n" << o.describe();
  }
}

TEST_F(ProbeTest, LimitProbesThatManyFiles) {
  const testing::CommandOutcome o =
      probe({"--probe", "--json", "--data", root(), "--probe-limit", "5", "--dtype", "float32"});
  ASSERT_TRUE(o.exited && o.code == 0) << o.describe();
  const nlohmann::json j = last_json_line(o.out);
  EXPECT_EQ(j["probed"], 5) << j;
  EXPECT_EQ(j["opencv"]["decoded"].get<int>() + j["opencv"]["failed"].get<int>(), 5) << j;
  EXPECT_EQ(j["dtype"], "float32") << j;
}

// Every sample is written where a worker would write it: into the slots of the arena a
// loader with the same --workers, --prefetch and --batch makes, not one reused buffer.
TEST_F(ProbeTest, WritesIntoTheSlotsOfTheLoadersArena) {
  constexpr std::uint64_t kBatch = 4, kSampleBytes = 32 * 32 * 3 * sizeof(float), kPage = 4096;
  for (const auto& [workers, prefetch] : {std::pair{1, 1}, std::pair{3, 2}}) {
    const testing::CommandOutcome o =
        probe({"--probe", "--json", "--data", root(), "--size", "32", "--dtype", "float32", "--batch", "4",
               "--workers", std::to_string(workers), "--prefetch", std::to_string(prefetch)});
    ASSERT_TRUE(o.exited && o.code == 0) << o.describe();
    const nlohmann::json j = last_json_line(o.out);
    const std::uint64_t slots = workers * prefetch + 1;
    const std::uint64_t bytes = j["slot_bytes"].get<std::uint64_t>();
    // Each slot: a page-aligned stride of its bookkeeping and its samples' pixels.
    EXPECT_GE(bytes, slots * kBatch * kSampleBytes) << j;
    EXPECT_LE(bytes, slots * (kBatch * kSampleBytes + kPage)) << j;
    EXPECT_EQ(j["fused"]["decoded"], kImages) << j;
  }
}

// The stages of a sample's path, each op by its text, in the order a sample meets them;
// each ran on the samples that reached it. The bad file, whose header no decoder reads,
// is decoded whole (that fails) rather than planned first.
std::vector<std::string> stage_names(const nlohmann::json& profile) {
  std::vector<std::string> names;
  for (const auto& row : profile) names.push_back(row["stage"]);
  return names;
}

// The stages a sample meets before the transform's ops, then `ops` (with the store).
std::vector<std::string> stages_then(std::initializer_list<std::string> ops) {
  std::vector<std::string> stages{"read the file", "read the header, plan the window",
                                  "decode the window (DCT-scaled)", "decode the whole image",
                                  "crops and resizes"};
  stages.insert(stages.end(), ops);
  return stages;
}

TEST_F(ProbeTest, ProfileTimesEveryStageAndOpInOrder) {
  const testing::CommandOutcome o = probe({"--probe", "--profile", "--json", "--data", root(), "--transform",
                                           "RandomResizedCrop(32), RandomHorizontalFlip(), "
                                           "TrivialAugmentWide(), Normalize(), RandomErasing(p=0.5)"});
  ASSERT_TRUE(o.exited && o.code == 0) << o.describe();
  const nlohmann::json j = last_json_line(o.out);
  ASSERT_EQ(stage_names(j["profile"]),
            stages_then({"RandomHorizontalFlip()", "TrivialAugmentWide()",
                         "store: float32 NCHW, Normalize, flips", "RandomErasing(p=0.5)"}))
      << j;
  const double all = kImages + 1, decoded = kImages;
  double sum = 0;
  for (const auto& row : j["profile"]) {
    const std::string stage = row["stage"];
    const double expected_ran = stage.starts_with("read")           ? 1.0
                                : stage == "decode the whole image" ? 1.0 / all
                                                                    : decoded / all;
    EXPECT_DOUBLE_EQ(row["ran"].get<double>(), expected_ran) << row;
    EXPECT_GE(row["us_per_sample"].get<double>(), 0.0) << row;
    sum += row["us_per_sample"].get<double>();
  }
  const auto& decode = j["profile"][2];
  EXPECT_GT(decode["us_per_sample"].get<double>(), 0.0) << j;
  // The stages are parts of the pass: together no more than it.
  EXPECT_LE(sum, j["profile_us_per_sample"].get<double>()) << j;
}

TEST_F(ProbeTest, ProfileOfAnInSlotSampleStoresOnlyTheMirroredOnes) {
  // uint8 NHWC with nothing but a flip is resized straight into the slot; the store
  // (a mirrored copy) runs on the samples whose flip was drawn, about half.
  const testing::CommandOutcome o =
      probe({"--probe", "--profile", "--json", "--data", root(), "--transform", "train", "--size", "32"});
  ASSERT_TRUE(o.exited && o.code == 0) << o.describe();
  const nlohmann::json j = last_json_line(o.out);
  ASSERT_EQ(stage_names(j["profile"]), stages_then({"RandomHorizontalFlip()", "store: uint8 NHWC, flips"}))
      << j;
  const double stored = j["profile"][6]["ran"];
  EXPECT_GT(stored, 0.0) << j;
  EXPECT_LT(stored, static_cast<double>(kImages) / (kImages + 1)) << j;
}

TEST_F(ProbeTest, ProfileWithoutProbeIsABadArgument) {
  const testing::CommandOutcome o = probe({"--data", root(), "--profile"});
  EXPECT_TRUE(o.exited && o.code == 2) << o.describe();
  EXPECT_NE(o.err.find("--probe"), std::string::npos) << o.describe();
}

TEST_F(ProbeTest, ManifestWorksToo) {
  const std::string manifest = dir_.path() + "/m.tsv";
  // Paths in a manifest are relative to its folder.
  const auto first = *std::filesystem::directory_iterator(root() + "/class_001");
  std::ofstream(manifest) << std::filesystem::relative(first.path(), dir_.path()).string() << "\t1\n";
  const testing::CommandOutcome o = probe({"--probe", "--json", "--manifest", manifest});
  ASSERT_TRUE(o.exited && o.code == 0) << o.describe();
  EXPECT_EQ(last_json_line(o.out)["probed"], 1) << o.out;
}

TEST_F(ProbeTest, LimitWithoutProbeIsABadArgument) {
  const testing::CommandOutcome o = probe({"--data", root(), "--probe-limit", "5"});
  EXPECT_TRUE(o.exited && o.code != 0 && o.code != 1) << o.describe();
  EXPECT_NE(o.err.find("--probe"), std::string::npos) << o.describe();
}

TEST_F(ProbeTest, MissingFolderIsACleanError) {
  const std::string missing = dir_.path() + "/no-such-folder";
  const testing::CommandOutcome o = probe({"--probe", "--data", missing});
  EXPECT_TRUE(o.exited && o.code == 1) << o.describe();
  EXPECT_NE(o.err.find(missing), std::string::npos) << o.describe();
}

}  // namespace
}  // namespace forkfeed
