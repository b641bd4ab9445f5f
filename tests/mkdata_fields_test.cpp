// forkfeed-mkdata --fields from the outside: the shards hold each sample's members in the
// order listed, the images of the image-only dataset, and every other value as
// tools/mkdata/sample_fields.h documents it (recomputed here from its formulas), the same
// bytes for the same seed; a Loader reads such a dataset's images and labels as before;
// bad lists are refused naming what is wrong.
#include "tools/mkdata/sample_fields.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "base/utf8.h"
#include "forkfeed/loader.h"
#include "formats/npy_header.h"
#include "formats/tar_scan.h"
#include "tests/testing/command.h"
#include "tests/testing/small_options.h"
#include "tests/testing/temp_dataset.h"
#include "tools/mkdata/splitmix64.h"
#include "workers/image_codecs.h"

namespace forkfeed {
namespace {

namespace fs = std::filesystem;
using namespace std::string_literals;

constexpr std::uint64_t kSeed = 5;
constexpr std::uint32_t kImages = 10;
constexpr std::uint32_t kClasses = 3;
constexpr int kShards = 3;  // of 4, 4 and 2 samples
const std::string kAllFields = "txt,jpg,cls,json,npy,seg.png,depth.png,boxes.json";

// One sample of a shard: its key and its members, extension -> bytes, in archive order.
struct Sample {
  std::string key;
  std::vector<std::pair<std::string, std::string>> members;
  const std::string& member(const std::string& extension) const {
    static const std::string none;
    for (const auto& [ext, bytes] : members) {
      if (ext == extension) return bytes;
    }
    ADD_FAILURE() << key << " has no ." << extension;
    return none;
  }
};

// The samples of shards shard-000000.tar ... under `dir`, grouped by WebDataset's key
// rule (the name up to the first '.' of its last component), read with forkfeed's scanner.
std::vector<Sample> read_samples(const std::string& dir) {
  std::vector<Sample> samples;
  for (int s = 0; s < kShards; ++s) {
    const std::string path = dir + "/shard-00000" + std::to_string(s) + ".tar";
    const std::string bytes = testing::read_file(path);
    Result<std::vector<TarMember>> members = scan_tar_file(path);
    EXPECT_TRUE(members.ok()) << members.status().message();
    if (!members.ok()) return samples;
    for (const TarMember& m : *members) {
      const std::size_t dot = m.name.find('.', m.name.rfind('/') + 1);
      const std::string key = m.name.substr(0, dot);
      if (samples.empty() || samples.back().key != key) samples.push_back({key, {}});
      samples.back().members.emplace_back(m.name.substr(dot + 1), bytes.substr(m.offset, m.size));
    }
  }
  return samples;
}

// The image's number in a key "class_CCC/img_NNNNN".
std::uint32_t number_of(const std::string& key) {
  return static_cast<std::uint32_t>(std::stoul(key.substr(key.rfind('_') + 1)));
}

// sample_fields.h's h(salt), written out again from its comment.
std::uint64_t h(std::uint32_t n, std::uint64_t salt) {
  return mkdata::splitmix64(mkdata::splitmix64(kSeed) ^ (salt << 32 | n));
}

cv::Mat decoded(const std::string& bytes) {
  const cv::Mat encoded(1, static_cast<int>(bytes.size()), CV_8U, const_cast<char*>(bytes.data()));
  Result<cv::Mat> image = image_codecs::decode(encoded, cv::IMREAD_UNCHANGED);
  EXPECT_TRUE(image.ok()) << image.status().message();
  return image.ok() ? image.value() : cv::Mat();
}

testing::CommandOutcome mkdata(const std::vector<std::string>& args, const std::string& dir) {
  std::vector<std::string> argv = {std::string(FORKFEED_BIN_DIR) + "/forkfeed-mkdata"};
  for (const std::string& arg :
       {"--images=" + std::to_string(kImages), "--classes=" + std::to_string(kClasses),
        "--seed=" + std::to_string(kSeed), "--min-side=40"s, "--max-side=80"s}) {
    argv.push_back(arg);
  }
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::run_command(argv, dir);
}

class MkdataFieldsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    ::setenv("FORKFEED_CACHE_DIR", (dir_->path() + "/cache").c_str(), 1);
    const testing::CommandOutcome fields = mkdata(
        {"--out", dir_->path() + "/fields", "--format", "wds", "--shard-size", "4", "--fields", kAllFields},
        dir_->path());
    ASSERT_TRUE(fields.exited && fields.code == 0) << fields.describe();
    EXPECT_NE(fields.out.find("wrote 10 images (members " + kAllFields + ") in 3 classes as 3 shards"),
              std::string::npos)
        << fields.out;
    const testing::CommandOutcome plain =
        mkdata({"--out", dir_->path() + "/plain", "--format", "wds", "--shard-size", "4"}, dir_->path());
    ASSERT_TRUE(plain.exited && plain.code == 0) << plain.describe();
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string path(const std::string& name) { return dir_->path() + "/" + name; }

