// tools/compare.sh from the outside, without its PyTorch column (CI never installs
// torch): one run on a tiny dataset gives every figure of the table in its --json object.
#include <unistd.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/testing/command.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

constexpr std::uint32_t kImages = 24;
constexpr char kPython[] = "/usr/bin/python3";  // compare.sh's sampler and report need it

class CompareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is missing; compare.sh needs it";
    root_ = testing::make_image_folder(dir_.path(), kImages, 3, 1, 40, 80);
  }

  testing::CommandOutcome compare(std::vector<std::string> args) {
    args.insert(args.begin(),
                {std::string(FORKFEED_SOURCE_DIR) + "/tools/compare.sh", "--bin", FORKFEED_BIN_DIR});
    return testing::run_command(args, dir_.path());
  }

  testing::TempDir dir_;
  std::string root_;
};

double number(const nlohmann::json& j) { return j.is_number() ? j.get<double>() : -1.0; }

TEST_F(CompareTest, JsonHoldsEveryFigureWithoutTorch) {
  const testing::CommandOutcome o = compare({"--no-torch", "--json", "--data", root_, "--epochs", "1",
                                             "--batch", "8", "--size", "32", "--workers", "2"});
  ASSERT_TRUE(o.exited && o.code == 0) << o.describe();
  const nlohmann::json j = nlohmann::json::parse(o.out);

  EXPECT_EQ(j["settings"]["workers"], 2) << j;
  EXPECT_EQ(j["settings"]["batch"], 8) << j;
  EXPECT_EQ(j["probe"]["probed"], kImages) << j;
  EXPECT_GT(number(j["probe"]["opencv"]["images_per_s"]), 0.0) << j;
  EXPECT_GT(number(j["probe"]["fused"]["images_per_s"]), 0.0) << j;

  const nlohmann::json& f = j["forkfeed"];
  EXPECT_EQ(f["images"], kImages) << j;
  EXPECT_GT(number(f["images_per_s"]), 0.0) << j;
  EXPECT_GT(number(f["peak_pss_bytes"]), 0.0) << j;
  EXPECT_GT(number(f["images_per_cpu_s"]), 0.0) << j;
  EXPECT_GE(number(f["wait_p50_ms"]), 0.0) << j;
  EXPECT_GE(number(f["wait_p99_ms"]), number(f["wait_p50_ms"])) << j;
  // The arena is the batch slots, plus rings and the index.
  EXPECT_GT(number(j["arena_slot_bytes"]), 0.0) << j;
  EXPECT_GE(number(j["arena_bytes"]), number(j["arena_slot_bytes"])) << j;

  EXPECT_TRUE(j["torch"].is_null()) << j;
  EXPECT_EQ(j["torch_skipped"], "--no-torch") << j;
  EXPECT_GT(number(j["ratios"]["fused_over_opencv"]), 0.0) << j;
  EXPECT_GT(number(j["ratios"]["fused_over_opencv_per_cpu_s"]), 0.0) << j;
  EXPECT_GT(number(j["ratios"]["forkfeed_over_n_fused"]), 0.0) << j;
  EXPECT_TRUE(j["ratios"]["forkfeed_over_torch"].is_null()) << j;
}

TEST_F(CompareTest, ImagesLimitsBothTheProbeAndTheLoader) {
  const testing::CommandOutcome o =
      compare({"--no-torch", "--json", "--data", root_, "--images", "16", "--batch", "8", "--size", "32"});
  ASSERT_TRUE(o.exited && o.code == 0) << o.describe();
  const nlohmann::json j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["probe"]["probed"], 16) << j;
  EXPECT_EQ(j["forkfeed"]["images"], 16) << j;
  EXPECT_EQ(j["forkfeed"]["batches"], 2) << j;
}

TEST_F(CompareTest, TableNamesTheRatiosAndWhyTorchIsMissing) {
  const testing::CommandOutcome o =
      compare({"--no-torch", "--data", root_, "--epochs", "1", "--batch", "8", "--size", "32"});
  ASSERT_TRUE(o.exited && o.code == 0) << o.describe();
  for (const char* text : {"images/s", "peak PSS", "wait p99", "forkfeed / PyTorch", "fused / OpenCV",
                           "single-core fused", "forkfeed arena", "PyTorch column skipped: --no-torch"}) {
    EXPECT_NE(o.out.find(text), std::string::npos) << text << "\n" << o.describe();
  }
}

TEST_F(CompareTest, BadArgumentsExitTwoWithOneLine) {
  const testing::CommandOutcome o = compare({"--no-torch", "--data", root_, "--transform", "bogus"});
  EXPECT_TRUE(o.exited && o.code == 2) << o.describe();
  EXPECT_NE(o.err.find("bogus"), std::string::npos) << o.describe();
}

TEST_F(CompareTest, HelpExplainsTheColumns) {
  const testing::CommandOutcome o = compare({"--help"});
  EXPECT_TRUE(o.exited && o.code == 0) << o.describe();
  EXPECT_NE(o.out.find("--no-torch"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("PSS"), std::string::npos) << o.out;
}

}  // namespace
}  // namespace forkfeed
