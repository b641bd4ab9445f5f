// SampleReader: a sample's bytes from a file of its own or from a slice of a shard, the
// same bytes either way; a bounded number of shards open; a shard that ends early, or a
// slice over max_file_bytes, is bad data; a shard that is not the one indexed is never
// read; a failure of the machine is never called bad data. And a slice decodes to the
// pixels of the file.
#include "workers/sample_reader.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/file_stamp.h"
#include "tests/testing/encoded_images.h"
#include "tests/testing/processes.h"
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

// The fds this process holds on files under `dir`: the shards a reader keeps open there.
std::size_t open_under(const std::string& dir) {
  const std::string prefix = std::filesystem::canonical(dir).string() + "/";
  std::size_t open = 0;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code gone;  // the iterator's own fd, closed by now
    if (std::filesystem::read_symlink(fd.path(), gone).string().starts_with(prefix)) ++open;
  }
  return open;
}

FileStamp stamp_now(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return stamp_of(st);
}

// A slice of `shard` as the index gives it: with the shard's stamp of now.
SampleSource slice(const std::string& shard, std::uint64_t offset, std::uint64_t size) {
  return SampleSource{shard, true, offset, size, stamp_now(shard)};
}

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
    auto got = reader.read(slice(shard, offsets[i], images_[i].size()));
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(bytes_of(*got), images_[i]) << "sample " << i;
    const std::string file = dir_.path() + "/" + std::to_string(i) + ".img";
    write(file, images_[i]);
    auto whole = reader.read(SampleSource{file});
    ASSERT_TRUE(whole.ok()) << whole.status().message();
    EXPECT_EQ(bytes_of(*whole), images_[i]) << "file " << i;
  }
  EXPECT_EQ(open_under(dir_.path()), 1u) << "one shard, kept open";
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
      auto got = reader.read(slice(shards[s], offsets[s][i], images_[i].size()));
      ASSERT_TRUE(got.ok()) << got.status().message();
      EXPECT_EQ(bytes_of(*got), images_[i]);
      EXPECT_LE(open_under(dir_.path()), SampleReader::kOpenShards);
    }
  }
}

TEST_F(SampleReaderTest, AShardThatEndsBeforeTheSliceIsBadDataSayingWhat) {
  const std::string shard = dir_.path() + "/short.tar";
  const auto offsets = write_shard(shard, images_);
  SampleReader reader(1 << 20);
  auto got = reader.read(slice(shard, offsets[2], images_[2].size() + 4096));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Status::Code::kBadData);
  EXPECT_NE(got.status().message().find("ends before"), std::string::npos) << got.status().message();
  auto fine = reader.read(slice(shard, offsets[0], images_[0].size()));
  ASSERT_TRUE(fine.ok()) << "the next sample of the shard reads: " << fine.status().message();
}

TEST_F(SampleReaderTest, ASliceOverMaxFileBytesIsRefusedBeforeItIsRead) {
  const std::string shard = dir_.path() + "/a.tar";
  const auto offsets = write_shard(shard, images_);
  SampleReader reader(images_[2].size() - 1);
  auto got = reader.read(slice(shard, offsets[2], images_[2].size()));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Status::Code::kBadData);
  EXPECT_NE(got.status().message().find("max_file_bytes"), std::string::npos) << got.status().message();
  EXPECT_EQ(open_under(dir_.path()), 0u) << "refused before the shard was opened";
}

// A shard indexed and gone since is not a bad sample: the dataset changed.
TEST_F(SampleReaderTest, AMissingShardIsAnErrorNamingWhy) {
  const std::string shard = dir_.path() + "/gone.tar";
  const auto offsets = write_shard(shard, images_);
  const SampleSource indexed = slice(shard, offsets[0], images_[0].size());
  ASSERT_EQ(::unlink(shard.c_str()), 0);
  SampleReader reader(1 << 20);
  auto got = reader.read(indexed);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Status::Code::kFailedPrecondition) << got.status().message();
  EXPECT_NE(got.status().message().find("No such file"), std::string::npos) << got.status().message();
  EXPECT_NE(got.status().message().find("changed under the loader"), std::string::npos)
      << got.status().message();
}

