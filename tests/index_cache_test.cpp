// IndexCache: a stored scan loads back for the same shard, grouped the same way (fields
// and their columns too); a changed shard (another file, size, mtime, ctime), another
// rule or other fields, or a damaged file is a miss, never an error; a folder that cannot be written, or that
// others could write, makes store say why; writers that died leave no temporary files behind for long.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "base/file_stamp.h"
#include "dataset/shards/index_cache.h"
#include "tests/testing/scoped_env.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

using testing::ScopedEnv;

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}
std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A scratch folder with a shard file in it and a cache beside it.
class IndexCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    write_file(shard_.path, std::string(3000, 't'));
    shard_.stamp = restamp();
    shard_.rule = LabelRule{LabelSource::kCls, ""};
    shard_.max_file_bytes = 1 << 20;
    scan_.samples = {ShardSample{512, 4, 100, 3}, ShardSample{1536, 4, 7, -1}, ShardSample{2560, 4, 1, 9}};
    scan_.skipped = 2;
    scan_.skip_reasons = {"shard x, sample a: no image", "shard x, sample b: no image"};
  }
  // A fresh stamp of the shard, as the next open takes it.
  FileStamp restamp() {
    const int fd = ::open(shard_.path.c_str(), O_RDONLY | O_CLOEXEC);
    EXPECT_GE(fd, 0);
    Result<FileStamp> stamp = stamp_file(fd);
    ::close(fd);
    EXPECT_TRUE(stamp.ok()) << stamp.status().message();
    return stamp.ok() ? *stamp : FileStamp{};
  }

  testing::TempDir tmp_;
  IndexCache cache_{tmp_.path() + "/cache/nested"};
  CachedShard shard_{tmp_.path() + "/train-000004.tar", {}, {}, 0};
  ShardScan scan_;
};

void expect_same(const ShardScan& got, const ShardScan& want, std::uint32_t position) {
  ASSERT_EQ(got.samples.size(), want.samples.size());
  for (std::size_t i = 0; i < got.samples.size(); ++i) {
    ShardSample expected = want.samples[i];
    expected.shard = position;
    EXPECT_EQ(got.samples[i], expected) << "sample " << i;
  }
  EXPECT_EQ(got.skipped, want.skipped);
  EXPECT_EQ(got.skip_reasons, want.skip_reasons);
  EXPECT_EQ(got.class_names, want.class_names);
}

TEST_F(IndexCacheTest, MissesUntilStoredThenHits) {
  EXPECT_FALSE(cache_.load(shard_, 4).has_value());
  ASSERT_TRUE(cache_.store(shard_, scan_).ok());  // makes the nested folder
  shard_.stamp = restamp();
  std::optional<ShardScan> hit = cache_.load(shard_, 11);
  ASSERT_TRUE(hit.has_value());
  expect_same(*hit, scan_, 11);  // the position is the caller's
  // Only the cache file is left in the folder: no temporary files.
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(cache_.dir())) files.push_back(e.path().string());
  EXPECT_EQ(files, std::vector<std::string>{cache_.file_for(shard_)});
}

TEST_F(IndexCacheTest, ClassNamesAndAnEmptyScanRoundTrip) {
  shard_.rule = LabelRule{LabelSource::kClassFolder, ""};
  scan_.class_names = {"n01", "n02"};
  ASSERT_TRUE(cache_.store(shard_, scan_).ok());
  EXPECT_FALSE(cache_.load(shard_, 0).has_value()) << "labels 3, -1 and 9 are no class positions";

  scan_.class_names = {"n01", "n02", "x/y"};
  scan_.samples[0].label = 0;
  scan_.samples[1].label = 2;
  scan_.samples[2].label = 1;
  ASSERT_TRUE(cache_.store(shard_, scan_).ok());
  std::optional<ShardScan> hit = cache_.load(shard_, 0);
  ASSERT_TRUE(hit.has_value());
  expect_same(*hit, scan_, 0);

  shard_.rule = LabelRule{LabelSource::kJson, "label"};
  ASSERT_TRUE(cache_.store(shard_, ShardScan{}).ok());
  hit = cache_.load(shard_, 0);
  ASSERT_TRUE(hit.has_value());
  expect_same(*hit, ShardScan{}, 0);
}

