// parse_fields and fields_text (forkfeed/fields.h): the kinds each source implies, kinds
// and keys written out, views, and every mistake refused with the entry named and what
// to write instead; field_columns: where an index keeps each field.
#include "dataset/sample_schema.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace forkfeed {
namespace {

std::vector<FieldSpec> parsed(std::string_view text) {
  Result<std::vector<FieldSpec>> fields = parse_fields(text);
  EXPECT_TRUE(fields.ok()) << text << ": " << fields.status().message();
  return fields.ok() ? *fields : std::vector<FieldSpec>{};
}

// Fails unless `text` is refused with InvalidArgument saying each of `words`.
void expect_refused(std::string_view text, const std::vector<std::string>& words) {
  Result<std::vector<FieldSpec>> fields = parse_fields(text);
  ASSERT_FALSE(fields.ok()) << text << " parsed";
  EXPECT_EQ(fields.status().code(), Status::Code::kInvalidArgument) << text;
  for (const std::string& w : words)
    EXPECT_NE(fields.status().message().find(w), std::string::npos)
        << text << ": \"" << w << "\" not in: " << fields.status().message();
}

FieldSpec spec(std::string name, FieldKind kind, std::vector<std::string> sources, std::string key = "",
               std::string member_of = "") {
  return FieldSpec{std::move(name), kind, std::move(sources), std::move(key), std::move(member_of)};
}

TEST(SampleSchemaTest, EachSourceImpliesAKind) {
  struct Case {
    const char* source;
    FieldKind kind;
  };
  for (const Case& c :
       {Case{"jpg", FieldKind::kImage}, Case{"jpeg", FieldKind::kImage}, Case{"png", FieldKind::kImage},
        Case{"ppm", FieldKind::kImage}, Case{"bmp", FieldKind::kImage}, Case{"pgm", FieldKind::kImage},
        Case{"tif", FieldKind::kImage}, Case{"tiff", FieldKind::kImage}, Case{"webp", FieldKind::kImage},
        Case{"seg.png", FieldKind::kImage}, Case{"cls", FieldKind::kLabel}, Case{"txt", FieldKind::kText},
        Case{"en.txt", FieldKind::kText}, Case{"npy", FieldKind::kArray}, Case{"json", FieldKind::kBytes},
        Case{"gz", FieldKind::kBytes}, Case{"png.gz", FieldKind::kBytes}, Case{"cls2", FieldKind::kBytes}}) {
    EXPECT_EQ(default_kind(c.source), c.kind) << c.source;
    const std::vector<FieldSpec> f = parsed(std::string("x=") + c.source);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0], spec("x", c.kind, {c.source})) << c.source;
  }
  // The first source decides: "data=npy;json" is an array.
  EXPECT_EQ(parsed("data=npy;json")[0].kind, FieldKind::kArray);
}

TEST(SampleSchemaTest, TheIssuesSchemaParsesAndTextRoundTrips) {
  const std::vector<FieldSpec> f = parsed("image=jpg;png, caption=txt, label=cls, meta=json, emb=npy");
  const std::vector<FieldSpec> want = {
      spec("image", FieldKind::kImage, {"jpg", "png"}), spec("caption", FieldKind::kText, {"txt"}),
      spec("label", FieldKind::kLabel, {"cls"}), spec("meta", FieldKind::kBytes, {"json"}),
      spec("emb", FieldKind::kArray, {"npy"})};
  EXPECT_EQ(f, want);
  EXPECT_EQ(fields_text(f), "image=jpg;png, caption=txt, label=cls, meta=json, emb=npy");

  for (const char* text :
       {"image=jpg;png, caption=txt, label=cls, meta=json, emb=npy",
        "a=JPG ; Png :image, b = json : label ( class id ) , c=json:number(score), d=ids.txt:bytes",
        "x=jpg, y=jpg, z=jpg, w=png:text",
        "n=score:number, l=lbl:label, t=bin:text, arr=raw:array, im=img:image", "only=seg.png"}) {
    const std::vector<FieldSpec> once = parsed(text);
    const std::string canonical = fields_text(once);
    EXPECT_EQ(parsed(canonical), once) << text << " -> " << canonical;
    EXPECT_EQ(fields_text(parsed(canonical)), canonical);
  }
}

