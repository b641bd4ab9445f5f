// The enum name tables of base/option_names.h: each name parses back to its value,
// and parse_*/to_string (the public API) agree with them.
#include "base/option_names.h"

#include <gtest/gtest.h>

#include <set>
#include <string_view>
#include <utility>
#include <vector>

namespace forkfeed {
namespace {

template <typename E>
void expect_round_trip(std::optional<E> (*parse)(std::string_view)) {
  std::set<std::string_view> seen;
  for (const EnumName<E>& e : kEnumNames<E>) {
    EXPECT_TRUE(seen.insert(e.name).second) << "named twice: " << e.name;
    EXPECT_EQ(parse_enum<E>(e.name), e.value) << e.name;
    EXPECT_EQ(parse(e.name), e.value) << e.name;
    EXPECT_EQ(to_string(e.value), e.name);
  }
  EXPECT_EQ(parse(""), std::nullopt);
  EXPECT_EQ(parse("no such name"), std::nullopt);
}

TEST(OptionNamesTest, EveryNameParsesBackToItsValue) {
  expect_round_trip<DType>(&parse_dtype);
  expect_round_trip<OnError>(&parse_on_error);
  expect_round_trip<StartMethod>(&parse_start_method);
  expect_round_trip<ForkHazardPolicy>(&parse_fork_hazard);
  expect_round_trip<ShardLabel>(&parse_shard_label);
  expect_round_trip<Layout>(&parse_layout);
  expect_round_trip<MissingField>(&parse_missing_field);
  expect_round_trip<FieldKind>(&parse_field_kind);
}

// Every value of every enum, against its name spelled out here: a table that loses,
// renames or swaps a name fails, as does a value that a new enumerator leaves unnamed.
template <typename E>
void expect_names(std::vector<std::pair<E, std::string_view>> spelled) {
  ASSERT_EQ(kEnumNames<E>.size(), spelled.size());
  for (const auto& [value, name] : spelled) {
    EXPECT_EQ(to_string(value), name);
    EXPECT_EQ(parse_enum<E>(name), value) << name;
  }
}

TEST(OptionNamesTest, EveryValueOfEveryEnumHasItsName) {
  expect_names<DType>({{DType::kUint8, "uint8"}, {DType::kFloat32, "float32"}});
  expect_names<OnError>({{OnError::kFail, "fail"}, {OnError::kSkip, "skip"}});
  expect_names<StartMethod>(
      {{StartMethod::kFork, "fork"}, {StartMethod::kSpawn, "spawn"}, {StartMethod::kAuto, "auto"}});
  expect_names<ForkHazardPolicy>({{ForkHazardPolicy::kWarn, "warn"},
                                  {ForkHazardPolicy::kError, "error"},
                                  {ForkHazardPolicy::kIgnore, "ignore"}});
  expect_names<ShardLabel>(
      {{ShardLabel::kCls, "cls"}, {ShardLabel::kJson, "json"}, {ShardLabel::kClassFolder, "class_folder"}});
  expect_names<Layout>({{Layout::kAuto, "auto"}, {Layout::kNhwc, "nhwc"}, {Layout::kNchw, "nchw"}});
  expect_names<MissingField>(
      {{MissingField::kError, "error"}, {MissingField::kSkip, "skip"}, {MissingField::kEmpty, "empty"}});
  expect_names<FieldKind>({{FieldKind::kImage, "image"},
                           {FieldKind::kLabel, "label"},
                           {FieldKind::kText, "text"},
                           {FieldKind::kBytes, "bytes"},
                           {FieldKind::kArray, "array"},
                           {FieldKind::kNumber, "number"},
                           {FieldKind::kMask, "mask"},
                           {FieldKind::kBoxes, "boxes"},
                           {FieldKind::kPerBox, "per_box"}});
  expect_names<BoxFormat>(
      {{BoxFormat::kXyxy, "xyxy"}, {BoxFormat::kXywh, "xywh"}, {BoxFormat::kCxcywh, "cxcywh"}});
  // One past the last enumerator has no name.
  EXPECT_EQ(to_string(static_cast<Layout>(3)), "");
}

TEST(OptionNamesTest, EveryDefaultIsNamed) {
  const LoaderOptions o;
  EXPECT_EQ(o.transform, "train");  // text, not an enum: the shorthand for the training pipeline
  EXPECT_FALSE(to_string(o.dtype).empty());
  EXPECT_FALSE(to_string(o.on_error).empty());
  EXPECT_FALSE(to_string(o.start_method).empty());
  EXPECT_FALSE(to_string(o.fork_hazard).empty());
  EXPECT_FALSE(to_string(o.missing).empty());
}

TEST(OptionNamesTest, ListsTheNamesInTableOrder) {
  EXPECT_EQ(enum_names<StartMethod>(), (std::vector<std::string>{"fork", "spawn", "auto"}));
  EXPECT_EQ(enum_names_or<StartMethod>(), "fork, spawn or auto");
  EXPECT_EQ(enum_names_or<DType>(), "uint8 or float32");
}

}  // namespace
}  // namespace forkfeed
