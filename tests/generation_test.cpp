// Invariants 2 and 3: generations. A reset (reset(), set_epoch() of the same epoch, a
// new range-for) at any position of a pass is followed by a pass that delivers its epoch
// exactly once, in the order and with the pixels of an undisturbed pass of that epoch;
// a reset before anything of the pass was consumed restarts nothing.
//
// Over 300 lines on purpose: resets at every position of a pass, each compared with the
// same undisturbed reference run; splitting it would copy the fixture.
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "forkfeed/loader.h"
#include "tests/testing/processes.h"
#include "tests/testing/small_options.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

using testing::Batches;
using testing::BatchRecord;

constexpr std::uint32_t kImages = 23;
constexpr std::uint32_t kBatch = 4;
constexpr std::uint64_t kBatches = 6;  // 5 of 4 and one of 3

enum class Reset { kReset, kSetSameEpoch, kNewRangeFor };

std::string name(Reset r) {
  switch (r) {
    case Reset::kReset: return "reset()";
    case Reset::kSetSameEpoch: return "set_epoch(same epoch)";
    case Reset::kNewRangeFor: return "a new range-for";
  }
  return "?";
}

struct Position {
  std::uint64_t epoch;
  std::uint64_t position;
};

Position position_of(const std::string& state) {
  const auto doc = nlohmann::json::parse(state);
  return {doc.at("epoch").get<std::uint64_t>(), doc.at("position").get<std::uint64_t>()};
}

class GenerationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    root_ = testing::make_image_folder(dir_->path(), kImages, 3, 7, 40, 100);
    references_ = new std::map<std::uint64_t, Batches>();
  }
  static void TearDownTestSuite() {
    delete references_;
    delete dir_;
  }

  static LoaderOptions options(std::uint32_t workers) {
    LoaderOptions o = testing::small_options(root_, workers, kBatch);
    o.seed = 11;
    return o;
  }

  static std::unique_ptr<Loader> open(const LoaderOptions& o) { return testing::open_loader(o); }

  // An undisturbed pass of `epoch`, read by a loader of its own with 2 workers.
  static const Batches& reference(std::uint64_t epoch) {
    auto it = references_->find(epoch);
    if (it != references_->end()) return it->second;
    auto loader = open(options(2));
    Batches run;
    if (loader) {
      EXPECT_TRUE(loader->set_epoch(epoch).ok());
      run = testing::read_pass(*loader);
    }
    EXPECT_EQ(run.size(), kBatches);
    EXPECT_EQ(testing::exactly_once(testing::indices_of(run), kImages), "") << "reference epoch " << epoch;
    return references_->emplace(epoch, std::move(run)).first->second;
  }

  static Batches prefix(const Batches& run, std::size_t n) { return Batches(run.begin(), run.begin() + n); }

  static testing::TempDir* dir_;
  static std::string root_;
  static std::map<std::uint64_t, Batches>* references_;
};
testing::TempDir* GenerationTest::dir_ = nullptr;
std::string GenerationTest::root_;
std::map<std::uint64_t, Batches>* GenerationTest::references_ = nullptr;

// For every k in 0..6: start a pass of epoch e, consume k batches, reset, read a whole
// pass. It is epoch e again, exactly once, batch for batch the undisturbed pass of e.
// (After all 6 batches of e were consumed, "the next pass" may sensibly be e or e + 1;
// either must be a whole undisturbed pass. ResetsAtTheEndOfAPass pins that case down.)
TEST_F(GenerationTest, ResetAtEveryPositionIsFollowedByAnExactlyOncePassInOrder) {
  testing::HangGuard guard(120, "GenerationTest.ResetAtEveryPosition");
  for (std::uint32_t workers : {1u, 3u}) {
    for (Reset how : {Reset::kReset, Reset::kSetSameEpoch, Reset::kNewRangeFor}) {
      auto loader = open(options(workers));
      ASSERT_TRUE(loader);
      for (std::uint64_t k = 0; k <= kBatches; ++k) {
        const std::uint64_t e = 10 + k;  // a fresh epoch for every k
        SCOPED_TRACE(std::to_string(workers) + " workers, " + name(how) + " after " + std::to_string(k) +
                     " batches of epoch " + std::to_string(e));
        EXPECT_TRUE(loader->set_epoch(e).ok());
        Batches consumed;
        if (how == Reset::kNewRangeFor) {
          if (k > 0) {
            for (Batch& b : *loader) {
              consumed.emplace_back(b);
              if (consumed.size() == k) break;  // with tasks in flight
            }
          }
        } else {
          consumed = testing::read_batches(*loader, k);
        }
        ASSERT_EQ(testing::first_difference(consumed, prefix(reference(e), k)), "") << "before the reset";

        Batches pass;
        switch (how) {
          case Reset::kReset:
            EXPECT_TRUE(loader->reset().ok());
            pass = testing::read_pass(*loader);
            break;
          case Reset::kSetSameEpoch:
            EXPECT_TRUE(loader->set_epoch(e).ok());
            pass = testing::read_pass(*loader);
            break;
          case Reset::kNewRangeFor:
            for (Batch& b : *loader) pass.emplace_back(b);
            break;
        }
        ASSERT_FALSE(pass.empty());
        const std::uint64_t got = pass.front().epoch;
        if (k < kBatches || how == Reset::kSetSameEpoch) {
          EXPECT_EQ(got, e) << "the pass after the reset is of another epoch";
        } else {
          EXPECT_TRUE(got == e || got == e + 1) << "epoch " << got;
        }
        EXPECT_EQ(testing::exactly_once(testing::indices_of(pass), kImages), "");
        EXPECT_EQ(testing::first_difference(pass, reference(got)), "")
            << "the pass after the reset differs from an undisturbed pass of epoch " << got;
      }
    }
  }
}

