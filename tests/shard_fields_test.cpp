// Tar shards indexed by fields, end to end from real tar files: every field of every
// sample found where its bytes are (members in any order), labels and numbers from .cls
// and JSON keys, a missing member under each mode, a field no shard has refused by name,
// the cache kept per schema, the identity covering the schema and the members' sizes, the
// bytes the largest batch of a ragged field takes, and the sources that have no fields.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "base/unique_fd.h"
#include "dataset/dataset_identity.h"
#include "dataset/dataset_source.h"
#include "dataset/shards/shard_dataset.h"
#include "tests/testing/command.h"
#include "tests/testing/encoded_images.h"
#include "tests/testing/npy_member.h"
#include "tests/testing/small_options.h"
#include "tests/testing/temp_dataset.h"
#include "tools/shard/tar_writer.h"

namespace forkfeed {
namespace {

namespace fs = std::filesystem;

using Members = std::vector<std::pair<std::string, std::string>>;  // name, bytes

constexpr char kAll[] =
    "image=jpg, caption=txt, label=cls, meta=json, emb=npy, score=json:number(score), "
    "cls2=json:label(class)";
// The fields of kAll, by number.
enum : std::size_t { kImage, kCaption, kLabel, kMeta, kEmb, kScore, kCls2 };

// What sample `k` holds in each member, by extension.
std::map<std::string, std::string> sample_bytes(int k) {
  const std::string n = std::to_string(k);
  return {{"jpg", "JPEG bytes of sample " + n + std::string(static_cast<std::size_t>(k) * 3, 'j')},
          {"txt", "a caption of sample " + n + std::string(static_cast<std::size_t>(k) * 7, '.')},
          {"cls", n},
          {"json", "{\"score\": " + std::to_string(k) + ".5, \"class\": " + std::to_string(k + 10) + "}"},
          {"npy",
           testing::npy_member("<u1", "(" + std::to_string(16 + n.size()) + ",)", "array of sample " + n)}};
}

// Sample `k`'s members, "s<k>.<ext>", in an order that changes with k.
Members sample(int k, const std::vector<std::string>& leave_out = {}) {
  static const std::vector<std::vector<std::string>> orders = {{"jpg", "txt", "cls", "json", "npy"},
                                                               {"npy", "json", "txt", "cls", "jpg"},
                                                               {"txt", "jpg", "npy", "cls", "json"}};
  const std::map<std::string, std::string> bytes = sample_bytes(k);
  Members out;
  for (const std::string& ext : orders[static_cast<std::size_t>(k) % orders.size()]) {
    if (std::find(leave_out.begin(), leave_out.end(), ext) != leave_out.end()) continue;
    out.emplace_back("s" + std::to_string(k) + "." + ext, bytes.at(ext));
  }
  return out;
}

void write_shard(const std::string& path, const Members& members) {
  auto writer = TarWriter::create(path);
  ASSERT_TRUE(writer.ok()) << writer.status().message();
  for (const auto& [name, bytes] : members) {
    ASSERT_TRUE(writer->add(name, {reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()}).ok());
  }
  ASSERT_TRUE(writer->finish().ok());
}

std::string read_source(const SampleSource& s) {
  const UniqueFd fd(::open(std::string(s.file).c_str(), O_RDONLY | O_CLOEXEC));
  std::string bytes(s.size, '\0');
  EXPECT_EQ(::pread(fd.get(), bytes.data(), bytes.size(), static_cast<off_t>(s.offset)),
            static_cast<ssize_t>(bytes.size()));
  return bytes;
}

class ShardFieldsDatasetTest : public ::testing::Test {
 protected:
  // Two shards of three samples, s0..s5; `leave_out` takes members out of sample 1.
  void write_shards(const std::vector<std::string>& leave_out = {}, int longer_caption = -1) {
    for (int s = 0; s < 2; ++s) {
      Members members;
      for (int k = 3 * s; k < 3 * s + 3; ++k) {
        Members one = sample(k, k == 1 ? leave_out : std::vector<std::string>{});
        if (k == longer_caption) {
          for (auto& [name, bytes] : one)
            if (name.ends_with(".txt")) bytes += " and more";
        }
        members.insert(members.end(), one.begin(), one.end());
      }
      write_shard(shard(s), members);
    }
  }
  std::string shard(int s) const { return dir_.path() + "/f-" + std::to_string(s) + ".tar"; }
  std::string spec() const { return dir_.path() + "/f-{0..1}.tar"; }
  std::string cache() const { return dir_.path() + "/cache"; }

