// The synthetic dataset maker: layout, determinism, format mix, sizes and spec checks.
#include "tools/mkdata/synthetic_images.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

using Bytes = std::vector<unsigned char>;

SyntheticDatasetSpec small_spec(const std::string& out) {
  SyntheticDatasetSpec spec;
  spec.out = out;
  spec.images = 21;
  spec.classes = 4;
  spec.seed = 3;
  spec.min_side = 40;
  spec.max_side = 120;
  spec.special_every = 7;
  return spec;
}

Bytes read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Every file under `root`, by path relative to it.
std::map<std::string, Bytes> read_tree(const fs::path& root) {
  std::map<std::string, Bytes> files;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.is_regular_file()) files[fs::relative(entry.path(), root).string()] = read_bytes(entry.path());
  }
  return files;
}

// The first start-of-frame marker (0xC0 baseline, 0xC2 progressive, ...), found by walking
// the marker segments: a byte search could hit 0xFF 0xC2 inside a table. 0 if none.
int jpeg_sof_marker(const Bytes& jpeg) {
  if (jpeg.size() < 4 || jpeg[0] != 0xFF || jpeg[1] != 0xD8) return 0;
  std::size_t pos = 2;
  while (pos + 4 <= jpeg.size() && jpeg[pos] == 0xFF) {
    const int marker = jpeg[pos + 1];
    const bool is_sof =
        marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
    if (is_sof) return marker;
    if (marker == 0xDA) return 0;  // start of scan before any frame header
    pos += 2 + ((jpeg[pos + 2] << 8) | jpeg[pos + 3]);
  }
  return 0;
}

// special_every 0: a folder of photographs, every file a baseline colour JPEG.
TEST(SyntheticImagesTest, SpecialEveryZeroWritesOnlyBaselineColourJpegs) {
  TempDir tmp;
  SyntheticDatasetSpec spec = small_spec(tmp.path() + "/d");
  spec.special_every = 0;
  ASSERT_TRUE(write_synthetic_dataset(spec).ok());
  const auto files = read_tree(tmp.path() + "/d");
  ASSERT_EQ(files.size(), 21u);
  for (const auto& [path, bytes] : files) {
    EXPECT_EQ(fs::path(path).extension(), ".jpg") << path;
    EXPECT_EQ(jpeg_sof_marker(bytes), 0xC0) << path;
    const cv::Mat image = cv::imdecode(bytes, cv::IMREAD_UNCHANGED);
    EXPECT_EQ(image.channels(), 3) << path;
  }
}

TEST(SyntheticImagesTest, WritesClassFoldersWithEvenCounts) {
  TempDir tmp;
  ASSERT_TRUE(write_synthetic_dataset(small_spec(tmp.path() + "/d")).ok());

  std::map<std::string, int> counts;
  for (const auto& entry : fs::directory_iterator(tmp.path() + "/d")) {
    ASSERT_TRUE(entry.is_directory()) << entry.path();
    for (const auto& file : fs::directory_iterator(entry.path())) {
      const std::string name = file.path().filename().string();
      EXPECT_EQ(name.rfind("img_", 0), 0u) << name;
      EXPECT_TRUE(file.path().extension() == ".jpg" || file.path().extension() == ".png") << name;
      ++counts[entry.path().filename().string()];
    }
  }
  const std::map<std::string, int> expected{
      {"class_000", 6}, {"class_001", 5}, {"class_002", 5}, {"class_003", 5}};
  EXPECT_EQ(counts, expected);
}

TEST(SyntheticImagesTest, SameSpecGivesIdenticalBytes) {
  TempDir tmp;
  ASSERT_TRUE(write_synthetic_dataset(small_spec(tmp.path() + "/a")).ok());
  ASSERT_TRUE(write_synthetic_dataset(small_spec(tmp.path() + "/b")).ok());
  const auto a = read_tree(tmp.path() + "/a");
  ASSERT_EQ(a.size(), 21u);
  EXPECT_TRUE(a == read_tree(tmp.path() + "/b"));
}

// Each image depends only on (seed, image number): a larger set extends a smaller one.
TEST(SyntheticImagesTest, MoreImagesKeepTheFirstOnes) {
  TempDir tmp;
  SyntheticDatasetSpec fewer = small_spec(tmp.path() + "/a");
  fewer.images = 9;
  ASSERT_TRUE(write_synthetic_dataset(fewer).ok());
  ASSERT_TRUE(write_synthetic_dataset(small_spec(tmp.path() + "/b")).ok());
  const auto b = read_tree(tmp.path() + "/b");
  for (const auto& [name, bytes] : read_tree(tmp.path() + "/a")) {
    ASSERT_TRUE(b.count(name)) << name;
    EXPECT_EQ(bytes, b.at(name)) << name;
  }
}

TEST(SyntheticImagesTest, DifferentSeedGivesDifferentImages) {
  TempDir tmp;
  SyntheticDatasetSpec other = small_spec(tmp.path() + "/b");
  other.seed += 1;
  ASSERT_TRUE(write_synthetic_dataset(small_spec(tmp.path() + "/a")).ok());
  ASSERT_TRUE(write_synthetic_dataset(other).ok());
  const auto a = read_tree(tmp.path() + "/a");
  const auto b = read_tree(tmp.path() + "/b");
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, bytes] : a) {
    ASSERT_TRUE(b.count(name)) << name;  // names depend on the image number only
    EXPECT_NE(bytes, b.at(name)) << name;
  }
}

