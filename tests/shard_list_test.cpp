// list_shards: brace patterns, shard directories and list files become absolute,
// normalised, existing, distinct shard paths; every refusal names the spec and what to do.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "base/absolute_path.h"
#include "dataset/shards/shard_list.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

using Paths = std::vector<std::string>;

void touch(const std::string& path, const std::string& bytes = "tar") {
  std::ofstream(path, std::ios::binary) << bytes;
}

// Shards <dir>/train-000000.tar ... for `count` shards.
std::string make_shards(const std::string& dir, int count) {
  for (int i = 0; i < count; ++i) {
    char name[32];
    std::snprintf(name, sizeof(name), "/train-%06d.tar", i);
    touch(dir + name);
  }
  return dir;
}

::testing::AssertionResult fails_with(const Result<Paths>& r, Status::Code code, const std::string& part) {
  if (r.ok()) return ::testing::AssertionFailure() << "listed " << r->size() << " shards";
  if (r.status().code() != code) {
    return ::testing::AssertionFailure()
           << "code " << Status::CodeName(r.status().code()) << ": " << r.status().message();
  }
  if (r.status().message().find(part) == std::string::npos) {
    return ::testing::AssertionFailure() << "message lacks \"" << part << "\": " << r.status().message();
  }
  return ::testing::AssertionSuccess();
}

TEST(ShardListTest, RangeKeepsItsZeroPadding) {
  testing::TempDir tmp;
  make_shards(tmp.path(), 12);
  Result<Paths> r = list_shards(tmp.path() + "/train-{000000..000011}.tar");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 12u);
  EXPECT_EQ(r->front(), tmp.path() + "/train-000000.tar");
  EXPECT_EQ((*r)[10], tmp.path() + "/train-000010.tar");
}

TEST(ShardListTest, UnpaddedRangeAndListAndProduct) {
  testing::TempDir tmp;
  for (const char* name : {"a-0.tar", "a-9.tar", "a-10.tar", "b-0.tar", "b-9.tar", "b-10.tar"})
    touch(tmp.path() + "/" + name);
  Result<Paths> r = list_shards(tmp.path() + "/{a,b}-{9..10}.tar");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, (Paths{tmp.path() + "/a-9.tar", tmp.path() + "/a-10.tar", tmp.path() + "/b-9.tar",
                       tmp.path() + "/b-10.tar"}));
  // A single-shard range is inclusive at both ends.
  r = list_shards(tmp.path() + "/a-{0..0}.tar");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, Paths{tmp.path() + "/a-0.tar"});
  // One bound with a leading zero pads both: {00..10} is 00, 01, ..., 10 (braceexpand's rule).
  touch(tmp.path() + "/c-00.tar");
  touch(tmp.path() + "/c-01.tar");
  r = list_shards(tmp.path() + "/c-{00..1}.tar");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, (Paths{tmp.path() + "/c-00.tar", tmp.path() + "/c-01.tar"}));
}

