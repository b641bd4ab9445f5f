// ConsumerChannel: the daemon's side and the client's side, attached through the fds
// the daemon sends, see one pair of rings: deliveries and returns in order, a full ring
// refuses rather than overwrites, and each side's eventfd wakes the other.
#include "protocol/consumer_channel.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <optional>

#include "loader/batch_factory.h"
#include "loader/slot_pool.h"
#include "protocol/frame.h"

namespace forkfeed {
namespace {

DeliveryRecord batch_delivery(std::uint64_t index) {
  DeliveryRecord d{};
  d.generation = 1;
  d.kind = DeliveryKind::kBatch;
  d.index = index;
  d.tag = 1000 + index;
  d.handle = static_cast<std::uint32_t>(index % kChannelCapacity);
  return d;
}

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
}

UniqueFd dup_fd(int fd) { return UniqueFd(::fcntl(fd, F_DUPFD_CLOEXEC, 0)); }

class ConsumerChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto daemon = ConsumerChannel::create();
    ASSERT_TRUE(daemon.ok()) << daemon.status().message();
    daemon_.emplace(std::move(daemon).value());
    // The client gets the three fds as forkfeedd sends them: in a frame, SCM_RIGHTS.
    int sockets[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets), 0);
    UniqueFd to_client(sockets[0]), at_client(sockets[1]);
    const int fds[] = {daemon_->memfd(), daemon_->delivered_fd(), daemon_->returned_fd()};
    ASSERT_TRUE(send_frame(to_client.get(), MessageType::kReply, R"({"ok":true})", fds).ok());
    auto frame = recv_frame(at_client.get(), true);
    ASSERT_TRUE(frame.ok()) << frame.status().message();
    ASSERT_EQ(frame->fds.size(), 3u);
    auto client =
        ConsumerChannel::attach(std::move(frame->fds[0]), std::move(frame->fds[1]), std::move(frame->fds[2]));
    ASSERT_TRUE(client.ok()) << client.status().message();
    client_.emplace(std::move(client).value());
  }

  std::optional<ConsumerChannel> daemon_;
  std::optional<ConsumerChannel> client_;
};

TEST_F(ConsumerChannelTest, DeliveriesArriveInOrderWithEveryField) {
  DeliveryRecord error{};
  error.generation = 2;
  error.kind = DeliveryKind::kError;
  error.code = static_cast<std::uint32_t>(Status::Code::kBadData);
  error.fatal = 1;
  std::strncpy(error.message, "cannot decode data/a/1.jpg", sizeof error.message - 1);
  for (std::uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(daemon_->block().deliveries.try_push(batch_delivery(i)));
  ASSERT_TRUE(daemon_->block().deliveries.try_push(error));
  EXPECT_EQ(client_->block().deliveries.size(), 4u);
  for (std::uint64_t i = 0; i < 3; ++i) {
    const auto d = client_->block().deliveries.try_pop();
    ASSERT_TRUE(d.has_value()) << "delivery " << i;
    EXPECT_EQ(d->kind, DeliveryKind::kBatch);
    EXPECT_EQ(d->index, i);
    EXPECT_EQ(d->tag, 1000 + i);
  }
  const auto e = client_->block().deliveries.try_pop();
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->kind, DeliveryKind::kError);
  EXPECT_EQ(e->code, static_cast<std::uint32_t>(Status::Code::kBadData));
  EXPECT_EQ(e->fatal, 1u);
  EXPECT_STREQ(e->message, "cannot decode data/a/1.jpg");
  EXPECT_FALSE(client_->block().deliveries.try_pop().has_value());
  EXPECT_EQ(daemon_->block().deliveries.size(), 0u) << "the daemon's side does not see the pops";
}

TEST_F(ConsumerChannelTest, ReturnsGoTheOtherWay) {
  ASSERT_TRUE(client_->block().returns.try_push(SlotReturn{7, 0, 70}));
  ASSERT_TRUE(client_->block().returns.try_push(SlotReturn{3, 0, 30}));
  const auto first = daemon_->block().returns.try_pop();
  const auto second = daemon_->block().returns.try_pop();
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->handle, 7u);
  EXPECT_EQ(first->tag, 70u);
  EXPECT_EQ(second->handle, 3u);
  EXPECT_EQ(second->tag, 30u);
  EXPECT_FALSE(daemon_->block().returns.try_pop().has_value());
  EXPECT_FALSE(client_->block().deliveries.try_pop().has_value()) << "a return showed up as a delivery";
}

TEST_F(ConsumerChannelTest, AFullRingRefusesAndKeepsOrderAcrossTheWrap) {
  auto& out = daemon_->block().deliveries;
  auto& in = client_->block().deliveries;
  for (std::uint64_t i = 0; i < kChannelCapacity; ++i) ASSERT_TRUE(out.try_push(batch_delivery(i))) << i;
  EXPECT_FALSE(out.try_push(batch_delivery(kChannelCapacity))) << "a full ring took one more";
  ASSERT_EQ(in.try_pop()->index, 0u);
  ASSERT_TRUE(out.try_push(batch_delivery(kChannelCapacity))) << "a popped place was not free again";
  EXPECT_FALSE(out.try_push(batch_delivery(kChannelCapacity + 1)));
  for (std::uint64_t i = 1; i <= kChannelCapacity; ++i) {
    const auto d = in.try_pop();
    ASSERT_TRUE(d.has_value()) << i;
    EXPECT_EQ(d->index, i) << "the ring overwrote or reordered a delivery";
  }
  EXPECT_FALSE(in.try_pop().has_value());
}

