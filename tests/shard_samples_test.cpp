// group_samples: WebDataset's grouping of a shard's members into samples, the three label
// rules, and every bad sample refused (on_error=fail) or skipped and counted (skip); with
// fields, each field's member in any order, labels and numbers read, the missing-field
// modes and the bad values. Members are built here directly; labels are served from a
// map, no tar file needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "dataset/shards/shard_samples.h"
#include "tests/testing/npy_member.h"

namespace forkfeed {
namespace {

constexpr std::string_view kShard = "/data/train-000007.tar";
constexpr std::uint64_t kMaxFile = 1000;

// A shard under construction: members at increasing offsets, label bytes kept by name.
class FakeShard {
 public:
  FakeShard& add(std::string name, std::uint64_t size = 100, std::string bytes = "") {
    members_.push_back(TarMember{name, offset_ + 512, bytes.empty() ? size : bytes.size()});
    offset_ += 512 + (members_.back().size + 511) / 512 * 512;
    if (!bytes.empty()) bytes_[members_.back().offset] = std::move(bytes);
    return *this;
  }
  // An image plus a .cls member holding `label`.
  FakeShard& cls_sample(const std::string& key, const std::string& label,
                        const std::string& image_ext = "jpg") {
    return add(key + "." + image_ext).add(key + ".cls", 0, label);
  }
  const std::vector<TarMember>& members() const { return members_; }
  std::uint64_t offset_of(const std::string& name) const {
    for (const TarMember& m : members_) {
      if (m.name == name) return m.offset;
    }
    ADD_FAILURE() << "no member " << name;
    return 0;
  }

  Result<ShardScan> group(const LabelRule& rule, OnError on_error = OnError::kFail,
                          std::uint64_t max_file = kMaxFile) {
    ReadMember read = [this](const TarMember& m) -> Result<std::string> {
      ++reads;
      const auto it = bytes_.find(m.offset);
      if (it == bytes_.end()) return Status::IoError("cannot read " + m.name);
      return it->second;
    };
    return group_samples(7, kShard, members_, rule, read, on_error, max_file);
  }
  // Grouped by the fields of `text`.
  Result<ShardScan> group_fields(const std::string& text, MissingField missing,
                                 OnError on_error = OnError::kFail, std::uint64_t max_file = kMaxFile) {
    Result<SampleSchema> schema = sample_schema(text, missing);
    EXPECT_TRUE(schema.ok()) << schema.status().message();
    ReadMember read = [this](const TarMember& m) -> Result<std::string> {
      ++reads;
      const auto it = bytes_.find(m.offset);
      if (it == bytes_.end()) return Status::IoError("cannot read " + m.name);
      return it->second;
    };
    return group_samples(7, kShard, members_, LabelRule{}, read, on_error, max_file, *schema);
  }
  int reads = 0;