TEST_F(IndexCacheTest, AChangedShardIsStale) {
  ASSERT_TRUE(cache_.store(shard_, scan_).ok());
  // The same size, another mtime.
  const timespec times[2] = {{0, UTIME_OMIT}, {1'600'000'000, 123}};
  ASSERT_EQ(::utimensat(AT_FDCWD, shard_.path.c_str(), times, 0), 0);
  shard_.stamp = restamp();
  EXPECT_EQ(shard_.stamp.mtime_ns, 1'600'000'000'000'000'123);
  EXPECT_FALSE(cache_.load(shard_, 0).has_value());

  // Stored again, then the size changes with the mtime put back.
  ASSERT_TRUE(cache_.store(shard_, scan_).ok());
  ASSERT_TRUE(cache_.load(shard_, 0).has_value());
  std::ofstream(shard_.path, std::ios::app) << "more";
  ASSERT_EQ(::utimensat(AT_FDCWD, shard_.path.c_str(), times, 0), 0);
  shard_.stamp = restamp();
  EXPECT_EQ(shard_.stamp.size, 3004u);
  EXPECT_FALSE(cache_.load(shard_, 0).has_value());
}

// What cp -p and rsync -t leave: other bytes of the same size, with the old mtime put
// back. Only the change time (and, for a file renamed over the shard, the inode) tells.
TEST_F(IndexCacheTest, AReplacementThatKeepsSizeAndMtimeIsStale) {
  ASSERT_TRUE(cache_.store(shard_, scan_).ok());
  ASSERT_TRUE(cache_.load(shard_, 0).has_value());
  const FileStamp was = shard_.stamp;
  const timespec times[2] = {{0, UTIME_OMIT}, {was.mtime_ns / 1'000'000'000, was.mtime_ns % 1'000'000'000}};

  // Rewritten in place: the same inode, size and mtime; ctime moved on.
  usleep(20'000);  // file times have the kernel's tick as their grain
  write_file(shard_.path, std::string(3000, 'u'));
  ASSERT_EQ(::utimensat(AT_FDCWD, shard_.path.c_str(), times, 0), 0);
  shard_.stamp = restamp();
  EXPECT_EQ(shard_.stamp.inode, was.inode);
  EXPECT_EQ(shard_.stamp.size, was.size);
  EXPECT_EQ(shard_.stamp.mtime_ns, was.mtime_ns);
  EXPECT_NE(shard_.stamp.ctime_ns, was.ctime_ns);
  EXPECT_FALSE(cache_.load(shard_, 0).has_value());

  // Another file renamed over it (rsync's way): another inode.
  ASSERT_TRUE(cache_.store(shard_, scan_).ok());
  const FileStamp stored = shard_.stamp;
  write_file(shard_.path + ".new", std::string(3000, 'v'));
  const timespec same[2] = {{0, UTIME_OMIT},
                            {stored.mtime_ns / 1'000'000'000, stored.mtime_ns % 1'000'000'000}};
  ASSERT_EQ(::utimensat(AT_FDCWD, (shard_.path + ".new").c_str(), same, 0), 0);
  ASSERT_EQ(::rename((shard_.path + ".new").c_str(), shard_.path.c_str()), 0);
  shard_.stamp = restamp();
  EXPECT_NE(shard_.stamp.inode, stored.inode);
  EXPECT_FALSE(cache_.load(shard_, 0).has_value());
}

// A folder that is a symbolic link, or that others may write, is not used: a file put
// there by someone else would decide where samples lie and what their labels are.
TEST_F(IndexCacheTest, AFolderOthersCouldWriteIsNotUsed) {
  ASSERT_TRUE(cache_.store(shard_, scan_).ok());
  ASSERT_TRUE(IndexCache(cache_.dir()).load(shard_, 0).has_value());

  ASSERT_EQ(::chmod(cache_.dir().c_str(), 0777), 0);
  IndexCache open_to_all(cache_.dir());
  EXPECT_FALSE(open_to_all.load(shard_, 0).has_value());
  Status s = open_to_all.store(shard_, scan_);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("is not this user's alone"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("mode 0777"), std::string::npos) << s.message();
  ASSERT_EQ(::chmod(cache_.dir().c_str(), 0700), 0);

  const std::string link = tmp_.path() + "/linked";
  ASSERT_EQ(::symlink(cache_.dir().c_str(), link.c_str()), 0);
  IndexCache through_link(link);
  EXPECT_FALSE(through_link.load(shard_, 0).has_value());
  s = through_link.store(shard_, scan_);
  EXPECT_NE(s.message().find("is a symbolic link"), std::string::npos) << s.message();
  // Nothing was written through the link.
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(cache_.dir())) files.push_back(e.path().string());
  EXPECT_EQ(files, std::vector<std::string>{cache_.file_for(shard_)});
}

// A writer killed between creating its temporary file and renaming it leaves the file;
// the next store on this host removes it once its writer is gone and it is over a minute
// old. A live writer's file, or a young one, is kept.
TEST_F(IndexCacheTest, TemporaryFilesOfWritersThatDiedAreRemoved) {
  ASSERT_TRUE(cache_.store(shard_, scan_).ok());  // makes the folder
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof host - 1), 0);
  const pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ASSERT_GT(gone, 0);
  ASSERT_EQ(::waitpid(gone, nullptr, 0), gone);
  const std::string base = cache_.dir() + "/0123456789abcdef.idx.tmp.";
  const std::string dead = base + std::to_string(gone) + ".0." + host;
  const std::string young = base + std::to_string(gone) + ".1." + host;
  const std::string alive = base + std::to_string(::getpid()) + ".7." + host;
  const std::string elsewhere = base + std::to_string(gone) + ".2.another-host";
  const timespec old[2] = {{0, UTIME_OMIT}, {::time(nullptr) - 3600, 0}};
  for (const std::string& f : {dead, young, alive, elsewhere}) {
    write_file(f, "half");
    if (f != young) {
      ASSERT_EQ(::utimensat(AT_FDCWD, f.c_str(), old, 0), 0);
    }
  }
  IndexCache next(cache_.dir());
  ASSERT_TRUE(next.store(shard_, scan_).ok());
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_TRUE(std::filesystem::exists(young));
  EXPECT_TRUE(std::filesystem::exists(alive));
  EXPECT_TRUE(std::filesystem::exists(elsewhere));
}

