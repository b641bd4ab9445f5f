// SampleReader: a sample's bytes from a file of its own or from a slice of a shard, the
// same bytes either way; a bounded number of shards open; a shard that ends early, or a
// slice over max_file_bytes, is bad data. And a slice decodes to the pixels of the file.
#include "workers/sample_reader.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "tests/testing/encoded_images.h"
#include "tests/testing/temp_dataset.h"
#include "workers/sample_pipeline.h"

namespace forkfeed {
namespace {

void write(const std::string& path, const std::vector<std::byte>& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// A "shard": `files` back to back after `lead` bytes of something else, as tar members
// lie between their headers. Returns where each one starts.
std::vector<std::uint64_t> write_shard(const std::string& path,
                                       const std::vector<std::vector<std::byte>>& files,
                                       std::size_t lead = 512) {
  std::vector<std::byte> shard(lead, std::byte{0x55});
  std::vector<std::uint64_t> offsets;
  for (const auto& f : files) {
    offsets.push_back(shard.size());
    shard.insert(shard.end(), f.begin(), f.end());
    shard.insert(shard.end(), 100, std::byte{0});
  }
  write(path, shard);
  return offsets;
}

std::vector<std::byte> bytes_of(FileBytes b) { return {b.begin(), b.end()}; }

class SampleReaderTest : public ::testing::Test {
 protected:
  testing::TempDir dir_;
  std::vector<std::vector<std::byte>> images_ = {testing::encode(testing::photo(40, 30, 1), ".jpg"),
                                                 testing::encode(testing::photo(32, 48, 2), ".png"),
                                                 testing::encode(testing::photo(64, 64, 3), ".jpg")};
};

TEST_F(SampleReaderTest, ASliceOfAShardIsTheSameBytesAsTheFile) {
  const std::string shard = dir_.path() + "/a.tar";
  const auto offsets = write_shard(shard, images_);
  SampleReader reader(1 << 20);
  for (std::size_t i = 0; i < images_.size(); ++i) {
    auto got = reader.read(SampleSource{shard, true, offsets[i], images_[i].size()});
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(bytes_of(*got), images_[i]) << "sample " << i;
    const std::string file = dir_.path() + "/" + std::to_string(i) + ".img";
    write(file, images_[i]);
    auto whole = reader.read(SampleSource{file});
    ASSERT_TRUE(whole.ok()) << whole.status().message();
    EXPECT_EQ(bytes_of(*whole), images_[i]) << "file " << i;
  }
  EXPECT_EQ(reader.open_shards(), 1u) << "one shard, kept open";
}

TEST_F(SampleReaderTest, AtMostKOpenShardsStayOpenAndEveryReadIsStillRight) {
  constexpr std::size_t kShards = SampleReader::kOpenShards + 5;
  std::vector<std::string> shards;
  std::vector<std::vector<std::uint64_t>> offsets;
  for (std::size_t s = 0; s < kShards; ++s) {
    shards.push_back(dir_.path() + "/s" + std::to_string(s) + ".tar");
    offsets.push_back(write_shard(shards.back(), images_, 512 * (s + 1)));
  }
  SampleReader reader(1 << 20);
  for (int round = 0; round < 3; ++round) {
    for (std::size_t s = 0; s < kShards; ++s) {
      const std::size_t i = (s + round) % images_.size();
      auto got = reader.read(SampleSource{shards[s], true, offsets[s][i], images_[i].size()});
      ASSERT_TRUE(got.ok()) << got.status().message();
      EXPECT_EQ(bytes_of(*got), images_[i]);
      EXPECT_LE(reader.open_shards(), SampleReader::kOpenShards);
    }
  }
}

TEST_F(SampleReaderTest, AShardThatEndsBeforeTheSliceIsBadDataSayingWhat) {
  const std::string shard = dir_.path() + "/short.tar";
  const auto offsets = write_shard(shard, images_);
  SampleReader reader(1 << 20);
  auto got = reader.read(SampleSource{shard, true, offsets[2], images_[2].size() + 4096});
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Status::Code::kBadData);
  EXPECT_NE(got.status().message().find("ends before"), std::string::npos) << got.status().message();
  auto fine = reader.read(SampleSource{shard, true, offsets[0], images_[0].size()});
  ASSERT_TRUE(fine.ok()) << "the next sample of the shard reads: " << fine.status().message();
}

TEST_F(SampleReaderTest, ASliceOverMaxFileBytesIsRefusedBeforeItIsRead) {
  const std::string shard = dir_.path() + "/a.tar";
  const auto offsets = write_shard(shard, images_);
  SampleReader reader(images_[2].size() - 1);
  auto got = reader.read(SampleSource{shard, true, offsets[2], images_[2].size()});
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Status::Code::kBadData);
  EXPECT_NE(got.status().message().find("max_file_bytes"), std::string::npos) << got.status().message();
  EXPECT_EQ(reader.open_shards(), 0u) << "refused before the shard was opened";
}

TEST_F(SampleReaderTest, AMissingShardIsAnErrorNamingWhy) {
  SampleReader reader(1 << 20);
  auto got = reader.read(SampleSource{dir_.path() + "/gone.tar", true, 0, 10});
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("No such file"), std::string::npos) << got.status().message();
}

TEST_F(SampleReaderTest, ASliceDecodesToThePixelsOfTheFile) {
  const std::string shard = dir_.path() + "/a.tar";
  const auto offsets = write_shard(shard, images_);
  TransformSpec spec{};
  spec.kind = TransformKind::kTrain;
  spec.dtype = DType::kUint8;
  spec.size = 24;
  for (int c = 0; c < 3; ++c) spec.std[c] = 1.0f;
  spec.max_pixels = 1 << 20;
  spec.max_file_bytes = 1 << 20;
  SamplePipeline from_shard(spec), from_file(spec);
  const std::size_t bytes = 24 * 24 * 3;
  for (std::size_t i = 0; i < images_.size(); ++i) {
    const std::string file = dir_.path() + "/" + std::to_string(i) + ".img";
    write(file, images_[i]);
    std::vector<std::byte> a(bytes), b(bytes);
    ASSERT_TRUE(
        from_shard.run(SampleSource{shard, true, offsets[i], images_[i].size()}, 2, i, a.data()).ok());
    ASSERT_TRUE(from_file.run(file, 2, i, b.data()).ok());
    EXPECT_EQ(a, b) << "sample " << i;
  }
}

}  // namespace
}  // namespace forkfeed