  Result<DatasetIndex> index(const std::string& fields, MissingField missing = MissingField::kError,
                             OnError on_error = OnError::kFail) const {
    Result<SampleSchema> schema = sample_schema(fields, missing);
    if (!schema.ok()) return schema.status();
    return index_shards(ShardDataset{spec(), LabelRule{}, on_error, 1 << 20, cache(), *schema});
  }
  DatasetIndex indexed(const std::string& fields, MissingField missing = MissingField::kError) const {
    Result<DatasetIndex> i = index(fields, missing);
    EXPECT_TRUE(i.ok()) << i.status().message();
    return i.ok() ? std::move(i).value() : DatasetIndex();
  }
  // The cache's files and their inodes: a file loaded is not written again.
  std::map<std::string, ino_t> cache_files() const {
    std::map<std::string, ino_t> files;
    std::error_code ec;
    for (fs::directory_iterator it(cache(), ec), end; !ec && it != end; it.increment(ec)) {
      struct stat st {};
      if (::stat(it->path().c_str(), &st) == 0) files[it->path().filename()] = st.st_ino;
    }
    return files;
  }

  testing::TempDir dir_;
};

TEST_F(ShardFieldsDatasetTest, EveryFieldOfEverySampleIsWhereItsBytesAre) {
  write_shards();
  const DatasetIndex index = indexed(kAll);
  ASSERT_EQ(index.size(), 6u);
  ASSERT_EQ(index.fields().size(), 7u);
  EXPECT_EQ(index.fields()[kScore].json_key, "score");
  EXPECT_EQ(index.field_columns().extra_members(), 3u);
  EXPECT_EQ(index.field_slices().size(), 6u * 3);
  EXPECT_EQ(index.field_labels().size(), 6u);
  EXPECT_EQ(index.field_numbers().size(), 6u);
  for (int k = 0; k < 6; ++k) {
    SCOPED_TRACE("sample " + std::to_string(k));
    const std::size_t i = static_cast<std::size_t>(k);
    const std::map<std::string, std::string> bytes = sample_bytes(k);
    EXPECT_EQ(read_source(index.source(i)), bytes.at("jpg")) << "the slice is the image's, as without fields";
    EXPECT_EQ(read_source(index.field_source(i, kImage)), bytes.at("jpg"));
    EXPECT_EQ(read_source(index.field_source(i, kCaption)), bytes.at("txt"));
    EXPECT_EQ(read_source(index.field_source(i, kMeta)), bytes.at("json"));
    EXPECT_EQ(read_source(index.field_source(i, kEmb)), bytes.at("npy"));
    EXPECT_EQ(index.field_source(i, kCaption).file, shard(k / 3));
    EXPECT_EQ(index.label(i), k);
    EXPECT_EQ(index.field_label(i, kLabel), k);
    EXPECT_EQ(index.field_label(i, kCls2), k + 10);
    EXPECT_EQ(index.field_number(i, kScore), k + 0.5);
    EXPECT_EQ(index.missing_field(i), std::nullopt);
    EXPECT_EQ(index.bytes(i), bytes.at("jpg").size());
  }
  // A view reads its image's member.
  const DatasetIndex views = indexed("a=jpg, b=jpg, caption=txt");
  for (std::size_t i = 0; i < views.size(); ++i) EXPECT_EQ(views.field_slice(i, 1), views.field_slice(i, 0));
  EXPECT_EQ(views.field_columns().extra_members(), 1u);
}

TEST_F(ShardFieldsDatasetTest, AMissingMemberUnderEachMode) {
  write_shards({"txt"});  // sample 1 has no caption
  const std::string fields = "image=jpg, caption=txt, label=cls";

  Result<DatasetIndex> failed = index(fields);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), Status::Code::kBadData);
  EXPECT_EQ(failed.status().message(), "shard " + shard(0) +
                                           ", sample s1: field \"caption\" is missing: no .txt member "
                                           "(missing=error; missing=skip or empty take such samples)");