// A reset before any batch of the pass was consumed starts nothing again: not right
// after open, not after set_epoch, not twice in a row, not after an earlier reset.
TEST_F(GenerationTest, ResetBeforeAnyBatchWasConsumedRestartsNothing) {
  testing::HangGuard guard(60, "GenerationTest.ResetBeforeAnyBatch");
  for (std::uint32_t workers : {1u, 3u}) {
    SCOPED_TRACE(std::to_string(workers) + " workers");
    auto loader = open(options(workers));
    ASSERT_TRUE(loader);
    // Right after open: the pass of options.epoch (0).
    EXPECT_TRUE(loader->reset().ok());
    EXPECT_TRUE(loader->set_epoch(0).ok());
    EXPECT_TRUE(loader->reset().ok());
    const std::string before = loader->state();
    EXPECT_EQ(position_of(before).epoch, 0u);
    EXPECT_EQ(position_of(before).position, 0u);
    Batches pass;
    for (Batch& b : *loader) pass.emplace_back(b);  // a new range-for, too
    EXPECT_EQ(testing::first_difference(pass, reference(0)), "");

    // After set_epoch, and after a reset that did restart a pass.
    EXPECT_TRUE(loader->set_epoch(4).ok());
    ASSERT_EQ(testing::read_batches(*loader, 2).size(), 2u);
    EXPECT_TRUE(loader->reset().ok());  // restarts epoch 4
    EXPECT_TRUE(loader->reset().ok());  // nothing consumed since: no-op
    EXPECT_TRUE(loader->set_epoch(4).ok());
    EXPECT_EQ(position_of(loader->state()).epoch, 4u);
    EXPECT_EQ(position_of(loader->state()).position, 0u);
    pass.clear();
    for (Batch& b : *loader) pass.emplace_back(b);
    EXPECT_EQ(testing::first_difference(pass, reference(4)), "");
  }
}

// set_epoch(e) then reading gives e's order, whatever came before; state() counts
// delivered batches and, right after the last batch of e, points at e + 1.
TEST_F(GenerationTest, SetEpochGivesThatEpochAndStateFollowsDelivery) {
  testing::HangGuard guard(60, "GenerationTest.SetEpoch");
  auto loader = open(options(3));
  ASSERT_TRUE(loader);
  for (std::uint64_t e : {3u, 0u, 5u, 5u, 1u}) {
    SCOPED_TRACE("epoch " + std::to_string(e));
    ASSERT_EQ(testing::read_batches(*loader, 1).size(), 1u);  // some other pass, started
    EXPECT_TRUE(loader->set_epoch(e).ok());
    EXPECT_EQ(loader->epoch(), e);
    Batches pass;
    for (std::uint64_t p = 0; p < kBatches; ++p) {
      const Position at = position_of(loader->state());
      EXPECT_EQ(at.epoch, e);
      EXPECT_EQ(at.position, p);
      auto b = loader->next();
      ASSERT_TRUE(b.ok()) << b.status().message();
      ASSERT_TRUE(b->has_value());
      pass.emplace_back(**b);
    }
    EXPECT_EQ(testing::first_difference(pass, reference(e)), "");
    // Right after the last batch, before next() has said the pass is over.
    Position at = position_of(loader->state());
    EXPECT_EQ(at.epoch, e + 1);
    EXPECT_EQ(at.position, 0u);
    auto end = loader->next();
    ASSERT_TRUE(end.ok()) << end.status().message();
    EXPECT_FALSE(end->has_value());
    at = position_of(loader->state());
    EXPECT_EQ(at.epoch, e + 1);
    EXPECT_EQ(at.position, 0u);
    const Batches first = testing::read_batches(*loader, 1);
    ASSERT_EQ(first.size(), 1u);
    EXPECT_EQ(testing::first_difference(first, prefix(reference(e + 1), 1)), "") << "next() after the end";
  }
}

