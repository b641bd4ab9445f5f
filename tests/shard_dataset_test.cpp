// Tar shards end to end: a Loader over shards delivers what a Loader over the manifest of
// the same samples delivers — order, labels, pixels — exactly once, across resumes with
// other worker counts and worker deaths; the index is cached and the cache follows the
// shards, even a copy that keeps size and mtime; a shard changed under a running loader
// is never read with the old index; damaged shards and samples are errors naming the
// shard and the member (or skipped and counted, bytes too); running out of memory while
// indexing is an error, not an abort.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>

#include "forkfeed/loader.h"
#include "formats/tar_scan.h"
#include "loader/checkpoint.h"
#include "tests/testing/command.h"
#include "tests/testing/processes.h"
#include "tests/testing/small_options.h"
#include "tests/testing/temp_dataset.h"
#include "tests/testing/temp_shards.h"
#include "tools/shard/tar_writer.h"

namespace forkfeed {
namespace {

namespace fs = std::filesystem;

constexpr std::uint32_t kImages = 23, kPerShard = 5;

class ShardDatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = testing::make_image_folder(dir_.path(), kImages, 3);
    shards_ = testing::make_shards(dir_.path(), root_, kPerShard);
    ASSERT_EQ(shards_.samples, kImages);
    cache_ = dir_.path() + "/cache";
    ::setenv("FORKFEED_CACHE_DIR", cache_.c_str(), 1);
  }
  void TearDown() override { ::unsetenv("FORKFEED_CACHE_DIR"); }

  LoaderOptions on_shards(std::uint32_t workers = 2) const {
    LoaderOptions o = testing::small_options("", workers, 4);
    o.image_folder.clear();
    o.shards = shards_.spec;
    o.seed = 9;
    return o;
  }
  LoaderOptions on_manifest(std::uint32_t workers = 2) const {
    LoaderOptions o = on_shards(workers);
    o.shards.clear();
    o.manifest = shards_.manifest;
    return o;
  }
  static testing::Batches two_epochs(const LoaderOptions& o) {
    auto loader = testing::open_loader(o);
    if (!loader) return {};
    testing::Batches run = testing::read_pass(*loader);
    EXPECT_TRUE(loader->set_epoch(1).ok());
    testing::Batches second = testing::read_pass(*loader);
    run.insert(run.end(), second.begin(), second.end());
    return run;
  }
  std::size_t cache_files() const {
    std::size_t n = 0;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(cache_, ec), end; !ec && it != end; it.increment(ec)) {
      n += it->path().extension() == ".idx";
    }
    return n;
  }

  testing::TempDir dir_;
  std::string root_, cache_;
  testing::TempShards shards_;
};

TEST_F(ShardDatasetTest, ShardsDeliverWhatTheManifestOfTheSameSamplesDelivers) {
  for (std::uint32_t rank : {0u, 1u}) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    LoaderOptions shards = on_shards(), manifest = on_manifest();
    shards.world_size = manifest.world_size = 2;
    shards.rank = manifest.rank = rank;
    const testing::Batches from_shards = two_epochs(shards);
    ASSERT_FALSE(from_shards.empty());
    EXPECT_EQ(testing::first_difference(from_shards, two_epochs(manifest)), "");
  }
  const testing::Batches all = two_epochs(on_shards(3));
  std::vector<std::uint64_t> first_epoch(testing::indices_of(all));
  first_epoch.resize(kImages);
  EXPECT_EQ(testing::exactly_once(first_epoch, kImages), "");
}

TEST_F(ShardDatasetTest, AResumeFromShardsWithAnotherWorkerCountGoesOnExactly) {
  const testing::Batches full = two_epochs(on_shards(2));
  std::string state;
  testing::Batches run;
  {
    auto loader = testing::open_loader(on_shards(1));
    ASSERT_TRUE(loader);
    run = testing::read_batches(*loader, 4);
    state = loader->state();
  }
  auto resumed = Loader::open(on_shards(3), state);
  ASSERT_TRUE(resumed.ok()) << resumed.status().message();
  testing::Batches rest = testing::read_pass(**resumed);
  EXPECT_TRUE((*resumed)->set_epoch(1).ok());
  testing::Batches second = testing::read_pass(**resumed);
  run.insert(run.end(), rest.begin(), rest.end());
  run.insert(run.end(), second.begin(), second.end());
  EXPECT_EQ(testing::first_difference(run, full), "");
}