  Result<DatasetIndex> left_out = index(fields, MissingField::kError, OnError::kSkip);
  ASSERT_TRUE(left_out.ok()) << left_out.status().message();
  EXPECT_EQ(left_out->size(), 5u);
  EXPECT_EQ(left_out->skipped_samples(), 1u);
  EXPECT_EQ(left_out->label(1), 2) << "sample s1 is left out of the index";

  for (MissingField mode : {MissingField::kSkip, MissingField::kEmpty}) {
    SCOPED_TRACE(std::string(to_string(mode)));
    const DatasetIndex kept = indexed(fields, mode);
    ASSERT_EQ(kept.size(), 6u) << "the order of samples does not depend on the fields";
    EXPECT_EQ(kept.skipped_samples(), 0u);
    EXPECT_EQ(kept.missing_field(1), std::optional<std::size_t>(1));
    EXPECT_FALSE(kept.has_field(1, 1));
    EXPECT_TRUE(kept.has_field(1, 0));
    EXPECT_TRUE(kept.has_field(1, 2));
    EXPECT_EQ(kept.field_slice(1, 1).size, FieldSlice::kMissing);
    EXPECT_EQ(kept.missing_field(0), std::nullopt);
    EXPECT_EQ(kept.label(1), 1);
  }
  // Without its image, a sample's own slice is the one missing.
  write_shards({"jpg", "cls"});
  const DatasetIndex empty = indexed(fields, MissingField::kEmpty);
  ASSERT_EQ(empty.size(), 6u);
  EXPECT_EQ(empty.missing_field(1), std::optional<std::size_t>(0));
  EXPECT_EQ(empty.bytes(1), FieldSlice::kMissing);
  EXPECT_EQ(empty.label(1), kMissingLabel);
  EXPECT_EQ(read_source(empty.field_source(1, 1)), sample_bytes(1).at("txt"));
}

TEST_F(ShardFieldsDatasetTest, AFieldThatNoShardHasIsRefusedNamingIt) {
  write_shards();
  for (MissingField mode : {MissingField::kError, MissingField::kSkip, MissingField::kEmpty}) {
    Result<DatasetIndex> refused = index("image=jpg, depth=depth.png;exr, caption=txt", mode);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), Status::Code::kInvalidArgument);
    EXPECT_EQ(
        refused.status().message(),
        "field \"depth\" takes .depth.png or .exr members, and no shard of " + spec() +
            " has one; their members' extensions are .cls, .jpg, .json, .npy, .txt: name one of these in "
            "fields");
  }
  // One shard having it is enough.
  write_shard(shard(1), {{"s9.jpg", "j"}, {"s9.exr", "e"}, {"s9.txt", "t"}});
  const DatasetIndex found = indexed("image=jpg, depth=depth.png;exr, caption=txt", MissingField::kEmpty);
  EXPECT_EQ(found.size(), 4u);
  EXPECT_EQ(found.missing_field(0), std::optional<std::size_t>(1));
  EXPECT_EQ(found.missing_field(3), std::nullopt);
}

TEST_F(ShardFieldsDatasetTest, JsonKeysGiveLabelsAndNumbers) {
  write_shards();
  const DatasetIndex keyed = indexed("image=jpg, c=json:label(class), s=json:number(score), l=cls");
  EXPECT_EQ(keyed.label(4), 14) << "the first label field is label(i)";
  EXPECT_EQ(keyed.field_label(4, 1), 14);
  EXPECT_EQ(keyed.field_label(4, 3), 4);
  EXPECT_EQ(keyed.field_number(4, 2), 4.5);
  // A key whose value is no label is bad data.
  write_shard(shard(1), {{"s9.jpg", "j"}, {"s9.json", R"({"class": "cat", "score": 1})"}});
  Result<DatasetIndex> bad = index("image=jpg, c=json:label(class)");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "shard " + shard(1) +
                                        ", sample s9: field \"c\": member s9.json's key \"class\" is not a "
                                        "non-negative integer: \"\"cat\"\"");
}