TEST(ShardListTest, BadPatternsAreRefusedWithTheReason) {
  testing::TempDir tmp;
  make_shards(tmp.path(), 3);
  const std::string d = tmp.path();
  EXPECT_TRUE(fails_with(list_shards(d + "/train-{000002..000000}.tar"), Status::Code::kInvalidArgument,
                         "ends before it starts"));
  EXPECT_TRUE(fails_with(list_shards(d + "/train-{}.tar"), Status::Code::kInvalidArgument, "empty group"));
  EXPECT_TRUE(fails_with(list_shards(d + "/train-{a..c}.tar"), Status::Code::kInvalidArgument,
                         "two decimal numbers"));
  EXPECT_TRUE(fails_with(list_shards(d + "/train-{000000..}.tar"), Status::Code::kInvalidArgument,
                         "two decimal numbers"));
  EXPECT_TRUE(
      fails_with(list_shards(d + "/train-{0000{0,1}..2}.tar"), Status::Code::kInvalidArgument, "nested"));
  EXPECT_TRUE(
      fails_with(list_shards(d + "/train-{000000.tar"), Status::Code::kInvalidArgument, "without a '}'"));
  EXPECT_TRUE(
      fails_with(list_shards(d + "/train-}000000.tar"), Status::Code::kInvalidArgument, "without a '{'"));
  EXPECT_TRUE(
      fails_with(list_shards(d + "/train-{000000}.tar"), Status::Code::kInvalidArgument, "neither a range"));
  EXPECT_TRUE(
      fails_with(list_shards(d + "/x-{0..99999999}.tar"), Status::Code::kInvalidArgument, "more than"));
  EXPECT_TRUE(
      fails_with(list_shards(d + "/x-{0..9999}-{0..9999}.tar"), Status::Code::kInvalidArgument, "more than"));
  // Every message names the spec.
  EXPECT_TRUE(fails_with(list_shards(d + "/train-{2..0}.tar"), Status::Code::kInvalidArgument,
                         d + "/train-{2..0}.tar"));
}

TEST(ShardListTest, AMissingShardIsNamedByItsPosition) {
  testing::TempDir tmp;
  make_shards(tmp.path(), 5);
  ASSERT_EQ(::unlink((tmp.path() + "/train-000003.tar").c_str()), 0);
  EXPECT_TRUE(fails_with(list_shards(tmp.path() + "/train-{000000..000004}.tar"), Status::Code::kNotFound,
                         "shard 3 of 5, " + tmp.path() + "/train-000003.tar: No such file or directory"));
  ASSERT_EQ(::mkdir((tmp.path() + "/train-000003.tar").c_str(), 0755), 0);
  EXPECT_TRUE(fails_with(list_shards(tmp.path() + "/train-{000000..000004}.tar"),
                         Status::Code::kInvalidArgument,
                         "shard 3 of 5, " + tmp.path() + "/train-000003.tar: not a regular file"));
}

TEST(ShardListTest, DuplicatesAreRefusedAfterNormalising) {
  testing::TempDir tmp;
  make_shards(tmp.path(), 2);
  EXPECT_TRUE(fails_with(list_shards(tmp.path() + "/train-{000000,000001,000000}.tar"),
                         Status::Code::kInvalidArgument, "shards 0 and 2 of 3 are the same file"));
  ASSERT_EQ(::mkdir((tmp.path() + "/sub").c_str(), 0755), 0);
  touch(tmp.path() + "/list.txt", "train-000000.tar\n./train-000001.tar\nsub/../train-000000.tar\n");
  EXPECT_TRUE(fails_with(list_shards(tmp.path() + "/list.txt"), Status::Code::kInvalidArgument,
                         "shards 0 and 2 of 3 are the same file " + tmp.path() + "/train-000000.tar"));
}

// The same file under two names (a symbolic link, a hard link) is one shard: its samples
// would otherwise be read twice. Both names are in the refusal.
TEST(ShardListTest, OneFileUnderTwoNamesIsRefusedNamingBoth) {
  testing::TempDir tmp;
  make_shards(tmp.path(), 2);
  const std::string first = tmp.path() + "/train-000000.tar";
  ASSERT_EQ(::symlink(first.c_str(), (tmp.path() + "/latest.tar").c_str()), 0);
  touch(tmp.path() + "/list.txt", "train-000000.tar\ntrain-000001.tar\nlatest.tar\n");
  EXPECT_TRUE(
      fails_with(list_shards(tmp.path() + "/list.txt"), Status::Code::kInvalidArgument,
                 "shards 0 and 2 of 3 are one file, named " + first + " and " + tmp.path() + "/latest.tar"));
  // A link sitting in a shard folder.
  EXPECT_TRUE(fails_with(list_shards(tmp.path()), Status::Code::kInvalidArgument, "are one file, named"));
  ASSERT_EQ(::unlink((tmp.path() + "/latest.tar").c_str()), 0);
  ASSERT_EQ(::link(first.c_str(), (tmp.path() + "/hard.tar").c_str()), 0);
  EXPECT_TRUE(fails_with(list_shards(tmp.path()), Status::Code::kInvalidArgument,
                         "are one file, named " + tmp.path() + "/hard.tar and " + first));
}

