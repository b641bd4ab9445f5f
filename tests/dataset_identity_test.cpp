// A dataset's identity is what its samples are: the same files at another path are one
// dataset (ImageFolder, manifest, shards), other bytes under the same names are not —
// other sizes, and other bytes of the same size as the content check reads them — and the
// difference says what differs and in which samples, naming their files.
#include "dataset/dataset_identity.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "dataset/sample_schema.h"
#include "dataset/shards/shard_dataset.h"
#include "forkfeed/dataset.h"
#include "formats/content_digest.h"
#include "tests/testing/temp_dataset.h"
#include "tests/testing/temp_shards.h"
#include "tools/shard/tar_writer.h"

namespace forkfeed {
namespace {

namespace fs = std::filesystem;

DatasetIndex folder_index(const std::string& root) {
  Result<DatasetIndex> index = DatasetIndex::from_image_folder(root);
  EXPECT_TRUE(index.ok()) << index.status().message();
  return std::move(index).value_or_throw();
}

// A copy of the tree at `from` at `to`, symbolic links copied as links.
void copy_tree(const std::string& from, const std::string& to) {
  fs::create_directories(fs::path(to).parent_path());
  fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
}

// Appends a byte to the file of sample `i`: a re-encoded image of another size.
void grow(const DatasetIndex& index, std::size_t i) {
  std::ofstream(std::string(index.path(i)), std::ios::app) << 'x';
}

TEST(DatasetIdentity, TheSameFilesAtAnotherPathAreOneDataset) {
  testing::TempDir dir;
  const std::string a = testing::make_image_folder(dir.path() + "/a", 40, 3, 7);
  copy_tree(dir.path() + "/a", dir.path() + "/mnt/elsewhere");
  const DatasetIndex ia = folder_index(a), ib = folder_index(dir.path() + "/mnt/elsewhere/data");
  ASSERT_EQ(ia.size(), 40u);
  EXPECT_EQ(ia.root(), a);
  EXPECT_EQ(ia.name(0), ib.name(0));
  EXPECT_EQ(ia.name(0).find('/'), ia.name(0).rfind('/')) << "a name is <class>/<file>: " << ia.name(0);
  EXPECT_NE(ia.bytes(0), DatasetIndex::kUnknownBytes);

  const DatasetIdentity x = dataset_identity(ia), y = dataset_identity(ib);
  EXPECT_EQ(dataset_difference(x, y), "");
  EXPECT_EQ(x.names, y.names);
  EXPECT_EQ(x.sizes, y.sizes);
  EXPECT_EQ(x.ranges, y.ranges);
  EXPECT_NE(x.legacy, y.legacy) << "version 1 compared absolute paths";
  EXPECT_EQ(dataset_identity(ia), x) << "computed the same way twice";
}

TEST(DatasetIdentity, OtherImagesUnderTheSameNamesAreAnotherDataset) {
  testing::TempDir dir;
  const std::string a = testing::make_image_folder(dir.path() + "/a", 40, 3, 7);
  const std::string b = testing::make_image_folder(dir.path() + "/b", 40, 3, 8);  // other pixels
  const DatasetIndex ia = folder_index(a), ib = folder_index(b);
  for (std::size_t i = 0; i < ia.size(); ++i) ASSERT_EQ(ia.name(i), ib.name(i));
  const std::string what = dataset_difference(dataset_identity(ia), dataset_identity(ib), &ib);
  EXPECT_TRUE(what.starts_with("sizes differ in sample")) << what;
  EXPECT_NE(what.find(" ("), std::string::npos) << "the files are named: " << what;
}

TEST(DatasetIdentity, TheDifferenceNamesTheRangesAndTheirFiles) {
  testing::TempDir dir;
  const std::string a = testing::make_image_folder(dir.path() + "/a", 200, 2, 3);
  copy_tree(dir.path() + "/a", dir.path() + "/b");
  const DatasetIndex ia = folder_index(a);
  const DatasetIdentity x = dataset_identity(ia);
  EXPECT_EQ(x.range_samples, 4u);  // 200 samples in 50 ranges
  EXPECT_EQ(x.range_count(), 50u);

  const std::string b = dir.path() + "/b/data";
  grow(folder_index(b), 13);
  DatasetIndex ib = folder_index(b);
  EXPECT_EQ(
      dataset_difference(x, dataset_identity(ib), &ib),
      "sizes differ in samples 12-15 (" + std::string(ib.name(12)) + " .. " + std::string(ib.name(15)) + ")");
  EXPECT_EQ(dataset_difference(x, dataset_identity(ib)), "sizes differ in samples 12-15")
      << "without the index, no names";

  for (std::size_t i : {40, 80, 120, 160, 199}) grow(ib, i);
  ib = folder_index(b);
  EXPECT_EQ(dataset_difference(x, dataset_identity(ib), &ib),
            "sizes differ in samples 12-15 (" + std::string(ib.name(12)) + " .. " + std::string(ib.name(15)) +
                "), 40-43 (" + std::string(ib.name(40)) + " .. " + std::string(ib.name(43)) + "), 80-83 (" +
                std::string(ib.name(80)) + " .. " + std::string(ib.name(83)) +
                ") and 3 more ranges of 4 samples");
}

TEST(DatasetIdentity, ACountNamesOrLabelsThatDifferAreSaid) {
  testing::TempDir dir;
  const std::string a = testing::make_image_folder(dir.path() + "/a", 30, 3, 5);
  copy_tree(dir.path() + "/a", dir.path() + "/b");
  copy_tree(dir.path() + "/a", dir.path() + "/c");
  const DatasetIdentity x = dataset_identity(folder_index(a));

  const std::string b = dir.path() + "/b/data";  // one file renamed: names differ
  const DatasetIndex before = folder_index(b);
  const std::string last(before.name(29));
  fs::rename(std::string(before.path(29)), std::string(before.path(29)) + ".jpg");
  const DatasetIndex renamed = folder_index(b);
  EXPECT_EQ(dataset_difference(x, dataset_identity(renamed), &renamed),
            "names differ in sample 29 (" + last + ".jpg)");

  const std::string c = dir.path() + "/c/data";  // one file removed: a count
  fs::remove(std::string(folder_index(c).path(29)));
  const DatasetIndex fewer = folder_index(c);
  EXPECT_EQ(dataset_difference(x, dataset_identity(fewer), &fewer),
            "30 samples against 29; names, labels and sizes differ in sample 29");

  // A manifest of the same files under other labels.
  const DatasetIndex ia = folder_index(a);
  const std::string manifest = dir.path() + "/a/data/list.tsv";
  {
    std::ofstream out(manifest);
    for (std::size_t i = 0; i < ia.size(); ++i)
      out << ia.name(i) << '\t' << (i == 3 ? 9 : ia.label(i)) << '\n';
  }
  const DatasetIndex relabelled = DatasetIndex::from_manifest(manifest).value_or_throw();
  EXPECT_EQ(relabelled.root(), a);
  EXPECT_EQ(dataset_difference(x, dataset_identity(relabelled), &relabelled),
            "labels differ in sample 3 (" + std::string(ia.name(3)) + ")");
}

TEST(DatasetIdentity, AManifestNamesFilesFromItsFolderAndKeepsOtherAbsolutePaths) {
  testing::TempDir dir;
  fs::create_directories(dir.path() + "/m/cls");
  std::ofstream(dir.path() + "/m/cls/a.jpg") << "abc";
  const std::string manifest = dir.path() + "/m/list.tsv";
  std::ofstream(manifest) << "cls/a.jpg\t0\n" << dir.path() << "/m/cls/a.jpg\t0\n/elsewhere/b.jpg\t1\n";
  const DatasetIndex index = DatasetIndex::from_manifest(manifest).value_or_throw();
  EXPECT_EQ(index.root(), dir.path() + "/m");
  EXPECT_EQ(index.name(0), "cls/a.jpg");
  EXPECT_EQ(index.name(1), "cls/a.jpg");
  EXPECT_EQ(index.name(2), "/elsewhere/b.jpg");
  EXPECT_EQ(index.bytes(0), 3u);
  EXPECT_EQ(index.bytes(2), DatasetIndex::kUnknownBytes) << "a missing file is bad data when read, not here";
}

TEST(DatasetIdentity, TheSameShardsInAnotherFolderAreOneDataset) {
  testing::TempDir images, dir;
  const std::string root = testing::make_image_folder(images.path(), 24, 2, 4);
  fs::create_directories(dir.path() + "/s1");
  (void)testing::make_shards(dir.path() + "/s1", root, 10);
  copy_tree(dir.path() + "/s1", dir.path() + "/s2");
  const auto index = [&](const std::string& spec) {
    Result<DatasetIndex> i =
        index_shards(ShardDataset{spec, label_rule(LoaderOptions{}), OnError::kFail, 1 << 26, ""});
    EXPECT_TRUE(i.ok()) << i.status().message();
    return std::move(i).value_or_throw();
  };
  const DatasetIndex s1 = index(dir.path() + "/s1"), s2 = index(dir.path() + "/s2");
  ASSERT_EQ(s1.size(), 24u);
  EXPECT_EQ(s1.root(), dir.path() + "/s1");
  EXPECT_EQ(s1.name(0).find('/'), std::string_view::npos) << s1.name(0);
  EXPECT_EQ(dataset_difference(dataset_identity(s1), dataset_identity(s2)), "");
  EXPECT_NE(dataset_identity(s1).legacy, dataset_identity(s2).legacy);
}

// Found from outside: a difference in shards named each sample by its shard alone
// ("samples 0 (train-000000.tar), 1 (train-000000.tar)"); the member and its place say
// which sample it is.
TEST(DatasetIdentity, AShardsSampleIsNamedByItsMember) {
  testing::TempDir images, others, dir;
  const std::string root = testing::make_image_folder(images.path(), 8, 1, 4);
  const std::string other = testing::make_image_folder(others.path(), 8, 1, 5);
  fs::create_directories(dir.path() + "/s1");
  fs::create_directories(dir.path() + "/s2");
  (void)testing::make_shards(dir.path() + "/s1", root, 10);
  (void)testing::make_shards(dir.path() + "/s2", other, 10);
  const auto index = [&](const std::string& spec) {
    Result<DatasetIndex> i =
        index_shards(ShardDataset{spec, label_rule(LoaderOptions{}), OnError::kFail, 1 << 26, ""});
    EXPECT_TRUE(i.ok()) << i.status().message();
    return std::move(i).value_or_throw();
  };
  const DatasetIndex s1 = index(dir.path() + "/s1"), s2 = index(dir.path() + "/s2");
  const std::string differs = dataset_difference(dataset_identity(s1), dataset_identity(s2), &s2);
  EXPECT_NE(differs.find(", member '"), std::string::npos) << differs;
  EXPECT_NE(differs.find("' at byte "), std::string::npos) << differs;
}

TEST(DatasetIdentity, AVersion1IdentityIsComparedByItsDigestOfPaths) {
  testing::TempDir dir;
  const std::string a = testing::make_image_folder(dir.path() + "/a", 12, 2, 5);
  const DatasetIdentity full = dataset_identity(folder_index(a));
  DatasetIdentity old;
  old.samples = full.samples;
  old.legacy = full.legacy;
  ASSERT_TRUE(old.legacy_only());
  EXPECT_EQ(dataset_difference(old, full), "");
  old.legacy = std::string(kDigestDigits, '0');
  EXPECT_EQ(dataset_difference(old, full),
            "the files' absolute paths or labels differ (digest 0000000000000000 against " + full.legacy +
                ", of paths and labels, as forkfeed compared datasets before "
                "version-2 states)");
}

// Writes `byte` at `offset` of `path`, keeping its size: an edit in place, or a recomputed
// member of the same length.
void overwrite(const std::string& path, std::uint64_t offset, char byte) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(byte);
}

// A folder of `n` files cls/fNN.jpg of `bytes` bytes each, none alike.
std::string folder_of(const std::string& root, int n, std::uint64_t bytes) {
  fs::create_directories(root + "/cls");
  for (int i = 0; i < n; ++i) {
    std::string data(bytes, '\0');
    for (std::uint64_t k = 0; k < bytes; ++k) data[k] = static_cast<char>((k * 131 + i * 7) >> 3);
    std::ofstream(root + "/cls/f" + std::to_string(10 + i) + ".jpg", std::ios::binary) << data;
  }
  return root;
}

// Found from outside: two sets of the same names and sizes (embeddings recomputed, images
// padded to one size) were one dataset to a fan-in and a resume.
TEST(DatasetIdentity, OtherBytesOfTheSameSizeUnderTheSameNamesAreAnotherDataset) {
  testing::TempDir dir;
  const std::string a = folder_of(dir.path() + "/a", 6, 3000);
  copy_tree(a, dir.path() + "/b");
  const std::string b = dir.path() + "/b";
  overwrite(b + "/cls/f13.jpg", 1500, 'Z');  // small: read whole
  const DatasetIndex ia = folder_index(a), ib = folder_index(b);
  ASSERT_EQ(ia.bytes(3), ib.bytes(3));
  const DatasetIdentity x = dataset_identity(ia), y = dataset_identity(ib);
  EXPECT_EQ(x.names, y.names);
  EXPECT_EQ(x.sizes, y.sizes);
  EXPECT_EQ(dataset_difference(x, y, &ib),
            "contents differ in sample 3 (cls/f13.jpg) (other bytes under the same names and sizes)");
  EXPECT_EQ(dataset_difference(x, dataset_identity(folder_index(a))), "") << "computed alike twice";
}

// With the files' content cache, a file rewritten since the last open is read again: its
// stamp changed (its status-change time, whatever cp -p or touch set back).
TEST(DatasetIdentity, TheContentCacheAnswersOnlyForFilesUnchangedSince) {
  testing::TempDir dir, cache;
  const std::string a = folder_of(dir.path() + "/a", 6, 3000);
  const auto identity = [&] {
    return dataset_identity(
        DatasetIndex::from_image_folder(a, ContentCheck::kWindows, cache.path()).value_or_throw());
  };
  const DatasetIdentity first = identity();
  EXPECT_TRUE(fs::exists(cache.path())) << "the cache is written";
  EXPECT_EQ(identity(), first) << "read back from the cache";
  overwrite(a + "/cls/f12.jpg", 10, 'Q');
  const DatasetIndex changed =
      DatasetIndex::from_image_folder(a, ContentCheck::kWindows, cache.path()).value_or_throw();
  EXPECT_EQ(dataset_difference(first, dataset_identity(changed), &changed),
            "contents differ in sample 2 (cls/f12.jpg) (other bytes under the same names and sizes)");
  EXPECT_EQ(dataset_identity(folder_index(a)), dataset_identity(changed))
      << "the cache gave what a read gives";
}

TEST(DatasetIdentity, TheWindowsSeeALargeFilesEndsAndAFullCheckEveryByte) {
  testing::TempDir dir;
  const std::uint64_t bytes = 4 * kWholeContentBytes;
  const std::string a = folder_of(dir.path() + "/a", 3, bytes);
  copy_tree(a, dir.path() + "/b");
  const std::string b = dir.path() + "/b";
  const auto differ = [&](ContentCheck check) {
    return dataset_difference(dataset_identity(DatasetIndex::from_image_folder(a, check).value_or_throw()),
                              dataset_identity(DatasetIndex::from_image_folder(b, check).value_or_throw()));
  };
  overwrite(b + "/cls/f11.jpg", bytes / 2, 'Z');  // between the windows
  EXPECT_EQ(differ(ContentCheck::kWindows), "") << "the middle of a large file is what the windows miss";
  EXPECT_EQ(differ(ContentCheck::kFull),
            "contents differ in sample 1 (other bytes under the same names and sizes)");
  overwrite(b + "/cls/f12.jpg", bytes - 3, 'Z');  // in its last window
  overwrite(b + "/cls/f10.jpg", 100, 'Z');        // in its first
  EXPECT_EQ(differ(ContentCheck::kWindows),
            "contents differ in samples 0 and 2 (other bytes under the same names and sizes)");
  const std::string other = dataset_difference(
      dataset_identity(DatasetIndex::from_image_folder(a, ContentCheck::kWindows).value_or_throw()),
      dataset_identity(DatasetIndex::from_image_folder(a, ContentCheck::kFull).value_or_throw()));
  EXPECT_EQ(other,
            "their contents were read by other checks (content_check windows against full): use one "
            "content_check for both");
}

// The same for shards: a member recomputed at the same size (a caption rewritten), in a
// shard indexed fresh and in one read back from the index cache; a member no field reads is
// no part of the dataset.
TEST(DatasetIdentity, AShardsMembersContentsAreInItsIdentityFromTheScanAndTheCache) {
  testing::TempDir dir, cache;
  const auto write = [&](const std::string& path, char value) {
    auto writer = TarWriter::create(path).value_or_throw();
    for (int i = 0; i < 4; ++i) {
      const std::string key = "s" + std::to_string(i), image(2000, 'i'), label = std::to_string(i);
      const std::string text(160, i == 2 ? value : 'n');  // what matters: the same size, other bytes
      ASSERT_TRUE(writer.add(key + ".jpg", std::as_bytes(std::span(image))).ok());
      ASSERT_TRUE(writer.add(key + ".cls", std::as_bytes(std::span(label))).ok());
      ASSERT_TRUE(writer.add(key + ".txt", std::as_bytes(std::span(text))).ok());
    }
    ASSERT_TRUE(writer.finish().ok());
  };
  fs::create_directories(dir.path() + "/a");
  fs::create_directories(dir.path() + "/b");
  write(dir.path() + "/a/s-0.tar", 'x');
  write(dir.path() + "/b/s-0.tar", 'y');
  const auto index = [&](const std::string& spec, const std::string& fields) {
    Result<DatasetIndex> i = index_shards(ShardDataset{
        spec, label_rule(LoaderOptions{}), OnError::kFail, 1 << 26, cache.path(),
        fields.empty() ? SampleSchema{} : sample_schema(fields, MissingField::kError).value_or_throw()});
    EXPECT_TRUE(i.ok()) << i.status().message();
    return dataset_identity(std::move(i).value_or_throw());
  };
  EXPECT_EQ(dataset_difference(index(dir.path() + "/a", ""), index(dir.path() + "/b", "")), "")
      << "the captions are read by no field";
  const std::string fields = "image=jpg, label=cls, caption=txt";
  const DatasetIdentity a = index(dir.path() + "/a", fields), b = index(dir.path() + "/b", fields);
  EXPECT_EQ(a.sizes, b.sizes);
  EXPECT_EQ(dataset_difference(a, b),
            "contents differ in samples 0-3 (other bytes under the same names and sizes)")
      << "the shard's samples hold its content";
  EXPECT_EQ(index(dir.path() + "/a", fields), a) << "the cache keeps the shard's content digest";
  EXPECT_EQ(index(dir.path() + "/b", fields).content, b.content);
}

TEST(DatasetIdentity, RangesAreAtMost64OfAPowerOfTwo) {
  EXPECT_EQ(identity_range_samples(0), 1u);
  EXPECT_EQ(identity_range_samples(1), 1u);
  EXPECT_EQ(identity_range_samples(64), 1u);
  EXPECT_EQ(identity_range_samples(65), 2u);
  EXPECT_EQ(identity_range_samples(1'281'167), 32'768u);
  EXPECT_EQ(identity_range_samples(~std::uint64_t{0}), std::uint64_t{1} << 58);
}

}  // namespace
}  // namespace forkfeed
