// forkfeed-shard and forkfeed-mkdata --format wds from the outside: the shards they write
// read back (by forkfeed's Loader, GNU tar and Python's tarfile with WebDataset's key
// rule) as exactly the dataset they were made from; the same input gives the same bytes,
// a rerun rewrites only missing shards; a manifest table's columns become members of
// their samples; bad arguments and bad tables are refused naming what is wrong.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "forkfeed/dataset.h"
#include "forkfeed/loader.h"
#include "tests/testing/command.h"
#include "tests/testing/small_options.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

namespace fs = std::filesystem;

constexpr std::uint32_t kImages = 7;
constexpr std::uint32_t kClasses = 3;
constexpr std::uint64_t kShardSize = 3;  // shards of 3, 3 and 1 samples

using Outcome = testing::CommandOutcome;

using testing::lines_of;
using testing::read_file;

Outcome run_tool(const std::string& tool, const std::vector<std::string>& args, const std::string& dir) {
  std::vector<std::string> argv = {std::string(FORKFEED_BIN_DIR) + "/" + tool};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::run_command(argv, dir);
}

std::string shard_name(const std::string& dir, int shard) {
  char name[32];
  std::snprintf(name, sizeof name, "/s-%06d.tar", shard);
  return dir + name;
}

// Everything one pass of a Loader delivers, to compare two loaders by.
struct Pass {
  std::vector<std::uint64_t> indices;
  std::vector<std::int64_t> labels;
  std::vector<std::string> pixels;  // a batch's bytes each
};

Pass read_pass(const LoaderOptions& o) {
  Pass pass;
  auto loader = testing::open_loader(o);
  if (!loader) return pass;
  for (;;) {
    auto batch = loader->next();
    EXPECT_TRUE(batch.ok()) << batch.status().message();
    if (!batch.ok() || !batch->has_value()) break;
    const Batch& b = **batch;
    pass.indices.insert(pass.indices.end(), b.sample_indices().begin(), b.sample_indices().end());
    pass.labels.insert(pass.labels.end(), b.labels().begin(), b.labels().end());
    pass.pixels.emplace_back(static_cast<const char*>(b.data()), b.bytes());
  }
  return pass;
}

class ShardToolsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dataset_dir_ = new testing::TempDir();
    root_ = new std::string(testing::make_image_folder(dataset_dir_->path(), kImages, kClasses));
    // The shards' index cache goes with the test, not into the user's cache.
    ::setenv("FORKFEED_CACHE_DIR", (dataset_dir_->path() + "/cache").c_str(), 1);
  }
  static void TearDownTestSuite() {
    delete root_;
    delete dataset_dir_;
  }
  const std::string& root() const { return *root_; }

  // forkfeed-shard of the suite's ImageFolder into `dir`, as s-NNNNNN.tar.
  Outcome shard(const std::string& dir, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {
        "--from", root(), "--out", dir + "/s-%06d.tar", "--shard-size", std::to_string(kShardSize)};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_tool("forkfeed-shard", args, dir_.path());
  }
  std::string spec(const std::string& dir) const { return dir + "/s-{000000..000002}.tar"; }

  // The folder's index, as a Loader on it has it.
  DatasetIndex folder_index() const {
    Result<DatasetIndex> index = DatasetIndex::from_image_folder(root());
    EXPECT_TRUE(index.ok()) << index.status().message();
    return index.ok() ? std::move(index).value() : DatasetIndex();
  }
  // The member names the shards should hold, in order: "class_000/img_00000.jpg",
  // "class_000/img_00000.cls", ...
  std::vector<std::string> expected_members() const {
    const DatasetIndex index = folder_index();
    std::vector<std::string> members;
    for (std::size_t i = 0; i < index.size(); ++i) {
      std::string relative(index.path(i).substr(root().size() + 1));
      members.push_back(relative);
      members.push_back(relative.substr(0, relative.rfind('.')) + ".cls");
    }
    return members;
  }

  testing::TempDir dir_;  // per test: shards and captured output

 private:
  static testing::TempDir* dataset_dir_;
  static std::string* root_;
};

testing::TempDir* ShardToolsTest::dataset_dir_ = nullptr;
std::string* ShardToolsTest::root_ = nullptr;