// ".." after a symbolic link goes up from where the link points, as the kernel reads it:
// "lex/link/../s.tar" names the s.tar beside the link's target, not lex/s.tar.
TEST(ShardListTest, DotDotIsResolvedAsTheKernelDoes) {
  testing::TempDir tmp;
  for (const char* dir : {"/lex", "/far", "/far/deep"})
    ASSERT_EQ(::mkdir((tmp.path() + dir).c_str(), 0755), 0);
  touch(tmp.path() + "/lex/s.tar", "the lexical one");
  touch(tmp.path() + "/far/s.tar", "the kernel's one");
  ASSERT_EQ(::symlink((tmp.path() + "/far/deep").c_str(), (tmp.path() + "/lex/link").c_str()), 0);
  Result<Paths> r = list_shards(tmp.path() + "/lex/link/../s.tar");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, Paths{tmp.path() + "/far/s.tar"});
  // A name that exists only when ".." is read as text is not found, as ls would say.
  touch(tmp.path() + "/lex/only-lexical.tar");
  EXPECT_TRUE(fails_with(list_shards(tmp.path() + "/lex/link/../only-lexical.tar"), Status::Code::kNotFound,
                         "only-lexical.tar not found"));
}

// A pattern is bounded by the bytes of the names it would make, not only by their count:
// a long folder name times a large range is refused before anything is allocated.
TEST(ShardListTest, APatternIsBoundedByTheBytesOfItsNames) {
  std::string folder;  // 3.8 KB in names the file system allows
  for (int i = 0; i < 19; ++i) folder += "/" + std::string(199, 'd');
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(fails_with(list_shards(folder + "/s-{0..999999}.tar"), Status::Code::kInvalidArgument,
                         "MiB a shard spec may name"));
  EXPECT_TRUE(fails_with(list_shards(folder + "/{a,b}-{0..999}-{0..99}.tar"), Status::Code::kInvalidArgument,
                         "MiB a shard spec may name"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));  // not gigabytes of strings
}

TEST(ShardListTest, DirectoryListsItsTarFilesSortedBytewise) {
  testing::TempDir tmp;
  for (const char* name :
       {"b.tar", "B.tar", "a-1.tar", "a.tar", ".hidden.tar", "notes.txt", "x.tar.gz", ".tar"}) {
    touch(tmp.path() + "/" + name);
  }
  ASSERT_EQ(::mkdir((tmp.path() + "/dir.tar").c_str(), 0755), 0);  // a folder is no shard
  Result<Paths> r = list_shards(tmp.path() + "/");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const std::string d = tmp.path();
  EXPECT_EQ(*r, (Paths{d + "/B.tar", d + "/a-1.tar", d + "/a.tar", d + "/b.tar"}));
}

TEST(ShardListTest, DirectoryWithoutTarFilesIsRefused) {
  testing::TempDir tmp;
  touch(tmp.path() + "/readme.txt");
  EXPECT_TRUE(
      fails_with(list_shards(tmp.path()), Status::Code::kNotFound, tmp.path() + " holds no .tar files"));
}

