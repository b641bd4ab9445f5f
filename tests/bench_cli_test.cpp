// forkfeed-bench from the outside: arguments, exit codes, the --json line, and the
// --dump-indices file as proof of exactly-once delivery and of the order.
//
// Over 300 lines on purpose: one case per flag, exit code and output of the tool, all
// run through the same command helper; splitting it would copy the fixture.
#include <signal.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/option_names.h"
#include "formats/tar_scan.h"
#include "loader/stats_fields.h"
#include "tests/testing/command.h"
#include "tests/testing/processes.h"
#include "tests/testing/scoped_env.h"
#include "tests/testing/temp_dataset.h"
#include "tests/testing/temp_shards.h"
#include "tools/mkdata/sample_fields.h"

namespace forkfeed {
namespace {

using testing::ScopedEnv;

namespace fs = std::filesystem;

constexpr std::uint32_t kImages = 37;
constexpr std::uint32_t kClasses = 3;

using Outcome = testing::CommandOutcome;

using testing::lines_of;
using testing::read_file;

// Starts forkfeed-bench with `args`, stdout and stderr captured in files under `dir`.
testing::StartedCommand start_bench(const std::string& dir, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {std::string(FORKFEED_BIN_DIR) + "/forkfeed-bench"};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::start_command(argv, dir);
}

// Runs forkfeed-bench to completion; kills it after `timeout` so a hang fails the test
// instead of blocking ctest.
Outcome run_bench(const std::string& dir, const std::vector<std::string>& args,
                  std::chrono::seconds timeout = std::chrono::seconds(120)) {
  return testing::wait_command(start_bench(dir, args), timeout);
}

std::string describe(const Outcome& o) { return o.describe(); }

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

// The choices shown are base/option_names.h's tables, whatever they hold. --transform
// takes text (a pipeline of ops), not a choice: its help names the shorthands.
TEST_F(BenchCliTest, HelpListsTheEnumNames) {
  const Outcome o = run_bench(dir_.path(), {"--help"});
  ASSERT_TRUE(o.exited && o.code == 0) << describe(o);
  const auto lists = [&](const std::vector<std::string>& names) {
    std::string choices;
    for (const std::string& n : names) choices += (choices.empty() ? "{" : ",") + n;
    return o.out.find(choices + "}") != std::string::npos;
  };
  EXPECT_NE(o.out.find("train (RandomResizedCrop + flip), eval (Resize + CenterCrop)"), std::string::npos)
      << o.out;
  EXPECT_TRUE(lists(enum_names<DType>())) << o.out;
  EXPECT_TRUE(lists(enum_names<OnError>())) << o.out;
  EXPECT_TRUE(lists(enum_names<StartMethod>())) << o.out;
  EXPECT_TRUE(lists(enum_names<ForkHazardPolicy>())) << o.out;
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

// --transform takes any text; the loader's check of the options refuses a bad one,
// naming the op (or its argument) at fault, with the bad-arguments exit.
TEST_F(BenchCliTest, UnknownTransformIsAnError) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"bogus", "bogus"},
      {"RandomResizedCrop(32), Bogus()", "unknown op 'Bogus'"},
      {"RandomResizedCrop(32), RandomHorizontalFlip(p=2)", "RandomHorizontalFlip's p"},
      // No image could pass: refused before a file is read, not skipped file by file.
      {"Resize(20000), RandomCrop(64)", "over max_pixels"}};
  for (const auto& [text, named] : cases) {
    const Outcome o = run_bench(dir_.path(), {"--data", root(), "--transform", text});
    EXPECT_TRUE(o.exited && o.code == 2) << text << ": " << describe(o);
    EXPECT_EQ(lines_of(o.err).size(), 1u) << text << ": " << describe(o);
    EXPECT_NE(o.err.find("transform"), std::string::npos) << text << ": " << describe(o);
    EXPECT_NE(o.err.find(named), std::string::npos) << text << ": " << describe(o);
  }
}

