// Admission: forkfeedd's limits. Streams share one pool of workers, so workers never
// refuse a stream: its share is capped (by what it asks, max_stream_workers and the pool);
// a request over max_streams or the arena limits is refused with a message naming the
// limit, and a closed stream gives everything back.
#include "daemon/admission.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "plan/slot_count.h"
#include "testing/small_options.h"

namespace forkfeed {
namespace {

constexpr std::uint64_t kMiB = 1 << 20;

// No dataset is read: admission looks at the numbers only.
LoaderOptions asking(std::uint32_t workers, std::uint32_t batch_size = 4) {
  return testing::small_options("/nonexistent", workers, batch_size);
}

Limits limits(std::uint32_t max_streams, std::uint32_t max_workers) {
  Limits l;
  l.max_streams = max_streams;
  l.max_workers = max_workers;
  l.max_arena_bytes = 1024 * kMiB;
  return l;
}

void expect_refused(const Result<Admission::Ticket>& ticket, const std::string& limit) {
  ASSERT_FALSE(ticket.ok()) << "admitted over " << limit;
  EXPECT_EQ(ticket.status().code(), Status::Code::kResourceExhausted);
  EXPECT_NE(ticket.status().message().find("(" + limit + ")"), std::string::npos)
      << ticket.status().message();
}

TEST(Admission, WorkersAreNeverAReasonToRefuseAStream) {
  // Four ranks asking for the whole pool each, as forkfeed-bench --workers 2 does on a
  // 2-core machine: all admitted, each capped at the pool.
  Admission admission(limits(8, 2));
  std::vector<Admission::Ticket> tickets;
  for (int rank = 0; rank < 4; ++rank) {
    auto ticket = admission.admit(asking(8));
    ASSERT_TRUE(ticket.ok()) << "rank " << rank << ": " << ticket.status().message();
    EXPECT_EQ(ticket->workers(), 2u) << "capped at the pool's size";
    tickets.push_back(std::move(ticket).value());
  }
  const Admission::Totals used = admission.totals();
  EXPECT_EQ(used.streams, 4u);
  EXPECT_EQ(used.workers, 8u) << "the caps, summed";
}

TEST(Admission, AStreamGetsWhatItAsksUpToThePool) {
  Admission admission(limits(8, 10));
  auto first = admission.admit(asking(3));
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->workers(), 3u);
  auto second = admission.admit(asking(9));
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_EQ(second->workers(), 9u) << "no static split: the pool is shared by turns";
}

TEST(Admission, MaxStreamWorkersCapsEveryStream) {
  Limits l = limits(8, 16);
  l.max_stream_workers = 3;
  Admission admission(l);
  auto ticket = admission.admit(asking(10));
  ASSERT_TRUE(ticket.ok()) << ticket.status().message();
  EXPECT_EQ(ticket->workers(), 3u);
}

TEST(Admission, AStreamAskingForNoWorkersGetsOne) {
  Admission admission(limits(8, 4));
  auto ticket = admission.admit(asking(0));
  ASSERT_TRUE(ticket.ok()) << ticket.status().message();
  EXPECT_EQ(ticket->workers(), 1u);
}

TEST(Admission, MaxStreamsIsRefusedWithItsName) {
  Admission admission(limits(2, 16));
  auto a = admission.admit(asking(1));
  auto b = admission.admit(asking(1));
  ASSERT_TRUE(a.ok() && b.ok());
  auto c = admission.admit(asking(1));
  expect_refused(c, "max_streams");
  EXPECT_NE(c.status().message().find("maximum of 2 streams"), std::string::npos) << c.status().message();
  EXPECT_NE(c.status().message().find("--max-streams"), std::string::npos) << c.status().message();
}

// A stream's slots are its own options' (workers x prefetch + 1), as a Loader's: the cap
// on the workers it keeps busy does not shrink them (it used to, silently).
TEST(Admission, AStreamsArenaIsSizedForTheSlotsItAsksForWhateverItsCap) {
  Admission admission(limits(8, 2));
  const LoaderOptions options = asking(16, 8);
  auto ticket = admission.admit(options);
  ASSERT_TRUE(ticket.ok()) << ticket.status().message();
  ASSERT_EQ(ticket->workers(), 2u) << "the workers it keeps busy: the pool's 2";
  EXPECT_EQ(ticket->arena_bytes(), arena_batch_bytes(options))
      << "sized for the 16 x prefetch + 1 slots asked";
  EXPECT_EQ(admission.totals().arena_bytes, ticket->arena_bytes());
}

TEST(Admission, AnArenaOverThePerStreamLimitIsRefused) {
  Limits l = limits(8, 1);
  LoaderOptions big = asking(1, 64);
  big.size = 224;  // 3 slots of 64 x 224 x 224 x 3 bytes: 27 MiB
  l.max_stream_arena_bytes = 16 * kMiB;
  Admission admission(l);
  auto ticket = admission.admit(big);
  expect_refused(ticket, "max_stream_arena_bytes");
  EXPECT_NE(ticket.status().message().find("need 27 MiB (3 slots of 64 samples)"), std::string::npos)
      << ticket.status().message();
  EXPECT_EQ(admission.totals().streams, 0u);
  EXPECT_EQ(admission.totals().workers, 0u) << "a refused stream kept its workers";
}

// A schema's fields, weighed once the stream's index is, grow its ticket within the same
// limits; what it grew is given back with it.
TEST(Admission, FieldsGrowATicketWithinTheLimits) {
  Limits l = limits(8, 8);
  LoaderOptions big = asking(1, 64);
  big.size = 224;  // 27 MiB a stream
  l.max_stream_arena_bytes = 32 * kMiB;
  l.max_arena_bytes = 40 * kMiB;
  Admission admission(l);
  auto ticket = admission.admit(big);
  ASSERT_TRUE(ticket.ok()) << ticket.status().message();
  const std::uint64_t images = ticket->arena_bytes();
  ASSERT_TRUE(ticket->grow(2 * kMiB, "field 'caption'").ok());
  EXPECT_EQ(ticket->arena_bytes(), images + 2 * kMiB);
  EXPECT_EQ(admission.totals().arena_bytes, images + 2 * kMiB);

  const Status per_stream = ticket->grow(4 * kMiB, "field 'caption' takes up to 4 MiB a batch");
  EXPECT_EQ(per_stream.code(), Status::Code::kResourceExhausted);
  EXPECT_NE(per_stream.message().find("with its fields (field 'caption' takes up to 4 MiB a batch), over "
                                      "forkfeedd's 32 MiB per stream (max_stream_arena_bytes)"),
            std::string::npos)
      << per_stream.message();
  EXPECT_EQ(admission.totals().arena_bytes, images + 2 * kMiB) << "a refused growth was kept";

  LoaderOptions small = asking(1, 8);
  small.size = 224;  // 3.4 MiB
  auto second = admission.admit(small);
  ASSERT_TRUE(second.ok()) << second.status().message();
  const Status all_streams = second->grow(8 * kMiB, "field 'meta'");
  EXPECT_NE(all_streams.message().find("(max_arena_bytes) are free"), std::string::npos)
      << all_streams.message();
  ticket = Result<Admission::Ticket>(Admission::Ticket());  // the first stream closes
  EXPECT_EQ(admission.totals().arena_bytes, second->arena_bytes()) << "the growth was not given back";
}

TEST(Admission, ArenasOfAllStreamsShareMaxArenaBytes) {
  Limits l = limits(8, 8);
  LoaderOptions big = asking(1, 64);
  big.size = 224;  // 27 MiB a stream
  l.max_arena_bytes = 40 * kMiB;
  Admission admission(l);
  std::optional<Admission::Ticket> first;
  {
    auto t = admission.admit(big);
    ASSERT_TRUE(t.ok()) << t.status().message();
    first.emplace(std::move(t).value());
  }
  auto second = admission.admit(big);
  expect_refused(second, "max_arena_bytes");
  EXPECT_NE(second.status().message().find("only 12 MiB of forkfeedd's 40 MiB"), std::string::npos)
      << second.status().message();
  first.reset();  // the first stream closes
  EXPECT_TRUE(admission.admit(big).ok()) << "a closed stream's arena bytes were not given back";
}

TEST(Admission, AClosedStreamGivesBackEverythingOnce) {
  Admission admission(limits(1, 4));
  {
    auto ticket = admission.admit(asking(4));
    ASSERT_TRUE(ticket.ok());
    Admission::Ticket moved = std::move(ticket).value();
    Admission::Ticket again;
    again = std::move(moved);  // only the last holder gives back
    EXPECT_EQ(admission.totals().streams, 1u);
    EXPECT_EQ(admission.totals().workers, 4u);
  }
  const Admission::Totals used = admission.totals();
  EXPECT_EQ(used.streams, 0u);
  EXPECT_EQ(used.workers, 0u);
  EXPECT_EQ(used.arena_bytes, 0u);
  auto next = admission.admit(asking(4));
  ASSERT_TRUE(next.ok()) << next.status().message();
  EXPECT_EQ(next->workers(), 4u);
}

TEST(Admission, UnsetLimitsTakeTheMachinesSize) {
  Admission admission(Limits{});
  EXPECT_EQ(admission.limits().max_workers, std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_GT(admission.limits().max_arena_bytes, 0u);
  EXPECT_EQ(admission.limits().max_stream_arena_bytes, admission.limits().max_arena_bytes);
  EXPECT_EQ(admission.limits().max_streams, 64u);
}

}  // namespace
}  // namespace forkfeed