// The end of a pass: state() then says e + 1, position 0, so nothing of the next pass
// was consumed, and a reset there must neither repeat e nor skip e + 1. A trainer that
// resets its loader at the top of every epoch must not train epoch 0 forever.
TEST_F(GenerationTest, ResetsAtTheEndOfAPassFollowState) {
  testing::HangGuard guard(60, "GenerationTest.ResetsAtTheEnd");
  auto loader = open(options(2));
  ASSERT_TRUE(loader);
  {
    SCOPED_TRACE("reset() at the top of every epoch, range-for over each");
    for (std::uint64_t e = 0; e < 3; ++e) {
      EXPECT_TRUE(loader->reset().ok());
      Batches pass;
      for (Batch& b : *loader) pass.emplace_back(b);
      ASSERT_FALSE(pass.empty());
      EXPECT_EQ(pass.front().epoch, e) << "the pass after reset() at the end of epoch " << e - 1;
      EXPECT_EQ(testing::first_difference(pass, reference(e)), "");
    }
  }
  {
    SCOPED_TRACE("a range-for that breaks after the last batch, then a new range-for");
    EXPECT_TRUE(loader->set_epoch(6).ok());
    Batches pass;
    for (Batch& b : *loader) {
      pass.emplace_back(b);
      if (pass.size() == kBatches) break;  // the loop never saw the end
    }
    ASSERT_EQ(testing::first_difference(pass, reference(6)), "");
    const Position at = position_of(loader->state());
    EXPECT_EQ(at.epoch, 7u);
    EXPECT_EQ(at.position, 0u);
    pass.clear();
    for (Batch& b : *loader) pass.emplace_back(b);
    ASSERT_FALSE(pass.empty());
    EXPECT_EQ(pass.front().epoch, at.epoch)
        << "state() said epoch " << at.epoch << " but the next pass is another";
    EXPECT_EQ(testing::first_difference(pass, reference(pass.front().epoch)), "");
  }
}

// Random resets (all three kinds and set_epoch to other epochs) between random reads,
// while the caller holds up to two batches across them: every batch is the one the
// undisturbed pass has at that position, and a held batch never changes.
TEST_F(GenerationTest, RandomResetsWithHeldBatches) {
  testing::HangGuard guard(120, "GenerationTest.RandomResets");
  for (std::uint32_t workers : {1u, 3u}) {
    SCOPED_TRACE(std::to_string(workers) + " workers");
    std::mt19937 rng(20240 + workers);
    auto loader = open(options(workers));
    ASSERT_TRUE(loader);
    // The model: the pass of `epoch`, `position` batches delivered; `ended`: its end seen.
    std::uint64_t epoch = 0, position = 0;
    bool ended = false;
    const std::size_t max_held = workers == 1 ? 1 : 2;  // 1 worker: 3 slots
    std::deque<std::pair<Batch, BatchRecord>> held;
    auto check_held = [&] {
      for (const auto& [batch, record] : held)
        ASSERT_TRUE(BatchRecord(batch) == record) << "a held batch changed";
    };
    auto expect_batch = [&](const BatchRecord& got) {
      ASSERT_EQ(testing::first_difference({got}, {reference(epoch)[position]}), "")
          << "epoch " << epoch << " position " << position;
      if (++position == kBatches) {
        auto end = loader->next();
        ASSERT_TRUE(end.ok() && !end->has_value()) << "no end after the last batch";
        ++epoch;
        position = 0;
        ended = true;
      }
    };
    for (int round = 0; round < 80; ++round) {
      SCOPED_TRACE("round " + std::to_string(round));
      switch (rng() % 5) {
        case 0:
        case 1: {  // next(), sometimes keeping the batch
          auto b = loader->next();
          ASSERT_TRUE(b.ok()) << b.status().message();
          ASSERT_TRUE(b->has_value());
          const BatchRecord record(**b);
          ended = false;
          if (rng() % 2 == 0) {
            held.emplace_back(std::move(**b), record);
            if (held.size() > max_held) held.pop_front();
          }
          expect_batch(record);
          break;
        }
        case 2:  // reset(): not right after an end, where its meaning is tested above
          if (ended) break;
          EXPECT_TRUE(loader->reset().ok());
          position = 0;
          break;
        case 3: {  // set_epoch, to this epoch or another
          const std::uint64_t e = rng() % 2 == 0 ? epoch : rng() % 4;
          EXPECT_TRUE(loader->set_epoch(e).ok());
          if (e != epoch || position > 0 || ended) position = 0;
          epoch = e;
          ended = false;
          break;
        }
        case 4: {  // a new range-for (a reset if the pass has begun) that breaks before the last batch
          position = 0;
          ended = false;
          const std::uint64_t j = 1 + rng() % (kBatches - 1);
          std::uint64_t n = 0;
          for (Batch& b : *loader) {
            expect_batch(BatchRecord(b));
            if (++n == j) break;
          }
          break;
        }
      }
      check_held();
    }
  }
}

}  // namespace
}  // namespace forkfeed