TEST_F(IndexCacheTest, AnotherRuleOrLimitIsAnotherEntry) {
  ASSERT_TRUE(cache_.store(shard_, scan_).ok());
  CachedShard json = shard_;
  json.rule = LabelRule{LabelSource::kJson, "label"};
  CachedShard other_field = json;
  other_field.rule.json_field = "cls";
  CachedShard limit = shard_;
  limit.max_file_bytes = 5;
  CachedShard other_path = shard_;
  other_path.path += "x";
  for (const CachedShard* s : {&json, &other_field, &limit, &other_path}) {
    EXPECT_NE(cache_.file_for(*s), cache_.file_for(shard_));
    EXPECT_FALSE(cache_.load(*s, 0).has_value());
  }
  // Even a file under the right name that was made for another shard (a hash collision) misses.
  ASSERT_TRUE(cache_.store(json, scan_).ok());
  std::filesystem::copy_file(cache_.file_for(json), cache_.file_for(limit));
  EXPECT_FALSE(cache_.load(limit, 0).has_value());
  EXPECT_TRUE(cache_.load(json, 0).has_value());
  // The name is stable across runs: a fixed FNV-1a, not std::hash.
  EXPECT_EQ(IndexCache("/c").file_for(CachedShard{"/data/a.tar", {}, LabelRule{}, 256}),
            "/c/dff026d9939e4bc9.idx");
}