TEST_F(ShardDatasetTest, TheIndexIsCachedAndAChangedShardIsScannedAgainAndRefusesOldStates) {
  std::string state;
  {
    auto loader = testing::open_loader(on_shards());
    ASSERT_TRUE(loader);
    EXPECT_EQ(cache_files(), shards_.files.size()) << "one index file per shard";
    (void)testing::read_batches(*loader, 1);
    state = loader->state();
  }
  // A cached open gives the same dataset (the same state resumes).
  ASSERT_TRUE(Loader::open(on_shards(), state).ok());

  // Shard 2 rewritten with one sample fewer: its cache entry is stale (size and mtime).
  const auto index = DatasetIndex::from_manifest(shards_.manifest).value_or_throw();
  {
    auto writer = TarWriter::create(shards_.files[2]);
    ASSERT_TRUE(writer.ok());
    for (std::size_t i = 2 * kPerShard; i < 3 * kPerShard - 1; ++i) {
      std::ifstream in(std::string(index.path(i)), std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)), {});
      const std::string key = "s" + std::to_string(100 + i), cls = std::to_string(index.label(i));
      ASSERT_TRUE(
          writer->add(key + ".jpg", {reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()}).ok());
      ASSERT_TRUE(
          writer->add(key + ".cls", {reinterpret_cast<const std::byte*>(cls.data()), cls.size()}).ok());
    }
    ASSERT_TRUE(writer->finish().ok());
  }
  auto changed = testing::open_loader(on_shards());
  ASSERT_TRUE(changed);
  EXPECT_EQ(changed->dataset().size(), kImages - 1u) << "the changed shard was scanned again";
  const Status refused = changed->load_state(state);
  EXPECT_EQ(refused.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(refused.message().find("dataset"), std::string::npos) << refused.message();
}

