// plan/option_fields.h: every LoaderOptions field named once, and the protocol sends
// exactly the fields a client may set. plan/option_ranges.h: every integer option has
// one range, and validate() and forkfeedd's requests say it in the same words.
#include "plan/option_fields.h"

#include <gtest/gtest.h>

#include <limits>
#include <set>
#include <string>

#include "plan/option_ranges.h"
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
  EXPECT_EQ(names.size(), 34u) << "every_loader_option_is_named() counts 34 fields";
}

TEST(OptionFieldsTest, TheOpenStreamRequestCarriesTheStreamFieldsAndNoLocalOne) {
  const nlohmann::json request = to_json(StreamRequest{});
  const LoaderOptions o;
  for_each_option(o, [&](const char* name, const auto&, OptionScope scope) {
    EXPECT_EQ(request.contains(name), scope == OptionScope::kStream) << name;
  });
}

// Within its type's range: the faces can hold every value of it.
TEST(OptionRangesTest, EveryIntegerOptionsRangeLiesWithinItsType) {
  LoaderOptions o;
  int narrower = 0;
  for_each_option(o, [&](const char* name, auto& field, OptionScope) {
    using T = std::remove_cvref_t<decltype(field)>;
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const OptionRange r = option_range<T>(name);
      EXPECT_GE(r.min, static_cast<std::int64_t>(std::numeric_limits<T>::min())) << name;
      EXPECT_LE(r.max, static_cast<std::uint64_t>(std::numeric_limits<T>::max())) << name;
      if constexpr (std::is_signed_v<T>) {
        EXPECT_TRUE(r.holds(static_cast<std::int64_t>(field))) << name << "'s default is out of its range";
      } else {
        EXPECT_TRUE(r.holds(static_cast<std::uint64_t>(field))) << name << "'s default is out of its range";
      }
      narrower += narrower_option_range(name).has_value() ? 1 : 0;
    } else {
      EXPECT_FALSE(narrower_option_range(name).has_value()) << name << " is no integer option";
    }
  });
  EXPECT_EQ(narrower, 11) << "the integer options with a range of their own (plan/option_ranges.cpp)";
}

// The reported case: weight -1 and weight 0 named two ranges (0 to 4294967295, and 1 to
// 1000). Now a value below or above an option's range, whatever its type holds, gets
// one message from validate() and from forkfeedd's open_stream request alike.
TEST(OptionRangesTest, AValueOutsideTheRangeGetsOneMessageFromEveryFace) {
  struct Case {
    const char* name;
    std::int64_t value;
    std::string range;
  };
  const Case cases[] = {
      {"weight", 0, "an integer from 1 to 1000 (a share of a shared pool's worker time)"},
      {"weight", 1001, "an integer from 1 to 1000 (a share of a shared pool's worker time)"},
      {"weight", -1, "an integer from 1 to 1000 (a share of a shared pool's worker time)"},
      {"batch_size", 0, "an integer from 1 to 65536 (samples per batch)"},
      {"batch_size", 65537, "an integer from 1 to 65536 (samples per batch)"},
      {"batch_size", -1, "an integer from 1 to 65536 (samples per batch)"},
      {"prefetch", 0, "an integer from 1 to 4294967295 (batches in flight per worker)"},
      {"prefetch", -1, "an integer from 1 to 4294967295 (batches in flight per worker)"},
      {"workers", 0, "an integer from 1 to 4294967295 (decode workers)"},
      {"workers", -1, "an integer from 1 to 4294967295 (decode workers)"},
      {"world_size", 0, "an integer from 1 to 4294967295 (ranks sharing the dataset)"},
      {"size", 7, "0 (the transform's) or an integer from 8 to 4096 (pixels)"},
      {"size", -1, "0 (the transform's) or an integer from 8 to 4096 (pixels)"},
      {"max_pixels", 0, "an integer from 1 to 18446744073709551615"},
      {"pin_memory_device", -2, "an integer from -1 to 2147483647 (a CUDA device ordinal, or -1 for off)"},
  };
  for (const Case& c : cases) {
    const std::string expected =
        std::string(c.name) + " must be " + c.range + ", got " + std::to_string(c.value);
    bool in_type = false, stream = false;
    LoaderOptions o;
    o.image_folder = "/data";
    for_each_option(o, [&](const char* name, auto& field, OptionScope scope) {
      using T = std::remove_cvref_t<decltype(field)>;
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        if (std::string_view(name) != c.name) return;
        stream = scope == OptionScope::kStream;
        in_type = c.value >= static_cast<std::int64_t>(std::numeric_limits<T>::min());
        if (in_type) field = static_cast<T>(c.value);
      }
    });
    if (in_type) {
      EXPECT_EQ(validate(o).message(), expected);
    }
    if (stream) {
      const auto request = parse_stream_request(nlohmann::json{{c.name, c.value}});
      ASSERT_FALSE(request.ok()) << c.name << " " << c.value;
      EXPECT_EQ(request.status().message(), "bad open_stream request: " + expected);
    }
  }
  EXPECT_EQ(
      parse_stream_request(nlohmann::json{{"size", "big"}}).status().message(),
      "bad open_stream request: size must be 0 (the transform's) or an integer from 8 to 4096 (pixels), got "
      "\"big\"");
  EXPECT_TRUE(parse_stream_request(nlohmann::json{{"size", 0}}).ok());
}

}  // namespace
}  // namespace forkfeed