TEST_F(ShardFieldsDatasetTest, TheCacheAnswersForTheSameFieldsOnly) {
  write_shards();
  // Made without fields: not an answer for fields.
  Result<DatasetIndex> plain =
      index_shards(ShardDataset{spec(), LabelRule{}, OnError::kFail, 1 << 20, cache()});
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_TRUE(plain->fields().empty());
  const auto without = cache_files();
  EXPECT_EQ(without.size(), 2u);

  const DatasetIndex first = indexed(kAll);
  EXPECT_EQ(first.fields().size(), 7u);
  const auto with = cache_files();
  EXPECT_EQ(with.size(), 4u) << "another entry per shard";

  // The same fields again: loaded (a file loaded is not written again), the same index.
  const DatasetIndex again = indexed(kAll);
  EXPECT_EQ(cache_files(), with);
  EXPECT_EQ(again.slices(), first.slices());
  EXPECT_EQ(again.field_slices(), first.field_slices());
  EXPECT_EQ(again.field_labels(), first.field_labels());
  EXPECT_EQ(again.field_numbers(), first.field_numbers());
  EXPECT_EQ(dataset_difference(dataset_identity(again), dataset_identity(first)), "");
  // The same fields written otherwise are the same entry.
  indexed(
      "image = JPG, caption=txt:text, label=cls, meta=json, emb=npy, score=json:number( score ), "
      "cls2=json:label(class)");
  EXPECT_EQ(cache_files(), with);

  // Other fields, or another missing mode: other entries, and their own columns.
  const DatasetIndex other = indexed("caption=txt, image=jpg");
  EXPECT_EQ(cache_files().size(), 6u);
  EXPECT_EQ(read_source(other.source(2)), sample_bytes(2).at("txt"));
  EXPECT_EQ(other.label(2), 0);
  indexed(kAll, MissingField::kSkip);
  EXPECT_EQ(cache_files().size(), 8u);
  // And a scan cached under on_error=skip answers for fail: its first bad sample is the error.
  write_shards({"txt"});
  ASSERT_TRUE(index(kAll, MissingField::kError, OnError::kSkip).ok());
  const auto skipped = cache_files();
  Result<DatasetIndex> failed = index(kAll);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("sample s1: field \"caption\" is missing"), std::string::npos);
  EXPECT_EQ(cache_files(), skipped);
}

TEST_F(ShardFieldsDatasetTest, TheIdentityCoversTheFieldsAndTheirMembersSizes) {
  write_shards();
  const DatasetIdentity all = dataset_identity(indexed(kAll));
  EXPECT_EQ(dataset_difference(dataset_identity(indexed(kAll)), all), "");
  EXPECT_NE(dataset_difference(dataset_identity(indexed("image=jpg, label=cls")), all), "");
  const DatasetIdentity plain = dataset_identity(
      index_shards(ShardDataset{spec(), LabelRule{}, OnError::kFail, 1 << 20, ""}).value_or_throw());
  const DatasetIdentity image_label = dataset_identity(indexed("image=jpg, label=cls"));
  EXPECT_EQ(plain.names, image_label.names);
  EXPECT_EQ(plain.sizes, image_label.sizes);
  EXPECT_NE(plain.labels, image_label.labels) << "the fields are part of what the samples are";

  write_shards({}, /*longer_caption=*/4);
  const DatasetIndex longer = indexed(kAll);
  EXPECT_EQ(dataset_difference(dataset_identity(longer), all, &longer).substr(0, 24),
            "sizes differ in sample 4");
  EXPECT_EQ(dataset_identity(indexed("image=jpg, label=cls")), image_label) << "the caption is not a field";
}

TEST_F(ShardFieldsDatasetTest, TheLargestBatchOfARaggedField) {
  write_shards({"txt"});
  const DatasetIndex index = indexed("image=jpg, caption=txt, label=cls", MissingField::kEmpty);
  std::vector<std::uint64_t> captions;
  for (int k = 0; k < 6; ++k) captions.push_back(k == 1 ? 0 : sample_bytes(k).at("txt").size());
  std::sort(captions.rbegin(), captions.rend());
  std::uint64_t sum = 0;
  for (std::uint32_t b = 0; b <= 8; ++b) {
    EXPECT_EQ(index.largest_batch_bytes(1, b), sum) << "batch size " << b;
    if (b < captions.size()) sum += captions[b];
  }
  EXPECT_EQ(index.largest_batch_bytes(0, 1), sample_bytes(5).at("jpg").size());
  EXPECT_EQ(index.largest_batch_bytes(2, 4), 32u) << "a label: 8 bytes a sample";
  EXPECT_EQ(index.largest_batch_bytes(2, 64), 48u);
}

