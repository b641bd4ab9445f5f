// DatasetIndex: an ImageFolder lists samples and labels in torchvision's order (the
// expected lists below were checked against torchvision's make_dataset logic), and a
// manifest parses with errors that name the file and line.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "forkfeed/dataset.h"
#include "tests/testing/processes.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using Samples = std::vector<std::pair<std::string, std::int64_t>>;

// The index never reads file contents, so images can be empty files.
void write_file(const std::string& path, const std::string& content = "") {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream out(path, std::ios::binary);
  out << content;
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

Samples samples_of(const DatasetIndex& index) {
  Samples out;
  for (std::size_t i = 0; i < index.size(); ++i) out.emplace_back(std::string(index.path(i)), index.label(i));
  return out;
}

TEST(ImageFolder, FollowsTorchvisionOrderAndExtensions) {
  TempDir dir;
  const std::string root = dir.path() + "/data";
  // "stray.jpg" sits in the root, not in a class: ignored. "B" < "a" byte-wise, as in
  // Python's sorted() on str.
  for (const char* f : {"stray.jpg", "B/z.JPG", "B/Z.jpg", "B/a.Png", "B/._a.jpg", "B/notes.txt", "B/README",
                        "B/x.jpgx", "B/jpg", "B/sub/b.jpeg", "B/sub/deeper/d.bmp", "B/sub-a/c.png", "a/1.jpg",
                        "empty/readme.txt", "z/5.webp", "z/4.TIFF", "z/3.tif", "z/2.PGM", "z/1.ppm"}) {
    write_file(root + "/" + f);
  }

  Result<DatasetIndex> index = DatasetIndex::from_image_folder(root);
  ASSERT_TRUE(index.ok()) << index.status().message();
  EXPECT_EQ(index->classes(), (std::vector<std::string>{"B", "a", "empty", "z"}));
  // Per class, directories come in sorted order of their full path, so "sub-a" ('-' <
  // '/') comes before "sub/deeper"; names within a directory are sorted byte-wise.
  // "._a.jpg" ends in ".jpg" and counts, as in torchvision. "empty" keeps label 2.
  const std::string b = root + "/B/";
  const Samples expected = {
      {b + "._a.jpg", 0},
      {b + "Z.jpg", 0},
      {b + "a.Png", 0},
      {b + "z.JPG", 0},
      {b + "sub/b.jpeg", 0},
      {b + "sub-a/c.png", 0},
      {b + "sub/deeper/d.bmp", 0},
      {root + "/a/1.jpg", 1},
      {root + "/z/1.ppm", 3},
      {root + "/z/2.PGM", 3},
      {root + "/z/3.tif", 3},
      {root + "/z/4.TIFF", 3},
      {root + "/z/5.webp", 3},
  };
  EXPECT_EQ(samples_of(*index), expected);

  std::size_t bytes = 0;
  for (const auto& [path, label] : expected) bytes += path.size();
  EXPECT_EQ(index->path_bytes(), bytes);
}

TEST(ImageFolder, EmptyClassKeepsLabelPositions) {
  TempDir dir;
  const std::string root = dir.path();
  write_file(root + "/ant/1.jpg");
  fs::create_directories(root + "/bee");
  write_file(root + "/cat/1.jpg");

  Result<DatasetIndex> index = DatasetIndex::from_image_folder(root);
  ASSERT_TRUE(index.ok()) << index.status().message();
  EXPECT_EQ(index->classes(), (std::vector<std::string>{"ant", "bee", "cat"}));
  EXPECT_EQ(samples_of(*index), (Samples{{root + "/ant/1.jpg", 0}, {root + "/cat/1.jpg", 2}}));
}

TEST(ImageFolder, RootWithTrailingSlashJoinsLikeOsPathJoin) {
  TempDir dir;
  write_file(dir.path() + "/cls/1.jpg");

  Result<DatasetIndex> index = DatasetIndex::from_image_folder(dir.path() + "/");
  ASSERT_TRUE(index.ok()) << index.status().message();
  EXPECT_EQ(samples_of(*index), (Samples{{dir.path() + "/cls/1.jpg", 0}}));
}

TEST(ImageFolder, FollowsSymlinksAndStopsAtLoops) {
  TempDir dir;
  const std::string root = dir.path() + "/data";
  write_file(root + "/a/x.jpg");
  write_file(dir.path() + "/elsewhere/imgs/o.jpg");
  write_file(dir.path() + "/elsewhere/more/m.jpg");
  fs::create_directory_symlink(dir.path() + "/elsewhere/imgs", root + "/b");       // a class
  fs::create_directory_symlink(dir.path() + "/elsewhere/more", root + "/a/more");  // descended
  fs::create_directory_symlink(root + "/a", root + "/a/loop");                     // a cycle
  fs::create_symlink(dir.path() + "/nowhere", root + "/broken");                   // not a class

  Result<DatasetIndex> index = DatasetIndex::from_image_folder(root);
  ASSERT_TRUE(index.ok()) << index.status().message();
  EXPECT_EQ(index->classes(), (std::vector<std::string>{"a", "b"}));
  // torchvision would walk a/loop/loop/... until the kernel gives up, repeating x.jpg
  // and m.jpg; each file is listed once here.
  EXPECT_EQ(samples_of(*index),
            (Samples{{root + "/a/x.jpg", 0}, {root + "/a/more/m.jpg", 0}, {root + "/b/o.jpg", 1}}));
}

TEST(ImageFolder, MissingRootIsNotFound) {
  TempDir dir;
  const std::string root = dir.path() + "/no-such-dataset";
  Result<DatasetIndex> index = DatasetIndex::from_image_folder(root);
  ASSERT_FALSE(index.ok());
  EXPECT_EQ(index.status().code(), Status::Code::kNotFound);
  EXPECT_NE(index.status().message().find(root), std::string::npos) << index.status().message();
}

TEST(ImageFolder, RootThatIsAFileIsNotFound) {
  TempDir dir;
  write_file(dir.path() + "/list.txt");
  Result<DatasetIndex> index = DatasetIndex::from_image_folder(dir.path() + "/list.txt");
  ASSERT_FALSE(index.ok());
  EXPECT_EQ(index.status().code(), Status::Code::kNotFound);
  EXPECT_NE(index.status().message().find("not a directory"), std::string::npos) << index.status().message();
}

TEST(ImageFolder, RootWithoutClassFoldersIsNotFound) {
  TempDir dir;
  write_file(dir.path() + "/1.jpg");
  Result<DatasetIndex> index = DatasetIndex::from_image_folder(dir.path());
  ASSERT_FALSE(index.ok());
  EXPECT_EQ(index.status().code(), Status::Code::kNotFound);
  EXPECT_EQ(index.status().message(),
            "no class folders in " + dir.path() + "; an ImageFolder root holds one subdirectory per class");
}

TEST(ImageFolder, ClassesWithoutImagesIsNotFound) {
  TempDir dir;
  write_file(dir.path() + "/cat/notes.txt");
  fs::create_directories(dir.path() + "/dog/deeper");
  Result<DatasetIndex> index = DatasetIndex::from_image_folder(dir.path());
  ASSERT_FALSE(index.ok());
  EXPECT_EQ(index.status().code(), Status::Code::kNotFound);
  const std::string& msg = index.status().message();
  EXPECT_NE(msg.find("no images found under " + dir.path()), std::string::npos) << msg;
  EXPECT_NE(msg.find(".jpg, .jpeg"), std::string::npos) << msg;
  EXPECT_NE(msg.find("in 2 class folders"), std::string::npos) << msg;
}

TEST(Manifest, RelativeAndAbsolutePathsCommentsBlankLinesAndCrlf) {
  TempDir dir;
  const std::string manifest = dir.path() + "/lists/train.tsv";
  write_file(manifest,
             "# path<TAB>label\r\n"
             "\r\n"
             "cat/1.jpg\t0\r\n"
             "  \t \n"
             "/data/elsewhere/2.png\t7\r\n"
             "dog/3.jpg\t 1 \n"
             "last.jpg\t2");  // no newline at the end

  Result<DatasetIndex> index = DatasetIndex::from_manifest(manifest);
  ASSERT_TRUE(index.ok()) << index.status().message();
  const std::string folder = dir.path() + "/lists/";
  EXPECT_EQ(samples_of(*index), (Samples{{folder + "cat/1.jpg", 0},
                                         {"/data/elsewhere/2.png", 7},
                                         {folder + "dog/3.jpg", 1},
                                         {folder + "last.jpg", 2}}));
  EXPECT_TRUE(index->classes().empty());
}

TEST(Manifest, MissingFileIsNotFound) {
  TempDir dir;
  const std::string manifest = dir.path() + "/missing.tsv";
  Result<DatasetIndex> index = DatasetIndex::from_manifest(manifest);
  ASSERT_FALSE(index.ok());
  EXPECT_EQ(index.status().code(), Status::Code::kNotFound);
  EXPECT_NE(index.status().message().find(manifest), std::string::npos) << index.status().message();
}

TEST(Manifest, LineWithoutTabNamesTheLine) {
  TempDir dir;
  const std::string manifest = dir.path() + "/list.tsv";
  write_file(manifest, "# comment\n\ncat/1.jpg 0\n");
  Result<DatasetIndex> index = DatasetIndex::from_manifest(manifest);
  ASSERT_FALSE(index.ok());
  EXPECT_EQ(index.status().code(), Status::Code::kBadData);
  EXPECT_EQ(index.status().message(), manifest + ":3: expected 'path<TAB>label', got 'cat/1.jpg 0'");
}

TEST(Manifest, BadLabelNamesTheLine) {
  for (const char* label : {"cat", "-1", "3x", "", "99999999999999999999"}) {
    TempDir dir;
    const std::string manifest = dir.path() + "/list.tsv";
    write_file(manifest, "a.jpg\t0\r\nb.jpg\t" + std::string(label) + "\r\n");
    Result<DatasetIndex> index = DatasetIndex::from_manifest(manifest);
    ASSERT_FALSE(index.ok()) << "label '" << label << "' was accepted";
    EXPECT_EQ(index.status().code(), Status::Code::kBadData);
    EXPECT_EQ(index.status().message().rfind(
                  manifest + ":2: label must be a non-negative integer, got '" + label + "'", 0),
              0u)
        << index.status().message();
  }
}

// A table of named columns (forkfeed-shard's input) passed as a plain manifest: its
// header line is no sample, and the error says how to read the table's fields.
TEST(Manifest, ATableSaysHowToReadIt) {
  TempDir dir;
  const std::string manifest = dir.path() + "/table.tsv";
  write_file(manifest, "# made by hand\nimage\tcls\ttxt\na.jpg\t3\ta dog\n");
  Result<DatasetIndex> index = DatasetIndex::from_manifest(manifest);
  ASSERT_FALSE(index.ok());
  EXPECT_EQ(index.status().code(), Status::Code::kBadData);
  const std::string& message = index.status().message();
  EXPECT_EQ(message.rfind(manifest + ":2: ", 0), 0u) << message;
  for (const char* part : {"ends in no label, as a table's header line of named columns does",
                           "forkfeed-shard --from MANIFEST", "a non-negative integer label on every line"}) {
    EXPECT_NE(message.find(part), std::string::npos) << part << " not in " << message;
  }
}

TEST(Manifest, WithoutSamplesIsAnError) {
  TempDir dir;
  const std::string manifest = dir.path() + "/list.tsv";
  write_file(manifest, "# nothing here yet\n\n");
  Result<DatasetIndex> index = DatasetIndex::from_manifest(manifest);
  ASSERT_FALSE(index.ok());
  EXPECT_EQ(index.status().code(), Status::Code::kBadData);
  EXPECT_NE(index.status().message().find("no samples"), std::string::npos) << index.status().message();
}

// A manifest names files, one a line: a line longer than any path is a file passed by
// mistake, refused naming the line and the limit.
TEST(Manifest, OverlongLineIsRefusedNamingTheLimit) {
  TempDir dir;
  const std::string manifest = dir.path() + "/list.tsv";
  write_file(manifest, "a.jpg\t0\n" + std::string(100'000, 'x') + "\t1\n");
  Result<DatasetIndex> index = DatasetIndex::from_manifest(manifest);
  ASSERT_FALSE(index.ok());
  EXPECT_EQ(index.status().code(), Status::Code::kBadData);
  EXPECT_EQ(index.status().message().rfind(manifest + ":2: ", 0), 0u) << index.status().message();
  EXPECT_NE(index.status().message().find("65536"), std::string::npos) << index.status().message();
}

// Not a regular file: refused at once, naming what it is, instead of blocking in open()
// (a FIFO). forkfeed-bench's tests cover a character device (/dev/zero).
TEST(Manifest, FifoAndDirectoryAreRefusedNamingWhatTheyAre) {
  testing::HangGuard guard(60, "Manifest.FifoAndDirectory");
  TempDir dir;
  const std::string fifo = dir.path() + "/list.tsv";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  for (const auto& [path, what] :
       {std::pair<std::string, std::string>{fifo, "is a FIFO"}, {dir.path(), "is a directory"}}) {
    Result<DatasetIndex> index = DatasetIndex::from_manifest(path);
    ASSERT_FALSE(index.ok()) << path;
    EXPECT_NE(index.status().message().find(path), std::string::npos) << index.status().message();
    EXPECT_NE(index.status().message().find(what), std::string::npos) << index.status().message();
  }
}

}  // namespace
}  // namespace forkfeed
