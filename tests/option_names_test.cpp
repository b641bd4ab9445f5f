// The enum name tables of loader/option_names.h: each name parses back to its value,
// and parse_*/to_string (the public API) agree with them.
#include "loader/option_names.h"

#include <gtest/gtest.h>

#include <set>

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
  expect_round_trip<TransformKind>(&parse_transform);
  expect_round_trip<DType>(&parse_dtype);
  expect_round_trip<OnError>(&parse_on_error);
  expect_round_trip<StartMethod>(&parse_start_method);
  expect_round_trip<ForkHazardPolicy>(&parse_fork_hazard);
}

TEST(OptionNamesTest, EveryDefaultIsNamed) {
  const LoaderOptions o;
  EXPECT_FALSE(to_string(o.transform).empty());
  EXPECT_FALSE(to_string(o.dtype).empty());
  EXPECT_FALSE(to_string(o.on_error).empty());
  EXPECT_FALSE(to_string(o.start_method).empty());
  EXPECT_FALSE(to_string(o.fork_hazard).empty());
}

TEST(OptionNamesTest, ListsTheNamesInTableOrder) {
  EXPECT_EQ(enum_names<StartMethod>(), (std::vector<std::string>{"fork", "spawn", "auto"}));
  EXPECT_EQ(enum_names_or<StartMethod>(), "fork, spawn or auto");
  EXPECT_EQ(enum_names_or<DType>(), "uint8 or float32");
}

}  // namespace
}  // namespace forkfeed