TEST_F(ShardToolsTest, WritesShardSizeSamplesAShardAndPrintsTheSpec) {
  const std::string out = dir_.path() + "/new/folder";  // created
  const Outcome o = shard(out);
  ASSERT_TRUE(o.exited && o.code == 0) << o.describe();
  for (int s = 0; s < 3; ++s) EXPECT_TRUE(fs::is_regular_file(shard_name(out, s))) << shard_name(out, s);
  EXPECT_FALSE(fs::exists(shard_name(out, 3)));
  EXPECT_NE(o.out.find("wrote 7 samples in 3 shards (0 kept) to " + out), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("read them with --shards '" + spec(out) + "'"), std::string::npos) << o.out;
  EXPECT_EQ(o.err, "");  // no progress line off a terminal
}

TEST_F(ShardToolsTest, ALoaderOnTheShardsDeliversTheFolder) {
  ASSERT_EQ(shard(dir_.path()).code, 0);
  for (const bool shuffle : {false, true}) {
    LoaderOptions folder = testing::small_options(root(), 1, 2);
    folder.shuffle = shuffle;
    folder.seed = 11;
    LoaderOptions shards = folder;
    shards.image_folder.clear();
    shards.shards = spec(dir_.path());
    for (const ShardLabel label : {ShardLabel::kCls, ShardLabel::kClassFolder}) {
      SCOPED_TRACE(std::string(shuffle ? "shuffled" : "in order") + ", label " +
                   std::string(to_string(label)));
      shards.shard_label = label;
      const Pass expected = read_pass(folder);
      const Pass got = read_pass(shards);
      ASSERT_EQ(expected.indices.size(), kImages);
      EXPECT_EQ(got.indices, expected.indices);
      EXPECT_EQ(got.labels, expected.labels);
      EXPECT_TRUE(got.pixels == expected.pixels) << "the shards' images decode to other pixels";
    }
  }
  // The index itself: the same labels, sample by sample.
  auto loader = testing::open_loader([&] {
    LoaderOptions o = testing::small_options("", 1, 2);
    o.shards = spec(dir_.path());
    return o;
  }());
  ASSERT_TRUE(loader);
  const DatasetIndex folder = folder_index();
  ASSERT_EQ(loader->dataset().size(), folder.size());
  for (std::size_t i = 0; i < folder.size(); ++i) EXPECT_EQ(loader->dataset().label(i), folder.label(i)) << i;
}

TEST_F(ShardToolsTest, TarListsImageThenClsOfEachSampleInOrder) {
  ASSERT_EQ(shard(dir_.path()).code, 0);
  std::vector<std::string> members;
  std::vector<std::string> labels;
  for (int s = 0; s < 3; ++s) {
    const Outcome o =
        testing::run_command({"/usr/bin/env", "tar", "-tf", shard_name(dir_.path(), s)}, dir_.path());
    ASSERT_EQ(o.code, 0) << o.describe();
    for (const std::string& m : lines_of(o.out)) {
      members.push_back(m);
      if (!m.ends_with(".cls")) continue;
      const Outcome cls =
          testing::run_command({"/usr/bin/env", "tar", "-xOf", shard_name(dir_.path(), s), m}, dir_.path());
      labels.push_back(cls.out);
    }
  }
  EXPECT_EQ(members, expected_members());
  const DatasetIndex folder = folder_index();
  ASSERT_EQ(labels.size(), folder.size());
  for (std::size_t i = 0; i < folder.size(); ++i) EXPECT_EQ(labels[i], std::to_string(folder.label(i))) << i;
}