  static testing::TempDir* dir_;
};

testing::TempDir* MkdataFieldsTest::dir_ = nullptr;

TEST_F(MkdataFieldsTest, EachSampleHoldsTheMembersListedInTheirOrder) {
  const std::vector<Sample> samples = read_samples(path("fields"));
  ASSERT_EQ(samples.size(), kImages);
  std::set<std::string> image_extensions;
  for (const Sample& sample : samples) {
    SCOPED_TRACE(sample.key);
    std::vector<std::string> extensions;
    for (const auto& member : sample.members) extensions.push_back(member.first);
    ASSERT_EQ(extensions.size(), 8u);
    image_extensions.insert(extensions[1]);
    extensions[1] = "jpg";  // the image: .png for the one in --special-every that is PNG
    EXPECT_EQ(extensions, (std::vector<std::string>{"txt", "jpg", "cls", "json", "npy", "seg.png",
                                                    "depth.png", "boxes.json"}));
  }
  EXPECT_EQ(image_extensions, (std::set<std::string>{"jpg", "png"}));
}

TEST_F(MkdataFieldsTest, TheImagesAndLabelsAreThoseOfTheImageOnlyDataset) {
  const std::vector<Sample> fields = read_samples(path("fields"));
  const std::vector<Sample> plain = read_samples(path("plain"));
  ASSERT_EQ(fields.size(), plain.size());
  for (std::size_t i = 0; i < plain.size(); ++i) {
    SCOPED_TRACE(plain[i].key);
    EXPECT_EQ(fields[i].key, plain[i].key);
    ASSERT_EQ(plain[i].members.size(), 2u);
    EXPECT_EQ(fields[i].members[1], plain[i].members[0]);  // the image, its extension and bytes
    EXPECT_EQ(fields[i].member("cls"), plain[i].member("cls"));
  }
}

TEST_F(MkdataFieldsTest, EveryValueIsTheDocumentedFunctionOfTheSeedAndTheImageNumber) {
  for (const Sample& sample : read_samples(path("fields"))) {
    SCOPED_TRACE(sample.key);
    const std::uint32_t n = number_of(sample.key);
    const std::uint32_t label = n % kClasses;
    EXPECT_EQ(sample.key.substr(0, 10), "class_00" + std::to_string(label) + "/");
    EXPECT_EQ(sample.member("cls"), std::to_string(label));

    const std::string& text = sample.member("txt");
    EXPECT_TRUE(valid_utf8(text));
    const std::uint64_t length = h(n, 1);
    const std::uint64_t words = length % 8 == 0 ? 40 + length / 8 % 40 : 1 + length % 12;
    std::string expected;
    for (std::uint64_t k = 0; k < words; ++k) {
      expected += (k > 0 ? " " : "") + std::string(mkdata::kCaptionWords[h(n, 16 + k) % 40]);
    }
    EXPECT_EQ(text, expected);

    const std::uint64_t score = h(n, 2) % 10001;
    const nlohmann::json record = nlohmann::json::parse(sample.member("json"));
    EXPECT_EQ(record, (nlohmann::json{{"label", label}, {"score", score / 10000.0}, {"caption_id", n}}));
    EXPECT_NE(sample.member("json").find("\"score\": " + std::to_string(score / 10000) + "." +
                                         std::string(4 - std::to_string(score % 10000).size(), '0') +
                                         std::to_string(score % 10000) + ","),
              std::string::npos)
        << sample.member("json");

    const std::string& npy = sample.member("npy");
    const Result<NpyHeader> header = parse_npy_header(npy, npy.size());
    ASSERT_TRUE(header.ok()) << header.status().message();
    EXPECT_EQ(header->dtype, ElementType::kFloat32);
    EXPECT_EQ(header->shape, (std::vector<std::int64_t>{8}));
    for (std::size_t k = 0; k < 8; ++k) {
      float value;
      std::memcpy(&value, npy.data() + header->data_offset + 4 * k, 4);
      EXPECT_EQ(value, static_cast<float>(n) + static_cast<float>(k) / 8) << k;
    }

    const cv::Mat image = decoded(sample.members[1].second);
    const int w = image.cols, h = image.rows;
    const cv::Mat seg = decoded(sample.member("seg.png"));
    const cv::Mat depth = decoded(sample.member("depth.png"));
    ASSERT_EQ(seg.type(), CV_8UC1);
    ASSERT_EQ(depth.type(), CV_8UC1);
    ASSERT_EQ(seg.size(), image.size());
    ASSERT_EQ(depth.size(), image.size());
    int wrong = 0;
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        wrong +=
            seg.at<unsigned char>(y, x) != (16 * static_cast<int>(label) + 4 * (4 * y / h) + 4 * x / w) % 256;
        wrong += depth.at<unsigned char>(y, x) != 255 * (x + y) / (w + h - 2);
      }
    }
    EXPECT_EQ(wrong, 0);