// Rewrites every label of `shard` (its .cls members, single digits) to another digit:
// the same size and layout, other labels. In place (the same inode) with the modification
// time put back as cp -p leaves it, or as another file renamed over it.
void relabel(const std::string& shard, bool in_place) {
  std::ifstream in(shard, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  for (const TarMember& m : scan_tar_file(shard).value_or_throw()) {
    ASSERT_TRUE(!m.name.ends_with(".cls") || m.size == 1) << m.name;
    if (m.name.ends_with(".cls")) bytes[m.offset] = static_cast<char>('0' + (bytes[m.offset] - '0' + 1) % 3);
  }
  struct stat was {};
  ASSERT_EQ(::stat(shard.c_str(), &was), 0);
  usleep(20'000);  // file times move by the kernel's tick
  const std::string target = in_place ? shard : shard + ".new";
  std::ofstream(target, std::ios::binary | (in_place ? std::ios::in | std::ios::out : std::ios::out))
      << bytes;
  const timespec times[2] = {{0, UTIME_OMIT}, was.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, target.c_str(), times, 0), 0);
  if (!in_place) {
    ASSERT_EQ(::rename(target.c_str(), shard.c_str()), 0);
  }
}

// The index pins what it was made from. A shard rewritten in place (cp -p over it) or
// replaced (rsync's rename) after the loader opened: every batch that needs it fails,
// naming it, and the loader stops there; no sample is read with the old index's labels
// and offsets, and state() resumes at the batch that failed.
TEST_F(ShardDatasetTest, AShardChangedUnderARunningLoaderIsNeverReadWithTheOldIndex) {
  for (const bool in_place : {true, false}) {
    SCOPED_TRACE(in_place ? "rewritten in place" : "replaced by a rename");
    testing::TempDir dir;
    const testing::TempShards shards = testing::make_shards(dir.path(), root_, kPerShard);
    LoaderOptions o = on_shards();
    o.shards = shards.spec;
    const testing::Batches reference = [&] {
      auto loader = testing::open_loader(o);
      return loader ? testing::read_pass(*loader) : testing::Batches{};
    }();
    auto loader = testing::open_loader(o);  // indexed; nothing decoded until the first next()
    ASSERT_TRUE(loader);
    relabel(shards.files[2], in_place);
    testing::Batches delivered;
    Status failed;
    while (failed.ok()) {
      auto b = loader->next();
      if (!b.ok())
        failed = b.status();
      else if (!b->has_value())
        break;
      else
        delivered.emplace_back(**b);
    }
    ASSERT_FALSE(failed.ok()) << "the pass read every batch from the changed shard";
    EXPECT_EQ(failed.code(), Status::Code::kFailedPrecondition) << failed.message();
    EXPECT_NE(failed.message().find(shards.files[2]), std::string::npos) << failed.message();
    EXPECT_NE(failed.message().find("changed since it was indexed"), std::string::npos) << failed.message();
    // What came before is the reference's, and needed no sample of shard 2.
    ASSERT_LE(delivered.size(), reference.size());
    EXPECT_EQ(testing::first_difference(
                  delivered, testing::Batches(reference.begin(), reference.begin() + delivered.size())),
              "");
    for (std::uint64_t i : testing::indices_of(delivered))
      EXPECT_TRUE(i < 2 * kPerShard || i >= 3 * kPerShard) << i;
    // It stays failed, and its state points at the batch that failed.
    EXPECT_EQ(loader->next().status().code(), Status::Code::kFailedPrecondition);
    EXPECT_NE(loader->state().find("\"position\":" + std::to_string(delivered.size())), std::string::npos)
        << loader->state();
  }
}

// cp -p and rsync -t keep a shard's size and mtime: only its ctime (and, for a rename,
// its inode) tells the cache that its entry is stale. The next open reads the new labels.
TEST_F(ShardDatasetTest, ACopyThatKeepsSizeAndMtimeIsIndexedAgain) {
  std::vector<std::int64_t> before;
  {
    auto loader = testing::open_loader(on_shards());
    ASSERT_TRUE(loader);
    for (std::size_t i = 0; i < loader->dataset().size(); ++i) before.push_back(loader->dataset().label(i));
  }
  for (const bool in_place : {true, false}) {
    SCOPED_TRACE(in_place ? "rewritten in place" : "replaced by a rename");
    relabel(shards_.files[1], in_place);
    auto loader = testing::open_loader(on_shards());
    ASSERT_TRUE(loader);
    const DatasetIndex& index = loader->dataset();
    for (std::size_t i = 0; i < index.size(); ++i) {
      const bool changed = i >= kPerShard && i < 2 * kPerShard;
      const std::int64_t want = changed ? (before[i] + (in_place ? 1 : 2)) % 3 : before[i];
      EXPECT_EQ(index.label(i), want) << "sample " << i;
    }
  }
}

TEST_F(ShardDatasetTest, AWorkerKilledMidReadIsReplacedAndThePassStaysExactlyOnce) {
  testing::HangGuard guard(120, "ShardDatasetTest.AWorkerKilledMidRead");
  LoaderOptions o = on_shards(2);
  o.max_worker_restarts = 100;
  o.log_level = "off";
  auto loader = testing::open_loader(o);
  ASSERT_TRUE(loader);
  const testing::Batches reference = two_epochs(on_shards(2));
  std::mt19937 rng(3);
  testing::Batches run;
  for (int epoch = 0; epoch < 2; ++epoch) {
    EXPECT_TRUE(loader->set_epoch(epoch).ok());
    while (true) {
      const auto workers = testing::children_of(::getpid());
      if (!workers.empty() && rng() % 2 == 0) ::kill(workers[rng() % workers.size()], SIGKILL);
      auto b = loader->next();
      ASSERT_TRUE(b.ok()) << b.status().message();
      if (!b->has_value()) break;
      run.emplace_back(**b);
    }
  }
  EXPECT_GT(loader->stats().worker_restarts, 0u);
  EXPECT_EQ(testing::first_difference(run, reference), "");
}

// Shards other than the fixture's, each with something wrong.
class BadShardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("FORKFEED_CACHE_DIR", (dir_.path() + "/cache").c_str(), 1);
    image_ = read(testing::make_image_folder(dir_.path(), 1, 1) + "/class_000");
  }
  void TearDown() override { ::unsetenv("FORKFEED_CACHE_DIR"); }
  static std::string read(const std::string& folder) {
    for (const auto& e : fs::directory_iterator(folder)) {
      std::ifstream in(e.path(), std::ios::binary);
      return std::string((std::istreambuf_iterator<char>(in)), {});
    }
    return {};
  }
  // A shard of `members` (name, bytes) at dir/name.
  std::string shard(const std::string& name,
                    const std::vector<std::pair<std::string, std::string>>& members) {
    const std::string path = dir_.path() + "/" + name;
    auto writer = TarWriter::create(path);
    EXPECT_TRUE(writer.ok());
    for (const auto& [member, bytes] : members) {
      EXPECT_TRUE(writer->add(member, {reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()}).ok());
    }
    EXPECT_TRUE(writer->finish().ok());
    return path;
  }
  Result<std::unique_ptr<Loader>> open(const std::string& spec, OnError on_error = OnError::kFail) {
    LoaderOptions o = testing::small_options("", 1, 2);
    o.image_folder.clear();
    o.shards = spec;
    o.on_error = on_error;
    o.log_level = "off";
    return Loader::open(o);
  }
  testing::TempDir dir_;
  std::string image_;
};

