// FairShare, the policy by which a pool's worker picks the loader it serves next, on its
// own with made-up task times: equal shares of worker time (not of tasks), weights, no
// credit banked while idle, and a newcomer level with the others.
#include "workers/fair_share.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace forkfeed {
namespace {

// Serves `picks` tasks; `cost` gives a loader's task time, `has_work` who has a task.
std::map<std::uint64_t, int> serve(FairShare& share, int picks, const std::map<std::uint64_t, std::uint64_t>& cost,
                                   const std::set<std::uint64_t>& has_work) {
  std::map<std::uint64_t, int> served;
  for (int i = 0; i < picks; ++i) {
    const auto next = share.next([&](std::uint64_t id) { return has_work.contains(id); });
    if (!next) break;
    ++served[*next];
    share.charge(*next, cost.at(*next));
  }
  return served;
}

TEST(FairShare, LoadersWithWorkGetEqualWorkerTimeNotEqualTasks) {
  FairShare share;
  share.add(1, 1);
  share.add(2, 1);
  // Loader 2's tasks take twice as long: it gets half as many.
  const auto served = serve(share, 300, {{1, 1000}, {2, 2000}}, {1, 2});
  EXPECT_NEAR(served.at(1), 200, 1);
  EXPECT_NEAR(served.at(2), 100, 1);
}

TEST(FairShare, AWeightIsAMultipleOfTheShare) {
  FairShare share;
  share.add(1, 1);
  share.add(2, 3);
  const auto served = serve(share, 400, {{1, 1000}, {2, 1000}}, {1, 2});
  EXPECT_NEAR(served.at(1), 100, 1);
  EXPECT_NEAR(served.at(2), 300, 1);
}

TEST(FairShare, AShareLeftUnusedGoesToTheOthersAndBanksNoCredit) {
  FairShare share;
  share.add(1, 1);
  share.add(2, 1);
  EXPECT_EQ(serve(share, 50, {{1, 1000}, {2, 1000}}, {2}), (std::map<std::uint64_t, int>{{2, 50}}))
      << "the idle loader's share went unused";
  // Back with work, loader 1 does not get 50 tasks in a row: they take turns at once
  // (give or take the task in hand when it came back).
  const auto next = serve(share, 10, {{1, 1000}, {2, 1000}}, {1, 2});
  EXPECT_NEAR(next.at(1), 5, 1);
  EXPECT_NEAR(next.at(2), 5, 1);
}

TEST(FairShare, ALoaderThatAttachesLaterStartsLevelAndOneThatLeavesIsForgotten) {
  FairShare share;
  share.add(1, 1);
  (void)serve(share, 100, {{1, 1000}}, {1});
  share.add(2, 1);
  const auto served = serve(share, 10, {{1, 1000}, {2, 1000}}, {1, 2});
  EXPECT_EQ(served.at(1), 5) << "the newcomer took the worker for the time the first had had";
  EXPECT_EQ(served.at(2), 5);
  share.remove(1);
  EXPECT_EQ(serve(share, 3, {{1, 1000}, {2, 1000}}, {1, 2}), (std::map<std::uint64_t, int>{{2, 3}}));
  EXPECT_FALSE(share.next([](std::uint64_t) { return false; }).has_value()) << "nobody has work";
}

}  // namespace
}  // namespace forkfeed