// The index pins the shard it was made from: another file under its name (renamed over
// it), the same file rewritten with its size and mtime put back (cp -p), or rewritten
// while a worker keeps it open, is refused, never read with the old index's offsets.
TEST_F(SampleReaderTest, AShardThatChangedSinceItWasIndexedIsNeverRead) {
  const std::string shard = dir_.path() + "/a.tar";
  const auto offsets = write_shard(shard, images_);
  const SampleSource indexed = slice(shard, offsets[1], images_[1].size());
  SampleReader reader(1 << 20);
  ASSERT_TRUE(reader.read(indexed).ok());  // and now it is open in the reader
  auto expect_refused = [&](const std::string& what) {
    auto got = reader.read(indexed);
    ASSERT_FALSE(got.ok()) << what << ": read it";
    EXPECT_EQ(got.status().code(), Status::Code::kFailedPrecondition) << what;
    EXPECT_NE(got.status().message().find("changed since it was indexed: " + what), std::string::npos)
        << got.status().message();
  };

  // Rewritten in place, the same bytes but the first two images swapped: same size; the
  // mtime is set back as cp -p does. The open fd sees it.
  usleep(20'000);  // file times move by the kernel's tick
  std::vector<std::vector<std::byte>> swapped = {images_[1], images_[0], images_[2]};
  {
    std::vector<std::byte> bytes(512, std::byte{0x55});
    for (const auto& f : swapped) {
      bytes.insert(bytes.end(), f.begin(), f.end());
      bytes.insert(bytes.end(), 100, std::byte{0});
    }
    std::fstream out(shard, std::ios::binary | std::ios::in | std::ios::out);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  const timespec times[2] = {
      {0, UTIME_OMIT}, {indexed.stamp.mtime_ns / 1'000'000'000, indexed.stamp.mtime_ns % 1'000'000'000}};
  ASSERT_EQ(::utimensat(AT_FDCWD, shard.c_str(), times, 0), 0);
  ASSERT_EQ(stamp_now(shard).size, indexed.stamp.size);
  expect_refused("its status changed");

  // Another file renamed over it.
  write_shard(shard + ".new", images_);
  ASSERT_EQ(::rename((shard + ".new").c_str(), shard.c_str()), 0);
  SampleReader fresh(1 << 20);
  auto got = fresh.read(indexed);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(got.status().message().find("it is another file now"), std::string::npos)
      << got.status().message();
}

// Out of file descriptors is the process's trouble, not the file's: never bad data, so
// on_error=skip cannot leave a good sample out for it.
TEST_F(SampleReaderTest, RunningOutOfFdsIsNotBadData) {
  const std::string shard = dir_.path() + "/a.tar";
  const auto offsets = write_shard(shard, images_);
  const std::string file = dir_.path() + "/one.jpg";
  write(file, images_[0]);
  const SampleSource indexed = slice(shard, offsets[0], images_[0].size());
  SampleReader reader(1 << 20);
  Result<FileBytes> whole = Status::Internal("not read"), sliced = Status::Internal("not read");
  {
    const testing::NoFreeFds no_fds;  // the next open() gets EMFILE
    whole = reader.read(SampleSource{file});
    sliced = reader.read(indexed);
  }
  for (const auto* got : {&whole, &sliced}) {
    ASSERT_FALSE(got->ok());
    EXPECT_NE(got->status().code(), Status::Code::kBadData) << got->status().message();
    EXPECT_EQ(got->status().os_error(), EMFILE) << got->status().message();
    EXPECT_NE(got->status().message().find("Too many open files"), std::string::npos)
        << got->status().message();
  }
  // A file that is not there is the file's own fault: bad data, which on_error decides.
  auto missing = reader.read(SampleSource{dir_.path() + "/missing.jpg"});
  EXPECT_EQ(missing.status().code(), Status::Code::kBadData) << missing.status().message();
}

TEST_F(SampleReaderTest, ASliceDecodesToThePixelsOfTheFile) {
  const std::string shard = dir_.path() + "/a.tar";
  const auto offsets = write_shard(shard, images_);
  TransformSpec spec{};
  std::strcpy(spec.pipeline, "train");
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
    ASSERT_TRUE(from_shard.run(slice(shard, offsets[i], images_[i].size()), 2, i, a.data()).ok());
    ASSERT_TRUE(from_file.run(file, 2, i, b.data()).ok());
    EXPECT_EQ(a, b) << "sample " << i;
  }
}

}  // namespace
}  // namespace forkfeed
