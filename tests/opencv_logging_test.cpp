// OpenCV's own log follows --log-level: a file OpenCV warns about on every decode (a
// TIFF it cannot handle) costs one skipped-sample report of ours, not one OpenCV warning
// per decode per epoch, unless the user asks for debug output.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "tests/testing/command.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

// What OpenCV 4.6 prints for the file below, once per decode, at its default level.
constexpr const char* kOpenCvWarning = "TIFFRGBAImageOK";

// A 2x2 little-endian TIFF, 8-bit RGB, uncompressed, with PhotometricInterpretation 99:
// libtiff reads the header, then OpenCV warns that it cannot handle it and fails.
std::string unhandled_tiff() {
  std::string b = "II";
  auto u16 = [&](std::uint16_t v) { b += static_cast<char>(v & 0xFF), b += static_cast<char>(v >> 8); };
  auto u32 = [&](std::uint32_t v) {
    for (int i = 0; i < 4; ++i) b += static_cast<char>((v >> (8 * i)) & 0xFF);
  };
  struct Entry {
    std::uint16_t tag, type;
    std::uint32_t count, value;
  };
  constexpr std::uint32_t kPixels = 8 + 2 + 9 * 12 + 4, kBitsPerSample = kPixels + 12;
  const std::vector<Entry> entries = {{256, 3, 1, 2}, {257, 3, 1, 2},  {258, 3, 3, kBitsPerSample},
                                      {259, 3, 1, 1}, {262, 3, 1, 99}, {273, 4, 1, kPixels},
                                      {277, 3, 1, 3}, {278, 3, 1, 2},  {279, 4, 1, 12}};
  u16(42);
  u32(8);
  u16(static_cast<std::uint16_t>(entries.size()));
  for (const Entry& e : entries) u16(e.tag), u16(e.type), u32(e.count), u32(e.value);
  u32(0);  // no next directory
  for (int i = 0; i < 12; ++i) b += static_cast<char>(i * 20);
  u16(8), u16(8), u16(8);
  return b;
}

class OpenCvLoggingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = testing::make_image_folder(dir_.path(), 6, 2);
    std::ofstream(root_ + "/class_000/zz_unhandled.tif", std::ios::binary) << unhandled_tiff();
  }
  testing::CommandOutcome bench(std::vector<std::string> args) {
    std::vector<std::string> argv = {std::string(FORKFEED_BIN_DIR) + "/forkfeed-bench",
                                     "--data",
                                     root_,
                                     "--batch",
                                     "4",
                                     "--size",
                                     "16",
                                     "--json"};
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::run_command(argv, dir_.path());
  }
  testing::TempDir dir_;
  std::string root_;
};

TEST_F(OpenCvLoggingTest, WorkersKeepOpenCvQuietAtTheDefaultLevel) {
  for (const char* method : {"fork", "spawn"}) {
    const testing::CommandOutcome o =
        bench({"--workers", "2", "--epochs", "3", "--on-error", "skip", "--start-method", method});
    ASSERT_TRUE(o.exited && o.code == 0) << method << ": " << o.describe();
    EXPECT_EQ(o.err.find(kOpenCvWarning), std::string::npos) << method << ": " << o.describe();
  }
}

TEST_F(OpenCvLoggingTest, ProbeKeepsOpenCvQuietAtTheDefaultLevel) {
  const testing::CommandOutcome o = bench({"--probe"});
  ASSERT_TRUE(o.exited && o.code == 0) << o.describe();
  EXPECT_EQ(o.err.find(kOpenCvWarning), std::string::npos) << o.describe();
}

TEST_F(OpenCvLoggingTest, DebugLevelShowsOpenCvsMessages) {
  const testing::CommandOutcome o = bench({"--workers", "1", "--on-error", "skip", "--log-level", "debug"});
  ASSERT_TRUE(o.exited && o.code == 0) << o.describe();
  EXPECT_NE(o.err.find(kOpenCvWarning), std::string::npos) << o.describe();
}

}  // namespace
}  // namespace forkfeed
