// Arena: layout, bounded size, and attaching from its fd alone.
#include "transport/arena.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "testing/temp_dataset.h"

namespace forkfeed {
namespace {

ArenaSpec spec(std::uint32_t workers, std::uint32_t slots, std::uint32_t batch, std::uint64_t sample_bytes) {
  TransformSpec t{};
  std::strcpy(t.pipeline, "eval");
  t.dtype = DType::kUint8;
  t.size = 32;
  return ArenaSpec{workers, slots, batch, sample_bytes, t, OnError::kFail};
}

class ArenaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = testing::make_image_folder(dir_.path(), 20, 3);
    auto index = DatasetIndex::from_image_folder(root_);
    ASSERT_TRUE(index.ok()) << index.status().message();
    index_ = std::move(index).value();
  }
  testing::TempDir dir_;
  std::string root_;
  DatasetIndex index_;
};

TEST_F(ArenaTest, SlotsAreDisjointAndInsideTheMapping) {
  auto arena = Arena::create(spec(2, 5, 7, 32 * 32 * 3), index_);
  ASSERT_TRUE(arena.ok()) << arena.status().message();
  const Arena& a = **arena;
  const auto* begin = reinterpret_cast<const std::byte*>(&a.control());
  for (std::uint32_t s = 0; s < 5; ++s) {
    const SlotView v = a.slot(s);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(v.header) % 4096, 0u) << "slots are page aligned";
    EXPECT_LT(reinterpret_cast<const std::byte*>(v.labels + 7), v.pixels);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(v.sample_indices) % alignof(std::uint64_t), 0u);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(v.labels) % alignof(std::int64_t), 0u);
    if (s + 1 < 5) {
      EXPECT_LE(v.pixels + 7 * 32 * 32 * 3, reinterpret_cast<std::byte*>(a.slot(s + 1).header));
    }
    EXPECT_GT(reinterpret_cast<const std::byte*>(v.header), begin);
  }
  const SlotView last = a.slot(4);
  const auto end = reinterpret_cast<std::uintptr_t>(last.pixels + 7 * 32 * 32 * 3);
  EXPECT_LE(end, reinterpret_cast<std::uintptr_t>(a.slot(0).header) + 5 * a.control().slots.slot_stride);
}

TEST_F(ArenaTest, SizeIsSlotsTimesBatchBytesPlusIndex) {
  // Invariant 6: the arena does not grow with anything but slots and the index.
  const std::uint64_t sample = 64 * 64 * 3, batch = 16, slots = 9;
  auto arena = Arena::create(spec(4, slots, batch, sample), index_);
  ASSERT_TRUE(arena.ok());
  const std::uint64_t slot_bytes = batch * sample + 4096 + 8192;  // + header, page rounding
  EXPECT_LE((*arena)->size(), slots * slot_bytes + index_.path_bytes() * 2 + 256 * 1024);
  EXPECT_GE((*arena)->size(), slots * batch * sample);
}

TEST_F(ArenaTest, AttachSeesTheSameControlIndexAndSlots) {
  auto arena = Arena::create(spec(3, 4, 2, 100), index_);
  ASSERT_TRUE(arena.ok());
  (*arena)->slot(2).labels[1] = 12345;
  (*arena)->control().generation.store(77);
  auto other = Arena::attach(UniqueFd(::dup((*arena)->fd())));
  ASSERT_TRUE(other.ok()) << other.status().message();
  EXPECT_EQ((*other)->control().num_workers, 3u);
  EXPECT_EQ((*other)->control().generation.load(), 77u);
  EXPECT_EQ((*other)->slot(2).labels[1], 12345);
  ASSERT_EQ((*other)->index().size(), index_.size());
  for (std::size_t i = 0; i < index_.size(); ++i) {
    EXPECT_EQ((*other)->index().path(i), index_.path(i));
    EXPECT_EQ((*other)->index().labels[i], index_.label(i));
  }
  // Rings are shared too.
  (*arena)->channel(1).tasks.try_push(Task{1, 2, 3, 4, 5});
  auto t = (*other)->channel(1).tasks.try_pop();
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->batch_id, 3u);
}

TEST_F(ArenaTest, AttachRefusesSomethingElse) {
  UniqueFd fd(::memfd_create("not-an-arena", MFD_CLOEXEC));
  ASSERT_EQ(::ftruncate(fd.get(), 1 << 20), 0);
  auto r = Arena::attach(std::move(fd));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not a forkfeed arena"), std::string::npos);
}

}  // namespace
}  // namespace forkfeed
