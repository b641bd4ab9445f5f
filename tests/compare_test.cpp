// tools/compare.sh from the outside, without its PyTorch row (CI never installs
// torchvision): one run on a tiny dataset gives every figure of the table in its --json object.
#include <unistd.h>

#include <filesystem>
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

// Whether compare.sh's "forkfeed from Python" row can run: the build made the Python
// package next to the binaries (not with -DFORKFEED_PYTHON=OFF), and not with the
// sanitizers, whose extension loads only with their runtimes preloaded (as ctest's
// pytest entries do, compare.sh does not): there the row says why it is empty.
bool python_package_built() {
  return !FORKFEED_SANITIZED &&
         std::filesystem::exists(std::string(FORKFEED_BIN_DIR) + "/../python/forkfeed/__init__.py");
}

// The "forkfeed from Python" row of one --json object: every figure, or why it is empty.
void expect_python_row(const nlohmann::json& j, std::uint32_t images) {
  if (!python_package_built()) {
    EXPECT_TRUE(j["python"].is_null()) << j;
    EXPECT_TRUE(j["python_skipped"].is_string()) << j;
    return;
  }
  const nlohmann::json& py = j["python"];
  EXPECT_EQ(py["images"], images) << j;
  EXPECT_EQ(py["dtype"], j["settings"]["dtype"]) << j;
  EXPECT_GT(number(py["images_per_s"]), 0.0) << j;
  EXPECT_GT(number(py["peak_pss_bytes"]), 0.0) << j;
  EXPECT_GT(number(py["images_per_cpu_s"]), 0.0) << j;
  EXPECT_GE(number(py["wait_p99_ms"]), number(py["wait_p50_ms"])) << j;
  EXPECT_GT(number(j["ratios"]["python_over_forkfeed"]), 0.0) << j;
  EXPECT_TRUE(j["ratios"]["python_over_torch"].is_null()) << j;
  EXPECT_TRUE(j["python_skipped"].is_null()) << j;
}

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
  expect_python_row(j, kImages);
}

TEST_F(CompareTest, DtypeBothMeasuresEachDtype) {
  const testing::CommandOutcome o = compare({"--no-torch", "--json", "--data", root_, "--epochs", "1",
                                             "--batch", "8", "--size", "32", "--dtype", "both"});
  ASSERT_TRUE(o.exited && o.code == 0) << o.describe();
  const nlohmann::json j = nlohmann::json::parse(o.out);
  for (const char* dtype : {"uint8", "float32"}) {
    const nlohmann::json& r = j[dtype];
    EXPECT_EQ(r["settings"]["dtype"], dtype) << j;
    EXPECT_EQ(r["forkfeed"]["images"], kImages) << j;
    expect_python_row(r, kImages);
  }
  EXPECT_EQ(j["float32"]["arena_slot_bytes"], 4 * j["uint8"]["arena_slot_bytes"].get<double>()) << j;
  const nlohmann::json& q = j["float32_over_uint8"];
  EXPECT_NEAR(
      number(q["forkfeed"]),
      number(j["float32"]["forkfeed"]["images_per_s"]) / number(j["uint8"]["forkfeed"]["images_per_s"]), 1e-9)
      << j;
  EXPECT_GT(number(q["probe_fused"]), 0.0) << j;
  EXPECT_TRUE(q["torch"].is_null()) << j;
}

TEST_F(CompareTest, RepeatGivesTheMedianOfTheRunsAndTheirRange) {
  const testing::CommandOutcome o =
      compare({"--no-torch", "--no-python", "--json", "--data", root_, "--epochs", "1", "--batch", "8",
               "--size", "32", "--dtype", "both", "--repeat", "3"});
  ASSERT_TRUE(o.exited && o.code == 0) << o.describe();
  // Each measurement runs for uint8 and right after for float32, run after run.
  std::size_t at = 0;
  for (const char* step :
       {"run 1/3, uint8, probe:", "run 1/3, float32, probe:", "run 1/3, uint8, forkfeed:",
        "run 1/3, float32, forkfeed:", "run 2/3, uint8, probe:", "run 3/3, float32, forkfeed:"}) {
    const std::size_t next = o.err.find(step, at);
    ASSERT_NE(next, std::string::npos) << step << " after byte " << at << "\n" << o.describe();
    at = next;
  }
  const nlohmann::json j = nlohmann::json::parse(o.out);
  for (const char* dtype : {"uint8", "float32"}) {
    const nlohmann::json& r = j[dtype];
    EXPECT_EQ(r["repeat"], 3) << j;
    EXPECT_EQ(r["forkfeed"]["images"], kImages) << j;  // counts stay whole numbers
    for (const char* row : {"forkfeed", "probe"}) {
      const nlohmann::json& range = r["images_per_s_range"][row];
      const double median =
          number(row == std::string("probe") ? r["probe"]["fused"]["images_per_s"] : r[row]["images_per_s"]);
      ASSERT_EQ(range.size(), 2u) << j;
      EXPECT_LE(number(range[0]), median) << row << " " << j;
      EXPECT_GE(number(range[1]), median) << row << " " << j;
    }
  }
  EXPECT_GT(number(j["float32_over_uint8"]["forkfeed"]), 0.0) << j;
}

TEST_F(CompareTest, TableOfBothDtypesEndsWithFloat32OverUint8) {
  const testing::CommandOutcome o =
      compare({"--no-torch", "--no-python", "--data", root_, "--epochs", "1", "--batch", "8", "--size", "32",
               "--dtype", "both", "--repeat", "2"});
  ASSERT_TRUE(o.exited && o.code == 0) << o.describe();
  for (const char* text : {"median of 2 runs", "range", "float32 / uint8"}) {
    EXPECT_NE(o.out.find(text), std::string::npos) << text << "\n" << o.describe();
  }
}