TEST_F(BenchCliTest, MalformedNumbersAreErrors) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--batch", "-1"},
                                               {"--workers", "two"},
                                               {"--epochs", "0"},
                                               {"--seed", "-5"},
                                               {"--connect-timeout", "nan"},
                                               {"--connect-timeout", "-inf"},
                                               {"--connect-timeout", "0.0001"}}) {
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
  // Every LoaderStats field, under the one name the loader, the daemon and Python use.
  LoaderStats stats;
  for_each_stat(stats, [&](const char* key, const auto&) {
    EXPECT_TRUE(j.contains(key)) << key << " missing in " << out_lines.back();
  });
  EXPECT_EQ(j.value("delivered_samples", 0u), 2u * kImages);
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
    EXPECT_EQ(testing::exactly_once(order, kImages), "")
        << "epoch " << epoch << " is not every sample exactly once";
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

// A pipeline's text runs as given; its size (no --size) is the one it makes, which the
// report shows.
TEST_F(BenchCliTest, APipelineRunsAtTheSizeItMakes) {
  const std::string text = "Resize(40), CenterCrop(32), RandomHorizontalFlip()";
  const Outcome o = run_bench(
      dir_.path(), {"--data", root(), "--json", "--batch", "8", "--workers", "1", "--transform", text});
  ASSERT_TRUE(o.exited && o.code == 0) << describe(o);
  const std::vector<std::string> out_lines = lines_of(o.out);
  ASSERT_EQ(out_lines.size(), 1u) << describe(o);
  const nlohmann::json j = nlohmann::json::parse(out_lines.back(), nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << out_lines.back();
  EXPECT_EQ(j.value("transform", ""), text);
  EXPECT_EQ(j.value("size", 0u), 32u);
  EXPECT_EQ(j.value("images", 0u), kImages);
}

// --fields reads every field of every sample, and the report gives the bytes each one
// delivered: what forkfeed-mkdata wrote, field by field, in both epochs.
TEST_F(BenchCliTest, FieldsReportTheBytesEachFieldDelivered) {
  constexpr std::uint64_t kSeed = 7;
  const std::vector<std::string> mkdata = {std::string(FORKFEED_BIN_DIR) + "/forkfeed-mkdata",
                                           "--out",
                                           dir_.path() + "/wds",
                                           "--images",
                                           std::to_string(kImages),
                                           "--classes",
                                           std::to_string(kClasses),
                                           "--seed",
                                           std::to_string(kSeed),
                                           "--format",
                                           "wds",
                                           "--fields",
                                           "jpg,txt,cls,npy"};
  const Outcome made = testing::run_command(mkdata, dir_.path());
  ASSERT_TRUE(made.exited && made.code == 0) << describe(made);
  const std::string fields = "image=jpg;png, caption=txt, label=cls, emb=npy";
  const std::vector<std::string> args = {"--shards", dir_.path() + "/wds/shard-{000000..000000}.tar",
                                         "--fields", fields,
                                         "--size",   "32",
                                         "--batch",  "8",
                                         "--epochs", "2"};
  std::vector<std::string> json_args = args;
  json_args.push_back("--json");
  const Outcome o = run_bench(dir_.path(), json_args);
  ASSERT_TRUE(o.exited && o.code == 0) << describe(o);
  const nlohmann::json j = nlohmann::json::parse(lines_of(o.out).back(), nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << o.out;
  EXPECT_EQ(j.value("fields", ""), fields);
  EXPECT_EQ(j.value("missing", ""), "error");
  EXPECT_EQ(j.value("images", 0u), 2u * kImages);

  std::uint64_t captions = 0;
  for (std::uint32_t n = 0; n < kImages; ++n) captions += mkdata::caption(kSeed, n).size();
  const std::map<std::string, std::uint64_t> expected = {
      {"image", 2u * kImages * 32 * 32 * 3},
      {"caption", 2 * captions},
      {"label", 2u * kImages * sizeof(std::int64_t)},
      {"emb", 2u * kImages * 8 * sizeof(float)},
      {"__key__", 2u * kImages * std::string("class_000/img_00000").size()},
  };
  ASSERT_TRUE(j.contains("field_bytes")) << o.out;
  using FieldBytes = std::map<std::string, std::uint64_t>;
  EXPECT_EQ(j["field_bytes"].get<FieldBytes>(), expected) << o.out;

  const Outcome human = run_bench(dir_.path(), args);
  ASSERT_TRUE(human.exited && human.code == 0) << describe(human);
  EXPECT_NE(human.out.find("fields       image "), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("             caption "), std::string::npos) << human.out;
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

// Parses the single JSON line a --json run prints; a discarded value on failure.
nlohmann::json json_of(const Outcome& o) {
  const std::vector<std::string> out_lines = lines_of(o.out);
  if (out_lines.size() != 1) return nlohmann::json::value_t::discarded;
  return nlohmann::json::parse(out_lines.front(), nullptr, /*allow_exceptions=*/false);
}

// An interrupted run and the run resumed from its state, with another worker count,
// deliver together exactly what one uninterrupted run delivers, line for line — for
// a stop inside epoch 0, at its very end (batch 8 of 8), and inside epoch 1.
TEST_F(BenchCliTest, StopSaveAndResumeEqualsAnUninterruptedRun) {
  const std::vector<std::string> common = {"--data", root(), "--epochs", "2", "--batch", "5", "--size", "32"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = common;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  const std::string full_path = dir_.path() + "/full.tsv";
  const Outcome full = run_bench(dir_.path(), with({"--dump-indices", full_path}));
  ASSERT_TRUE(full.exited && full.code == 0) << describe(full);
  const std::vector<std::string> expected = lines_of(read_file(full_path));
  ASSERT_EQ(expected.size(), 2u * kImages);

  const std::string state_path = dir_.path() + "/s.json";
  const std::string a_path = dir_.path() + "/a.tsv";
  const std::string b_path = dir_.path() + "/b.tsv";
  for (const std::uint64_t k : {1u, 4u, 8u, 9u, 15u}) {
    SCOPED_TRACE("stopped after " + std::to_string(k) + " batches");
    fs::remove(state_path);
    const Outcome a = run_bench(dir_.path(), with({"--stop-after-batches", std::to_string(k), "--save-state",
                                                   state_path, "--dump-indices", a_path, "--json"}));
    ASSERT_TRUE(a.exited && a.code == 0) << describe(a);
    const nlohmann::json ja = json_of(a);
    ASSERT_FALSE(ja.is_discarded()) << describe(a);
    EXPECT_EQ(ja.value("batches", 0u), k);
    EXPECT_TRUE(ja.value("stopped", false));
    EXPECT_FALSE(ja.value("resumed", true));
    EXPECT_EQ(ja.value("saved_state", ""), state_path);
    EXPECT_TRUE(fs::exists(state_path));
    EXPECT_FALSE(fs::exists(state_path + ".tmp")) << "the temporary state file was left behind";

    const Outcome b = run_bench(
        dir_.path(), with({"--resume", state_path, "--workers", "1", "--dump-indices", b_path, "--json"}));
    ASSERT_TRUE(b.exited && b.code == 0) << describe(b);
    const nlohmann::json jb = json_of(b);
    ASSERT_FALSE(jb.is_discarded()) << describe(b);
    EXPECT_TRUE(jb.value("resumed", false));
    EXPECT_TRUE(jb.at("saved_state").is_null());
    EXPECT_EQ(jb.value("batches", 0u), 16u - k);

    std::vector<std::string> together = lines_of(read_file(a_path));
    const std::vector<std::string> after = lines_of(read_file(b_path));
    together.insert(together.end(), after.begin(), after.end());
    EXPECT_EQ(together, expected);
  }
}

// --save-state alone saves at the end of the run, and --epochs counts the whole
// schedule: resuming a finished 1-epoch run with --epochs 2 runs epoch 1 only.
TEST_F(BenchCliTest, StateSavedAtTheEndResumesWithTheNextEpoch) {
  const std::vector<std::string> common = {"--data", root(), "--batch", "5", "--size", "32"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = common;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  const std::string full_path = dir_.path() + "/full.tsv";
  const std::string state_path = dir_.path() + "/s.json";
  const std::string a_path = dir_.path() + "/a.tsv";
  const std::string b_path = dir_.path() + "/b.tsv";
  const Outcome full = run_bench(dir_.path(), with({"--epochs", "2", "--dump-indices", full_path}));
  ASSERT_TRUE(full.exited && full.code == 0) << describe(full);
  const Outcome a =
      run_bench(dir_.path(), with({"--epochs", "1", "--save-state", state_path, "--dump-indices", a_path}));
  ASSERT_TRUE(a.exited && a.code == 0) << describe(a);
  // Resuming from and saving to the same file: the rename replaces it only at the end.
  const Outcome b = run_bench(dir_.path(), with({"--epochs", "2", "--resume", state_path, "--save-state",
                                                 state_path, "--dump-indices", b_path}));
  ASSERT_TRUE(b.exited && b.code == 0) << describe(b);

  std::vector<std::string> together = lines_of(read_file(a_path));
  const std::vector<std::string> after = lines_of(read_file(b_path));
  together.insert(together.end(), after.begin(), after.end());
  EXPECT_EQ(together, lines_of(read_file(full_path)));

  // The schedule is finished: resuming once more delivers nothing, successfully.
  const Outcome c = run_bench(dir_.path(), with({"--epochs", "2", "--resume", state_path, "--json"}));
  ASSERT_TRUE(c.exited && c.code == 0) << describe(c);
  EXPECT_EQ(json_of(c).value("batches", 1u), 0u) << describe(c);
}

TEST_F(BenchCliTest, ResumeWithAnotherBatchSizeIsOneLineNamingIt) {
  const std::string state_path = dir_.path() + "/s.json";
  const Outcome a = run_bench(dir_.path(), {"--data", root(), "--batch", "5", "--size", "32",
                                            "--stop-after-batches", "2", "--save-state", state_path});
  ASSERT_TRUE(a.exited && a.code == 0) << describe(a);
  const Outcome b = run_bench(dir_.path(), {"--data", root(), "--batch", "8", "--size", "32", "--resume",
                                            state_path, "--log-level", "warn"});
  ASSERT_TRUE(b.exited) << describe(b);
  EXPECT_EQ(b.code, 1) << describe(b);
  EXPECT_EQ(lines_of(b.err).size(), 1u) << describe(b);
  EXPECT_EQ(b.err.rfind("forkfeed-bench: ", 0), 0u) << describe(b);
  EXPECT_NE(b.err.find("batch_size"), std::string::npos) << describe(b);
}

TEST_F(BenchCliTest, ResumeFromAFileThatIsNoStateIsAnError) {
  const std::string empty_path = dir_.path() + "/empty.json";
  const std::string junk_path = dir_.path() + "/junk.json";
  std::ofstream(empty_path).flush();
  std::ofstream(junk_path) << "{\"epoch\": 3}\n";
  for (const std::string& path : {empty_path, junk_path, dir_.path() + "/missing.json"}) {
    const Outcome o = run_bench(dir_.path(), {"--data", root(), "--resume", path, "--log-level", "warn"});
    ASSERT_TRUE(o.exited) << describe(o);
    EXPECT_EQ(o.code, 1) << path << ": " << describe(o);
    EXPECT_EQ(lines_of(o.err).size(), 1u) << describe(o);
    EXPECT_TRUE(o.out.empty()) << describe(o);
  }
}

// A class folder holding one .jpg that is not an image.
class BenchBadFileTest : public BenchCliTest {
 protected:
  void SetUp() override {
    root_ = testing::make_image_folder(dir_.path(), kImages, kClasses);
    std::vector<fs::path> jpegs;
    for (const auto& entry : fs::directory_iterator(fs::path(root_) / "class_001")) {
      if (entry.path().extension() == ".jpg") jpegs.push_back(entry.path());
    }
    ASSERT_FALSE(jpegs.empty());
    std::sort(jpegs.begin(), jpegs.end());
    bad_ = jpegs.front().string();
    std::ofstream(bad_, std::ios::binary | std::ios::trunc) << "these bytes are not a JPEG";
  }

  std::string root_;
  std::string bad_;
};

TEST_F(BenchBadFileTest, SkipLeavesTheFileOutAndCountsIt) {
  const std::string dump_path = dir_.path() + "/dump.tsv";
  const Outcome o = run_bench(dir_.path(), {"--data", root_, "--batch", "5", "--size", "32", "--on-error",
                                            "skip", "--json", "--dump-indices", dump_path});
  ASSERT_TRUE(o.exited && o.code == 0) << describe(o);
  const nlohmann::json j = json_of(o);
  ASSERT_FALSE(j.is_discarded()) << describe(o);
  EXPECT_EQ(j.value("skipped", 0u), 1u);
  EXPECT_EQ(j.value("images", 0u), kImages - 1);
  EXPECT_EQ(j.value("on_error", ""), "skip");
  EXPECT_EQ(j.value("worker_restarts", 1u), 0u);
  EXPECT_NE(o.err.find(bad_), std::string::npos) << "the skipped file is not logged: " << describe(o);

  // Every other sample exactly once.
  std::vector<std::uint64_t> delivered;
  for (const DumpLine& d : read_dump(dump_path)) delivered.push_back(d.index);
  std::sort(delivered.begin(), delivered.end());
  EXPECT_EQ(std::adjacent_find(delivered.begin(), delivered.end()), delivered.end()) << "a sample came twice";
  EXPECT_EQ(delivered.size(), kImages - 1);
}

// The files' content cache (dataset/content_cache.h): an open after the first reads no
// file whose stamp is unchanged — here the last file, whose open() fails
// (tests/fake_io/fail_open.cpp), is not opened at all while indexing, where without the
// cache it is, and cannot be read (the warning). The pass reads it last: one batch is read.
TEST_F(BenchBadFileTest, ACachedOpenReadsNoFileUnchangedSince) {
  fs::remove(bad_);  // every file good
  std::vector<std::string> names;
  for (const auto& entry : fs::recursive_directory_iterator(root_))
    if (entry.is_regular_file()) names.push_back(entry.path().string());
  std::sort(names.begin(), names.end());
  const std::vector<std::string> args = {
      "--data", root_, "--batch", "5", "--size", "32", "--no-shuffle", "--stop-after-batches", "1"};
  const auto run = [&](const std::string& cache, bool failing) {
    const ScopedEnv dir("FORKFEED_CACHE_DIR", cache);
    std::optional<ScopedEnv> preload, fail, asan;
    if (failing) {
      preload.emplace("LD_PRELOAD", FAIL_OPEN);
      fail.emplace("FORKFEED_FAIL_OPEN", names.back());
#if defined(__SANITIZE_ADDRESS__)
      asan.emplace("ASAN_OPTIONS",
                   std::string(std::getenv("ASAN_OPTIONS") ? std::getenv("ASAN_OPTIONS") : "") +
                       ":verify_asan_link_order=0");
#endif
    }
    return run_bench(dir_.path(), args);
  };
  const std::string cache = dir_.path() + "/cache";
  const Outcome first = run(cache, false);
  ASSERT_TRUE(first.exited && first.code == 0) << describe(first);
  const Outcome cached = run(cache, true);
  ASSERT_TRUE(cached.exited && cached.code == 0) << describe(cached);
  EXPECT_EQ(cached.err.find("could not be read while indexing"), std::string::npos) << describe(cached);
  const Outcome uncached = run(dir_.path() + "/another-cache", true);
  ASSERT_TRUE(uncached.exited && uncached.code == 0) << describe(uncached);
  EXPECT_NE(
      uncached.err.find("1 of " + std::to_string(names.size()) + " files could not be read while indexing"),
      std::string::npos)
      << describe(uncached);
}

// A disk that fails one file's open() with EIO (tests/fake_io/fail_open.cpp): not the
// file's fault, so --on-error skip does not skip it. The run fails naming the errno, saves
// the state at the failed batch, and a resume from it, the disk well again, delivers the
// rest: every sample exactly once over both runs.
TEST_F(BenchBadFileTest, AnIoErrorIsNeverSkippedAndTheSavedStateResumesAtItsBatch) {
  fs::remove(bad_);  // every file good
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(fs::path(root_) / "class_000"))
    names.push_back(entry.path().string());
  std::sort(names.begin(), names.end());
  const std::string failing = names.at(1);  // a whole path: it matches this file only
  const std::vector<std::string> common = {"--data",       root_,
                                           "--batch",      "5",
                                           "--size",       "32",
                                           "--on-error",   "skip",
                                           "--save-state", dir_.path() + "/state.json"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), common.begin(), common.end());
    return more;
  };
  Outcome failed;
  {
    const ScopedEnv preload("LD_PRELOAD", FAIL_OPEN);
    const ScopedEnv fail("FORKFEED_FAIL_OPEN", failing);
#if defined(__SANITIZE_ADDRESS__)
    const ScopedEnv asan("ASAN_OPTIONS",
                         std::string(std::getenv("ASAN_OPTIONS") ? std::getenv("ASAN_OPTIONS") : "") +
                             ":verify_asan_link_order=0");
#endif
    failed = run_bench(dir_.path(), with({"--dump-indices", dir_.path() + "/first.tsv"}));
  }
  ASSERT_TRUE(failed.exited && failed.code != 0) << describe(failed);
  EXPECT_NE(failed.err.find("Input/output error"), std::string::npos) << describe(failed);
  EXPECT_NE(failed.err.find(failing), std::string::npos) << describe(failed);
  EXPECT_NE(failed.err.find("the state to resume from that batch is saved in"), std::string::npos)
      << describe(failed);
  ASSERT_TRUE(fs::exists(dir_.path() + "/state.json"));
  const Outcome rest =
      run_bench(dir_.path(),
                with({"--resume", dir_.path() + "/state.json", "--dump-indices", dir_.path() + "/rest.tsv"}));
  ASSERT_TRUE(rest.exited && rest.code == 0) << describe(rest);
  std::vector<std::uint64_t> delivered;
  for (const char* part : {"/first.tsv", "/rest.tsv"}) {
    for (const DumpLine& d : read_dump(dir_.path() + part)) delivered.push_back(d.index);
  }
  std::sort(delivered.begin(), delivered.end());
  std::vector<std::uint64_t> all(kImages - 1);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(delivered, all) << "every sample exactly once, none skipped";
}

// A shard cut short: what lies past the damage cannot be counted in samples, so the
// report and the JSON count it in bytes, next to the samples left out.
TEST_F(BenchBadFileTest, ADamagedShardIsCountedInBytes) {
  ::setenv("FORKFEED_CACHE_DIR", (dir_.path() + "/cache").c_str(), 1);
  std::ofstream(bad_, std::ios::binary | std::ios::trunc) << "still not a JPEG";
  fs::remove(bad_);  // shards of the good images only
  const testing::TempShards shards = testing::make_shards(dir_.path(), root_, 4);
  const auto size = fs::file_size(shards.files[0]);
  const std::vector<TarMember> members = scan_tar_file(shards.files[0]).value_or_throw();
  ASSERT_EQ(members.size(), 8u);                                              // 4 samples: image, label
  fs::resize_file(shards.files[0], members[4].offset + members[4].size / 2);  // into the third image
  const Outcome o = run_bench(
      dir_.path(), {"--shards", shards.spec, "--batch", "5", "--size", "32", "--on-error", "skip", "--json"});
  const Outcome human =
      run_bench(dir_.path(), {"--shards", shards.spec, "--batch", "5", "--size", "32", "--on-error", "skip"});
  ::unsetenv("FORKFEED_CACHE_DIR");
  ASSERT_TRUE(o.exited && o.code == 0) << describe(o);
  const nlohmann::json j = json_of(o);
  ASSERT_FALSE(j.is_discarded()) << describe(o);
  EXPECT_GT(j.value("skipped_bytes", 0u), 0u) << describe(o);
  EXPECT_LT(j.value("skipped_bytes", 0u), size);
  ASSERT_TRUE(human.exited && human.code == 0) << describe(human);
  EXPECT_NE(human.out.find("bytes of damaged shards"), std::string::npos) << human.out;
}

TEST_F(BenchBadFileTest, FailNamesTheFile) {
  const Outcome o = run_bench(dir_.path(), {"--data", root_, "--batch", "5", "--size", "32", "--on-error",
                                            "fail", "--log-level", "warn"});
  ASSERT_TRUE(o.exited) << describe(o);
  EXPECT_EQ(o.code, 1) << describe(o);
  EXPECT_EQ(o.err.rfind("forkfeed-bench: ", 0), 0u) << describe(o);
  EXPECT_NE(o.err.find(bad_), std::string::npos) << describe(o);
}

TEST_F(BenchCliTest, SpawnedWorkersDeliverTheSameOrderAsForkedOnes) {
  const std::string fork_path = dir_.path() + "/fork.tsv";
  const std::string spawn_path = dir_.path() + "/spawn.tsv";
  const Outcome f = run_bench(
      dir_.path(), {"--data", root(), "--batch", "5", "--size", "32", "--json", "--dump-indices", fork_path});
  ASSERT_TRUE(f.exited && f.code == 0) << describe(f);
  const Outcome s = run_bench(dir_.path(), {"--data", root(), "--batch", "5", "--size", "32", "--json",
                                            "--start-method", "spawn", "--dump-indices", spawn_path});
  ASSERT_TRUE(s.exited && s.code == 0) << describe(s);
  EXPECT_EQ(json_of(s).value("start_method", ""), "spawn") << describe(s);
  EXPECT_EQ(json_of(f).value("start_method", ""), "fork") << describe(f);
  EXPECT_EQ(read_file(spawn_path), read_file(fork_path));
}

// The child processes of `pid`, from every thread's /proc children list.
std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> children;
  std::error_code ec;
  for (const auto& task : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::istringstream in(read_file((task.path() / "children").string()));
    for (pid_t child = 0; in >> child;) children.push_back(child);
  }
  return children;
}

// A worker killed from outside is replaced: the run still delivers every epoch exactly
// once, and --json counts the restart.
TEST_F(BenchCliTest, KilledWorkerIsReplacedAndCounted) {
  const std::string dump_path = dir_.path() + "/dump.tsv";
  constexpr std::uint64_t kEpochs = 150;  // about 2 s: ample time to kill the worker mid-run
  const testing::StartedCommand bench =
      start_bench(dir_.path(), {"--data", root(), "--batch", "5", "--size", "32", "--workers", "1",
                                "--epochs", std::to_string(kEpochs), "--json", "--dump-indices", dump_path});
  const pid_t pid = bench.pid;
  ASSERT_GT(pid, 0);
  std::vector<pid_t> workers;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (workers.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    workers = children_of(pid);
  }
  // Let it deliver a few batches first, so the worker dies in the middle of its work.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(workers.size(), 1u) << "expected the one worker as forkfeed-bench's only child";
  ASSERT_EQ(kill(workers.front(), SIGKILL), 0) << std::strerror(errno);
  const Outcome o = testing::wait_command(bench);
  ASSERT_TRUE(o.exited && o.code == 0) << describe(o);
  const nlohmann::json j = json_of(o);
  ASSERT_FALSE(j.is_discarded()) << describe(o);
  ASSERT_EQ(j.value("epochs", 0u), kEpochs) << "the worker was killed after the run ended; " << describe(o);
  EXPECT_EQ(j.value("worker_restarts", 0u), 1u) << describe(o);
  EXPECT_EQ(j.value("images", 0u), kEpochs * kImages);

  const auto orders = orders_by_epoch(read_dump(dump_path));
  ASSERT_EQ(orders.size(), kEpochs);
  for (const auto& [epoch, order] : orders) {
    EXPECT_EQ(testing::exactly_once(order, kImages), "")
        << "epoch " << epoch << " is not every sample exactly once";
  }
}

// CLI11 alone saturates 64-bit values (2^64 became 2^64 - 1) and wraps negative ones;
// every integer flag refuses both, naming itself and its range, as a bad argument.
TEST_F(BenchCliTest, IntegerFlagsRefuseOverflowAndNegativeValues) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--seed", "18446744073709551616"},
                                               {"--seed", "-1"},
                                               {"--workers", "4294967296"},
                                               {"--stop-after-batches", "99999999999999999999"},
                                               {"--pin-memory-device", "-9223372036854775809"},
                                               {"--task-timeout", "1e3"}}) {
    std::vector<std::string> full = {"--data", root(), "--workers", "1", "--batch", "8", "--size", "16"};
    full.insert(full.end(), args.begin(), args.end());
    const Outcome o = run_bench(dir_.path(), full);
    EXPECT_TRUE(o.exited && o.code == 2) << args[0] << " " << args[1] << ": " << describe(o);
    EXPECT_EQ(lines_of(o.err).size(), 1u) << describe(o);
    EXPECT_NE(o.err.find(args[0]), std::string::npos) << describe(o);
    EXPECT_NE(o.err.find("must be an integer from"), std::string::npos) << describe(o);
  }
}