    // boxes.json: each of seg.png's blocks, as the pixels of its class lie, in COCO's xywh.
    const auto boxes = nlohmann::json::parse(sample.member("boxes.json"));
    ASSERT_EQ(boxes["boxes"].size(), 16u);
    for (int b = 0; b < 16; ++b) {
      const int id = boxes["labels"][b].get<int>();
      EXPECT_EQ(id, (16 * static_cast<int>(label) + 4 * (b / 4) + b % 4) % 256);
      int x0 = w, y0 = h, x1 = 0, y1 = 0;
      for (int y = 0; y < h; ++y) {
        for (int x = 0; x < w; ++x) {
          if (4 * y / h != b / 4 || 4 * x / w != b % 4) continue;
          x0 = std::min(x0, x), y0 = std::min(y0, y), x1 = std::max(x1, x + 1), y1 = std::max(y1, y + 1);
        }
      }
      EXPECT_EQ(boxes["boxes"][b], nlohmann::json::array({x0, y0, x1 - x0, y1 - y0})) << "block " << b;
    }
  }
}

TEST_F(MkdataFieldsTest, CaptionsVaryInLengthAndHoldTextThatIsNotAscii) {
  std::set<std::size_t> words;
  int not_ascii = 0, long_ones = 0;
  for (std::uint32_t n = 0; n < 2000; ++n) {
    const std::string text = mkdata::caption(kSeed, n);
    ASSERT_TRUE(valid_utf8(text)) << n;
    const std::size_t count = static_cast<std::size_t>(std::count(text.begin(), text.end(), ' ')) + 1;
    words.insert(count);
    long_ones += count >= 40;
    not_ascii +=
        std::any_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
  }
  EXPECT_EQ(*words.begin(), 1u);
  EXPECT_EQ(*words.rbegin(), 79u);
  EXPECT_EQ(words.size(), 12u + 40u);
  EXPECT_NEAR(long_ones, 2000 / 8, 60);
  EXPECT_GT(not_ascii, 1000);
}

