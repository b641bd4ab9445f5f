// forkfeed-bench from the outside: arguments, exit codes, the --json line, and the
// --dump-indices file as proof of exactly-once delivery and of the order.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/testing/temp_dataset.h"

extern char** environ;

namespace forkfeed {
namespace {

namespace fs = std::filesystem;

constexpr std::uint32_t kImages = 37;
constexpr std::uint32_t kClasses = 3;

struct Outcome {
  bool exited = false;  // false: killed by a signal (or by the timeout)
  int code = -1;        // exit status when exited
  int signal = 0;
  std::string out;
  std::string err;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Runs forkfeed-bench with `args`, stdout and stderr captured in files under `dir`.
// Kills it after `timeout` so a hang fails the test instead of blocking ctest.
Outcome run_bench(const std::string& dir, const std::vector<std::string>& args,
                  std::chrono::seconds timeout = std::chrono::seconds(120)) {
  const std::string bin = std::string(FORKFEED_BIN_DIR) + "/forkfeed-bench";
  const std::string out_path = dir + "/bench.stdout";
  const std::string err_path = dir + "/bench.stderr";
  std::vector<std::string> argv_storage = {bin};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, bin.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  Outcome outcome;
  if (rc != 0) {
    ADD_FAILURE() << "cannot start " << bin << ": " << std::strerror(rc);
    return outcome;
  }

  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0) {
      ADD_FAILURE() << "waitpid: " << std::strerror(errno);
      return outcome;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "forkfeed-bench did not finish within " << timeout.count() << " s; killed";
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  outcome.exited = WIFEXITED(status);
  outcome.code = outcome.exited ? WEXITSTATUS(status) : -1;
  outcome.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  outcome.out = read_file(out_path);
  outcome.err = read_file(err_path);
  return outcome;
}

std::string describe(const Outcome& o) {
  return "exit " + std::to_string(o.code) + ", signal " + std::to_string(o.signal) + "\nstdout:\n" + o.out +
         "\nstderr:\n" + o.err;
}

// Labels as torchvision's ImageFolder assigns them, worked out here from the tree itself:
// classes are the sorted subfolders, samples are sorted within each class.
std::vector<std::int64_t> expected_labels(const std::string& root) {
  static const std::set<std::string> kExtensions = {".jpg", ".jpeg", ".png",  ".ppm", ".bmp",
                                                    ".pgm", ".tif",  ".tiff", ".webp"};
  std::vector<fs::path> classes;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (entry.is_directory()) classes.push_back(entry.path());
  }
  std::sort(classes.begin(), classes.end());
  std::vector<std::int64_t> labels;
  for (std::size_t label = 0; label < classes.size(); ++label) {
    std::vector<fs::path> files;
    for (const auto& entry : fs::recursive_directory_iterator(classes[label])) {
      std::string ext = entry.path().extension().string();
      std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
      if (entry.is_regular_file() && kExtensions.count(ext)) files.push_back(entry.path());
    }
    labels.insert(labels.end(), files.size(), static_cast<std::int64_t>(label));
  }
  return labels;
}

struct DumpLine {
  std::uint64_t epoch;
  std::uint64_t batch;
  std::uint64_t index;
  std::int64_t label;
};

std::vector<DumpLine> read_dump(const std::string& path) {
  std::vector<DumpLine> dump;
  for (const std::string& line : lines_of(read_file(path))) {
    DumpLine d{};
    std::istringstream in(line);
    char tab1 = 0, tab2 = 0, tab3 = 0;
    in >> d.epoch >> std::noskipws >> tab1 >> d.batch >> tab2 >> d.index >> tab3 >> d.label;
    EXPECT_TRUE(in && tab1 == '\t' && tab2 == '\t' && tab3 == '\t') << "bad dump line: '" << line << "'";
    dump.push_back(d);
  }
  return dump;
}

// Delivered sample indices of each epoch, in delivery order.
std::map<std::uint64_t, std::vector<std::uint64_t>> orders_by_epoch(const std::vector<DumpLine>& dump) {
  std::map<std::uint64_t, std::vector<std::uint64_t>> orders;
  for (const DumpLine& d : dump) orders[d.epoch].push_back(d.index);
  return orders;
}

class BenchCliTest : public ::testing::Test {
 protected:
  // One dataset for the whole suite: the runs only read it.
  static void SetUpTestSuite() {
    dataset_dir_ = new testing::TempDir();
    root_ = new std::string(testing::make_image_folder(dataset_dir_->path(), kImages, kClasses));
  }
  static void TearDownTestSuite() {
    delete root_;
    delete dataset_dir_;
  }
  const std::string& root() const { return *root_; }