TEST_F(ConsumerChannelTest, EachDirectionWakesTheOtherSideThroughItsFd) {
  EXPECT_FALSE(readable(client_->delivered_fd()));
  EXPECT_FALSE(readable(daemon_->returned_fd()));

  daemon_->ring_delivered();
  daemon_->ring_delivered();
  EXPECT_TRUE(readable(client_->delivered_fd())) << "the client was not woken for a delivery";
  EXPECT_FALSE(readable(daemon_->returned_fd())) << "a delivery woke the returns side";
  ConsumerChannel::clear(client_->delivered_fd());
  EXPECT_FALSE(readable(client_->delivered_fd())) << "one clear() did not take every ring";
  ConsumerChannel::clear(client_->delivered_fd());  // nothing to clear: does not block

  client_->ring_returned();
  EXPECT_TRUE(readable(daemon_->returned_fd())) << "the daemon was not woken for a return";
  EXPECT_FALSE(readable(client_->delivered_fd()));
  ConsumerChannel::clear(daemon_->returned_fd());
  EXPECT_FALSE(readable(daemon_->returned_fd()));
}

TEST(ConsumerChannel, AClientCannotResizeTheDaemonsMemory) {
  auto channel = ConsumerChannel::create();
  ASSERT_TRUE(channel.ok()) << channel.status().message();
  EXPECT_NE(::ftruncate(channel->memfd(), 0), 0) << "the channel could be truncated under the daemon";
  EXPECT_NE(::ftruncate(channel->memfd(), 1 << 30), 0) << "the channel could be grown";
  const int seals = ::fcntl(channel->memfd(), F_GET_SEALS);
  EXPECT_EQ(seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  EXPECT_EQ(channel->block().magic, kChannelMagic);
  EXPECT_EQ(channel->block().version, kChannelVersion);
}

TEST(ConsumerChannel, AttachRefusesMemoryThatIsNotAChannel) {
  UniqueFd small(::memfd_create("not-a-channel", MFD_CLOEXEC));
  ASSERT_TRUE(small.valid());
  ASSERT_EQ(::ftruncate(small.get(), 4096), 0);
  auto too_small = ConsumerChannel::attach(std::move(small), UniqueFd(), UniqueFd());
  ASSERT_FALSE(too_small.ok());
  EXPECT_NE(too_small.status().message().find("4096 bytes; is it another forkfeed version?"),
            std::string::npos)
      << too_small.status().message();

  auto channel = ConsumerChannel::create();
  ASSERT_TRUE(channel.ok()) << channel.status().message();
  channel->block().version = kChannelVersion + 1;
  auto other = ConsumerChannel::attach(dup_fd(channel->memfd()), dup_fd(channel->delivered_fd()),
                                       dup_fd(channel->returned_fd()));
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("another layout"), std::string::npos) << other.status().message();
}

// A batch of 3 samples of 2 x 2 px in a buffer standing for the arena: pixels first,
// then labels, then indices.
struct FakeArena {
  static constexpr std::uint32_t kCount = 3, kSize = 2, kSampleBytes = kSize * kSize * 3;
  alignas(8) std::byte bytes[kCount * kSampleBytes + 2 * 8 * kCount + 4] = {};
  std::byte* pixels() { return bytes; }
  std::int64_t* labels() {
    return reinterpret_cast<std::int64_t*>(bytes + 40);
  }  // 36 bytes of pixels, aligned up
  std::uint64_t* indices() { return reinterpret_cast<std::uint64_t*>(bytes + 40 + 8 * kCount); }
};

class NoLease : public detail::SlotLease {};

TEST(BatchDelivery, WhatTheDaemonWritesTheClientAcceptsAndNothingOutsideTheArena) {
  FakeArena arena;
  const Batch batch = BatchFactory::make(
      BatchFactory::Parts{arena.pixels(), FakeArena::kCount * FakeArena::kSampleBytes, DType::kUint8,
                          FakeArena::kSize, FakeArena::kCount, arena.labels(), arena.indices(), 4, 6},
      std::make_unique<NoLease>());
  const DeliveryRecord d = batch_delivery(batch, arena.bytes, ArenaSlots{});
  EXPECT_EQ(d.kind, DeliveryKind::kBatch);
  EXPECT_EQ(d.epoch, 4u);
  EXPECT_EQ(d.index, 6u);
  EXPECT_EQ(d.count, 3u);
  EXPECT_EQ(d.pixels_offset, 0u);
  EXPECT_EQ(d.labels_offset, 40u);
  EXPECT_EQ(d.indices_offset, 64u);
  const std::uint64_t size = sizeof arena.bytes;
  EXPECT_TRUE(batch_delivery_fits(d, size, FakeArena::kSampleBytes, 3));

  EXPECT_FALSE(batch_delivery_fits(d, size, FakeArena::kSampleBytes, 2)) << "more samples than a batch holds";
  EXPECT_FALSE(batch_delivery_fits(d, size, FakeArena::kSampleBytes + 1, 3)) << "pixels of another size";
  EXPECT_FALSE(batch_delivery_fits(d, 87, FakeArena::kSampleBytes, 3)) << "indices past the end";
  DeliveryRecord moved = d;
  moved.labels_offset = 41;
  EXPECT_FALSE(batch_delivery_fits(moved, size, FakeArena::kSampleBytes, 3)) << "unaligned labels";
  moved = d;
  moved.pixels_offset = ~std::uint64_t{0} - 4;
  EXPECT_FALSE(batch_delivery_fits(moved, size, FakeArena::kSampleBytes, 3)) << "an offset that wraps";
  moved = d;
  moved.count = 0;
  moved.pixel_bytes = 0;
  EXPECT_FALSE(batch_delivery_fits(moved, size, FakeArena::kSampleBytes, 3)) << "an empty batch";
}

}  // namespace
}  // namespace forkfeed