TEST(SampleSchemaTest, KindsAndKeysWrittenOut) {
  EXPECT_EQ(parsed("ids=ids.txt:bytes")[0], spec("ids", FieldKind::kBytes, {"ids.txt"}));
  EXPECT_EQ(parsed("label=json:label(class_id)")[0], spec("label", FieldKind::kLabel, {"json"}, "class_id"));
  EXPECT_EQ(parsed("score=meta.json:number(score)")[0],
            spec("score", FieldKind::kNumber, {"meta.json"}, "score"));
  EXPECT_EQ(parsed("n=val:number")[0], spec("n", FieldKind::kNumber, {"val"}));
  EXPECT_EQ(parsed("im=raw:image")[0], spec("im", FieldKind::kImage, {"raw"}));
  // Written as the default, the kind is left out of the canonical text.
  EXPECT_EQ(fields_text(parsed("c=txt:text, l=cls:label")), "c=txt, l=cls");
  EXPECT_EQ(fields_text(parsed("l=json:label( k )")), "l=json:label(k)");
  // A JSON key may hold what a name may not.
  EXPECT_EQ(parsed("l=json:label(a.b-c d)")[0].json_key, "a.b-c d");
}

TEST(SampleSchemaTest, KeysAreForLabelsAndNumbersOfJsonMembers) {
  expect_refused("label=json:label", {"entry 1", "needs the key", "\"label=json:label(KEY)\""});
  expect_refused("s=json:number", {"entry 1", "\"s=json:number(KEY)\""});
  expect_refused("t=txt:text(k)", {"entry 1", "only label, number, boxes and per_box fields read a key"});
  expect_refused("l=cls:label(k)", {"sources that are not json", "\"l=json:label(k)\""});
  expect_refused("l=json;cls:label(k)", {"sources that are not json"});
  expect_refused("l=cls;json", {"needs the key"});
  expect_refused("l=json:label()", {"empty key", "label=json:label(class_id)"});
  expect_refused("l=json:label(k", {"write KIND or KIND(KEY)"});
  expect_refused("l=json:label(k)x", {"write KIND or KIND(KEY)"});
  expect_refused("l=json:label k)", {"write KIND or KIND(KEY)"});
}

TEST(SampleSchemaTest, MasksFollowAnImageWithAFillOfTheirOwn) {
  const std::vector<FieldSpec> f = parsed("image=jpg, seg=seg.png;seg.npy:mask( fill = 255 ), m2=m.png:mask");
  FieldSpec seg = spec("seg", FieldKind::kMask, {"seg.png", "seg.npy"});
  seg.fill = 255;
  EXPECT_EQ(f[1], seg);
  EXPECT_EQ(f[2], spec("m2", FieldKind::kMask, {"m.png"}));
  EXPECT_EQ(fields_text(f), "image=jpg, seg=seg.png;seg.npy:mask(fill=255), m2=m.png:mask");
  EXPECT_EQ(parsed(fields_text(f)), f);
  EXPECT_EQ(field_columns(f).members, 3u);  // a mask is a member of its own
  for (const char* bad : {"s=png:mask(256)", "s=png:mask(fill=256)", "s=png:mask(fill=-1)",
                          "s=png:mask(fil=2)", "s=png:mask(fill=)", "s=png:mask(fill=1e2)"}) {
    expect_refused(std::string("image=jpg, ") + bad, {"entry 2", "\"mask(fill=N)\"", "s=png:mask(fill=255)"});
  }
  expect_refused("image=jpg, s=png:mask()", {"entry 2", "nothing in ()", "\"mask(fill=N)\""});
  // uint16 ids: the fill a uint16's; the arguments' commas are theirs, not entries'.
  const std::vector<FieldSpec> wide = parsed("image=jpg, s=png:mask(dtype=uint16, fill=65535), c=txt");
  ASSERT_EQ(wide.size(), 3u);
  EXPECT_EQ(wide[1].element, ElementType::kUint16);
  EXPECT_EQ(wide[1].fill, 65535);
  EXPECT_EQ(fields_text(wide), "image=jpg, s=png:mask(fill=65535, dtype=uint16), c=txt");
  EXPECT_EQ(parsed(fields_text(wide)), wide);
  EXPECT_EQ(parsed("image=jpg, s=png:mask(dtype=uint8)")[1], spec("s", FieldKind::kMask, {"png"}));
  for (const char* bad : {"s=png:mask(fill=300)", "s=png:mask(dtype=int16)", "s=png:mask(fill=1, fill=2)",
                          "s=png:mask(dtype=uint16, fill=65536)", "s=png:mask(fill=1,)"}) {
    expect_refused(std::string("image=jpg, ") + bad, {"entry 2", "\"mask(dtype=uint16)\""});
  }
  expect_refused("image=jpg, s=png:mask(fill=255", {"entry 2", "\"mask(fill=N)\""});
  expect_refused("seg=seg.png:mask, caption=txt", {"\"seg\" is a mask", "no image field", "image=jpg;png"});
  expect_refused("image=jpg, t=txt:text(fill=3)",
                 {"only label, number, boxes and per_box fields read a key"});
}