TEST(SyntheticImagesTest, MixesGrayscaleProgressiveAndPng) {
  TempDir tmp;
  const std::string root = testing::make_image_folder(tmp.path(), 14, 2);
  int gray = 0, progressive = 0, png = 0, baseline = 0;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file()) continue;
    const cv::Mat image = cv::imread(entry.path().string(), cv::IMREAD_UNCHANGED);
    ASSERT_FALSE(image.empty()) << "does not decode: " << entry.path();
    if (entry.path().extension() == ".png") {
      ++png;
      continue;
    }
    const int sof = jpeg_sof_marker(read_bytes(entry.path()));
    ASSERT_TRUE(sof == 0xC0 || sof == 0xC2) << entry.path() << " SOF 0x" << std::hex << sof;
    if (image.channels() == 1) ++gray;
    if (sof == 0xC2) ++progressive;
    if (sof == 0xC0 && image.channels() == 3) ++baseline;
  }
  EXPECT_GE(gray, 1);
  EXPECT_GE(progressive, 1);
  EXPECT_GE(png, 1);
  EXPECT_GT(baseline, gray + progressive + png);  // plain JPEG stays the common case
}

// A format tied to a class would let a model, or a per-class benchmark, key on the codec.
TEST(SyntheticImagesTest, SpreadsRareFormatsOverClasses) {
  TempDir tmp;
  SyntheticDatasetSpec spec = small_spec(tmp.path() + "/d");
  spec.images = 200;
  spec.classes = 10;
  spec.special_every = 20;  // a multiple of classes: fixed positions would land in one class
  spec.min_side = spec.max_side = 8;
  ASSERT_TRUE(write_synthetic_dataset(spec).ok());
  std::map<std::string, int> png_per_class;
  for (const auto& entry : fs::recursive_directory_iterator(spec.out)) {
    if (entry.path().extension() == ".png") ++png_per_class[entry.path().parent_path().filename().string()];
  }
  EXPECT_GE(png_per_class.size(), 4u);
}

TEST(SyntheticImagesTest, SidesStayWithinRange) {
  TempDir tmp;
  const std::string root = testing::make_image_folder(tmp.path(), 30, 3, /*seed=*/5, 40, 120);
  int seen = 0;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file()) continue;
    const cv::Mat image = cv::imread(entry.path().string(), cv::IMREAD_UNCHANGED);
    ASSERT_FALSE(image.empty()) << entry.path();
    const int short_side = std::min(image.rows, image.cols);
    const int long_side = std::max(image.rows, image.cols);
    EXPECT_GE(short_side, 40) << entry.path();
    EXPECT_LE(short_side, 120) << entry.path();
    EXPECT_LE(3 * long_side, 4 * short_side) << entry.path() << " is wider than 4:3";
    ++seen;
  }
  EXPECT_EQ(seen, 30);
}

TEST(SyntheticImagesTest, ReportsProgressAfterEachImage) {
  TempDir tmp;
  std::vector<std::uint32_t> calls;
  ASSERT_TRUE(write_synthetic_dataset(small_spec(tmp.path() + "/d"), [&](std::uint32_t n) {
                calls.push_back(n);
              }).ok());
  ASSERT_EQ(calls.size(), 21u);
  for (std::uint32_t i = 0; i < calls.size(); ++i) EXPECT_EQ(calls[i], i + 1);
}

int thread_count() {
  int n = 0;
  for ([[maybe_unused]] const auto& task : fs::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// Tests make datasets and then fork loaders: a thread left behind (ours, or OpenCV's pool)
// would make ForkSafety see a multithreaded process.
TEST(SyntheticImagesTest, LeavesNoThreadBehind) {
  TempDir tmp;
  const int before = thread_count();
  SyntheticDatasetSpec spec = small_spec(tmp.path() + "/d");
  spec.images = 8;
  ASSERT_TRUE(write_synthetic_dataset(spec).ok());
  EXPECT_EQ(thread_count(), before);
}

TEST(SyntheticImagesTest, RejectsInvalidSpecsBeforeWriting) {
  TempDir tmp;
  const std::string out = tmp.path() + "/d";
  auto with = [&](auto change) {
    SyntheticDatasetSpec spec = small_spec(out);
    change(spec);
    return spec;
  };
  const std::vector<SyntheticDatasetSpec> invalid{
      with([](auto& s) { s.images = 0; }),
      with([](auto& s) { s.classes = 0; }),
      with([](auto& s) { s.classes = s.images + 1; }),
      with([](auto& s) { s.min_side = 7; }),
      with([](auto& s) { s.max_side = s.min_side - 1; }),
      with([](auto& s) { s.out.clear(); }),
  };
  for (const auto& spec : invalid) {
    const Status status = write_synthetic_dataset(spec);
    EXPECT_EQ(status.code(), Status::Code::kInvalidArgument) << status.message();
    EXPECT_FALSE(status.message().empty());
  }
  EXPECT_FALSE(fs::exists(out));
}

TEST(SyntheticImagesTest, NamesTheFolderItCannotCreate) {
  TempDir tmp;
  const std::string blocker = tmp.path() + "/file";
  std::ofstream(blocker) << "not a folder";
  const Status status = write_synthetic_dataset(small_spec(blocker + "/d"));
  EXPECT_EQ(status.code(), Status::Code::kIoError);
  EXPECT_NE(status.message().find(blocker), std::string::npos) << status.message();
}

TEST(SyntheticImagesTest, TempDirIsRemoved) {
  std::string path;
  {
    TempDir tmp;
    path = tmp.path();
    testing::make_image_folder(path, 3, 1);
    EXPECT_TRUE(fs::is_directory(path + "/data/class_000"));
  }
  EXPECT_FALSE(fs::exists(path));
}

}  // namespace
}  // namespace forkfeed