TEST_F(MkdataFieldsTest, TheSameSeedWritesTheSameBytes) {
  const testing::CommandOutcome again = mkdata(
      {"--out", path("again"), "--format", "wds", "--shard-size", "4", "--fields", kAllFields}, dir_->path());
  ASSERT_EQ(again.code, 0) << again.describe();
  for (int s = 0; s < kShards; ++s) {
    const std::string name = "/shard-00000" + std::to_string(s) + ".tar";
    EXPECT_TRUE(testing::read_file(path("again") + name) == testing::read_file(path("fields") + name))
        << name;
  }
}

// Today's shard index takes a sample's image and .cls and passes over members it does not
// know, so a dataset with captions, records and arrays is still an image dataset.
TEST_F(MkdataFieldsTest, ALoaderReadsTheImagesAndLabelsOfADatasetWithoutMasks) {
  const testing::CommandOutcome o = mkdata(
      {"--out", path("nomasks"), "--format", "wds", "--shard-size", "4", "--fields", "txt,jpg,json,cls,npy"},
      dir_->path());
  ASSERT_EQ(o.code, 0) << o.describe();
  auto read = [](const std::string& dir) {
    LoaderOptions options = testing::small_options("", 1, 4);
    options.shards = dir + "/shard-{000000..000002}.tar";
    options.shuffle = false;
    std::pair<std::vector<std::int64_t>, std::string> pass;
    auto loader = testing::open_loader(options);
    if (!loader) return pass;
    for (;;) {
      auto batch = loader->next();
      EXPECT_TRUE(batch.ok()) << batch.status().message();
      if (!batch.ok() || !batch->has_value()) break;
      const Batch& b = **batch;
      pass.first.insert(pass.first.end(), b.labels().begin(), b.labels().end());
      pass.second.append(static_cast<const char*>(b.data()), b.bytes());
    }
    return pass;
  };
  const auto plain = read(path("plain"));
  ASSERT_EQ(plain.first.size(), kImages);
  const auto fields = read(path("nomasks"));
  EXPECT_EQ(fields.first, plain.first);
  EXPECT_TRUE(fields.second == plain.second) << "the images decode to other pixels";
}

TEST_F(MkdataFieldsTest, BadListsAreRefusedWritingNothing) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::string out = path("refused");
  const std::vector<Case> cases = {
      {{"--fields", "jpg,txt"}, "--fields: only with --format wds"},
      {{"--format", "wds", "--fields", "jpg,caption"},
       "--fields 'jpg,caption': unknown member 'caption'; use some of jpg, txt, cls, json, npy, seg.png, "
       "depth.png, boxes.json"},
      {{"--format", "wds", "--fields", "txt,cls"}, "no jpg; every sample has its image"},
      {{"--format", "wds", "--fields", "jpg,txt,txt"}, "txt is listed twice"},
      {{"--format", "wds", "--fields", "jpg,,txt"}, "an empty name"},
      {{"--format", "wds", "--fields", ""}, "an empty name"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"--out", out};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const testing::CommandOutcome o = mkdata(args, dir_->path());
    EXPECT_TRUE(o.exited && o.code == 2) << o.describe();
    EXPECT_NE(o.err.find(c.message), std::string::npos) << o.describe();
    EXPECT_FALSE(fs::exists(out)) << "a refused run wrote something";
  }
}

}  // namespace
}  // namespace forkfeed