TEST(SampleSchemaTest, BoxesAndTheirPerBoxValuesShareTheirMember) {
  const std::vector<FieldSpec> f = parsed(
      "image=jpg, boxes=json:boxes( key = bbox , format=xywh, normalized=true), "
      "labels=json:per_box(key=cat), "
      "area=json:per_box(dtype=float32, key=area), crowd=crowd.npy:per_box");
  ASSERT_EQ(f.size(), 5u);
  EXPECT_EQ(f[1].kind, FieldKind::kBoxes);
  EXPECT_EQ(f[1].json_key, "bbox");
  EXPECT_EQ(f[1].box_format, BoxFormat::kXywh);
  EXPECT_TRUE(f[1].normalized);
  EXPECT_EQ(f[2].element, ElementType::kInt64);
  EXPECT_EQ(f[2].member_of, "boxes") << "one .json read for the boxes and their values";
  EXPECT_EQ(f[3].element, ElementType::kFloat32);
  EXPECT_EQ(f[3].member_of, "boxes");
  EXPECT_EQ(f[4].member_of, "") << "a .npy of its own";
  EXPECT_EQ(
      fields_text(f),
      "image=jpg, boxes=json:boxes(key=bbox, format=xywh, normalized=true), labels=json:per_box(key=cat), "
      "area=json:per_box(key=area, dtype=float32), crowd=crowd.npy:per_box");
  EXPECT_EQ(parsed(fields_text(f)), f);
  const std::vector<FieldSpec> npy = parsed("image=jpg, b=b.npy:boxes(format=cxcywh)");
  EXPECT_EQ(npy[1].box_format, BoxFormat::kCxcywh);
  EXPECT_EQ(fields_text(npy), "image=jpg, b=b.npy:boxes(format=cxcywh)");
  const FieldColumns c = field_columns(f);
  EXPECT_EQ(c.of[1].column, c.of[2].column);
  EXPECT_EQ(c.of[1].column, c.of[3].column);
  EXPECT_NE(c.of[1].column, c.of[4].column);
  // Refusals: each says what to write.
  expect_refused("image=jpg, b=json:boxes", {"entry 2", "needs the key", "b=json:boxes(key=KEY)"});
  expect_refused("image=jpg, b=npy:boxes(key=k)", {"entry 2", "not json"});
  expect_refused("image=jpg, b=txt:boxes", {"entry 2", "not all .json or all .npy", "boxes(key=KEY"});
  expect_refused("image=jpg, b=json;npy:boxes(key=k)", {"entry 2", "not all .json or all .npy"});
  for (const char* bad : {"b=json:boxes(key=k, format=xxyy)", "b=json:boxes(key=k, normalized=yes)",
                          "b=json:boxes(key=k, fill=3)", "b=json:boxes(k)", "b=json:boxes(key=k, key=j)",
                          "b=json:boxes(key=)"}) {
    expect_refused(std::string("image=jpg, ") + bad, {"entry 2", "xyxy, xywh or cxcywh"});
  }
  expect_refused("image=jpg, b=json:boxes(key=k), l=json:per_box(key=l, dtype=uint8)",
                 {"entry 3", "dtype=float32"});
  expect_refused("image=jpg, b=json:boxes(key=" + std::string(kMaxBoxKeyBytes + 1, 'k') + ")",
                 {"at most 63"});
  expect_refused("image=jpg, l=json:per_box(key=l)", {"\"l\" is per_box", "no boxes field"});
  expect_refused("b=json:boxes(key=k)", {"\"b\" is boxes", "no image field"});
  expect_refused("image=jpg, a=json:boxes(key=k), b=npy:boxes", {"\"a\" and \"b\" are both boxes"});
  expect_refused("image=jpg, b=json:boxes(key=k), m=json", {"both take .json members"});
  expect_refused("image=jpg, a=a.npy:boxes, l=a.npy:label", {"both take .a.npy members"});
  expect_refused("image=jpg, l=json:per_box(key=l), b=json:boxes(key=b)",
                 {"\"l\" (entry 2) is per_box", "list the boxes field before its per_box fields"});
  expect_refused("image=jpg, b=b.npy:boxes, l=b.npy:per_box", {"a .npy holds one array", "l=l.npy:per_box"});
  expect_refused(std::string("image=jpg, b=json:boxes(key=a\0b)", 32), {"entry 2", "boxes(key=KEY"});
  // Two per_box fields of one .json share it with their boxes, in any order after them.
  const std::vector<FieldSpec> two =
      parsed("image=jpg, b=json:boxes(key=b), l=json:per_box(key=l), a=json:per_box(key=a)");
  EXPECT_EQ(two[3].member_of, "b");
}