TEST_F(IndexCacheTest, FieldsRoundTripAndOtherFieldsAreAnotherEntry) {
  CachedShard fields = shard_;
  fields.fields = sample_schema("image=jpg, caption=txt, l=cls, c2=json:label(c), s=json:number(s), e=npy",
                                MissingField::kEmpty)
                      .value_or_throw();
  ASSERT_EQ(fields.fields.columns.extra_members(), 2u);
  ShardScan scan = scan_;
  scan.field_slices = {{-1024, 5}, {}, {512, 0}, {7, 8}, {-9, 10}, {11, 12}};
  scan.field_labels = {1, kMissingLabel, 3};
  scan.field_numbers = {0.5, std::numeric_limits<double>::quiet_NaN(), -2e300};
  scan.fields_seen = 0b110111;
  scan.extensions = {"cls", "jpg", "txt"};
  scan.longest_key = 77;
  scan.name_headers = {{0, 1536}, {1, 2048}};
  scan.arrays = {ShardArrays{true, false, ElementType::kFloat16, {3, 4}, "a key"}};
  ASSERT_TRUE(cache_.store(fields, scan).ok());
  std::optional<ShardScan> hit = cache_.load(fields, 3);
  ASSERT_TRUE(hit.has_value());
  expect_same(*hit, scan, 3);
  EXPECT_EQ(hit->field_slices, scan.field_slices);
  EXPECT_EQ(hit->field_labels, scan.field_labels);
  ASSERT_EQ(hit->field_numbers.size(), 3u);
  EXPECT_EQ(hit->field_numbers[0], 0.5);
  EXPECT_TRUE(std::isnan(hit->field_numbers[1]));
  EXPECT_EQ(hit->field_numbers[2], -2e300);
  EXPECT_EQ(hit->fields_seen, scan.fields_seen);
  EXPECT_EQ(hit->extensions, scan.extensions);
  EXPECT_EQ(hit->longest_key, 77u);
  EXPECT_EQ(hit->name_headers, scan.name_headers);
  EXPECT_EQ(hit->arrays, scan.arrays);

  // Without fields, other fields, or another missing mode: other entries, all misses.
  CachedShard other = fields;
  other.fields = sample_schema("image=jpg, caption=txt", MissingField::kEmpty).value_or_throw();
  CachedShard skip = fields;
  skip.fields.missing = MissingField::kSkip;
  for (const CachedShard* s : {&shard_, &other, &skip}) {
    EXPECT_NE(cache_.file_for(*s), cache_.file_for(fields));
    EXPECT_FALSE(cache_.load(*s, 0).has_value());
  }
  // A file for other fields under this one's name (a collision) misses too.
  std::filesystem::copy_file(cache_.file_for(fields), cache_.file_for(skip));
  EXPECT_FALSE(cache_.load(skip, 0).has_value());
  CachedShard same_columns = fields;
  same_columns.fields =
      sample_schema("image=jpg, caption=txt, l=cls, c2=json:label(c), s=json:number(s), x=npy",
                    MissingField::kEmpty)
          .value_or_throw();
  std::filesystem::copy_file(cache_.file_for(fields), cache_.file_for(same_columns));
  EXPECT_FALSE(cache_.load(same_columns, 0).has_value()) << "the text differs, not the columns";

  // A scan without its fields' columns is not stored.
  ShardScan short_scan = scan;
  short_scan.field_labels.pop_back();
  EXPECT_EQ(cache_.store(fields, short_scan).code(), Status::Code::kInternal);

  // A bit flipped in the field records, or the file cut there, is a miss.
  const std::string file = cache_.file_for(fields);
  const std::string good = read_file(file);
  for (std::size_t at : {good.size() - 8 * 3 - 1, good.size() - 8 * 6 - 3, good.size() - 8 * 10}) {
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] ^ 0x10);
    write_file(file, bad);
    EXPECT_FALSE(cache_.load(fields, 0).has_value()) << "byte " << at << " flipped";
  }
  write_file(file, good.substr(0, good.size() - 8));
  EXPECT_FALSE(cache_.load(fields, 0).has_value());
  write_file(file, good);
  EXPECT_TRUE(cache_.load(fields, 0).has_value());
}