TEST_F(CompareTest, NoPythonSkipsThatRow) {
  const testing::CommandOutcome o = compare({"--no-torch", "--no-python", "--json", "--data", root_,
                                             "--epochs", "1", "--batch", "8", "--size", "32"});
  ASSERT_TRUE(o.exited && o.code == 0) << o.describe();
  const nlohmann::json j = nlohmann::json::parse(o.out);
  EXPECT_TRUE(j["python"].is_null()) << j;
  EXPECT_EQ(j["python_skipped"], "--no-python") << j;
}

TEST_F(CompareTest, ImagesLimitsBothTheProbeAndTheLoader) {
  const testing::CommandOutcome o =
      compare({"--no-torch", "--json", "--data", root_, "--images", "16", "--batch", "8", "--size", "32"});
  ASSERT_TRUE(o.exited && o.code == 0) << o.describe();
  const nlohmann::json j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["probe"]["probed"], 16) << j;
  EXPECT_EQ(j["forkfeed"]["images"], 16) << j;
  EXPECT_EQ(j["forkfeed"]["batches"], 2) << j;
  if (python_package_built()) {
    EXPECT_EQ(j["python"]["images"], 16) << j;
    EXPECT_EQ(j["python"]["batches"], 2) << j;
  }
}

TEST_F(CompareTest, TableNamesTheRatiosAndWhyTorchIsMissing) {
  const testing::CommandOutcome o =
      compare({"--no-torch", "--data", root_, "--epochs", "1", "--batch", "8", "--size", "32"});
  ASSERT_TRUE(o.exited && o.code == 0) << o.describe();
  for (const char* text :
       {"images/s", "peak PSS", "wait p99", "forkfeed / PyTorch", "fused / OpenCV", "single-core fused",
        "forkfeed arena", "forkfeed from Python (2 workers)", "from Python / forkfeed-bench",
        "from Python / PyTorch", "PyTorch row skipped: --no-torch"}) {
    EXPECT_NE(o.out.find(text), std::string::npos) << text << "\n" << o.describe();
  }
  // The row is there either way: with figures, or "skipped" and a line that says why.
  if (!python_package_built()) {
    EXPECT_NE(o.out.find("forkfeed from Python row skipped: "), std::string::npos) << o.describe();
  }
}

// --transforms: the pipeline and the shorthand it is set against, each from Python (the
// PyTorch rows need torchvision), in pipeline_report.py's --json object.
TEST_F(CompareTest, TransformsSetsEachPipelineAgainstTheShorthand) {
  const std::string spec = "RandomResizedCrop(32), RandomHorizontalFlip(), Normalize()";
  const testing::CommandOutcome o =
      compare({"--no-torch", "--json", "--data", root_, "--images", "16", "--batch", "8", "--size", "32",
               "--repeat", "1", "--transforms", spec});
  ASSERT_TRUE(o.exited && o.code == 0) << o.describe();
  const nlohmann::json j = nlohmann::json::parse(o.out);
  ASSERT_EQ(j["pipelines"].size(), 2u) << j;
  EXPECT_EQ(j["pipelines"][0]["spec"], "train") << j;
  EXPECT_EQ(j["pipelines"][1]["spec"], spec) << j;
  for (const nlohmann::json& p : j["pipelines"]) {
    EXPECT_EQ(p["torch_skipped"], "--no-torch") << j;
    if (python_package_built()) {
      EXPECT_EQ(p["python"]["images"], 16) << j;
      EXPECT_GT(number(p["forkfeed_us_per_sample"]), 0.0) << j;
    } else {
      EXPECT_TRUE(p["python"].is_null()) << j;
    }
  }
  if (python_package_built()) {
    EXPECT_EQ(j["pipelines"][1]["python"]["batch_dtype"], "float32") << j;
    EXPECT_GT(number(j["pipelines"][1]["forkfeed_cost_over_shorthand"]), 0.0) << j;
  }
  const testing::CommandOutcome bad =
      compare({"--no-torch", "--data", root_, "--transforms", "--dtype", "float32"});
  EXPECT_TRUE(bad.exited && bad.code == 2) << bad.describe();
  EXPECT_NE(bad.err.find("--dtype does not apply to --transforms"), std::string::npos) << bad.describe();
}

TEST_F(CompareTest, BadArgumentsExitTwoWithOneLine) {
  const testing::CommandOutcome o = compare({"--no-torch", "--data", root_, "--transform", "bogus"});
  EXPECT_TRUE(o.exited && o.code == 2) << o.describe();
  EXPECT_NE(o.err.find("bogus"), std::string::npos) << o.describe();
  const testing::CommandOutcome none = compare({"--no-torch", "--data", root_, "--repeat", "0"});
  EXPECT_TRUE(none.exited && none.code == 2) << none.describe();
  EXPECT_NE(none.err.find("--repeat must be at least 1"), std::string::npos) << none.describe();
}

TEST_F(CompareTest, HelpExplainsTheColumns) {
  const testing::CommandOutcome o = compare({"--help"});
  EXPECT_TRUE(o.exited && o.code == 0) << o.describe();
  EXPECT_NE(o.out.find("--no-torch"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("PSS"), std::string::npos) << o.out;
}

}  // namespace
}  // namespace forkfeed