TEST_F(BadShardTest, ASampleWithoutItsLabelNamesTheShardAndTheKeyOrIsSkippedAndCounted) {
  const std::string spec =
      shard("a.tar",
            {{"x1.jpg", image_}, {"x1.cls", "0"}, {"x2.jpg", image_}, {"x3.jpg", image_}, {"x3.cls", "1"}});
  auto failed = open(spec);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), Status::Code::kBadData);
  EXPECT_NE(failed.status().message().find("a.tar"), std::string::npos) << failed.status().message();
  EXPECT_NE(failed.status().message().find("x2"), std::string::npos) << failed.status().message();
  auto skipped = open(spec, OnError::kSkip);
  ASSERT_TRUE(skipped.ok()) << skipped.status().message();
  EXPECT_EQ((*skipped)->dataset().size(), 2u);
  // Counted where every skip is counted, though it never reached a worker.
  EXPECT_EQ((*skipped)->stats().skipped_samples, 1u);
  (void)testing::read_pass(**skipped);
  EXPECT_EQ((*skipped)->stats().skipped_samples, 1u) << "counted once, not per pass";
  EXPECT_EQ((*skipped)->stats().skipped_bytes, 0u);
}

TEST_F(BadShardTest, ATruncatedShardIsAnErrorOrKeepsTheSamplesBeforeTheDamage) {
  const std::string path = shard("t.tar", {{"x1.jpg", image_},
                                           {"x1.cls", "0"},
                                           {"x2.jpg", image_},
                                           {"x2.cls", "0"},
                                           {"x3.jpg", image_},
                                           {"x3.cls", "0"}});
  const auto members = scan_tar_file(path).value_or_throw();
  ASSERT_EQ(members[4].name, "x3.jpg");
  fs::resize_file(path, members[4].offset + members[4].size / 2);  // into x3.jpg
  auto failed = open(path);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("truncated"), std::string::npos) << failed.status().message();
  EXPECT_NE(failed.status().message().find("t.tar"), std::string::npos) << failed.status().message();
  auto kept = open(path, OnError::kSkip);
  ASSERT_TRUE(kept.ok()) << kept.status().message();
  EXPECT_EQ((*kept)->dataset().size(), 2u) << "x1 and x2; x3 was cut";
  const testing::Batches pass = testing::read_pass(**kept);
  EXPECT_EQ(testing::exactly_once(testing::indices_of(pass), 2), "");
  // What was lost cannot be counted in samples: it is counted in bytes, from the end of
  // the last whole member (x2.cls, padded to its block) to the end of the file.
  const std::uint64_t whole = (members[3].offset + members[3].size + 511) / 512 * 512;
  EXPECT_EQ((*kept)->stats().skipped_bytes, fs::file_size(path) - whole);
  EXPECT_EQ((*kept)->stats().skipped_samples, 0u);
  auto again = open(path, OnError::kSkip);  // from the cache: the same counts
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ((*again)->stats().skipped_bytes, fs::file_size(path) - whole);
}

// A member name can be most of a megabyte long in a pax header: a message names it, cut.
TEST_F(BadShardTest, MessagesNameTheMemberAndCutLongNames) {
  const std::string huge(900'000, 'n');
  const std::string spec =
      shard("long.tar",
            {{"k/" + huge + ".jpg", image_}, {"k/" + huge + ".png", image_}, {"k/" + huge + ".cls", "0"}});
  auto failed = open(spec);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("two images"), std::string::npos) << failed.status().message();
  EXPECT_LT(failed.status().message().size(), 2000u);
  EXPECT_NE(failed.status().message().find("...(900006 bytes)"), std::string::npos)
      << failed.status().message().substr(0, 300);

  // A decode error names the member, read from its tar header; a long name whole (from
  // its pax header), cut only for the message.
  const std::string long_key = "n1/" + std::string(300, 'L');
  const std::string empty = shard("empty.tar", {{"a.jpg", image_},
                                                {"a.cls", "0"},
                                                {"n0/b.jpg", ""},
                                                {"n0/b.cls", "1"},
                                                {long_key + ".jpg", ""},
                                                {long_key + ".cls", "1"}});
  auto loader = open(empty, OnError::kSkip);
  ASSERT_TRUE(loader.ok()) << loader.status().message();
  const DatasetIndex& index = (*loader)->dataset();
  ASSERT_EQ(index.size(), 3u);
  EXPECT_NE(index.describe(1).find("empty.tar, member 'n0/b.jpg' at byte "), std::string::npos)
      << index.describe(1);
  EXPECT_NE(index.describe(2).find("member '" + long_key.substr(0, 200) + "...(307 bytes)' at byte "),
            std::string::npos)
      << index.describe(2);
  auto failed_decode = open(empty);
  ASSERT_TRUE(failed_decode.ok()) << failed_decode.status().message();
  Status error;
  for (int i = 0; i < 4 && error.ok(); ++i) {
    auto b = (*failed_decode)->next();
    if (!b.ok()) error = b.status();
  }
  EXPECT_EQ(error.code(), Status::Code::kBadData);
  EXPECT_NE(error.message().find("empty.tar, member '"), std::string::npos) << error.message();
  // Once the shard is another file, its headers would name another sample: none is named.
  shard("empty.tar", {{"z.jpg", image_}, {"z.cls", "0"}, {"other.jpg", ""}, {"other.cls", "1"}});
  EXPECT_EQ(index.describe(1).find("other"), std::string::npos) << index.describe(1);
  EXPECT_NE(index.describe(1).find("empty.tar, member at byte "), std::string::npos) << index.describe(1);
}