TEST_F(ShardFieldsDatasetTest, OnlyShardsHaveFields) {
  write_shards();
  LoaderOptions o;
  o.fields = "image=jpg, caption=txt";
  o.manifest = dir_.path() + "/list.tsv";
  Result<DatasetIndex> manifest = open_dataset(o);
  ASSERT_FALSE(manifest.ok());
  EXPECT_EQ(manifest.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(manifest.status().message().find(
                "fields are read from WebDataset shards: pack the table into WebDataset "
                "shards with forkfeed-shard --from MANIFEST"),
            std::string::npos)
      << manifest.status().message();
  o.manifest.clear();
  o.image_folder = dir_.path();
  Result<DatasetIndex> folder = open_dataset(o);
  ASSERT_FALSE(folder.ok());
  EXPECT_NE(folder.status().message().find("fields are read from WebDataset shards"), std::string::npos);

  o.image_folder.clear();
  o.shards = spec();
  o.shard_label = ShardLabel::kJson;
  Result<DatasetIndex> labelled = open_dataset(o);
  ASSERT_FALSE(labelled.ok());
  EXPECT_NE(labelled.status().message().find("shard_label json is for shards without fields"),
            std::string::npos);
  o.shard_label = ShardLabel::kCls;
  o.fields = "image=jpg, caption=txt:str";
  Result<DatasetIndex> bad = open_dataset(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("fields entry 2"), std::string::npos);

  ::setenv("FORKFEED_CACHE_DIR", cache().c_str(), 1);
  o.fields = "image=jpg, caption=txt";
  o.missing = MissingField::kSkip;
  Result<DatasetIndex> opened = open_dataset(o);
  ::unsetenv("FORKFEED_CACHE_DIR");
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  EXPECT_EQ(opened->fields().size(), 2u);
  EXPECT_EQ(read_source(opened->field_source(3, 1)), sample_bytes(3).at("txt"));
}

// ---- Keys and arrays, through a Loader ----

std::string jpeg(int seed) {
  const std::vector<std::byte> b = testing::encode(testing::photo(24, 24, seed), ".jpg");
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

std::string f32(std::initializer_list<float> values) {
  std::string bytes;
  for (float v : values) bytes.append(reinterpret_cast<const char*>(&v), sizeof v);
  return bytes;
}

// Calls `each` with every batch of a Loader opened with `o` (in order, 2 workers).
void read_all(LoaderOptions o, const std::function<void(const Batch&)>& each) {
  o.shuffle = false;
  auto loader = testing::open_loader(o);
  ASSERT_TRUE(loader);
  for (;;) {
    auto batch = loader->next();
    ASSERT_TRUE(batch.ok()) << batch.status().message();
    if (!batch->has_value()) break;
    each(**batch);
  }
}

std::string gnu_tar() {
  for (const char* path : {"/usr/bin/tar", "/bin/tar"}) {
    if (::access(path, X_OK) == 0) return path;
  }
  return "";
}

// Each sample's key ("__key__", last of the fields) is its members' name up to the first
// '.' of their last path component, read from the tar headers before its first field's
// member: a folder with dots, a name too long for the header (a pax path; a GNU long
// name), one split into the ustar prefix; a sample that lacks its first field has its key.
TEST_F(ShardFieldsDatasetTest, EachSampleHasItsKeyReadFromItsTarHeaders) {
  const std::string tar = gnu_tar();
  ASSERT_FALSE(tar.empty()) << "GNU tar not found in /usr/bin or /bin; tools/setup.sh installs it";
  const std::string pax(120, 'p'), split = "dir1/dir2/" + std::string(90, 'q'), gnu(150, 'g');
  std::vector<std::string> keys = {"a.b/c", pax, split, "m", "z1"};
  Members members;
  for (std::size_t k = 0; k < keys.size(); ++k) {
    if (keys[k] != "m") members.emplace_back(keys[k] + ".jpg", jpeg(static_cast<int>(k)));
    members.emplace_back(keys[k] + ".txt", "caption of sample " + std::to_string(k));
  }
  write_shard(shard(0), members);
  // The second shard by GNU tar: its long names in 'L' headers.
  const std::string root = dir_.path() + "/gnu";
  fs::create_directories(root);
  std::vector<std::string> argv = {tar, "--format=gnu", "-cf", shard(1), "-C", root};
  for (const std::string& key : {gnu, std::string("h")}) {
    for (const std::string ext : {".jpg", ".txt"}) {
      const std::string bytes = ext == ".jpg" ? jpeg(static_cast<int>(keys.size())) : "caption of " + key;
      std::ofstream(root + "/" + key + ext, std::ios::binary) << bytes;
      argv.push_back(key + ext);
    }
    keys.push_back(key);
  }
  const testing::CommandOutcome made = testing::run_command(argv, dir_.path());
  ASSERT_TRUE(made.exited && made.code == 0) << made.describe();

  const DatasetIndex index = indexed("image=jpg, caption=txt", MissingField::kEmpty);
  ASSERT_EQ(index.size(), keys.size());
  EXPECT_EQ(index.longest_key(), 150u);
  // Only the names their own header does not hold: the pax one and the GNU one.
  ASSERT_EQ(index.name_headers().size(), 2u);
  EXPECT_EQ(index.name_headers()[0].sample, 1u);
  EXPECT_EQ(index.name_headers()[1].sample, 5u);
  EXPECT_GT(index.name_headers()[1].bytes, 1024u) << "an 'L' header, its name, then the member's";
  EXPECT_NE(index.describe(5).find("member '" + gnu + ".jpg'"), std::string::npos) << index.describe(5);
  EXPECT_NE(index.describe(1).find("member '" + pax + ".jpg'"), std::string::npos) << index.describe(1);
  EXPECT_NE(index.describe(3).find("member 'm.txt'"), std::string::npos) << index.describe(3);

  LoaderOptions o = testing::small_options("", 2, 3);
  o.shards = spec();
  o.fields = "image=jpg, caption=txt";
  o.missing = MissingField::kEmpty;
  ::setenv("FORKFEED_CACHE_DIR", cache().c_str(), 1);
  std::vector<std::string> got;
  read_all(o, [&](const Batch& b) {
    ASSERT_EQ(b.fields().size(), 3u);
    const FieldView& key = b.fields().back();
    EXPECT_EQ(key.name(), "__key__");
    EXPECT_EQ(key.kind(), FieldKind::kText);
    ASSERT_TRUE(key.ragged());
    for (std::size_t i = 0; i < b.size(); ++i) {
      got.emplace_back(key.text(i));
      EXPECT_TRUE(key.present(i));
      EXPECT_EQ(b.field("image")->present(i), got.back() != "m") << got.back();
    }
  });
  ::unsetenv("FORKFEED_CACHE_DIR");
  EXPECT_EQ(got, keys);
}

// Without fields, messages name a member whose name its header does not hold whole.
TEST_F(ShardFieldsDatasetTest, MessagesNameAMemberByItsLongName) {
  const std::string pax(130, 'p');
  write_shard(shard(0), {{"a.jpg", "a"}, {"a.cls", "0"}, {pax + ".jpg", "p"}, {pax + ".cls", "1"}});
  write_shard(shard(1), {{"b.jpg", "b"}, {"b.cls", "2"}});
  const DatasetIndex index = indexed("");
  ASSERT_EQ(index.size(), 3u);
  EXPECT_EQ(index.name_headers(), (std::vector<NameHeaders>{{1, 1536}}))
      << "a pax header, its record, its own";
  EXPECT_NE(index.describe(1).find("member '" + pax + ".jpg' at byte"), std::string::npos)
      << index.describe(1);
  EXPECT_NE(index.describe(2).find("member 'b.jpg' at byte 512"), std::string::npos) << index.describe(2);
}

// An array field of one dtype and one shape is dense, [batch, *shape], its bytes those of
// the .npy data; one whose shape varies stays ragged, each sample with its shape; two
// dtypes are refused at open naming a sample of each.
TEST_F(ShardFieldsDatasetTest, ArraysOfOneShapeAreDenseOthersRagged) {
  const auto write = [&](int s, const std::string& var_dtype, std::size_t item) {
    Members members;
    for (int k = 3 * s; k < 3 * s + 3; ++k) {
      const std::string key = "s" + std::to_string(k), n = std::to_string(k + 2);
      const auto v = static_cast<float>(k);
      members.emplace_back(key + ".jpg", jpeg(k));
      members.emplace_back(key + ".emb.npy", testing::npy_member("<f4", "(3,)", f32({v, v + 0.5f, -v})));
      members.emplace_back(key + ".var.npy",
                           testing::npy_member(var_dtype, "(" + n + ",)", std::string((k + 2) * item, 'v')));
    }
    write_shard(shard(s), members);
  };
  write(0, "<i2", 2);
  write(1, "<i2", 2);
  const DatasetIndex arrays = indexed("image=jpg, emb=emb.npy, var=var.npy");
  EXPECT_EQ(arrays.array_shape(1), (ArrayFieldShape{ElementType::kFloat32, false, {3}}));
  EXPECT_EQ(arrays.array_shape(2), (ArrayFieldShape{ElementType::kInt16, true, {}}));

  LoaderOptions o = testing::small_options("", 2, 4);
  o.shards = spec();
  o.fields = "image=jpg, emb=emb.npy, var=var.npy";
  int n = 0;
  read_all(o, [&](const Batch& b) {
    const FieldView& emb = *b.field("emb");
    const FieldView& var = *b.field("var");
    ASSERT_FALSE(emb.ragged());
    EXPECT_EQ(emb.element(), ElementType::kFloat32);
    EXPECT_EQ(std::vector<std::int64_t>(emb.sample_shape().begin(), emb.sample_shape().end()),
              std::vector<std::int64_t>{3});
    ASSERT_EQ(emb.sample_bytes(), 12u);
    ASSERT_TRUE(var.ragged());
    EXPECT_EQ(var.element(), ElementType::kInt16);
    std::string want;
    for (std::size_t i = 0; i < b.size(); ++i, ++n) {
      const auto v = static_cast<float>(n);
      want += f32({v, v + 0.5f, -v});
      EXPECT_EQ(b.field("__key__")->text(i), "s" + std::to_string(n));
      ASSERT_EQ(var.shape(i).size(), 1u);
      EXPECT_EQ(var.shape(i)[0], n + 2);
      EXPECT_EQ(var.element(i), ElementType::kInt16);
      EXPECT_EQ(var.bytes(i).size(), static_cast<std::size_t>(n + 2) * 2);
    }
    EXPECT_EQ(std::string(static_cast<const char*>(emb.data()), want.size()), want)
        << "the dense batch is the .npy data back to back";
  });
  EXPECT_EQ(n, 6);

  write(1, "<i4", 4);  // a fresh stamp: scanned again
  Result<DatasetIndex> two = index("image=jpg, emb=emb.npy, var=var.npy");
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(two.status().message().find("field \"var\": sample s0 of shard " + shard(0) +
                                        " holds int16 and sample s3 of shard " + shard(1) + " int32"),
            std::string::npos)
      << two.status().message();
}

// A .npy whose header does not parse is its sample's bad data, found while indexing:
// on_error=fail names the shard, the key and the field; skip leaves the sample out.
TEST_F(ShardFieldsDatasetTest, ABadNpyHeaderIsBadDataWhileIndexing) {
  for (int s = 0; s < 2; ++s) {
    Members members;
    for (int k = 3 * s; k < 3 * s + 3; ++k) {
      const std::string key = "s" + std::to_string(k);
      members.emplace_back(key + ".jpg", jpeg(k));
      members.emplace_back(key + ".npy", k == 4 ? std::string("\x93NUMPY\x01\0\x30\0{'descr': '<f4'}", 24)
                                                : testing::npy_member("<f4", "(1,)", f32({1.0f})));
    }
    write_shard(shard(s), members);
  }
  Result<DatasetIndex> failed = index("image=jpg, emb=npy");
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), Status::Code::kBadData);
  EXPECT_NE(
      failed.status().message().find("shard " + shard(1) + ", sample s4: field \"emb\": member s4.npy: "),
      std::string::npos)
      << failed.status().message();
  Result<DatasetIndex> skipped = index("image=jpg, emb=npy", MissingField::kError, OnError::kSkip);
  ASSERT_TRUE(skipped.ok()) << skipped.status().message();
  EXPECT_EQ(skipped->size(), 5u);
  EXPECT_EQ(skipped->skipped_samples(), 1u);
  EXPECT_EQ(skipped->array_shape(1), (ArrayFieldShape{ElementType::kFloat32, false, {1}}));
}

}  // namespace
}  // namespace forkfeed