TEST(ShardListTest, ListFileTakesRelativePathsFromItsFolder) {
  testing::TempDir tmp;
  ASSERT_EQ(::mkdir((tmp.path() + "/lists").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((tmp.path() + "/data").c_str(), 0755), 0);
  make_shards(tmp.path() + "/data", 3);
  touch(tmp.path() + "/lists/train.txt",
        "# shards of the train split\n"
        "\n"
        "../data/train-000002.tar\r\n"
        "   \t\n"
        "  ../data//./train-000000.tar  \n"
        "  # an indented comment\n" +
            tmp.path() + "/data/train-000001.tar");  // absolute, and no final newline
  Result<Paths> r = list_shards(tmp.path() + "/lists/train.txt");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const std::string d = tmp.path() + "/data";
  EXPECT_EQ(*r, (Paths{d + "/train-000002.tar", d + "/train-000000.tar", d + "/train-000001.tar"}));
}

TEST(ShardListTest, ListFileProblems) {
  testing::TempDir tmp;
  touch(tmp.path() + "/empty.txt", "# nothing\n\n");
  EXPECT_TRUE(
      fails_with(list_shards(tmp.path() + "/empty.txt"), Status::Code::kInvalidArgument, "names no shards"));
  touch(tmp.path() + "/missing.txt", "gone.tar\n");
  EXPECT_TRUE(fails_with(list_shards(tmp.path() + "/missing.txt"), Status::Code::kNotFound,
                         "shard 0 of 1, " + tmp.path() +
                             "/gone.tar: No such file or directory (from the shard spec " + tmp.path() +
                             "/missing.txt)"));
  ASSERT_EQ(::mkfifo((tmp.path() + "/fifo").c_str(), 0644),
            0);  // read_regular_file refuses it, without blocking
  EXPECT_TRUE(
      fails_with(list_shards(tmp.path() + "/fifo"), Status::Code::kInvalidArgument, "not a regular file"));
}

TEST(ShardListTest, RelativeSpecsAndAMissingSpec) {
  testing::TempDir tmp;
  make_shards(tmp.path(), 2);
  char old[4096];
  ASSERT_NE(::getcwd(old, sizeof(old)), nullptr);
  ASSERT_EQ(::chdir(tmp.path().c_str()), 0);
  Result<Paths> r = list_shards("./train-{000000..000001}.tar");
  Result<Paths> dir = list_shards(".");
  Result<Paths> missing = list_shards("nowhere");
  ASSERT_EQ(::chdir(old), 0);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, (Paths{tmp.path() + "/train-000000.tar", tmp.path() + "/train-000001.tar"}));
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  EXPECT_EQ(*dir, *r);
  EXPECT_TRUE(fails_with(missing, Status::Code::kNotFound, "shard spec nowhere not found"));
  EXPECT_TRUE(fails_with(list_shards(""), Status::Code::kInvalidArgument, "empty shard spec"));
}

TEST(ShardListTest, AbsolutePathDropsOnlyWhatTheKernelIgnores) {
  EXPECT_EQ(absolute_path("/a//b/./c/"), "/a/b/c");
  EXPECT_EQ(absolute_path("/"), "/");
  EXPECT_EQ(absolute_path("/.."), "/");
  EXPECT_EQ(absolute_path("/tmp/.."), "/");
  // ".." under a folder that does not exist is left for open() to report.
  EXPECT_EQ(absolute_path("/no-such-folder-here/../x"), "/no-such-folder-here/../x");
  EXPECT_TRUE(absolute_path("rel").starts_with('/'));
  EXPECT_TRUE(absolute_path("rel").ends_with("/rel"));
  EXPECT_EQ(absolute_path(""), "");
}

TEST(ShardListTest, OneTarFileIsOneShardAndAnyOtherFileIsAList) {
  testing::TempDir tmp;
  touch(tmp.path() + "/only.tar");
  EXPECT_EQ(list_shards(tmp.path() + "/only.tar").value(),
            std::vector<std::string>{tmp.path() + "/only.tar"});
  touch(tmp.path() + "/shards.txt", "only.tar\n");
  EXPECT_EQ(list_shards(tmp.path() + "/shards.txt").value(),
            std::vector<std::string>{tmp.path() + "/only.tar"});
}

}  // namespace
}  // namespace forkfeed