 private:
  std::vector<TarMember> members_;
  std::map<std::uint64_t, std::string> bytes_;  // by member offset: a name may come back
  std::uint64_t offset_ = 0;
};

const LabelRule kCls{LabelSource::kCls, ""};
const LabelRule kFolder{LabelSource::kClassFolder, ""};

std::vector<std::int64_t> labels(const ShardScan& scan) {
  std::vector<std::int64_t> out;
  for (const ShardSample& s : scan.samples) out.push_back(s.label);
  return out;
}

// Fails unless grouping fails with BadData naming the shard, `key` and `problem`, and,
// with on_error=skip, leaves out exactly that one sample, keeping the reason.
void expect_bad_sample(FakeShard& shard, const LabelRule& rule, const std::string& key,
                       const std::string& problem, std::size_t good_samples,
                       std::uint64_t max_file = kMaxFile) {
  Result<ShardScan> failed = shard.group(rule, OnError::kFail, max_file);
  ASSERT_FALSE(failed.ok()) << "grouped " << failed->samples.size() << " samples";
  EXPECT_EQ(failed.status().code(), Status::Code::kBadData);
  const std::string head = "shard " + std::string(kShard) + ", sample " + key + ": ";
  EXPECT_EQ(failed.status().message().substr(0, head.size()), head) << failed.status().message();
  EXPECT_NE(failed.status().message().find(problem), std::string::npos) << failed.status().message();

  Result<ShardScan> skipped = shard.group(rule, OnError::kSkip, max_file);
  ASSERT_TRUE(skipped.ok()) << skipped.status().message();
  EXPECT_EQ(skipped->samples.size(), good_samples);
  EXPECT_EQ(skipped->skipped, 1u);
  ASSERT_EQ(skipped->skip_reasons.size(), 1u);
  EXPECT_EQ(skipped->skip_reasons[0], failed.status().message());
}

TEST(SplitMemberNameTest, FollowsWebDatasetsBasePlusExt) {
  auto split = [](std::string_view name) -> std::pair<std::string, std::string> {
    const std::optional<MemberKey> k = split_member_name(name);
    if (!k) return {"<none>", ""};
    return {std::string(k->key), std::string(k->extension)};
  };
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(split("n01440764_10026.JPEG"), P("n01440764_10026", "JPEG"));
  EXPECT_EQ(split("a/b/x.y.jpg"), P("a/b/x", "y.jpg"));
  EXPECT_EQ(split("a.d/x.cls"), P("a.d/x", "cls"));  // dots in folders stay in the key
  EXPECT_EQ(split("x."), P("x", ""));
  EXPECT_EQ(split("d/.x"), P("d/", "x"));  // the regular expression's odd case, kept
  EXPECT_EQ(split("/abs/x.jpg"), P("/abs/x", "jpg"));
  EXPECT_EQ(split("__index__"), P("<none>", ""));
  EXPECT_EQ(split(".hidden"), P("<none>", ""));
  EXPECT_EQ(split("a/b"), P("<none>", ""));
  EXPECT_EQ(split("a.b/c"), P("<none>", ""));
  EXPECT_EQ(split(""), P("<none>", ""));
}

TEST(ShardSamplesTest, ConsecutiveMembersOfAKeyFormASample) {
  FakeShard shard;
  shard.cls_sample("s0", "3").add("s1.cls", 0, " 17\n").add("s1.json", 0, "{}").add("s1.PNG", 2000 - 1000);
  shard.add("__meta__");  // no key: passed over, as WebDataset does
  shard.cls_sample("dir/s2", "0", "seg.webp");
  Result<ShardScan> scan = shard.group(kCls);
  ASSERT_TRUE(scan.ok()) << scan.status().message();
  ASSERT_EQ(scan->samples.size(), 3u);
  EXPECT_EQ(scan->samples[0], (ShardSample{shard.offset_of("s0.jpg"), 7, 100, 3}));
  EXPECT_EQ(scan->samples[1], (ShardSample{shard.offset_of("s1.PNG"), 7, 1000, 17}));
  EXPECT_EQ(scan->samples[2], (ShardSample{shard.offset_of("dir/s2.seg.webp"), 7, 100, 0}));
  EXPECT_EQ(scan->skipped, 0u);
  EXPECT_TRUE(scan->class_names.empty());
  EXPECT_EQ(shard.reads, 3);  // the .cls members only
}

TEST(ShardSamplesTest, AKeyThatComesBackIsANewSample) {
  FakeShard shard;
  shard.cls_sample("a", "1").cls_sample("b", "2").cls_sample("a", "3");
  Result<ShardScan> scan = shard.group(kCls);
  ASSERT_TRUE(scan.ok()) << scan.status().message();
  EXPECT_EQ(labels(*scan), (std::vector<std::int64_t>{1, 2, 3}));
}

// A label is a non-negative integer whatever holds it, as in a manifest: -1 and INT64_MIN
// are refused here too.
TEST(ShardSamplesTest, ClsLabelsMustBeNonNegativeDecimalIntegers) {
  for (const char* text :
       {"1.5", "0x10", "7 8", "", "  ", "+3", "99999999999999999999", "abc", "-1", "-9223372036854775808"}) {
    SCOPED_TRACE(text);
    FakeShard shard;
    shard.cls_sample("good", "0")
        .add("bad.jpg")
        .add("bad.cls", 0, text[0] == '\0' ? std::string(1, '\0') : text);
    expect_bad_sample(shard, kCls, "bad", "label member bad.cls is not a non-negative integer", 1);
  }
}

TEST(ShardSamplesTest, JsonLabelsComeFromAnIntegerField) {
  const LabelRule rule{LabelSource::kJson, "label"};
  FakeShard shard;
  shard.add("a.jpg").add("a.json", 0, R"({"label": 4, "caption": "x"})");
  shard.add("b.jpg").add("b.JSON", 0, R"({"label": 0})");
  shard.add("c.jpg").add("c.json", 0, R"({"label": 9223372036854775807})");
  Result<ShardScan> scan = shard.group(rule);
  ASSERT_TRUE(scan.ok()) << scan.status().message();
  EXPECT_EQ(labels(*scan), (std::vector<std::int64_t>{4, 0, 9223372036854775807}));

  const std::pair<const char*, const char*> bad[] = {
      {"[1]", "is not a JSON object"},
      {"{\"label\": 4", "is not a JSON object"},
      {"{\"other\": 4}", "has no field \"label\""},
      {"{\"label\": \"4\"}", "field \"label\" is not a non-negative integer"},
      {"{\"label\": 4.5}", "field \"label\" is not a non-negative integer"},
      {"{\"label\": 9223372036854775808}", "field \"label\" is not a non-negative integer"},
      {"{\"label\": -2}", "field \"label\" is not a non-negative integer"},
      {"{\"label\": -9223372036854775808}", "field \"label\" is not a non-negative integer"},
  };
  for (const auto& [text, problem] : bad) {
    SCOPED_TRACE(text);
    FakeShard s;
    s.add("ok.jpg").add("ok.json", 0, R"({"label": 0})").add("x.jpg").add("x.json", 0, text);
    expect_bad_sample(s, rule, "x", problem, 1);
  }
}

TEST(ShardSamplesTest, ClassFolderLabelsAreSortedClassPositionsAcrossShards) {
  FakeShard first, second;
  first.add("n02/a.jpg").add("n01/b.jpg").add("n02/c.jpg").add("x/y/d.jpg");
  second.add("n00/e.jpg").add("n02/f.jpg");
  std::vector<ShardScan> scans;
  for (FakeShard* shard : {&first, &second}) {
    Result<ShardScan> scan = shard->group(kFolder);
    ASSERT_TRUE(scan.ok()) << scan.status().message();
    scans.push_back(std::move(scan).value());
  }
  EXPECT_EQ(first.reads, 0);
  EXPECT_EQ(scans[0].class_names, (std::vector<std::string>{"n01", "n02", "x/y"}));
  EXPECT_EQ(labels(scans[0]), (std::vector<std::int64_t>{1, 0, 1, 2}));  // positions in the shard's own list
  EXPECT_EQ(scans[1].class_names, (std::vector<std::string>{"n00", "n02"}));

  EXPECT_EQ(assign_class_labels(scans), (std::vector<std::string>{"n00", "n01", "n02", "x/y"}));
  EXPECT_EQ(labels(scans[0]), (std::vector<std::int64_t>{2, 1, 2, 3}));
  EXPECT_EQ(labels(scans[1]), (std::vector<std::int64_t>{0, 2}));

  FakeShard flat;
  flat.add("n01/a.jpg").add("loose.jpg");
  expect_bad_sample(flat, kFolder, "loose", "the key has no folder", 1);

  // A shard written by `tar -C dir .` names its members "./n02/g.jpg": the same class
  // as "n02/g.jpg" from another shard, never a class of its own.
  FakeShard dotted;
  dotted.add("./n02/g.jpg").add("././n01/h.jpg");
  Result<ShardScan> scan = dotted.group(kFolder);
  ASSERT_TRUE(scan.ok()) << scan.status().message();
  EXPECT_EQ(scan->class_names, (std::vector<std::string>{"n01", "n02"}));
  FakeShard only_dot;
  only_dot.add("n01/a.jpg").add("./loose.jpg");
  expect_bad_sample(only_dot, kFolder, "./loose", "the key has no folder", 1);
}

TEST(ShardSamplesTest, SampleProblems) {
  {
    FakeShard s;
    s.cls_sample("ok", "1").add("x.cls", 0, "1").add("x.txt");
    expect_bad_sample(s, kCls, "x", "no image member (looked for .jpg", 1);
  }
  {
    FakeShard s;
    s.add("x.jpg").add("x.png").add("x.cls", 0, "1").cls_sample("ok", "1");
    expect_bad_sample(s, kCls, "x", "two images, x.jpg and x.png", 1);
  }
  {
    FakeShard s;
    s.cls_sample("ok", "1").add("x.jpg").add("x.txt", 0, "1");
    expect_bad_sample(s, kCls, "x", "no .cls member", 1);
  }
  {
    FakeShard s;
    s.add("x.jpg").add("x.cls", 0, "1").add("x.CLS", 0, "2").cls_sample("ok", "1");
    expect_bad_sample(s, kCls, "x", "two members with extension .CLS (x.cls, x.CLS)", 1);
  }
  {
    FakeShard s;
    s.cls_sample("ok", "1").add("big.jpg", kMaxFile + 1).add("big.cls", 0, "1");
    expect_bad_sample(s, kCls, "big", "image big.jpg is 1001 bytes > max_file_bytes 1000", 1);
    Result<ShardScan> allowed = s.group(kCls, OnError::kFail, kMaxFile + 1);
    ASSERT_TRUE(allowed.ok()) << allowed.status().message();
  }
  {
    FakeShard s;  // a ShardSample's size is 32 bits, whatever max_file_bytes says
    s.cls_sample("ok", "1").add("huge.jpg", std::uint64_t{1} << 32).add("huge.cls", 0, "1");
    expect_bad_sample(s, kCls, "huge",
                      "image huge.jpg is 4294967296 bytes > the most a shard sample can hold 4294967295", 1,
                      std::uint64_t{1} << 40);
  }
  {
    FakeShard s;
    s.cls_sample("ok", "1").add("x.jpg").add("x.cls", kMaxLabelBytes + 1);
    expect_bad_sample(s, kCls, "x", "label member x.cls is 65537 bytes > 65536", 1);
    EXPECT_EQ(s.reads, 2);  // the large one was never read
  }
}

TEST(ShardSamplesTest, SkipCountsEveryBadSampleAndKeepsTheFirstReasons) {
  FakeShard shard;
  for (int i = 0; i < 20; ++i)
    shard.add("bad" + std::to_string(i) + ".txt").cls_sample("ok" + std::to_string(i), "5");
  Result<ShardScan> scan = shard.group(kCls, OnError::kSkip);
  ASSERT_TRUE(scan.ok()) << scan.status().message();
  EXPECT_EQ(scan->samples.size(), 20u);
  EXPECT_EQ(scan->skipped, 20u);
  ASSERT_EQ(scan->skip_reasons.size(), kMaxSkipReasons);
  EXPECT_NE(scan->skip_reasons[7].find("sample bad7: no image member"), std::string::npos)
      << scan->skip_reasons[7];
}

TEST(ShardSamplesTest, AFailedReadFailsTheShardEvenWithSkip) {
  FakeShard shard;
  shard.cls_sample("ok", "1").add("x.jpg").add("x.cls", 1);  // no bytes: the reader fails
  for (OnError on_error : {OnError::kFail, OnError::kSkip}) {
    Result<ShardScan> scan = shard.group(kCls, on_error);
    ASSERT_FALSE(scan.ok());
    EXPECT_EQ(scan.status().code(), Status::Code::kIoError);
    EXPECT_EQ(scan.status().message(), "cannot read x.cls");
  }
}

TEST(ShardSamplesTest, EmptyShardHasNoSamples) {
  FakeShard shard;
  Result<ShardScan> scan = shard.group(kCls);
  ASSERT_TRUE(scan.ok()) << scan.status().message();
  EXPECT_TRUE(scan->samples.empty());
}

// ---- With fields ----

constexpr char kAll[] =
    "image=jpg;png, caption=txt, label=cls, meta=json, emb=npy, score=json:number(score), "
    "other=json:label(c), view=jpg;png";

// A sample of every kind, its members in the order given by `order` (of "jpg txt cls json npy").
FakeShard& full_sample(FakeShard& shard, const std::string& key, const std::vector<std::string>& order,
                       const std::string& label = "4") {
  for (const std::string& ext : order) {
    if (ext == "jpg") shard.add(key + ".jpg", 300);
    if (ext == "txt") shard.add(key + ".txt", 0, "a caption of " + key);
    if (ext == "cls") shard.add(key + ".cls", 0, label);
    if (ext == "json") shard.add(key + ".json", 0, R"({"score": 0.25, "c": 9, "x": "y"})");
    if (ext == "npy") shard.add(key + ".npy", 0, testing::npy_member("<f4", "(18,)", std::string(72, 'e')));
  }
  return shard;
}

std::int32_t from(const FakeShard& shard, const std::string& member, const std::string& first) {
  return static_cast<std::int32_t>(static_cast<std::int64_t>(shard.offset_of(member)) -
                                   static_cast<std::int64_t>(shard.offset_of(first)));
}

TEST(ShardFieldsTest, EachFieldTakesItsMemberInAnyOrder) {
  FakeShard shard;
  full_sample(shard, "a", {"jpg", "txt", "cls", "json", "npy"});
  full_sample(shard, "b", {"npy", "json", "txt", "cls", "jpg"}, "11");
  shard.add("b.unclaimed", 50);  // a member no field takes is passed over
  Result<ShardScan> scan = shard.group_fields(kAll, MissingField::kError);
  ASSERT_TRUE(scan.ok()) << scan.status().message();
  ASSERT_EQ(scan->samples.size(), 2u);
  // The slice is the first member field's (image), the label the first label field's.
  EXPECT_EQ(scan->samples[0], (ShardSample{shard.offset_of("a.jpg"), 7, 300, 4}));
  EXPECT_EQ(scan->samples[1], (ShardSample{shard.offset_of("b.jpg"), 7, 300, 11}));
  // Members: caption, meta, emb (the view shares the image's); offsets from the image's.
  const std::string caption_a = "a caption of a";
  const std::uint32_t json = 33;
  EXPECT_EQ(scan->field_slices, (std::vector<FieldSlice>{{from(shard, "a.txt", "a.jpg"), 14},
                                                         {from(shard, "a.json", "a.jpg"), json},
                                                         {from(shard, "a.npy", "a.jpg"), 200},
                                                         {from(shard, "b.txt", "b.jpg"), 14},
                                                         {from(shard, "b.json", "b.jpg"), json},
                                                         {from(shard, "b.npy", "b.jpg"), 200}}));
  EXPECT_LT(scan->field_slices[3].offset, 0) << "b's caption comes before its image";
  EXPECT_EQ(scan->field_labels, (std::vector<std::int64_t>{9, 9}));
  EXPECT_EQ(scan->field_numbers, (std::vector<double>{0.25, 0.25}));
  EXPECT_EQ(scan->skipped, 0u);
  EXPECT_EQ(shard.reads, 6) << "each sample's .cls, its .json once for both keys, and its .npy's header";
  ASSERT_EQ(scan->arrays.size(), 1u);
  EXPECT_EQ(scan->arrays[0], (ShardArrays{true, false, ElementType::kFloat32, {18}, "a"}));
  EXPECT_EQ(scan->longest_key, 1u);
  EXPECT_TRUE(scan->name_headers.empty()) << "every name is in its own header";
  EXPECT_EQ(scan->fields_seen, 0xffu);
  EXPECT_EQ(scan->extensions, (std::vector<std::string>{"cls", "jpg", "json", "npy", "txt", "unclaimed"}));
}

TEST(ShardFieldsTest, AFieldTakesTheOneOfItsSourcesTheSampleHas) {
  FakeShard shard;
  shard.add("a.jpg", 20).add("b.PNG", 30).add("c.Jpg", 40).add("c.seg.png", 50);
  Result<ShardScan> scan = shard.group_fields("image=jpg;png, mask=seg.png", MissingField::kEmpty);
  ASSERT_TRUE(scan.ok()) << scan.status().message();
  ASSERT_EQ(scan->samples.size(), 3u);
  EXPECT_EQ(scan->samples[0].offset, shard.offset_of("a.jpg"));
  EXPECT_EQ(scan->samples[1].offset, shard.offset_of("b.PNG"));
  EXPECT_EQ(scan->samples[2].offset, shard.offset_of("c.Jpg"));
  EXPECT_EQ(scan->samples[0].label, 0) << "no label field";
  EXPECT_TRUE(scan->field_slices[0].missing());
  EXPECT_EQ(scan->field_slices[2], (FieldSlice{from(shard, "c.seg.png", "c.Jpg"), 50}));
  EXPECT_TRUE(scan->field_labels.empty());
  EXPECT_TRUE(scan->field_numbers.empty());
}

// missing=error: bad data naming the shard, the key and the field; skip and empty keep
// the sample, with the field's marker, in its place.
TEST(ShardFieldsTest, ASampleLackingAFieldUnderEachMode) {
  const std::string fields = "image=jpg, caption=txt, label=cls, score=json:number(score), l2=json:label(c)";
  auto make = [](FakeShard& s) {
    s.add("a.jpg").add("a.txt", 0, "x").add("a.cls", 0, "1").add("a.json", 0, R"({"score": 2, "c": 3})");
    s.add("b.jpg").add("b.cls", 0, "2").add("b.json", 0, R"({"c": 4})");   // no caption, no score
    s.add("c.txt", 0, "only text").add("c.json", 0, R"({"score": 1.5})");  // no image, label or l2
  };
  {
    FakeShard s;
    make(s);
    Result<ShardScan> failed = s.group_fields(fields, MissingField::kError);
    ASSERT_FALSE(failed.ok());
    EXPECT_EQ(failed.status().code(), Status::Code::kBadData);
    EXPECT_EQ(failed.status().message(),
              "shard /data/train-000007.tar, sample b: field \"caption\" is missing: no .txt member "
              "(missing=error; missing=skip or empty take such samples)");
    Result<ShardScan> skipped = s.group_fields(fields, MissingField::kError, OnError::kSkip);
    ASSERT_TRUE(skipped.ok());
    EXPECT_EQ(skipped->samples.size(), 1u) << "b and c are bad data, left out";
    EXPECT_EQ(skipped->skipped, 2u);
    EXPECT_NE(skipped->skip_reasons[1].find("sample c: field \"image\" is missing: no .jpg member"),
              std::string::npos)
        << skipped->skip_reasons[1];
  }
  {
    FakeShard s;
    s.add("a.jpg").add("a.txt", 0, "x").add("a.cls", 0, "1").add("a.json", 0, R"({"score": 2})");
    Result<ShardScan> failed = s.group_fields(fields, MissingField::kError);
    ASSERT_FALSE(failed.ok());
    EXPECT_NE(failed.status().message().find(
                  "sample a: field \"l2\" is missing: member a.json has no key \"c\" (missing=error"),
              std::string::npos)
        << failed.status().message();
  }
  for (MissingField mode : {MissingField::kSkip, MissingField::kEmpty}) {
    SCOPED_TRACE(std::string(to_string(mode)));
    FakeShard s;
    make(s);
    Result<ShardScan> scan = s.group_fields(fields, mode);
    ASSERT_TRUE(scan.ok()) << scan.status().message();
    ASSERT_EQ(scan->samples.size(), 3u) << "every sample kept, in its place";
    EXPECT_EQ(scan->skipped, 0u);
    EXPECT_EQ(scan->samples[0], (ShardSample{s.offset_of("a.jpg"), 7, 100, 1}));
    EXPECT_EQ(scan->samples[1], (ShardSample{s.offset_of("b.jpg"), 7, 100, 2}));
    // No image: the slice is missing, at the sample's first member; no label: the marker.
    EXPECT_EQ(scan->samples[2], (ShardSample{s.offset_of("c.txt"), 7, FieldSlice::kMissing, kMissingLabel}));
    EXPECT_EQ(scan->field_slices, (std::vector<FieldSlice>{{from(s, "a.txt", "a.jpg"), 1}, {}, {0, 9}}));
    EXPECT_EQ(scan->field_labels, (std::vector<std::int64_t>{3, 4, kMissingLabel}));
    ASSERT_EQ(scan->field_numbers.size(), 3u);
    EXPECT_EQ(scan->field_numbers[0], 2.0);
    EXPECT_TRUE(std::isnan(scan->field_numbers[1]));
    EXPECT_EQ(scan->field_numbers[2], 1.5);
  }
}

TEST(ShardFieldsTest, BadValuesAndMembersAreBadDataNamingTheField) {
  struct Case {
    std::string fields;
    std::function<void(FakeShard&)> make;
    std::string problem;
  };
  const std::vector<Case> cases = {
      {"image=jpg, label=cls", [](FakeShard& s) { s.add("x.jpg").add("x.cls", 0, "-1"); },
       "field \"label\": member x.cls is not a non-negative integer: \"-1\""},
      {"image=jpg, n=val:number", [](FakeShard& s) { s.add("x.jpg").add("x.val", 0, "inf"); },
       "field \"n\": member x.val is not a finite number: \"inf\""},
      {"image=jpg, n=val:number", [](FakeShard& s) { s.add("x.jpg").add("x.val", 0, "1.5e"); },
       "field \"n\": member x.val is not a finite number"},
      {"image=jpg, l=json:label(k)", [](FakeShard& s) { s.add("x.jpg").add("x.json", 0, "[1]"); },
       "field \"l\": member x.json is not a JSON object"},
      {"image=jpg, n=json:number(k)",
       [](FakeShard& s) { s.add("x.jpg").add("x.json", 0, R"({"k": 1e400})"); },
       "field \"n\": member x.json is not valid JSON (number overflow parsing '1e400'; numbers beyond a "
       "double's range are not JSON)"},
      {"image=jpg, n=json:number(k)", [](FakeShard& s) { s.add("x.jpg").add("x.json", 0, R"({"k": NaN})"); },
       "field \"n\": member x.json is not valid JSON (parse error at line 1, column 7: syntax error while "
       "parsing value - invalid literal; last read: '\"k\": N'; NaN and Infinity are not JSON)"},
      // Found from outside: trailing garbage and bad UTF-8 were "numbers beyond a double's range".
      {"image=jpg, n=json:number(k)", [](FakeShard& s) { s.add("x.jpg").add("x.json", 0, R"({"k": 1} x)"); },
       "field \"n\": member x.json is not valid JSON (parse error at line 1, column 10: syntax error while "
       "parsing value - invalid literal; last read: '1} x'; expected end of input)"},
      {"image=jpg, n=json:number(k)",
       [](FakeShard& s) { s.add("x.jpg").add("x.json", 0, "{\"k\": \"\xff\"}"); },
       "field \"n\": member x.json is not valid JSON (parse error at line 1, column 8: syntax error while "
       "parsing value - invalid string: ill-formed UTF-8 byte; last read: '\"\\xff')"},
      {"image=jpg, l=json:label(k)", [](FakeShard& s) { s.add("x.jpg").add("x.json", 0, R"({"k": 1.5})"); },
       "field \"l\": member x.json's key \"k\" is not a non-negative integer: \"1.5\""},
      {"image=jpg, n=json:number(k)", [](FakeShard& s) { s.add("x.jpg").add("x.json", 0, R"({"k": "1"})"); },
       "field \"n\": member x.json's key \"k\" is not a finite number: \"\"1\"\""},
      {"image=jpg, label=cls", [](FakeShard& s) { s.add("x.jpg").add("x.cls", kMaxLabelBytes + 1); },
       "field \"label\": member x.cls is 65537 bytes > 65536"},
      {"image=jpg, caption=txt", [](FakeShard& s) { s.add("x.jpg").add("x.txt", kMaxFile + 1); },
       "field \"caption\": member x.txt is 1001 bytes > max_file_bytes 1000"},
      {"image=jpg, caption=txt", [](FakeShard& s) { s.add("x.jpg").add("x.txt").add("x.TXT"); },
       "two members with extension .TXT (x.txt, x.TXT)"},
      // Found from outside: the .jpg was taken silently, where without fields the sample is refused.
      {"image=jpg;png, label=cls", [](FakeShard& s) { s.add("x.jpg").add("x.png").add("x.cls", 0, "1"); },
       "field \"image\" has two members, x.jpg and x.png, of its sources .jpg or .png; a field reads one: "
       "name the one to read (\"image=jpg\"), or each in a field of its own"},
      {"image=jpg, emb=npy", [](FakeShard& s) { s.add("x.jpg").add("x.npy", 0, "\x93NUMPY\x09"); },
       "field \"emb\": member x.npy: "},
      {"image=jpg, emb=npy",
       [](FakeShard& s) {
         s.add("x.jpg").add("x.npy", 0, testing::npy_member("<u1", "(1, 1, 1, 1, 1, 1, 1)", "7"));
       },
       "field \"emb\": member x.npy has 7 dimensions; at most 6 are carried"},
      {"image=jpg, caption=txt",  // an unclaimed 3 GiB member between them
       [](FakeShard& s) { s.add("x.jpg").add("x.npy", std::uint64_t{3} << 30).add("x.txt"); },
       "field \"caption\": member x.txt lies 3221227008 bytes from x.jpg; a sample's members must lie "
       "within 2 GiB of its first field's"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.problem);
    FakeShard s;
    s.add("ok.jpg").add("ok.txt", 0, "t").add("ok.cls", 0, "1").add("ok.val", 0, "2");
    s.add("ok.json", 0, R"({"k": 1})").add("ok.npy", 0, testing::npy_member("<u1", "(1,)", "1"));
    c.make(s);
    Result<ShardScan> failed = s.group_fields(c.fields, MissingField::kError);
    ASSERT_FALSE(failed.ok());
    EXPECT_EQ(failed.status().code(), Status::Code::kBadData);
    const std::string head = "shard " + std::string(kShard) + ", sample x: ";
    EXPECT_EQ(failed.status().message().substr(0, head.size()), head) << failed.status().message();
    EXPECT_NE(failed.status().message().find(c.problem), std::string::npos) << failed.status().message();
    Result<ShardScan> skipped = s.group_fields(c.fields, MissingField::kEmpty, OnError::kSkip);
    ASSERT_TRUE(skipped.ok()) << skipped.status().message();
    EXPECT_EQ(skipped->samples.size(), 1u);
    EXPECT_EQ(skipped->skipped, 1u);
  }
}

// A key over kMaxKeyBytes, or not UTF-8, is its sample's bad data: the slot carries keys
// as text, whole.
TEST(ShardFieldsTest, AKeyTheSlotCannotCarryIsBadData) {
  const std::string longest(kMaxKeyBytes, 'k');
  for (const auto& [key, problem] :
       {std::pair{longest + "k", "its key is 4097 bytes, over the 4096 a key may take"},
        std::pair{std::string("caf\xe9"), "its key is not UTF-8 (at byte 3)"}}) {
    FakeShard shard;
    shard.add("ok.jpg").add(key + ".jpg").add(longest + ".jpg");
    Result<ShardScan> failed = shard.group_fields("image=jpg", MissingField::kError);
    ASSERT_FALSE(failed.ok());
    EXPECT_NE(failed.status().message().find(problem), std::string::npos) << failed.status().message();
    Result<ShardScan> skipped = shard.group_fields("image=jpg", MissingField::kError, OnError::kSkip);
    ASSERT_TRUE(skipped.ok()) << skipped.status().message();
    EXPECT_EQ(skipped->samples.size(), 2u);
    EXPECT_EQ(skipped->longest_key, kMaxKeyBytes) << "the longest key kept";
  }
}

// An array field's members: one shape, or several (varies); a second dtype is refused
// naming a sample of each, whatever on_error says; a sample skipped counts for nothing.
TEST(ShardFieldsTest, AnArrayFieldHasOneDtypeAndOneShapeOrSeveral) {
  const std::string f4x2 = testing::npy_member("<f4", "(2,)", std::string(8, 'a'));
  const std::string f4x3 = testing::npy_member("<f4", "(3,)", std::string(12, 'b'));
  const std::string f2x2 = testing::npy_member("<f2", "(2,)", std::string(4, 'c'));
  {
    FakeShard shard;
    shard.add("a.jpg").add("a.npy", 0, f4x2).add("b.jpg").add("b.npy", 0, f4x2).add("c.jpg");
    Result<ShardScan> scan = shard.group_fields("image=jpg, emb=npy", MissingField::kEmpty);
    ASSERT_TRUE(scan.ok()) << scan.status().message();
    EXPECT_EQ(scan->arrays, (std::vector<ShardArrays>{{true, false, ElementType::kFloat32, {2}, "a"}}));
  }
  {
    FakeShard shard;
    shard.add("a.jpg").add("a.npy", 0, f4x2).add("b.jpg").add("b.npy", 0, f4x3);
    Result<ShardScan> scan = shard.group_fields("image=jpg, emb=npy", MissingField::kEmpty);
    ASSERT_TRUE(scan.ok()) << scan.status().message();
    EXPECT_EQ(scan->arrays, (std::vector<ShardArrays>{{true, true, ElementType::kFloat32, {2}, "a"}}));
  }
  {
    FakeShard shard;
    shard.add("a.jpg").add("a.npy", 0, f4x2).add("b.jpg").add("b.npy", 0, f2x2);
    for (OnError on_error : {OnError::kFail, OnError::kSkip}) {
      Result<ShardScan> scan = shard.group_fields("image=jpg, emb=npy", MissingField::kEmpty, on_error);
      ASSERT_FALSE(scan.ok());
      EXPECT_EQ(scan.status().code(), Status::Code::kInvalidArgument);
      EXPECT_NE(scan.status().message().find("field \"emb\": in shard " + std::string(kShard) +
                                             ", sample a holds float32 and sample b float16; an array field "
                                             "has one dtype"),
                std::string::npos)
          << scan.status().message();
    }
  }
  {
    // b is skipped for its caption: its other shape does not count.
    FakeShard shard;
    shard.add("a.jpg").add("a.npy", 0, f4x2).add("a.txt", 0, "t").add("b.jpg").add("b.npy", 0, f4x3);
    Result<ShardScan> scan =
        shard.group_fields("image=jpg, emb=npy, caption=txt", MissingField::kError, OnError::kSkip);
    ASSERT_TRUE(scan.ok()) << scan.status().message();
    EXPECT_EQ(scan->skipped, 1u);
    EXPECT_EQ(scan->arrays, (std::vector<ShardArrays>{{true, false, ElementType::kFloat32, {2}, "a"}}));
  }
}

TEST(ShardFieldsTest, AFailedReadFailsTheShard) {
  FakeShard shard;
  shard.add("x.jpg").add("x.json", 5);  // no bytes: the reader fails
  for (MissingField mode : {MissingField::kError, MissingField::kEmpty}) {
    Result<ShardScan> scan = shard.group_fields("image=jpg, l=json:label(k)", mode, OnError::kSkip);
    ASSERT_FALSE(scan.ok());
    EXPECT_EQ(scan.status().message(), "cannot read x.json");
  }
}

TEST(ShardFieldsTest, TheShardsExtensionsAndTheFieldsSeen) {
  FakeShard shard;
  for (int i = 0; i < 40; ++i) shard.add("k" + std::to_string(i) + ".e" + std::to_string(i));
  shard.add("z.JPG").add("z.txt");
  Result<ShardScan> scan = shard.group_fields("image=jpg, caption=txt, emb=npy", MissingField::kEmpty);
  ASSERT_TRUE(scan.ok()) << scan.status().message();
  EXPECT_EQ(scan->fields_seen, 0b011u) << "no .npy member";
  EXPECT_EQ(scan->extensions.size(), kMaxExtensionsKept);
  EXPECT_TRUE(std::is_sorted(scan->extensions.begin(), scan->extensions.end()));
  EXPECT_EQ(scan->samples.size(), 41u) << "each keyed run is a sample, lacking what it lacks";
}

}  // namespace
}  // namespace forkfeed
