// PassDemand: the wanted list of a pass on demand and its two cursors, as a value (no
// loader needed).
#include "loader/pass_demand.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace forkfeed {
namespace {

constexpr std::uint64_t kBatches = 6;

std::optional<std::uint64_t> none() { return std::nullopt; }

TEST(PassDemandTest, NothingWantedIsNothingToIssueOrDeliver) {
  const PassDemand demand(kBatches);
  EXPECT_EQ(demand.to_issue(), none());
  EXPECT_EQ(demand.to_deliver(), none());
  EXPECT_EQ(demand.waiting(), 0u);
}

TEST(PassDemandTest, BatchesAreIssuedAndDeliveredInTheOrderWanted) {
  PassDemand demand(kBatches);
  for (std::uint64_t b : {4u, 0u, 2u}) ASSERT_TRUE(demand.want(b).ok());
  EXPECT_EQ(demand.waiting(), 3u);
  for (std::uint64_t b : {4u, 0u, 2u}) {
    EXPECT_EQ(demand.to_issue(), b);
    demand.issued();
  }
  EXPECT_EQ(demand.to_issue(), none()) << "every wanted batch was issued";
  for (std::uint64_t b : {4u, 0u, 2u}) {
    EXPECT_EQ(demand.to_deliver(), b);
    demand.delivered();
  }
  EXPECT_EQ(demand.to_deliver(), none());
  EXPECT_EQ(demand.waiting(), 0u);
}

// The two cursors move apart: the workers run ahead of the caller by the free slots,
// and a batch wanted later joins the same list behind what is in hand.
TEST(PassDemandTest, TheIssueCursorRunsAheadOfTheDeliverCursorOnOneList) {
  PassDemand demand(kBatches);
  for (std::uint64_t b : {1u, 3u, 5u}) ASSERT_TRUE(demand.want(b).ok());
  demand.issued();  // 1
  demand.issued();  // 3
  EXPECT_EQ(demand.to_deliver(), 1u);
  EXPECT_EQ(demand.to_issue(), 5u);
  demand.delivered();  // 1
  EXPECT_EQ(demand.to_deliver(), 3u);
  EXPECT_EQ(demand.to_issue(), 5u) << "a delivery does not move what is issued next";
  ASSERT_TRUE(demand.want(0).ok());
  demand.issued();  // 5
  EXPECT_EQ(demand.to_issue(), 0u);
  EXPECT_EQ(demand.waiting(), 3u);  // 3, 5, 0
}

// The caller waits for the batch at the deliver cursor even before it is issued (no
// slot was free yet); the issue cursor catches up.
TEST(PassDemandTest, TheNextToDeliverMayNotBeIssuedYet) {
  PassDemand demand(kBatches);
  ASSERT_TRUE(demand.want(2).ok());
  EXPECT_EQ(demand.to_deliver(), 2u);
  EXPECT_EQ(demand.to_issue(), 2u);
  demand.issued();
  demand.delivered();
  EXPECT_EQ(demand.to_issue(), none());
  EXPECT_EQ(demand.to_deliver(), none());
}

TEST(PassDemandTest, ABatchPastTheEpochIsRefusedAndNotWanted) {
  PassDemand demand(kBatches);
  const Status s = demand.want(kBatches);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("past the end of the epoch (6 batches)"), std::string::npos) << s.message();
  EXPECT_EQ(demand.waiting(), 0u);
  EXPECT_EQ(demand.to_issue(), none());
}

// A fan-in client asks anew for a batch after a daemon's failover: each want is one
// issue and one delivery.
TEST(PassDemandTest, ABatchWantedTwiceIsIssuedAndDeliveredTwice) {
  PassDemand demand(kBatches);
  ASSERT_TRUE(demand.want(3).ok());
  ASSERT_TRUE(demand.want(3).ok());
  demand.issued();
  EXPECT_EQ(demand.to_issue(), 3u);
  demand.delivered();
  EXPECT_EQ(demand.to_deliver(), 3u);
  EXPECT_EQ(demand.to_issue(), 3u) << "the second want is still to issue";
  demand.issued();
  demand.delivered();
  EXPECT_EQ(demand.waiting(), 0u);
}

}  // namespace
}  // namespace forkfeed