  testing::TempDir dir_;  // per test: captured output and dumps

 private:
  static testing::TempDir* dataset_dir_;
  static std::string* root_;
};

testing::TempDir* BenchCliTest::dataset_dir_ = nullptr;
std::string* BenchCliTest::root_ = nullptr;

TEST_F(BenchCliTest, HelpExitsZeroAndDescribesFlags) {
  const Outcome o = run_bench(dir_.path(), {"--help"});
  EXPECT_TRUE(o.exited && o.code == 0) << describe(o);
  EXPECT_NE(o.out.find("--data"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("--manifest"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("--dump-indices"), std::string::npos) << o.out;
}

TEST_F(BenchCliTest, NoDatasetIsOneLineError) {
  const Outcome o = run_bench(dir_.path(), {"--workers", "1"});
  EXPECT_TRUE(o.exited && o.code != 0) << describe(o);
  EXPECT_EQ(lines_of(o.err).size(), 1u) << describe(o);
  EXPECT_NE(o.err.find("--data"), std::string::npos) << describe(o);
}

TEST_F(BenchCliTest, DataAndManifestTogetherIsAnError) {
  const Outcome o = run_bench(dir_.path(), {"--data", root(), "--manifest", dir_.path() + "/m.tsv"});
  EXPECT_TRUE(o.exited && o.code != 0) << describe(o);
  EXPECT_EQ(lines_of(o.err).size(), 1u) << describe(o);
}

TEST_F(BenchCliTest, UnknownTransformIsAnError) {
  const Outcome o = run_bench(dir_.path(), {"--data", root(), "--transform", "bogus"});
  EXPECT_TRUE(o.exited && o.code != 0) << describe(o);
  EXPECT_NE(o.err.find("bogus"), std::string::npos) << describe(o);
}

TEST_F(BenchCliTest, MalformedNumbersAreErrors) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--batch", "-1"},
                                               {"--workers", "two"},
                                               {"--epochs", "0"},
                                               {"--seed", "-5"}}) {
    std::vector<std::string> full = {"--data", root()};
    full.insert(full.end(), args.begin(), args.end());
    const Outcome o = run_bench(dir_.path(), full);
    EXPECT_TRUE(o.exited && o.code != 0 && o.code != 1) << args[0] << " " << args[1] << ": " << describe(o);
    EXPECT_FALSE(o.err.empty()) << describe(o);
  }
}

TEST_F(BenchCliTest, MissingDataFolderIsACleanError) {
  const std::string missing = dir_.path() + "/no-such-folder";
  const Outcome o = run_bench(dir_.path(), {"--data", missing, "--workers", "1"});
  ASSERT_TRUE(o.exited) << "killed by signal " << o.signal << "\n" << describe(o);
  EXPECT_EQ(o.code, 1) << describe(o);
  EXPECT_NE(o.err.find(missing), std::string::npos) << describe(o);
  EXPECT_EQ(o.err.rfind("forkfeed-bench: ", 0), 0u) << describe(o);
}

TEST_F(BenchCliTest, UnwritableDumpFileIsACleanError) {
  const std::string dump = dir_.path() + "/no-such-folder/dump.tsv";
  const Outcome o = run_bench(dir_.path(), {"--data", root(), "--dump-indices", dump});
  ASSERT_TRUE(o.exited) << describe(o);
  EXPECT_EQ(o.code, 1) << describe(o);
  EXPECT_NE(o.err.find(dump), std::string::npos) << describe(o);
}

TEST_F(BenchCliTest, JsonRunDeliversEverySampleOncePerEpoch) {
  const std::string dump_path = dir_.path() + "/dump.tsv";
  const Outcome o = run_bench(dir_.path(), {"--data", root(), "--json", "--epochs", "2", "--batch", "8",
                                            "--workers", "2", "--size", "32", "--dump-indices", dump_path});
  ASSERT_TRUE(o.exited && o.code == 0) << describe(o);

  // --json: stdout is exactly one JSON line.
  const std::vector<std::string> out_lines = lines_of(o.out);
  ASSERT_EQ(out_lines.size(), 1u) << describe(o);
  const nlohmann::json j = nlohmann::json::parse(out_lines.back(), nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << out_lines.back();
  for (const char* key :
       {"images", "batches", "epochs", "wall_s", "images_per_s", "workers", "skipped", "batch_size", "size",
        "transform", "dtype", "wait_p50_ms", "wait_p99_ms", "arena_bytes", "dataset_size"}) {
    EXPECT_TRUE(j.contains(key)) << key << " missing in " << out_lines.back();
  }
  EXPECT_EQ(j.value("images", 0u), 2u * kImages);
  EXPECT_EQ(j.value("batches", 0u), 2u * 5u);  // ceil(37 / 8) per epoch
  EXPECT_EQ(j.value("epochs", 0u), 2u);
  EXPECT_EQ(j.value("workers", 0u), 2u);
  EXPECT_EQ(j.value("skipped", 1u), 0u);
  EXPECT_EQ(j.value("dataset_size", 0u), kImages);
  EXPECT_EQ(j.value("transform", ""), "train");
  EXPECT_EQ(j.value("dtype", ""), "uint8");

  const std::vector<DumpLine> dump = read_dump(dump_path);
  ASSERT_EQ(dump.size(), 2u * kImages);
  const std::vector<std::int64_t> labels = expected_labels(root());
  ASSERT_EQ(labels.size(), kImages);

  const auto orders = orders_by_epoch(dump);
  ASSERT_EQ(orders.size(), 2u);
  for (const auto& [epoch, order] : orders) {
    std::vector<std::uint64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::uint64_t> all(kImages);
    for (std::uint64_t i = 0; i < kImages; ++i) all[i] = i;
    EXPECT_EQ(sorted, all) << "epoch " << epoch << " is not every sample exactly once";
  }
  EXPECT_NE(orders.begin()->second, std::next(orders.begin())->second) << "both epochs in the same order";

  for (const DumpLine& d : dump) {
    ASSERT_LT(d.index, kImages);
    EXPECT_EQ(d.label, labels[d.index]) << "sample " << d.index << " in epoch " << d.epoch;
  }
  // Batches count from 0 in each epoch and hold at most 8 samples.
  std::map<std::pair<std::uint64_t, std::uint64_t>, int> per_batch;
  for (const DumpLine& d : dump) ++per_batch[{d.epoch, d.batch}];
  for (const auto& [key, count] : per_batch) {
    EXPECT_LT(key.second, 5u);
    EXPECT_LE(count, 8);
  }
}

TEST_F(BenchCliTest, NoShuffleDeliversIndexOrder) {
  const std::string dump_path = dir_.path() + "/dump.tsv";
  const Outcome o =
      run_bench(dir_.path(), {"--data", root(), "--no-shuffle", "--batch", "8", "--workers", "2", "--size",
                              "32", "--transform", "eval", "--dump-indices", dump_path});
  ASSERT_TRUE(o.exited && o.code == 0) << describe(o);
  const std::vector<DumpLine> dump = read_dump(dump_path);
  ASSERT_EQ(dump.size(), kImages);
  for (std::uint64_t i = 0; i < kImages; ++i) {
    EXPECT_EQ(dump[i].index, i);
    EXPECT_EQ(dump[i].batch, i / 8);
  }
}

TEST_F(BenchCliTest, HumanSummaryWithoutProgressLineWhenNotATerminal) {
  const Outcome o =
      run_bench(dir_.path(), {"--data", root(), "--batch", "8", "--size", "32", "--workers", "1"});
  ASSERT_TRUE(o.exited && o.code == 0) << describe(o);
  EXPECT_NE(o.out.find("images/s"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("37"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find('\r'), std::string::npos) << "progress line drawn into a file";
  EXPECT_EQ(o.out.find('\x1b'), std::string::npos) << "escape sequence written into a file";
}

}  // namespace
}  // namespace forkfeed