TEST(SampleSchemaTest, ImageFieldsWithTheSameSourcesAreViews) {
  const std::vector<FieldSpec> f = parsed("view1=jpg;png, view2=jpg;png, caption=txt, view3=png;JPG");
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0].member_of, "");
  EXPECT_EQ(f[1].member_of, "view1");
  EXPECT_EQ(f[2].member_of, "");
  EXPECT_EQ(f[3].member_of, "view1") << "the same sources in another order and case";
  EXPECT_EQ(parsed(fields_text(f)), f);

  const FieldColumns c = field_columns(f);
  using S = FieldColumn::Store;
  EXPECT_EQ(c.of,
            (std::vector<FieldColumn>{{S::kMember, 0}, {S::kMember, 0}, {S::kMember, 1}, {S::kMember, 0}}));
  EXPECT_EQ(c.members, 2u);
  EXPECT_EQ(c.extra_members(), 1u);
}

TEST(SampleSchemaTest, TwoFieldsTakingOneMemberAreRefusedNamingBoth) {
  expect_refused("image=jpg;png, thumb=png", {"fields \"image\" and \"thumb\" both take .png members",
                                              "entry 1 and entry 2", "\"thumb=jpg;png\""});
  expect_refused("meta=json, raw=json", {"\"meta\" and \"raw\" both take .json members"});
  expect_refused("image=jpg, raw=jpg:bytes", {"\"image\" and \"raw\" both take .jpg"});
  expect_refused("a=txt, b=TXT:bytes", {"\"a\" and \"b\" both take .txt"});
  // A keyed field reads a value of the member while indexing: it takes nothing from it.
  const std::vector<FieldSpec> f =
      parsed("meta=json, label=json:label(class), score=json:number(score), other=json:label(class)");
  EXPECT_EQ(f.size(), 4u);
  // Another extension with a common suffix is another member.
  EXPECT_EQ(parsed("mask=seg.png, image=png").size(), 2u);
}

TEST(SampleSchemaTest, NamesAreIdentifiersEachOnce) {
  expect_refused("1st=jpg", {"entry 1", "\"1st\"", "letters, digits and '_'"});
  expect_refused("a-b=jpg", {"\"a-b\""});
  expect_refused("image=jpg, cap tion=txt", {"entry 2", "\"cap tion\""});
  expect_refused("=jpg", {"entry 1", "no name"});
  expect_refused("__key__=txt", {"entry 1", "\"__key__\"", "samples' keys"});
  // "__present__" would be overwritten by the flags of missing="empty" in Python's dicts.
  expect_refused("image=jpg,__present__=txt", {"entry 2", "\"__present__\"", "beginning with \"__\""});
  expect_refused("__url__=txt", {"entry 1", "forkfeed's"});
  expect_refused("image=jpg, image=png", {"entry 2", "names \"image\" again", "entry 1"});
  EXPECT_EQ(parsed("_x9=jpg, X_=txt")[1].name, "X_");
  EXPECT_EQ(parsed("_keys_=txt")[0].name, "_keys_");
}