// A flag that sets an option states the option's range, the one validate() and every other
// face states, for any value outside it: --prefetch 0 and --prefetch -1 alike (they named
// two ranges, "at least 1" and "not negative").
TEST_F(BenchCliTest, AValueOutsideAnOptionsRangeGetsTheOptionsRange) {
  for (const auto& [flag, values, range] :
       {std::tuple<std::string, std::vector<std::string>, std::string>{
            "--prefetch",
            {"0", "-1"},
            "must be an integer from 1 to 4294967295 (batches in flight per worker)"},
        {"--batch", {"0", "-1", "65537"}, "must be an integer from 1 to 65536 (samples per batch)"},
        {"--size",
         {"7", "-1", "4097"},
         "must be 0 (the transform's) or an integer from 8 to 4096 (pixels)"}}) {
    for (const std::string& value : values) {
      const Outcome o = run_bench(dir_.path(), {"--data", root(), flag, value});
      EXPECT_TRUE(o.exited && o.code == 2) << flag << " " << value << ": " << describe(o);
      EXPECT_NE(o.err.find(range + ", got " + value), std::string::npos)
          << flag << " " << value << ": " << describe(o);
    }
  }
}

// A pass of which every sample was skipped (no image is 500 pixels wide) is a failure,
// not a run of 0 images that exits 0.
TEST_F(BenchCliTest, APassThatSkippedEverySampleExitsNonZero) {
  const Outcome o = run_bench(dir_.path(), {"--data", root(), "--workers", "1", "--batch", "8", "--on-error",
                                            "skip", "--transform", "RandomCrop(500)", "--log-level", "off"});
  EXPECT_TRUE(o.exited && o.code == 1) << describe(o);
  EXPECT_NE(o.err.find("every sample of epoch 0's pass was skipped"), std::string::npos) << describe(o);
}

