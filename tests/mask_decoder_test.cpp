// decode_mask (workers/mask_decoder.h) on PNGs written here byte by byte — every row filter,
// bit depths of 8 (libdeflate's path) and fewer (libpng's, through its setjmp error path),
// corrupt and truncated files, sizes other than the image's — and .npy masks; follow()
// (transforms/sample_geometry.h) against the steps done one after another.
#include "workers/mask_decoder.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <opencv2/core.hpp>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "transforms/sample_geometry.h"

namespace forkfeed {
namespace {

using Bytes = std::vector<std::uint8_t>;
using Ids = std::vector<std::vector<int>>;

void put32(Bytes& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>(v >> shift));
}

void chunk(Bytes& out, const char* type, const Bytes& data) {
  put32(out, static_cast<std::uint32_t>(data.size()));
  Bytes typed(type, type + 4);
  typed.insert(typed.end(), data.begin(), data.end());
  out.insert(out.end(), typed.begin(), typed.end());
  put32(out, static_cast<std::uint32_t>(crc32(0, typed.data(), static_cast<uInt>(typed.size()))));
}

// A PNG of `ids` (each < 2^bits), rows filtered with filter `y % 5` (all five), packed at
// `bits` (16: big-endian), palette or grey, its IDAT split in two.
Bytes png(const Ids& ids, int bits, bool palette) {
  const int height = static_cast<int>(ids.size()), width = static_cast<int>(ids[0].size());
  const int row_bytes = (width * bits + 7) / 8, pixel = std::max(1, bits / 8);
  Bytes raw, prior(row_bytes, 0);
  for (int y = 0; y < height; ++y) {
    Bytes line(row_bytes, 0);
    for (int x = 0; x < width; ++x) {
      if (bits == 16) {
        line[2 * x] = static_cast<std::uint8_t>(ids[y][x] >> 8);
        line[2 * x + 1] = static_cast<std::uint8_t>(ids[y][x]);
      } else {
        line[x * bits / 8] |= static_cast<std::uint8_t>(ids[y][x] << (8 - bits - (x * bits) % 8));
      }
    }
    const int filter = y % 5;
    raw.push_back(static_cast<std::uint8_t>(filter));
    for (int i = 0; i < row_bytes; ++i) {
      const int a = i >= pixel ? line[i - pixel] : 0, b = prior[i], c = i >= pixel ? prior[i - pixel] : 0;
      const int p = a + b - c;
      const int paeth = std::abs(p - a) <= std::abs(p - b) && std::abs(p - a) <= std::abs(p - c) ? a
                        : std::abs(p - b) <= std::abs(p - c)                                     ? b
                                                                                                 : c;
      const int predicted[5] = {0, a, b, (a + b) / 2, paeth};
      raw.push_back(static_cast<std::uint8_t>(line[i] - predicted[filter]));
    }
    prior = line;
  }
  uLongf size = compressBound(static_cast<uLong>(raw.size()));
  Bytes packed(size);
  EXPECT_EQ(compress(packed.data(), &size, raw.data(), static_cast<uLong>(raw.size())), Z_OK);
  packed.resize(size);

  Bytes out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  Bytes header;
  put32(header, static_cast<std::uint32_t>(width));
  put32(header, static_cast<std::uint32_t>(height));
  header.insert(header.end(),
                {static_cast<std::uint8_t>(bits), static_cast<std::uint8_t>(palette ? 3 : 0), 0, 0, 0});
  chunk(out, "IHDR", header);
  if (palette) chunk(out, "PLTE", Bytes(3 << bits, 7));
  chunk(out, "IDAT", Bytes(packed.begin(), packed.begin() + packed.size() / 2));
  chunk(out, "IDAT", Bytes(packed.begin() + packed.size() / 2, packed.end()));
  chunk(out, "IEND", {});
  return out;
}

Ids random_ids(int height, int width, int bits, unsigned seed) {
  std::mt19937 rng(seed);
  Ids ids(height, std::vector<int>(width));
  for (auto& row : ids)
    for (auto& v : row) v = static_cast<int>(rng() % (1u << bits));
  for (int y = 3; y < height / 2; ++y)  // a flat patch: equal neighbours through every filter
    for (int x = 2; x < width / 2; ++x) ids[y][x] = ids[3][2];
  return ids;
}

FileBytes bytes_of(const Bytes& b) { return std::as_bytes(std::span(b)); }

Status decode(const Bytes& file, cv::Size size, cv::Mat& mask, int last_row = INT32_MAX, int type = CV_8UC1) {
  static cv::Mat storage;
  return decode_mask(bytes_of(file), size, type, storage, mask, last_row);
}

TEST(MaskDecoderTest, EveryFilterAndBitDepthGivesTheStoredIds) {
  for (const int bits : {8, 4, 2, 1}) {
    for (const bool palette : {true, false}) {
      const auto ids = random_ids(23, 37, bits, static_cast<unsigned>(bits * 2 + palette));
      cv::Mat mask;
      ASSERT_TRUE(decode(png(ids, bits, palette), {37, 23}, mask).ok()) << bits << " " << palette;
      for (int y = 0; y < 23; ++y)
        for (int x = 0; x < 37; ++x)
          ASSERT_EQ(mask.at<std::uint8_t>(y, x), ids[y][x]) << bits << " " << y << "," << x;
    }
  }
}

TEST(MaskDecoderTest, SixteenBitIdsInAUint16FieldAndEightBitOnesWidened) {
  const auto wide = random_ids(19, 31, 16, 11);
  cv::Mat mask;
  ASSERT_TRUE(decode(png(wide, 16, false), {31, 19}, mask, INT32_MAX, CV_16UC1).ok());
  ASSERT_EQ(mask.type(), CV_16UC1);
  for (int y = 0; y < 19; ++y)
    for (int x = 0; x < 31; ++x) ASSERT_EQ(mask.at<std::uint16_t>(y, x), wide[y][x]) << y << "," << x;
  const auto narrow = random_ids(19, 31, 8, 12);
  ASSERT_TRUE(decode(png(narrow, 8, true), {31, 19}, mask, INT32_MAX, CV_16UC1).ok());
  ASSERT_EQ(mask.type(), CV_16UC1);
  EXPECT_EQ(mask.at<std::uint16_t>(18, 30), narrow[18][30]);
  const Status s = decode(png(wide, 16, false), {31, 19}, mask);  // into uint8
  EXPECT_EQ(s.code(), Status::Code::kBadData);
  EXPECT_NE(s.message().find("mask(dtype=uint16)"), std::string::npos) << s.message();
}

TEST(MaskDecoderTest, RowsUpToTheLastReadAreDecoded) {
  const auto ids = random_ids(40, 16, 4, 3);
  cv::Mat mask;
  ASSERT_TRUE(decode(png(ids, 4, true), {16, 40}, mask, 9).ok());
  for (int y = 0; y <= 9; ++y)
    for (int x = 0; x < 16; ++x) ASSERT_EQ(mask.at<std::uint8_t>(y, x), ids[y][x]);
}

void expect_bad(const Bytes& file, const std::string& words, int bits_note = 0) {
  cv::Mat mask;
  const Status s = decode(file, {37, 23}, mask, 5);
  ASSERT_EQ(s.code(), Status::Code::kBadData) << words << " " << bits_note;
  EXPECT_NE(s.message().find(words), std::string::npos) << s.message();
}

TEST(MaskDecoderTest, CorruptTruncatedAndOtherMasksAreBadData) {
  for (const int bits : {8, 4}) {
    const Bytes good = png(random_ids(23, 37, bits, 9), bits, true);
    Bytes flipped = good;
    flipped[good.size() - 30] ^= 1;  // in the second IDAT: past the rows read
    expect_bad(flipped, "fails its CRC", bits);
    expect_bad(Bytes(good.begin(), good.end() - 12), "ends before its IEND", bits);
    // A stream that does not inflate, under correct CRCs: libdeflate's refusal, or libpng's
    // error through its longjmp.
    Bytes junk(good.begin(), good.begin() + 8);
    const std::size_t ihdr_end = 8 + 12 + 13;
    Bytes header_chunks(good.begin() + 8,
                        good.begin() + static_cast<std::ptrdiff_t>(ihdr_end + (12 + (3 << bits))));
    junk.insert(junk.end(), header_chunks.begin(), header_chunks.end());
    chunk(junk, "IDAT", Bytes(64, 0xAB));
    chunk(junk, "IEND", {});
    expect_bad(junk, "broken PNG", bits);
  }
  expect_bad(png(random_ids(23, 36, 8, 1), 8, false), "the mask is 36x23, its image 37x23");
  expect_bad(Bytes{'G', 'I', 'F', '8'}, "neither a PNG nor a .npy");
}

TEST(MaskDecoderTest, ANpyMaskIsItsArray) {
  std::string header = "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }";
  header.resize(117, ' ');
  header += '\n';
  std::string file =
      std::string("\x93NUMPY\x01\x00", 8) + char(header.size() & 0xff) + char(header.size() >> 8) + header;
  file += std::string("\x01\x02\x03\x04\x05\x06", 6);
  const Bytes npy(file.begin(), file.end());
  cv::Mat mask;
  ASSERT_TRUE(decode(npy, {3, 2}, mask).ok());
  EXPECT_EQ(mask.at<std::uint8_t>(1, 2), 6);
  cv::Mat other;
  EXPECT_EQ(decode(npy, {2, 3}, other).code(), Status::Code::kBadData);
}

// follow()'s composed tables against each step done in turn with torch's nearest rule.
TEST(FollowTest, StepsComposeAsTheyAreDoneOneAfterAnother) {
  std::mt19937 rng(5);
  for (int round = 0; round < 200; ++round) {
    const int width = 20 + static_cast<int>(rng() % 60), height = 20 + static_cast<int>(rng() % 60);
    cv::Mat mask(height, width, CV_8UC1);
    cv::randu(mask, 0, 256);
    SampleGeometry g{width, height, {}, {}};
    cv::Mat expected = mask.clone();
    for (int s = 0, w = width, h = height; s < 3; ++s) {
      GeometryStep step;
      step.width = 1 + static_cast<int>(rng() % w);
      step.height = 1 + static_cast<int>(rng() % h);
      step.x = static_cast<int>(rng() % (w - step.width + 1));
      step.y = static_cast<int>(rng() % (h - step.height + 1));
      step.out_width = 1 + static_cast<int>(rng() % 90);
      step.out_height = 1 + static_cast<int>(rng() % 90);
      g.steps.push_back(step);
      cv::Mat next(step.out_height, step.out_width, CV_8UC1);
      for (int y = 0; y < step.out_height; ++y)
        for (int x = 0; x < step.out_width; ++x)
          next.at<std::uint8_t>(y, x) =
              expected.at<std::uint8_t>(step.y + nearest_source(y, step.height, step.out_height),
                                        step.x + nearest_source(x, step.width, step.out_width));
      expected = next;
      w = step.out_width;
      h = step.out_height;
    }
    if (rng() % 2) {
      g.moves.push_back({fn::Move::Kind::kHflip, {}});
      cv::flip(expected, expected, 1);
    }
    cv::Mat out(expected.size(), CV_8UC1);
    follow(g, mask, 0, out);
    ASSERT_EQ(cv::norm(out, expected, cv::NORM_INF), 0) << "round " << round;
  }
}

TEST(FollowTest, NearestSourceIsTorchs) {
  // upsample_nearest: min(floor(i * float(in / out)), in - 1).
  EXPECT_EQ(nearest_source(5, 10, 10), 5);
  EXPECT_EQ(nearest_source(7, 4, 8), 3);
  EXPECT_EQ(nearest_source(2, 3, 7), 0);  // 2 * 0.42857143f = 0.857...
  EXPECT_EQ(nearest_source(6, 3, 7), 2);
  EXPECT_EQ(nearest_source(99, 100, 100), 99);
  EXPECT_EQ(nearest_source(223, 500, 224), 497);
}

}  // namespace
}  // namespace forkfeed