TEST(SampleSchemaTest, EmptyEntriesSourcesAndKindsAreRefused) {
  expect_refused("", {"fields is empty", "image=jpg;png"});
  expect_refused("  \t ", {"fields is empty"});
  expect_refused("image=jpg,", {"entry 2 is empty"});
  expect_refused("image=jpg, , c=txt", {"entry 2 is empty"});
  expect_refused(",image=jpg", {"entry 1 is empty"});
  expect_refused("image", {"entry 1", "no '='", "NAME=SOURCES"});
  expect_refused("image=", {"entry 1", "no source"});
  expect_refused("image= : image", {"no source"});
  expect_refused("image=jpg;;png", {"empty source"});
  expect_refused("image=jpg;", {"empty source"});
  expect_refused("image=.jpg", {"\".jpg\"", "without their leading '.'", "\"jpg\""});
  expect_refused("image=...", {"\"...\""});
  expect_refused("image=seg..png", {"empty part between dots"});
  expect_refused("image=jpg.", {"empty part between dots"});
  expect_refused("image=a/b", {"holds '/'"});
  expect_refused("image=j pg", {"holds ' '"});
  expect_refused("image=jpg;JPG", {"\"jpg\" twice"});
  expect_refused("image=jpg:",
                 {"no kind", "image, label, text, bytes, array, number, mask, boxes or per_box"});
  expect_refused("caption=txt:str", {"entry 1", "the kind \"str\"",
                                     "image, label, text, bytes, array, number, mask, boxes or per_box"});
  expect_refused("caption=txt:Text", {"the kind \"Text\""});
}

TEST(SampleSchemaTest, AtMostSixteenFields) {
  std::string text;
  for (int i = 0; i < 16; ++i) text += (i ? ", f" : "f") + std::to_string(i) + "=e" + std::to_string(i);
  EXPECT_EQ(parsed(text).size(), 16u);
  expect_refused(text + ", f16=e16", {"more than 16 entries", "at most 16 fields"});
}

TEST(SampleSchemaTest, WhitespaceAroundTokensIsIgnored) {
  EXPECT_EQ(parsed(" \timage = jpg ; png\n,caption=txt  :  text "), parsed("image=jpg;png,caption=txt:text"));
}

TEST(SampleSchemaTest, ColumnsOfEachKind) {
  using S = FieldColumn::Store;
  const std::vector<FieldSpec> f = parsed(
      "caption=txt, image=jpg, label=cls, score=json:number(s), view=jpg, l2=json:label(c), emb=npy, "
      "n2=val:number");
  const FieldColumns c = field_columns(f);
  EXPECT_EQ(c.of, (std::vector<FieldColumn>{{S::kMember, 0},
                                            {S::kMember, 1},
                                            {S::kLabel, 0},
                                            {S::kNumber, 0},
                                            {S::kMember, 1},
                                            {S::kLabel, 1},
                                            {S::kMember, 2},
                                            {S::kNumber, 1}}));
  EXPECT_EQ(c.members, 3u);
  EXPECT_EQ(c.labels, 2u);
  EXPECT_EQ(c.numbers, 2u);
  EXPECT_EQ(c.extra_members(), 2u);
  EXPECT_EQ(c.extra_labels(), 1u);
}

TEST(SampleSchemaTest, TheOptionsSchema) {
  Result<SampleSchema> none = sample_schema("", MissingField::kSkip);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  EXPECT_EQ(none->text, "");

  Result<SampleSchema> s = sample_schema("image = JPG, label=cls", MissingField::kEmpty);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->text, "image=jpg, label=cls");
  EXPECT_EQ(s->missing, MissingField::kEmpty);
  EXPECT_EQ(s->columns, field_columns(s->fields));

  Result<SampleSchema> labels_only = sample_schema("label=cls, s=json:number(s)", MissingField::kError);
  ASSERT_FALSE(labels_only.ok());
  EXPECT_NE(labels_only.status().message().find("no field read from a member"), std::string::npos);
  EXPECT_FALSE(sample_schema(",", MissingField::kError).ok());
}

TEST(SampleSchemaTest, KindAndMissingNames) {
  for (FieldKind k : {FieldKind::kImage, FieldKind::kLabel, FieldKind::kText, FieldKind::kBytes,
                      FieldKind::kArray, FieldKind::kNumber, FieldKind::kMask}) {
    EXPECT_EQ(parse_field_kind(to_string(k)), k) << to_string(k);
  }
  EXPECT_EQ(to_string(FieldKind::kArray), "array");
  EXPECT_EQ(parse_field_kind("IMAGE"), std::nullopt);
  EXPECT_EQ(parse_missing_field("skip"), MissingField::kSkip);
  EXPECT_EQ(to_string(MissingField::kEmpty), "empty");
  EXPECT_EQ(to_string(MissingField::kError), "error");
  EXPECT_EQ(parse_missing_field("fail"), std::nullopt);
}

}  // namespace
}  // namespace forkfeed
