// forkfeed-bench --daemon SOCKET: the throughput run through forkfeedd delivers, in the
// same order, what the in-process run delivers, and reports it as JSON.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/testing/daemon_process.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

struct Output {
  int status = -1;
  std::string stdout_text;
};

Output run(const std::string& args) {
  const std::string command = std::string(FORKFEED_BIN_DIR) + "/forkfeed-bench " + args + " 2>&1";
  Output out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) out.stdout_text.append(buffer, n);
  out.status = ::pclose(pipe);
  return out;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(BenchDaemonTest, RunsThroughTheDaemonInTheLoadersOrder) {
  testing::HangGuard guard(120, "BenchDaemonTest");
  testing::TempDir dir;
  const std::string root = testing::make_image_folder(dir.path(), 14, 2, 8, 40, 80);
  testing::DaemonProcess daemon(dir.path() + "/bench.sock", {"--max-workers", "4"});
  const std::string common = "--data " + root + " --workers 2 --batch 4 --size 16 --epochs 2 --seed 5 --json";
  const Output local = run(common + " --dump-indices " + dir.path() + "/local.tsv");
  ASSERT_EQ(local.status, 0) << local.stdout_text;
  const Output served =
      run(common + " --daemon " + daemon.socket() + " --dump-indices " + dir.path() + "/served.tsv");
  ASSERT_EQ(served.status, 0) << served.stdout_text;
  const std::string last_line = served.stdout_text.substr(served.stdout_text.rfind('{'));
  const auto report = nlohmann::json::parse(last_line, nullptr, false);
  ASSERT_TRUE(report.is_object()) << served.stdout_text;
  EXPECT_EQ(report["images"].get<std::uint64_t>(), 28u);
  EXPECT_EQ(report["epochs"].get<std::uint64_t>(), 2u);
  EXPECT_EQ(report.value("classes", 0u), 2u) << "the Client knows the dataset's classes, as a Loader does";
  EXPECT_GT(report["images_per_s"].get<double>(), 0.0);
  EXPECT_EQ(slurp(dir.path() + "/served.tsv"), slurp(dir.path() + "/local.tsv"));

  const Output nowhere = run(common + " --daemon " + dir.path() + "/nobody.sock");
  EXPECT_NE(nowhere.status, 0);
  EXPECT_NE(nowhere.stdout_text.find("cannot connect to forkfeedd"), std::string::npos)
      << nowhere.stdout_text;
}

TEST(BenchDaemonTest, ItsReportNamesTheDatasetItWasServedByName) {
  testing::HangGuard guard(120, "BenchDaemonTest.Named");
  testing::TempDir dir;
  const std::string root = testing::make_image_folder(dir.path(), 8, 2, 8, 40, 80);
  testing::DaemonProcess daemon(dir.path() + "/named.sock", {"--dataset", "train=" + root});
  const Output served =
      run("--daemon " + daemon.socket() + " --dataset train --workers 2 --batch 4 --size 16");
  ASSERT_EQ(served.status, 0) << served.stdout_text;
  EXPECT_NE(served.stdout_text.find("8 images, 2 classes ('train' of forkfeedd)"), std::string::npos)
      << served.stdout_text;
}

}  // namespace
}  // namespace forkfeed
