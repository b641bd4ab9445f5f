// loader/option_fields.h: every LoaderOptions field named once, and the protocol sends
// exactly the fields a client may set.
#include "loader/option_fields.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "protocol/stream_request.h"

namespace forkfeed {
namespace {

TEST(OptionFieldsTest, EveryFieldHasItsOwnNameAndTheNamesAreDistinct) {
  LoaderOptions o;
  std::set<std::string> names;
  std::set<const void*> fields;
  for_each_option(o, [&](const char* name, auto& field, OptionScope) {
    EXPECT_TRUE(names.insert(name).second) << name << " is named twice";
    EXPECT_TRUE(fields.insert(&field).second) << name << " names a field named before";
  });
  EXPECT_EQ(names.size(), 30u) << "every_loader_option_is_named() counts 30 fields";
}

TEST(OptionFieldsTest, TheOpenStreamRequestCarriesTheStreamFieldsAndNoLocalOne) {
  const nlohmann::json request = to_json(StreamRequest{});
  const LoaderOptions o;
  for_each_option(o, [&](const char* name, const auto&, OptionScope scope) {
    EXPECT_EQ(request.contains(name), scope == OptionScope::kStream) << name;
  });
}

}  // namespace
}  // namespace forkfeed
