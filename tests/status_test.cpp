// Status's code table: the one place codes become words and numbers from another
// process become errors.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "forkfeed/status.h"

namespace forkfeed {
namespace {

constexpr Status::Code kLastCode = Status::Code::kFailedPrecondition;

TEST(StatusTest, EveryCodeHasItsOwnNameAndComesBackFromIt) {
  std::set<std::string_view> names;
  for (int n = 0; n <= static_cast<int>(kLastCode); ++n) {
    const auto code = static_cast<Status::Code>(n);
    const std::string_view name = Status::CodeName(code);
    EXPECT_TRUE(names.insert(name).second) << "two codes are called " << name;
    EXPECT_EQ(Status::CodeNamed(name), code) << name;
  }
  EXPECT_EQ(Status::CodeName(Status::Code::kWorkerDied), "worker_died");
  EXPECT_EQ(Status::CodeNamed("no_such_code"), Status::Code::kInternal);
}

TEST(StatusTest, CodesFromElsewhereKeepTheirMeaningAndNeverBecomeSuccess) {
  for (int n = 1; n <= static_cast<int>(kLastCode); ++n) {
    const Status s = Status::FromCode(static_cast<Status::Code>(n), "what happened");
    EXPECT_EQ(s.code(), static_cast<Status::Code>(n));
    EXPECT_EQ(s.message(), "what happened");
  }
  EXPECT_EQ(Status::FromCode(Status::Code::kOk, "m").code(), Status::Code::kInternal);
  EXPECT_EQ(Status::FromCode(static_cast<Status::Code>(1000), "m").code(), Status::Code::kInternal);
  EXPECT_EQ(Status::CodeName(static_cast<Status::Code>(1000)), "internal");
}

}  // namespace
}  // namespace forkfeed