// WebDataset's own grouping (webdataset.tariterators: base_plus_ext, group_by_keys), in
// Python's tarfile, without the webdataset package: every sample one image and one cls.
TEST_F(ShardToolsTest, PythonTarfileWithWebDatasetKeysFindsEachSampleWhole) {
  ASSERT_EQ(shard(dir_.path()).code, 0);
  const std::string script = R"(
import re, sys, tarfile
for path in sys.argv[1:]:
    samples = []
    with tarfile.open(path) as tar:
        for m in tar:
            match = re.match(r"^((?:.*/|)[^.]+)[.]([^/]*)$", m.name)
            key, ext = match.group(1), match.group(2)
            if not samples or samples[-1][0] != key:
                samples.append((key, {}))
            assert ext not in samples[-1][1], "duplicate " + m.name
            samples[-1][1][ext] = tar.extractfile(m).read()
    for key, members in samples:
        images = sorted(e for e in members if e in ("jpg", "jpeg", "png"))
        print(key, ",".join(images), members.get("cls", b"-").decode(), len(members), sep="\t")
)";
  std::vector<std::string> argv = {"/usr/bin/python3", "-c", script};
  for (int s = 0; s < 3; ++s) argv.push_back(shard_name(dir_.path(), s));
  const Outcome o = testing::run_command(argv, dir_.path());
  ASSERT_EQ(o.code, 0) << o.describe();

  const DatasetIndex folder = folder_index();
  std::vector<std::string> expected;
  for (std::size_t i = 0; i < folder.size(); ++i) {
    const std::string relative(folder.path(i).substr(root().size() + 1));
    const std::size_t dot = relative.rfind('.');
    expected.push_back(relative.substr(0, dot) + "\t" + relative.substr(dot + 1) + "\t" +
                       std::to_string(folder.label(i)) + "\t2");
  }
  EXPECT_EQ(lines_of(o.out), expected);
}

TEST_F(ShardToolsTest, TheSameInputWritesTheSameBytes) {
  const std::string a = dir_.path() + "/a", b = dir_.path() + "/b";
  ASSERT_EQ(shard(a).code, 0);
  ASSERT_EQ(shard(b).code, 0);
  for (int s = 0; s < 3; ++s) {
    const std::string bytes = read_file(shard_name(a, s));
    EXPECT_GT(bytes.size(), 0u);
    EXPECT_TRUE(bytes == read_file(shard_name(b, s))) << "shard " << s << " differs";
  }
}

TEST_F(ShardToolsTest, ARerunRewritesOnlyTheMissingShard) {
  const std::string out = dir_.path();
  ASSERT_EQ(shard(out).code, 0);
  const std::string first = read_file(shard_name(out, 1));
  // An old mtime on every shard: one rewritten now cannot keep it.
  const auto old = fs::file_time_type::clock::now() - std::chrono::hours(24);
  for (int s = 0; s < 3; ++s) fs::last_write_time(shard_name(out, s), old);
  fs::remove(shard_name(out, 1));

  const Outcome rerun = shard(out);
  ASSERT_EQ(rerun.code, 0) << rerun.describe();
  EXPECT_NE(rerun.out.find("wrote 7 samples in 3 shards (2 kept)"), std::string::npos) << rerun.out;
  EXPECT_TRUE(read_file(shard_name(out, 1)) == first);
  EXPECT_GT(fs::last_write_time(shard_name(out, 1)), old);
  EXPECT_EQ(fs::last_write_time(shard_name(out, 0)), old);
  EXPECT_EQ(fs::last_write_time(shard_name(out, 2)), old);

  const Outcome forced = shard(out, {"--force"});
  ASSERT_EQ(forced.code, 0) << forced.describe();
  EXPECT_NE(forced.out.find("(0 kept)"), std::string::npos) << forced.out;
  for (int s = 0; s < 3; s += 2) EXPECT_GT(fs::last_write_time(shard_name(out, s)), old) << s;
}

TEST_F(ShardToolsTest, BadArgumentsAreRefusedNamingThem) {
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string message;
  };
  const std::string out = dir_.path() + "/o";
  const std::vector<Case> cases = {
      {{"--from", root(), "--out", out + "/train.tar"}, 2, "--out " + out + "/train.tar: no %d"},
      {{"--from", root(), "--out", out + "/%d-%d.tar"}, 2, "more than one '%'"},
      {{"--from", root(), "--out", out + "/%6d.tar"}, 2, "not a %d or %0Nd"},
      {{"--from", root(), "--out", out + "/{%d}.tar"}, 2, "'{' and '}'"},
      {{"--from", root(), "--out", out + "/%d.tar", "--shard-size", "0"}, 2, "--shard-size"},
      {{"--from", root(), "--out", out + "/%d.tar", "--shard-size", "-1"}, 2, "--shard-size"},
      {{"--from", dir_.path() + "/missing", "--out", out + "/%d.tar"},
       2,
       dir_.path() + "/missing does not exist"},
      {{"--out", out + "/%d.tar"}, 2, "--from"},
      // One padded digit holds 7 shards (TooManyShardsForThePaddingAreRefused: not 11).
      {{"--from", root(), "--out", out + "/%01d.tar", "--shard-size", "1"}, 0, ""},
  };
  for (const Case& c : cases) {
    const Outcome o = run_tool("forkfeed-shard", c.args, dir_.path());
    EXPECT_TRUE(o.exited && o.code == c.code) << o.describe();
    EXPECT_NE(o.err.find(c.message), std::string::npos) << o.describe();
    if (c.code == 2) {
      EXPECT_FALSE(fs::exists(out)) << "a refused run wrote something";
    }
  }
}

