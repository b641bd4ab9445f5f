// PassPosition: the pass rules of Loader and Client, as a value (no loader needed).
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "loader/pass_position.h"
#include "tests/testing/fake_identity.h"

namespace forkfeed {
namespace {

using Seek = PassPosition::Seek;
constexpr std::uint64_t kBatches = 4;

std::optional<Seek> none() { return std::nullopt; }

TEST(PassPositionTest, APassThatDeliveredNothingIsLeftAloneByResetAndItsOwnEpoch) {
  const PassPosition fresh(kBatches, {3, 0});
  EXPECT_EQ(fresh.on_reset(), none());
  EXPECT_EQ(fresh.on_set_epoch(3), none());
  EXPECT_EQ(fresh.on_set_epoch(4), (Seek{4, 0}));
  EXPECT_EQ(fresh.on_next(), none());
  EXPECT_EQ(fresh.resume_point(), (Seek{3, 0}));
}

TEST(PassPositionTest, DeliveryMovesThePositionAndResetStartsTheEpochAgain) {
  PassPosition pass(kBatches, {3, 0});
  pass.delivered(3, 0);
  pass.delivered(3, 1);
  EXPECT_EQ(pass.position(), 2u);
  EXPECT_EQ(pass.resume_point(), (Seek{3, 2}));
  EXPECT_EQ(pass.on_reset(), (Seek{3, 0}));
  EXPECT_EQ(pass.on_set_epoch(3), (Seek{3, 0}));
  pass.start({3, 0});
  EXPECT_EQ(pass.on_reset(), none());
}

TEST(PassPositionTest, ACompletePassGivesWayToTheNextEpoch) {
  PassPosition pass(kBatches, {3, 2});
  pass.delivered(3, 2);
  pass.delivered(3, 3);
  EXPECT_TRUE(pass.complete());
  EXPECT_EQ(pass.resume_point(), (Seek{4, 0})) << "state() records the next epoch's start";
  EXPECT_EQ(pass.on_reset(), (Seek{4, 0}));
  EXPECT_EQ(pass.on_next(), none()) << "next() still reports the end first";
  pass.ended(3);
  EXPECT_EQ(pass.on_next(), (Seek{4, 0}));
  EXPECT_EQ(pass.on_set_epoch(3), (Seek{3, 0}));
}

// The bug this type was made for: a resumed position was thrown away by the reset that
// every new range-for (and Python's `for ... in loader`) does, and by set_epoch of the
// epoch it resumed in.
TEST(PassPositionTest, AResumedPositionSurvivesResetAndSetEpochUntilABatchIsDelivered) {
  PassPosition opened(kBatches, {5, 2});  // opened from a state
  EXPECT_EQ(opened.on_reset(), none());
  EXPECT_EQ(opened.on_set_epoch(5), none());

  PassPosition live(kBatches, {0, 0});
  live.delivered(0, 0);
  live.start({5, 2});  // load_state
  EXPECT_EQ(live.on_reset(), none());
  EXPECT_EQ(live.on_set_epoch(5), none());
  live.delivered(5, 2);
  EXPECT_EQ(live.on_reset(), (Seek{5, 0}));
}

TEST(PassPositionTest, StatesAreCheckedAgainstTheEpochLength) {
  const Checkpoint mid{7, 3, {}}, end{7, kBatches, {}}, past{7, kBatches + 1, {}};
  EXPECT_EQ(PassPosition::start_of(mid, kBatches).value(), (Seek{7, 3}));
  EXPECT_EQ(PassPosition::start_of(end, kBatches).value(), (Seek{8, 0}));
  const auto refused = PassPosition::start_of(past, kBatches);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(), "the state's position 5 is past the end of the epoch (4 batches)");

  PassPosition pass(kBatches, {7, 3});
  EXPECT_TRUE(pass.at({7, 3}));
  pass.delivered(7, 3);
  EXPECT_FALSE(pass.at({7, 3}));
  pass.ended(7);
  EXPECT_FALSE(pass.at({7, kBatches})) << "a pass that reported its end is nowhere to load into";
}

OrderKey a_key() {
  OrderKey key;
  key.dataset = testing::fake_identity(40, 'a');
  key.seed = 3;
  key.batch_size = 10;
  return key;
}

TEST(PassPositionTest, StateRecordsTheResumePointAndParsesBackToIt) {
  PassPosition pass(kBatches, {2, 0});
  pass.delivered(2, 0);
  pass.delivered(2, 1);
  EXPECT_EQ(pass.parse_state(pass.state(a_key()), a_key()).value(), (Seek{2, 2}));
  pass.delivered(2, 2);
  pass.delivered(2, 3);
  pass.ended(2);
  EXPECT_EQ(pass.parse_state(pass.state(a_key()), a_key()).value(), (Seek{3, 0}))
      << "a complete pass is recorded as the next epoch's start";
}

TEST(PassPositionTest, AStateOfAnotherOrderIsRefusedNamingTheField) {
  const PassPosition pass(kBatches, {0, 0});
  OrderKey other = a_key();
  other.seed = 4;
  const auto parsed = pass.parse_state(pass.state(a_key()), other);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("seed"), std::string::npos) << parsed.status().message();
}

TEST(PassPositionTest, LoadingWhereThePassStandsKeepsItAndCountsAsAResume) {
  PassPosition pass(kBatches, {1, 0});
  pass.delivered(1, 0);
  EXPECT_EQ(pass.load({1, 1}), none()) << "already there: what is prefetched is kept";
  EXPECT_EQ(pass.on_reset(), none()) << "the loaded position stays until a batch is delivered";
  EXPECT_EQ(pass.load({1, 2}), (Seek{1, 2})) << "elsewhere: the owner starts the pass there";
  EXPECT_EQ(pass.load({2, 1}), (Seek{2, 1}));
  pass.ended(1);
  EXPECT_EQ(pass.load({1, kBatches}), (Seek{1, kBatches})) << "a pass that is over is never 'already there'";
}

}  // namespace
}  // namespace forkfeed