// --help promises 2 for bad arguments, whichever check catches them: CLI11's parser
// (its own codes are 104 to 114) or the loader's validation of the values together.
TEST_F(BenchCliTest, BadArgumentsExitWithTheDocumentedCode) {
  const Outcome help = run_bench(dir_.path(), {"--help"});
  ASSERT_NE(help.out.find("2 bad arguments"), std::string::npos) << describe(help);
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--bogus-flag"},
                                               {"--data", root(), "--workers", "two"},
                                               {"--data", root(), "--epochs", "0"},
                                               {"--data", root(), "--transform", "bogus"},
                                               {"--workers", "1"},
                                               {"--data", root(), "--batch", "0"},
                                               {"--data", root(), "--rank", "2", "--world-size", "2"},
                                               {"--data", root(), "--size", "5"},
                                               {"--data", root(), "--probe", "--size", "5"}}) {
    const Outcome o = run_bench(dir_.path(), args);
    std::string shown;
    for (const std::string& a : args) shown += a + " ";
    EXPECT_TRUE(o.exited && o.code == 2) << shown << ": " << describe(o);
    EXPECT_EQ(lines_of(o.err).size(), 1u) << shown << ": " << describe(o);
  }
}

// One Ctrl-C ends the run with its summary even while the only worker is stopped
// (SIGSTOP), so the batch being waited for never comes.
TEST_F(BenchCliTest, OneCtrlCStopsTheRunWhileAWorkerIsStopped) {
  const std::string state = dir_.path() + "/ctrl_c_state.json";
  testing::StartedCommand bench = start_bench(
      dir_.path(), {"--data", root(), "--workers", "1", "--batch", "4", "--size", "16", "--epochs", "1000000",
                    "--start-method", "fork", "--json", "--save-state", state});
  ASSERT_GT(bench.pid, 0);
  std::vector<pid_t> workers;
  ASSERT_TRUE(testing::eventually(
      [&] {
        workers = testing::children_of(bench.pid);
        return !workers.empty();
      },
      std::chrono::seconds(60)))
      << "forkfeed-bench started no worker";
  const pid_t worker = workers.front();
  ASSERT_EQ(::kill(worker, SIGSTOP), 0) << std::strerror(errno);
  EXPECT_TRUE(
      testing::eventually([&] { return testing::process_state(worker) == 'T'; }, std::chrono::seconds(30)));
  // Time to use up the batches already decoded, so that it waits on the stopped worker.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_EQ(::kill(bench.pid, SIGINT), 0) << std::strerror(errno);
  const Outcome o = testing::wait_command(bench, std::chrono::seconds(60));
  if (testing::alive(worker)) {  // not left stopped behind, whatever happened
    ::kill(worker, SIGKILL);
    ::kill(worker, SIGCONT);
  }
  ASSERT_TRUE(o.exited) << describe(o);
  EXPECT_EQ(o.code, 130) << describe(o);
  const std::vector<std::string> out = lines_of(o.out);
  ASSERT_FALSE(out.empty()) << describe(o);
  const nlohmann::json j = nlohmann::json::parse(out.back(), nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(j.is_object()) << describe(o);
  EXPECT_TRUE(j.contains("images")) << describe(o);
  // The interrupted wait changed nothing: the state is saved, as after any clean stop.
  std::ifstream saved(state);
  const nlohmann::json s = nlohmann::json::parse(saved, nullptr, /*allow_exceptions=*/false);
  EXPECT_TRUE(s.is_object() && s.contains("position"))
      << "no state saved at " << state << "; " << describe(o);
}

}  // namespace
}  // namespace forkfeed