TEST_F(ShardToolsTest, TooManyShardsForThePaddingAreRefused) {
  // 101 samples, one a shard: shards 000 to 100 do not all fit "%02d" ("%01d" is "%d").
  const std::string data = dir_.path() + "/m";
  fs::create_directories(data);
  const DatasetIndex folder = folder_index();
  std::ofstream manifest(data + "/list.tsv");
  for (int i = 0; i < 101; ++i)
    manifest << folder.path(static_cast<std::size_t>(i) % folder.size()) << "\t0\n";
  manifest.close();
  const Outcome o = run_tool(
      "forkfeed-shard",
      {"--from", data + "/list.tsv", "--out", dir_.path() + "/o/%02d.tar", "--shard-size", "1"}, dir_.path());
  EXPECT_EQ(o.code, 2) << o.describe();
  EXPECT_FALSE(fs::exists(dir_.path() + "/o"));
  EXPECT_NE(o.err.find("101 shards need 3 digits, more than its padding of 2"), std::string::npos)
      << o.describe();
}

TEST_F(ShardToolsTest, SamplesThatWouldMergeAreRefusedNamingBothFiles) {
  // x.jpg and x.png sort next to each other and both get the key class_a/x.
  const std::string data = dir_.path() + "/clash";
  fs::create_directories(data + "/class_a");
  const std::string image(folder_index().path(0));
  fs::copy_file(image, data + "/class_a/x.jpg");
  fs::copy_file(image, data + "/class_a/x.png");
  const Outcome o =
      run_tool("forkfeed-shard", {"--from", data, "--out", dir_.path() + "/o/%d.tar"}, dir_.path());
  EXPECT_EQ(o.code, 1) << o.describe();
  EXPECT_NE(o.err.find(data + "/class_a/x.jpg and " + data + "/class_a/x.png"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("class_a/x"), std::string::npos) << o.err;
  EXPECT_FALSE(fs::exists(dir_.path() + "/o/0.tar"));
}

TEST_F(ShardToolsTest, ManifestKeysAreRelativeToItsFolderAndDotsBecomeUnderscores) {
  // Relative, absolute and dotted paths: every key must survive WebDataset's split.
  const std::string data = dir_.path() + "/data";
  fs::create_directories(data + "/a.b");
  const std::string image(folder_index().path(0));
  fs::copy_file(image, data + "/a.b/x.y.JPG");
  fs::copy_file(image, dir_.path() + "/outside.jpg");
  std::ofstream(data + "/list.tsv") << "a.b/x.y.JPG\t4\n" << dir_.path() << "/outside.jpg\t5\n";
  const Outcome o = run_tool("forkfeed-shard",
                             {"--from", data + "/list.tsv", "--out", dir_.path() + "/o/%d.tar"}, dir_.path());
  ASSERT_EQ(o.code, 0) << o.describe();
  const Outcome tar =
      testing::run_command({"/usr/bin/env", "tar", "-tf", dir_.path() + "/o/0.tar"}, dir_.path());
  const std::string outside = dir_.path().substr(1) + "/outside";
  EXPECT_EQ(lines_of(tar.out),
            (std::vector<std::string>{"a.b/x_y.jpg", "a.b/x_y.cls", outside + ".jpg", outside + ".cls"}));
}

// Only the file name's dots become '_': a class folder "a.b" sorts before "a_a" in the
// ImageFolder, and must still do so as the key's folder (--shard-label class_folder).
TEST_F(ShardToolsTest, DottedClassFoldersKeepTheirLabelsAsKeyFolders) {
  const std::string data = dir_.path() + "/dots";
  fs::create_directories(data + "/a.b");
  fs::create_directories(data + "/a_a");
  const std::string image(folder_index().path(0));
  fs::copy_file(image, data + "/a.b/x.y.jpg");
  fs::copy_file(image, data + "/a_a/z.jpg");
  const Outcome o =
      run_tool("forkfeed-shard", {"--from", data, "--out", dir_.path() + "/o/%d.tar"}, dir_.path());
  ASSERT_EQ(o.code, 0) << o.describe();
  LoaderOptions folder = testing::small_options(data, 1, 2);
  folder.shuffle = false;
  LoaderOptions shards = folder;
  shards.image_folder.clear();
  shards.shards = dir_.path() + "/o/{0..0}.tar";
  shards.shard_label = ShardLabel::kClassFolder;
  const Pass expected = read_pass(folder);
  ASSERT_EQ(expected.labels, (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(read_pass(shards).labels, expected.labels);
}

// A manifest with a header line: each column a member of its sample, in column order,
// files' bytes for image and array columns, the cell itself for others, none when empty.
TEST_F(ShardToolsTest, AManifestTablePacksEachColumnAsAMemberInColumnOrder) {
  const std::string data = dir_.path() + "/table";
  fs::create_directories(data + "/a");
  fs::create_directories(data + "/b");
  const DatasetIndex folder = folder_index();
  fs::copy_file(std::string(folder.path(0)), data + "/a/x.jpg");
  fs::copy_file(std::string(folder.path(1)), data + "/b/y.jpg");
  std::ofstream(data + "/a/x_mask.png") << "mask of x";
  std::ofstream(data + "/a/x.npy") << "array of x";
  std::ofstream(dir_.path() + "/y.npy") << "array of y";
  std::ofstream(data + "/list.tsv")
      << "# image, label, caption, mask, array, record\n"
      << "image\tcls\ttxt\tseg.png\temb.npy\tJSON\n"
      << "a/x.jpg\t 3\ta dog on a beach\ta/x_mask.png\ta/x.npy\t{\"score\": 0.5}\n"
      << "b/y.jpg\t\tcaf\xC3\xA9 au lait\t\t" << dir_.path() << "/y.npy\t{}\n";
  const Outcome o = run_tool("forkfeed-shard",
                             {"--from", data + "/list.tsv", "--out", dir_.path() + "/o/%d.tar"}, dir_.path());
  ASSERT_EQ(o.code, 0) << o.describe();
  EXPECT_NE(o.out.find("wrote 2 samples in 1 shard"), std::string::npos) << o.out;
  const std::string shard = dir_.path() + "/o/0.tar";
  const Outcome tar = testing::run_command({"/usr/bin/env", "tar", "-tf", shard}, dir_.path());
  ASSERT_EQ(tar.code, 0) << tar.describe();
  EXPECT_EQ(lines_of(tar.out),
            (std::vector<std::string>{"a/x.jpg", "a/x.cls", "a/x.txt", "a/x.seg.png", "a/x.emb.npy",
                                      "a/x.json", "b/y.jpg", "b/y.txt", "b/y.emb.npy", "b/y.json"}));
  const std::map<std::string, std::string> expected = {
      {"a/x.jpg", read_file(std::string(folder.path(0)))},
      {"a/x.cls", "3"},
      {"a/x.txt", "a dog on a beach"},
      {"a/x.seg.png", "mask of x"},
      {"a/x.emb.npy", "array of x"},
      {"a/x.json", "{\"score\": 0.5}"},
      {"b/y.jpg", read_file(std::string(folder.path(1)))},
      {"b/y.txt", "caf\xC3\xA9 au lait"},
      {"b/y.emb.npy", "array of y"},
      {"b/y.json", "{}"},
  };
  for (const auto& [member, bytes] : expected) {
    const Outcome x = testing::run_command({"/usr/bin/env", "tar", "-xOf", shard, member}, dir_.path());
    EXPECT_EQ(x.code, 0) << x.describe();
    EXPECT_TRUE(x.out == bytes) << member << ": " << x.out.substr(0, 100);
  }
}

TEST_F(ShardToolsTest, ABadTableIsRefusedNamingItsLineAndWritesNothing) {
  const std::string data = dir_.path() + "/bad";
  fs::create_directories(data);
  fs::copy_file(std::string(folder_index().path(0)), data + "/x.jpg");
  struct Case {
    std::string table;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"image\tcls\tjpg\nx.jpg\t1\tx.jpg\n",
       "list.tsv:2: the column jpg and the image x.jpg would both be the member .jpg; name the column "
       "otherwise"},
      {"image\tcls\nx.jpg\tthree\n", "list.tsv:2: cls must be a non-negative integer, got 'three'"},
      {"image\tnpy\nx.jpg\tmissing.npy\n", "list.tsv:2: cannot open the npy file " + data + "/missing.npy"},
      {"image\tcls\ttxt\nx.jpg\t1\n", "list.tsv:2: 2 cells, but the header line names 3 columns"},
      {"image\tcls\n\t1\n", "list.tsv:2: the first column, image, holds the sample's image path; got ''"},
      {"x.jpg\nx.jpg\n",
       "the header line's first column is named x.jpg, an image's name: is it an image path without "
       "its label?"},
      {"image\tcaption text\nx.jpg\thi\n", "'caption text' is no column name"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.table);
    std::ofstream(data + "/list.tsv", std::ios::trunc) << c.table;
    const Outcome o = run_tool(
        "forkfeed-shard", {"--from", data + "/list.tsv", "--out", dir_.path() + "/o/%d.tar"}, dir_.path());
    EXPECT_EQ(o.code, 1) << o.describe();
    EXPECT_NE(o.err.find(c.message), std::string::npos) << o.err;
    EXPECT_FALSE(fs::exists(dir_.path() + "/o/0.tar"));
  }
}

TEST_F(ShardToolsTest, MkdataWritesShardsOfTheImagesItWouldWriteAsAFolder) {
  const std::string wds = dir_.path() + "/wds", folder = dir_.path() + "/folder";
  const std::vector<std::string> common = {"--images", "10",         "--classes", "2",          "--seed",
                                           "3",        "--min-side", "40",        "--max-side", "80"};
  std::vector<std::string> args = {"--out", wds, "--format", "wds", "--shard-size", "4"};
  args.insert(args.end(), common.begin(), common.end());
  const Outcome w = run_tool("forkfeed-mkdata", args, dir_.path());
  ASSERT_EQ(w.code, 0) << w.describe();
  std::vector<std::string> entries;
  for (const auto& e : fs::directory_iterator(wds)) entries.push_back(e.path().filename().string());
  std::sort(entries.begin(), entries.end());
  EXPECT_EQ(entries, (std::vector<std::string>{"shard-000000.tar", "shard-000001.tar", "shard-000002.tar"}))
      << "the scratch folder must be gone";
  EXPECT_NE(w.out.find("read them with --shards '" + wds + "/shard-{000000..000002}.tar'"), std::string::npos)
      << w.out;

  // The folder format is as it was: its own summary, and the same images the shards hold.
  args = {"--out", folder};
  args.insert(args.end(), common.begin(), common.end());
  const Outcome f = run_tool("forkfeed-mkdata", args, dir_.path());
  ASSERT_EQ(f.code, 0) << f.describe();
  EXPECT_TRUE(f.out.starts_with("wrote 10 images in 2 classes to " + folder + " (")) << f.out;
  EXPECT_EQ(f.out.find("shard"), std::string::npos) << f.out;
  EXPECT_FALSE(fs::exists(folder + "/shard-000000.tar"));
  const Outcome again = run_tool("forkfeed-mkdata", {"--out", folder, "--shard-size", "4"}, dir_.path());
  EXPECT_EQ(again.code, 2) << again.describe();

  Result<DatasetIndex> index = DatasetIndex::from_image_folder(folder);
  ASSERT_TRUE(index.ok()) << index.status().message();
  ASSERT_EQ(index->size(), 10u);
  for (std::size_t i = 0; i < index->size(); ++i) {
    const std::string relative(index->path(i).substr(folder.size() + 1));
    const Outcome member = testing::run_command(
        {"/usr/bin/env", "tar", "-xOf", wds + "/shard-00000" + std::to_string(i / 4) + ".tar", relative},
        dir_.path());
    EXPECT_EQ(member.code, 0) << member.describe();
    EXPECT_TRUE(member.out == read_file(std::string(index->path(i)))) << relative;
  }
}

}  // namespace
}  // namespace forkfeed