TEST_F(IndexCacheTest, ADamagedFileIsAMiss) {
  ASSERT_TRUE(cache_.store(shard_, scan_).ok());
  const std::string file = cache_.file_for(shard_);
  const std::string good = read_file(file);
  ASSERT_GT(good.size(), 112u + 3 * 24);
  for (std::size_t at :
       {std::size_t{0}, std::size_t{12}, std::size_t{90}, good.size() - 30, good.size() - 1}) {
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] ^ 0x40);
    write_file(file, bad);
    EXPECT_FALSE(cache_.load(shard_, 0).has_value()) << "byte " << at << " flipped";
  }
  for (std::size_t size :
       {std::size_t{0}, std::size_t{111}, std::size_t{112}, good.size() - 24, good.size() - 1}) {
    write_file(file, good.substr(0, size));
    EXPECT_FALSE(cache_.load(shard_, 0).has_value()) << "cut to " << size;
  }
  write_file(file, good + std::string(24, '\0'));
  EXPECT_FALSE(cache_.load(shard_, 0).has_value()) << "grown";
  std::filesystem::remove(file);
  std::filesystem::create_directory(file);  // not a regular file
  EXPECT_FALSE(cache_.load(shard_, 0).has_value());
  std::filesystem::remove(file);
  write_file(file, good);
  EXPECT_TRUE(cache_.load(shard_, 0).has_value());  // the check is of the damage, not of the file
}

TEST_F(IndexCacheTest, AFolderThatCannotBeMadeSaysWhy) {
  write_file(tmp_.path() + "/file", "x");
  IndexCache blocked(tmp_.path() + "/file/cache");  // ENOTDIR, even for root
  Status s = blocked.store(shard_, scan_);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cannot create the shard index cache folder " + tmp_.path() + "/file/cache"),
            std::string::npos)
      << s.message();
  EXPECT_FALSE(blocked.load(shard_, 0).has_value());

  IndexCache is_a_file(tmp_.path() + "/file");
  s = is_a_file.store(shard_, scan_);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("is not a directory"), std::string::npos) << s.message();

  if (::geteuid() != 0) {  // root writes through permissions
    ASSERT_EQ(::mkdir((tmp_.path() + "/ro").c_str(), 0555), 0);
    s = IndexCache(tmp_.path() + "/ro").store(shard_, scan_);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("cannot write the shard index cache"), std::string::npos) << s.message();
  }
  EXPECT_FALSE(IndexCache("").store(shard_, scan_).ok());
  EXPECT_FALSE(IndexCache("").load(shard_, 0).has_value());
}

TEST(IndexCacheDirTest, FollowsTheEnvironment) {
  ScopedEnv a("FORKFEED_CACHE_DIR", "/ff"), b("XDG_CACHE_HOME", "/xdg"), c("HOME", "/home/u");
  EXPECT_EQ(IndexCache::default_dir(), "/ff/shard-index");
  {
    ScopedEnv empty("FORKFEED_CACHE_DIR", "");
    EXPECT_EQ(IndexCache::default_dir(), "/xdg/forkfeed/shard-index");
    ScopedEnv unset("XDG_CACHE_HOME", std::nullopt);
    EXPECT_EQ(IndexCache::default_dir(), "/home/u/.cache/forkfeed/shard-index");
    ScopedEnv no_home("HOME", std::nullopt);
    EXPECT_EQ(IndexCache::default_dir(), "");
  }
}

}  // namespace
}  // namespace forkfeed