namespace forkfeed {
namespace {

// A Loader with a schema over the dataset forkfeed-mkdata --fields wrote: each field of
// each sample is the documented function of the seed and the image's number, the first
// image field is the image-only loader's pixels and labels, a view of it draws apart.
TEST_F(MkdataFieldsTest, ALoaderWithFieldsDeliversEachFieldOfEachSample) {
  auto open = [](const std::string& dataset, const std::string& fields, std::uint32_t workers) {
    LoaderOptions options = testing::small_options("", workers, 4);
    options.shards = path(dataset) + "/shard-{000000..000002}.tar";
    options.shuffle = false;
    options.fields = fields;
    return testing::open_loader(options);
  };
  auto plain = open("plain", "", 1);  // the same images and labels, without the other members
  ASSERT_TRUE(plain);
  auto loader = open("fields", "image=jpg;png, caption=txt, label=cls, meta=json, emb=npy, view2=jpg;png", 2);
  ASSERT_TRUE(loader);
  const std::vector<Sample> samples = read_samples(path("fields"));  // in shard order, as unshuffled
  ASSERT_EQ(samples.size(), kImages);
  std::uint32_t n = 0;
  std::set<std::uint32_t> seen;
  for (;;) {
    auto batch = loader->next();
    auto expected = plain->next();
    ASSERT_TRUE(batch.ok() && expected.ok()) << batch.status().message();
    ASSERT_EQ(batch->has_value(), expected->has_value());
    if (!batch->has_value()) break;
    const Batch& b = **batch;
    const Batch& e = **expected;
    ASSERT_EQ(b.fields().size(), 7u) << "the schema's six, then the keys";
    ASSERT_EQ(b.bytes(), e.bytes());
    EXPECT_EQ(std::memcmp(b.data(), e.data(), b.bytes()), 0)
        << "the first image field is not the plain image";
    EXPECT_TRUE(std::equal(b.labels().begin(), b.labels().end(), e.labels().begin()));
    const FieldView& view2 = *b.field("view2");
    ASSERT_EQ(view2.sample_bytes(), b.field("image")->sample_bytes());
    EXPECT_NE(std::memcmp(view2.data(), b.data(), b.bytes()), 0) << "a view draws as its image does";
    const FieldView& caption = *b.field("caption");
    const FieldView& meta = *b.field("meta");
    const FieldView& emb = *b.field("emb");
    const FieldView& keys = b.fields().back();
    EXPECT_EQ(keys.name(), "__key__");
    EXPECT_FALSE(emb.ragged()) << "every .npy is float32 (8,): a dense field";
    for (std::size_t i = 0; i < b.size(); ++i, ++n) {
      ASSERT_LT(n, samples.size());
      EXPECT_EQ(keys.text(i), samples[n].key) << "the members' name up to the first dot";
      const std::string& npy = samples[n].member("npy");
      EXPECT_EQ(std::string(reinterpret_cast<const char*>(emb.bytes(i).data()), emb.bytes(i).size()),
                npy.substr(npy.size() - 32))
          << "the dense array is the .npy's data";
      // Samples come in key order (class, then number): the record names the image.
      const auto record = nlohmann::json::parse(meta.text(i), nullptr, false);
      ASSERT_TRUE(record.is_object()) << meta.text(i);
      const auto image = record.value("caption_id", 0u);
      EXPECT_TRUE(seen.insert(image).second) << "image " << image << " twice";
      EXPECT_EQ(meta.text(i), mkdata::json_record(kSeed, image, static_cast<std::uint32_t>(b.labels()[i])));
      EXPECT_EQ(caption.text(i), mkdata::caption(kSeed, image)) << "image " << image;
      EXPECT_TRUE(caption.present(i));
      ASSERT_EQ(emb.shape(i).size(), 1u);
      EXPECT_EQ(emb.shape(i)[0], 8);
      EXPECT_EQ(emb.element(i), ElementType::kFloat32);
      ASSERT_EQ(emb.bytes(i).size(), 32u);
      float values[8];
      std::memcpy(values, emb.bytes(i).data(), sizeof values);
      EXPECT_EQ(values[3], static_cast<float>(image) + 3.0f / 8) << "image " << image;
    }
  }
  EXPECT_EQ(n, kImages);
}

}  // namespace
}  // namespace forkfeed
