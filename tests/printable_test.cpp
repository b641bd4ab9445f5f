// printable(): user data quoted in a message reaches a terminal as text. ESC and BEL in a
// file name or manifest line are escaped, a NUL cuts nothing, and valid UTF-8 is kept.
#include "base/printable.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "forkfeed/dataset.h"
#include "forkfeed/loader.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

using namespace std::string_literals;

// True when `text` holds a C0 control byte or DEL, which a terminal would act on.
bool has_control_byte(const std::string& text) {
  for (const char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) return true;
  }
  return false;
}

TEST(Printable, EscapesControlBytes) {
  EXPECT_EQ(printable("a\x1b[31mb\x07\tc\n\r"), "a\\e[31mb\\a\\tc\\n\\r");
  EXPECT_EQ(printable("x\0y\x7f\x01"s), "x\\x00y\\x7f\\x01");
}

TEST(Printable, KeepsValidUtf8AndEscapesTheRest) {
  EXPECT_EQ(printable("caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80 back\\slash"),
            "caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80 back\\slash");
  EXPECT_EQ(printable("bad \xff\xc3 end"), "bad \\xff\\xc3 end");
  EXPECT_EQ(printable("over \xc0\xaf long"), "over \\xc0\\xaf long");
  EXPECT_EQ(printable("csi \xc2\x9b"
                      "31m"),
            "csi \\u009b31m");  // C1 control
}

TEST(Printable, IsIdempotent) {
  const std::string once = printable("a\x1b\x07\0\xff z"s);
  EXPECT_EQ(printable(once), once);
}

TEST(Printable, ManifestErrorQuotesTheLineEscaped) {
  testing::TempDir dir;
  const std::string manifest = dir.path() + "/list.tsv";
  // After a good line: a first line without a label reads as a table's header.
  std::ofstream(manifest, std::ios::binary) << "ok.jpg\t0\na\x1b[31m\x07\0b.jpg\tlabel\x1b\0tail\n"s;
  const Result<DatasetIndex> index = DatasetIndex::from_manifest(manifest);
  ASSERT_FALSE(index.ok());
  const std::string& message = index.status().message();
  EXPECT_FALSE(has_control_byte(message)) << printable(message);
  EXPECT_NE(message.find("'label\\e\\x00tail' in 'a\\e[31m\\a\\x00b.jpg\\tlabel\\e\\x00tail'"),
            std::string::npos)
      << message;
}

TEST(Printable, ManifestPathWithANulIsRefused) {
  testing::TempDir dir;
  const std::string manifest = dir.path() + "/list.tsv";
  std::ofstream(manifest, std::ios::binary) << "good.jpg\0evil.jpg\t3\n"s;
  const Result<DatasetIndex> index = DatasetIndex::from_manifest(manifest);
  ASSERT_FALSE(index.ok()) << "the NUL would have made the loader read good.jpg";
  EXPECT_NE(
      index.status().message().find(":1: a path cannot hold a NUL byte, got 'good.jpg\\x00evil.jpg\\t3'"),
      std::string::npos)
      << index.status().message();
}

TEST(Printable, ImageFolderErrorNamesTheRootEscaped) {
  testing::TempDir dir;
  const std::string root = dir.path() + "/no\x1b]0;title\x07here";
  const Result<DatasetIndex> index = DatasetIndex::from_image_folder(root);
  ASSERT_FALSE(index.ok());
  EXPECT_FALSE(has_control_byte(index.status().message())) << printable(index.status().message());
  EXPECT_NE(index.status().message().find("/no\\e]0;title\\ahere"), std::string::npos)
      << printable(index.status().message());
}

// A file that cannot be decoded fails its batch with an error naming the file: its
// name is quoted escaped, whatever bytes it holds.
TEST(Printable, DecodeErrorNamesTheFileEscaped) {
  testing::TempDir dir;
  const std::string root = testing::make_image_folder(dir.path(), 2, 1);
  std::ofstream(root + "/class_000/bad\x1b[31m\x07name.jpg") << "not an image";
  LoaderOptions o;
  o.image_folder = root;
  o.workers = 1;
  o.batch_size = 4;
  o.size = 16;
  o.shuffle = false;
  o.log_level = "off";
  auto loader = Loader::open(o);
  ASSERT_TRUE(loader.ok()) << loader.status().message();
  const Result<std::optional<Batch>> batch = (*loader)->next();
  ASSERT_FALSE(batch.ok());
  const std::string& message = batch.status().message();
  EXPECT_FALSE(has_control_byte(message)) << printable(message);
  EXPECT_NE(message.find("/class_000/bad\\e[31m\\aname.jpg"), std::string::npos) << printable(message);
}

}  // namespace
}  // namespace forkfeed
