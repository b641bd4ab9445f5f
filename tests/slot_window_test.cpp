// A SlotWindow's slot copied aside: the batch keeps its bytes at its addresses while its
// slot, written again, is read at its new place; a copy given back leaves its addresses
// reserved for the next slot that moves, so that moves cost no new mappings.
#include "transport/slot_window.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <optional>
#include <string>

#include "base/unique_fd.h"

namespace forkfeed {
namespace {

constexpr std::uint64_t kPage = 4096;
constexpr std::uint64_t kSlot = 4 * kPage;
constexpr std::uint32_t kSlots = 3;

// A memfd of a page of header and kSlots slots, and a writer's own mapping of it (a worker's).
class SlotWindowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fd_.reset(::memfd_create("slot-window-test", MFD_CLOEXEC));
    ASSERT_TRUE(fd_.valid());
    ASSERT_EQ(::ftruncate(fd_.get(), static_cast<off_t>(size())), 0);
    void* at = ::mmap(nullptr, size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd_.get(), 0);
    ASSERT_NE(at, MAP_FAILED);
    writer_ = static_cast<std::byte*>(at);
  }
  void TearDown() override { ::munmap(writer_, size()); }

  static std::uint64_t size() { return kPage + kSlots * kSlot; }
  static std::uint64_t slot(std::uint32_t i) { return kPage + i * kSlot; }
  void write(std::uint32_t i, char value) { std::memset(writer_ + slot(i), value, kSlot); }

  UniqueFd fd_;
  std::byte* writer_ = nullptr;
};

std::string bytes_at(const std::byte* at, std::size_t n) { return {reinterpret_cast<const char*>(at), n}; }

TEST_F(SlotWindowTest, ACopiedBatchKeepsItsAddressAndBytesWhileItsSlotIsReadAnew) {
  auto made = SlotWindow::map(fd_.get(), size(), true);
  ASSERT_TRUE(made.ok()) << made.status().message();
  SlotWindow& window = **made;
  write(1, 'a');
  const std::byte* held = window.origin(slot(1)) + slot(1);
  ASSERT_EQ(held, window.data() + slot(1));
  ASSERT_EQ(bytes_at(held, 3), "aaa");

  auto copy = window.copy_aside(slot(1), kSlot, {held + 100, 2 * kPage});  // the batch's bytes
  ASSERT_TRUE(copy.ok()) << copy.status().message();
  write(1, 'b');  // the next batch, written by a worker into the slot
  EXPECT_EQ(bytes_at(held + 100, 3), "aaa") << "the copy at the batch's own addresses";
  EXPECT_EQ(bytes_at(held + 100 + 2 * kPage - 3, 3), "aaa");
  const std::byte* next = window.origin(slot(1)) + slot(1);
  EXPECT_NE(next, held);
  EXPECT_EQ(bytes_at(next, 3), "bbb") << "the slot is read at its new place";
  EXPECT_EQ(window.origin(slot(0)), window.data()) << "other slots stay";
  write(0, 'c');
  EXPECT_EQ(bytes_at(window.data() + slot(0), 3), "ccc");

  // Copied again from its new place: the batch there keeps its bytes too.
  auto again = window.copy_aside(slot(1), kSlot, {next, kSlot});
  ASSERT_TRUE(again.ok()) << again.status().message();
  write(1, 'd');
  EXPECT_EQ(bytes_at(next, 3), "bbb");
  EXPECT_EQ(bytes_at(held + 100, 3), "aaa");
  EXPECT_EQ(bytes_at(window.origin(slot(1)) + slot(1), 3), "ddd");
}

// The number of mappings in this process.
std::size_t mappings() {
  std::ifstream maps("/proc/self/maps");
  std::size_t n = 0;
  for (std::string line; std::getline(maps, line);) ++n;
  return n;
}

TEST_F(SlotWindowTest, ACopyGivenBackLeavesItsAddressesForTheNextSlotThatMoves) {
  auto made = SlotWindow::map(fd_.get(), size(), false);  // a client's view: read-only
  ASSERT_TRUE(made.ok()) << made.status().message();
  SlotWindow& window = **made;
  const std::byte* first = window.origin(slot(2)) + slot(2);
  std::optional<SlotWindow::Copy> copy;
  {
    auto c = window.copy_aside(slot(2), kSlot, {first, kSlot});
    ASSERT_TRUE(c.ok()) << c.status().message();
    copy.emplace(std::move(c).value());
  }
  const std::byte* second = window.origin(slot(2)) + slot(2);
  copy.reset();  // the batch went: its addresses are a reservation now
  const std::size_t before = mappings();
  for (int round = 0; round < 50; ++round) {  // a trainer keeping and dropping batches for ever
    const std::byte* at = window.origin(slot(2)) + slot(2);
    auto c = window.copy_aside(slot(2), kSlot, {at, kSlot});
    ASSERT_TRUE(c.ok()) << c.status().message();
    const std::byte* moved_to = window.origin(slot(2)) + slot(2);
    EXPECT_TRUE(moved_to == first || moved_to == second) << "a reserved range taken, not new addresses";
  }
  EXPECT_LE(mappings(), before + 4) << "moves made no new mappings (the kernel may split a reservation)";
  write(2, 'e');
  EXPECT_EQ(bytes_at(window.origin(slot(2)) + slot(2), 3), "eee");
}

TEST_F(SlotWindowTest, TheWindowOutlivesNeitherItsCopiesNorItsMemfd) {
  std::optional<SlotWindow::Copy> copy;
  const std::byte* held = nullptr;
  write(0, 'f');
  {
    auto made = SlotWindow::map(fd_.get(), size(), true);
    ASSERT_TRUE(made.ok()) << made.status().message();
    held = (*made)->data() + slot(0);
    auto c = (*made)->copy_aside(slot(0), kSlot, {held, kSlot});
    ASSERT_TRUE(c.ok()) << c.status().message();
    copy.emplace(std::move(c).value());
  }  // the window's last owner is the copy (as a Batch outliving its Loader holds it)
  fd_.reset();
  EXPECT_EQ(bytes_at(held, 3), "fff");
  copy.reset();
}

}  // namespace
}  // namespace forkfeed