// Indexing that runs out of memory (a limit on the address space, here) fails the open
// with an error naming what it was building: not an abort, on the calling thread or on
// a scanning thread.
TEST_F(BadShardTest, RunningOutOfMemoryWhileIndexingIsAnError) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer aborts on allocation failure by design; the Release build runs this";
#endif
  std::vector<std::string> specs;
  for (const char* name : {"big-0.tar", "big-1.tar"}) {
    std::vector<std::pair<std::string, std::string>> members;
    for (int i = 0; i < 24; ++i) {  // 24 names of 0.9 MB each: the scan holds them all
      std::string key = "k";        // appended, not concatenated: GCC 12 warns falsely (-Wrestrict)
      key += std::to_string(i);
      key += '/';
      key.append(900'000, 'm');
      members.push_back({key + ".jpg", image_});
      members.push_back({key + ".cls", "0"});
    }
    specs.push_back(shard(name, members));
  }
  const std::string both = dir_.path() + "/big-{0..1}.tar";
  // Room for a scanning thread's stack and a little more, not for the names.
  const testing::CommandOutcome o = testing::run_command(
      {std::string(FORKFEED_BIN_DIR) + "/open_under_memory_limit", both, "12"}, dir_.path());
  ASSERT_TRUE(o.exited && o.code == 0) << o.describe();  // SIGABRT before the fix
  EXPECT_TRUE(o.out.starts_with("resource_exhausted: out of memory")) << o.out;
  EXPECT_NE(o.out.find("big-"), std::string::npos) << "names what it was building: " << o.out;
}

TEST_F(BadShardTest, AFileThatIsNoTarIsAnErrorNamingIt) {
  const std::string path = dir_.path() + "/photo.tar";
  std::ofstream(path, std::ios::binary) << image_;
  auto failed = open(path);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("not a tar"), std::string::npos) << failed.status().message();
  EXPECT_NE(failed.status().message().find("photo.tar"), std::string::npos) << failed.status().message();
}

TEST_F(BadShardTest, GnuTarLongNamesAndPaxHeadersAreRead) {
  const std::string long_dir(120, 'd');
  const std::string folder = dir_.path() + "/src/" + long_dir;
  fs::create_directories(folder);
  for (const std::string key : {"k1", "k2"}) {
    std::ofstream(folder + "/" + key + ".jpg", std::ios::binary) << image_;
    std::ofstream(folder + "/" + key + ".cls") << (key == "k1" ? "4" : "7");
  }
  for (const std::string format : {"gnu", "pax"}) {
    SCOPED_TRACE(format);
    const std::string tar = dir_.path() + "/" + format + ".tar";
    const std::string cmd = "tar --format=" + format + " -C " + dir_.path() + "/src -cf " + tar + " " +
                            long_dir + "/k1.jpg " + long_dir + "/k1.cls " + long_dir + "/k2.jpg " + long_dir +
                            "/k2.cls";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    auto loader = open(tar);
    ASSERT_TRUE(loader.ok()) << loader.status().message();
    ASSERT_EQ((*loader)->dataset().size(), 2u);
    EXPECT_EQ((*loader)->dataset().label(0), 4);
    EXPECT_EQ((*loader)->dataset().label(1), 7);
    const testing::Batches pass = testing::read_pass(**loader);
    EXPECT_EQ(testing::exactly_once(testing::indices_of(pass), 2), "");
  }
}

}  // namespace
}  // namespace forkfeed
