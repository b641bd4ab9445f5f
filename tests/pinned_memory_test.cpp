// Pinned memory: the batch slots are page-locked for the chosen device through a test
// double of libcudart (tests/fake_cuda), with the device discipline that keeps GPU 0
// free; without CUDA, a device or a working call, the loader runs on ordinary memory.
//
// Over 300 lines on purpose: every path through the device discipline (no CUDA, no
// device, a failing call, another device) against one fake libcudart; splitting it
// would copy the fixture.
#include "transport/pinned_memory.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "forkfeed/loader.h"
#include "tests/testing/processes.h"
#include "tests/testing/scoped_env.h"
#include "tests/testing/small_options.h"
#include "tests/testing/temp_dataset.h"
#include "transport/arena.h"

namespace forkfeed {
namespace {

using testing::ScopedEnv;

// One line of the fake's log: "<function> <args...> device=<current>", or "context <N>".
struct Call {
  std::string function;
  std::vector<std::string> args;
  int device = -1;  // current on the calling thread; -1: none
};

// The fake's own entry points, for the test to play the trainer's part.
struct FakeCuda {
  FakeCuda() {
    void* lib = ::dlopen(FAKE_CUDART, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) std::abort();
    reset = reinterpret_cast<void (*)()>(::dlsym(lib, "fake_cuda_reset"));
    set_device = reinterpret_cast<int (*)(int)>(::dlsym(lib, "cudaSetDevice"));
    get_device = reinterpret_cast<int (*)(int*)>(::dlsym(lib, "cudaGetDevice"));
    if (reset == nullptr || set_device == nullptr || get_device == nullptr) std::abort();
  }
  void (*reset)();
  int (*set_device)(int);
  int (*get_device)(int*);
};

const FakeCuda& fake() {
  static const FakeCuda f;
  return f;
}

CudaLibraries fake_libraries() {
  CudaLibraries l;
  l.runtimes = {FAKE_CUDART};
  l.driver = FAKE_CUDART;  // the fake answers cuDevicePrimaryCtxGetState too
  return l;
}

std::string hex(const void* p) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", p);
  return text;
}

class PinnedMemoryTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    root_ = testing::make_image_folder(dir_->path(), 24, 3);
  }
  static void TearDownTestSuite() { delete dir_; }

  void SetUp() override {
    log_path_ = log_dir_.path() + "/cuda.log";
    cudart_.emplace("FORKFEED_CUDART", FAKE_CUDART);
    log_.emplace("FAKE_CUDA_LOG", log_path_);
    devices_.emplace("FAKE_CUDA_DEVICES", std::nullopt);
    fail_.emplace("FAKE_CUDA_FAIL", std::nullopt);
    fake().reset();  // contexts made by an earlier test of this process
  }

  static LoaderOptions options(int pin_device) {
    LoaderOptions o;
    o.image_folder = root_;
    o.workers = 2;
    o.batch_size = 5;
    o.size = 16;
    o.seed = 3;
    o.log_level = "warn";
    o.pin_memory_device = pin_device;
    return o;
  }

  static std::unique_ptr<Loader> open(const LoaderOptions& o) { return testing::open_loader(o); }

  std::vector<Call> calls() const {
    std::vector<Call> out;
    std::ifstream in(log_path_);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream words(line);
      Call c;
      words >> c.function;
      for (std::string w; words >> w;) {
        if (w.starts_with("device=")) {
          c.device = std::stoi(w.substr(7));
        } else {
          c.args.push_back(w);
        }
      }
      out.push_back(c);
    }
    return out;
  }

  // Positions in calls() of |function|.
  static std::vector<std::size_t> find(const std::vector<Call>& calls, const std::string& function) {
    std::vector<std::size_t> at;
    for (std::size_t i = 0; i < calls.size(); ++i) {
      if (calls[i].function == function) at.push_back(i);
    }
    return at;
  }

  static std::vector<int> contexts(const std::vector<Call>& calls) {
    std::vector<int> devices;
    for (std::size_t i : find(calls, "context")) devices.push_back(std::stoi(calls[i].args.at(0)));
    return devices;
  }

  std::string log_text() const {
    std::ifstream in(log_path_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  // A loader pinned for |device| delivers a pass; the fake saw one registration a batch
  // slot (transport/slot_window.h: a slot whose batch is copied aside is unpinned alone)
  // and one unregistration of the same memory, each right after cudaSetDevice(device) and
  // with |device| current, and no device but |device| was ever set or given a context.
  void expect_pinned_on(int device) {
    testing::Batches batches;
    std::size_t slots = 0;
    {
      auto loader = open(options(device));
      ASSERT_TRUE(loader);
      EXPECT_TRUE(loader->stats().pinned);
      slots = loader->stats().slots;
      batches = testing::read_pass(*loader);
      EXPECT_EQ(testing::exactly_once(testing::indices_of(batches), 24), "");
      EXPECT_TRUE(find(calls(), "cudaHostUnregister").empty()) << "unpinned while the loader lives";
    }
    const std::vector<Call> log = calls();
    const auto reg = find(log, "cudaHostRegister"), unreg = find(log, "cudaHostUnregister");
    ASSERT_EQ(reg.size(), slots) << log_text();
    ASSERT_EQ(unreg.size(), slots) << log_text();
    for (std::size_t at : reg) {
      ASSERT_GT(at, 0u);
      EXPECT_EQ(log[at].device, device) << log_text();
      EXPECT_EQ(log[at - 1].function, "cudaSetDevice") << log_text();
      EXPECT_EQ(log[at - 1].args.at(0), std::to_string(device)) << log_text();
      EXPECT_EQ(log[at].args.at(2), "flags=1") << "cudaHostRegisterPortable";
      EXPECT_LT(at, unreg.front());
      EXPECT_EQ(std::count_if(unreg.begin(), unreg.end(),
                              [&](std::size_t u) { return log[u].args.at(0) == log[at].args.at(0); }),
                1)
          << "each slot unregistered once: " << log_text();
    }
    for (std::size_t at : unreg) {
      EXPECT_EQ(log[at].device, device) << log_text();
      EXPECT_EQ(log[at - 1].function, "cudaSetDevice") << log_text();
    }
    for (std::size_t at : find(log, "cudaSetDevice")) EXPECT_EQ(log[at].args.at(0), std::to_string(device));
    EXPECT_EQ(contexts(log), std::vector<int>{device}) << log_text();
  }

  static testing::TempDir* dir_;
  static std::string root_;
  testing::TempDir log_dir_;
  std::string log_path_;
  std::optional<ScopedEnv> cudart_, log_, devices_, fail_;
};
testing::TempDir* PinnedMemoryTest::dir_ = nullptr;
std::string PinnedMemoryTest::root_;

TEST_F(PinnedMemoryTest, PinsTheSlotsOnDeviceOneWithoutTouchingDeviceZero) { expect_pinned_on(1); }

TEST_F(PinnedMemoryTest, DeviceZeroWorksToo) { expect_pinned_on(0); }

TEST_F(PinnedMemoryTest, EveryCallHappensOnDeviceThree) {
  const ScopedEnv four("FAKE_CUDA_DEVICES", "4");
  expect_pinned_on(3);
}

TEST_F(PinnedMemoryTest, RegistersExactlyTheBatchSlots) {
  auto index = DatasetIndex::from_image_folder(root_);
  ASSERT_TRUE(index.ok()) << index.status().message();
  TransformSpec t{};
  std::strcpy(t.pipeline, "eval");
  t.size = 16;
  auto arena = Arena::create(ArenaSpec{2, 5, 4, 16 * 16 * 3, t, OnError::kFail}, *index);
  ASSERT_TRUE(arena.ok()) << arena.status().message();
  const Arena& a = **arena;
  const std::span<std::byte> region = a.slot_region();
  const SlotGeometry& g = a.control().slots;
  EXPECT_EQ(static_cast<void*>(region.data()), static_cast<void*>(a.slot(0).header));
  EXPECT_EQ(region.size(), g.num_slots * g.slot_stride);
  EXPECT_EQ(region.size(), a.size() - g.slots_offset);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(region.data()) % 4096, 0u);
  {
    const PinnedRegistration pinned = PinnedRegistration::pin(region, 1, fake_libraries());
    EXPECT_TRUE(pinned.pinned()) << pinned.summary();
  }
  const std::vector<Call> log = calls();
  const auto reg = find(log, "cudaHostRegister");
  ASSERT_EQ(reg.size(), 1u) << log_text();
  EXPECT_EQ(log[reg[0]].args.at(0), hex(region.data()));
  EXPECT_EQ(log[reg[0]].args.at(1), std::to_string(region.size()));
}

// The ranges the fake was asked to register and not yet to unregister, by start.
std::map<std::uintptr_t, std::uintptr_t> registered(const std::vector<Call>& log) {
  std::map<std::uintptr_t, std::uintptr_t> ranges;
  for (const Call& c : log) {
    if (c.function == "cudaHostRegister") {
      const auto base = std::stoull(c.args.at(0), nullptr, 16);
      ranges[base] = base + std::stoull(c.args.at(1));
    } else if (c.function == "cudaHostUnregister") {
      ranges.erase(std::stoull(c.args.at(0), nullptr, 16));
    }
  }
  return ranges;
}

bool within(const std::map<std::uintptr_t, std::uintptr_t>& ranges, const Batch& b) {
  const auto at = reinterpret_cast<std::uintptr_t>(b.data());
  return std::any_of(ranges.begin(), ranges.end(),
                     [&](const auto& r) { return r.first <= at && at + b.bytes() <= r.second; });
}

TEST_F(PinnedMemoryTest, BatchesLieInTheRegisteredRange) {
  auto loader = open(options(1));
  ASSERT_TRUE(loader);
  const auto ranges = registered(calls());
  ASSERT_EQ(ranges.size(), loader->stats().slots) << log_text();
  for (;;) {
    auto batch = loader->next();
    ASSERT_TRUE(batch.ok()) << batch.status().message();
    if (!batch->has_value()) break;
    EXPECT_TRUE(within(ranges, **batch));
  }
}

// A batch copied aside (every slot held) is ordinary memory, since its registration would
// go on naming the slot's pages, where the next batch is written; the slot is pinned again
// where it is read next.
TEST_F(PinnedMemoryTest, ABatchCopiedAsideIsUnpinnedAndItsSlotPinnedAtItsNewPlace) {
  LoaderOptions o = options(1);
  o.workers = 1;
  o.prefetch = 1;  // 2 slots
  auto loader = open(o);
  ASSERT_TRUE(loader);
  std::vector<Batch> kept;
  for (;;) {
    auto batch = loader->next();
    ASSERT_TRUE(batch.ok()) << batch.status().message();
    if (!batch->has_value()) break;
    kept.push_back(std::move(**batch));
    EXPECT_TRUE(within(registered(calls()), kept.back())) << "a new batch is read in pinned memory";
  }
  ASSERT_EQ(kept.size(), 5u);
  const LoaderStats stats = loader->stats();
  EXPECT_EQ(stats.copied_batches, 3u) << "2 slots: every batch but the last two was copied aside";
  EXPECT_TRUE(stats.pinned);
  const auto ranges = registered(calls());
  EXPECT_EQ(ranges.size(), 2u) << log_text();
  for (std::size_t i = 0; i < kept.size(); ++i) EXPECT_EQ(within(ranges, kept[i]), i >= 3) << i;
}

TEST_F(PinnedMemoryTest, BatchesAreTheSamePinnedOrNot) {
  auto plain = open(options(-1));
  auto pinned = open(options(1));
  ASSERT_TRUE(plain && pinned);
  EXPECT_FALSE(plain->stats().pinned);
  EXPECT_TRUE(pinned->stats().pinned);
  const testing::Batches a = testing::read_pass(*plain), b = testing::read_pass(*pinned);
  EXPECT_EQ(a.size(), 5u);
  EXPECT_EQ(testing::first_difference(b, a), "");
}

TEST_F(PinnedMemoryTest, OffTouchesNoCuda) {
  auto loader = open(options(-1));
  ASSERT_TRUE(loader);
  EXPECT_FALSE(loader->stats().pinned);
  EXPECT_TRUE(calls().empty()) << log_text();
}

TEST_F(PinnedMemoryTest, NoSuchDeviceFallsBackToOrdinaryMemory) {
  auto loader = open(options(2));  // the fake has devices 0 and 1
  ASSERT_TRUE(loader);
  EXPECT_FALSE(loader->stats().pinned);
  EXPECT_EQ(testing::exactly_once(testing::indices_of(testing::read_pass(*loader)), 24), "");
  const std::vector<Call> log = calls();
  EXPECT_TRUE(find(log, "cudaSetDevice").empty()) << log_text();
  EXPECT_TRUE(find(log, "cudaHostRegister").empty()) << log_text();
  EXPECT_TRUE(contexts(log).empty()) << log_text();
}

TEST_F(PinnedMemoryTest, NoDeviceAtAllFallsBack) {
  const ScopedEnv none("FAKE_CUDA_DEVICES", "0");
  std::vector<std::byte> memory(8192);
  const PinnedRegistration pinned = PinnedRegistration::pin(memory, 0, fake_libraries());
  EXPECT_FALSE(pinned.pinned());
  EXPECT_NE(pinned.summary().find("no CUDA device"), std::string::npos) << pinned.summary();
  auto loader = open(options(0));
  ASSERT_TRUE(loader);
  EXPECT_FALSE(loader->stats().pinned);
  EXPECT_TRUE(contexts(calls()).empty()) << log_text();
}

TEST_F(PinnedMemoryTest, MissingRuntimeLogsOneLineAndFallsBack) {
  const ScopedEnv missing("FORKFEED_CUDART", log_dir_.path() + "/no/libcudart.so");
  LoaderOptions o = options(1);
  o.log_level = "info";
  ::testing::internal::CaptureStderr();
  std::unique_ptr<Loader> loader = open(o);
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(loader);
  EXPECT_FALSE(loader->stats().pinned);
  std::vector<std::string> mentions;
  std::istringstream lines(err);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("CUDA device 1") != std::string::npos) mentions.push_back(line);
  }
  ASSERT_EQ(mentions.size(), 1u) << err;
  EXPECT_NE(mentions[0].find("[info]"), std::string::npos) << mentions[0];
  EXPECT_NE(mentions[0].find("no CUDA runtime could be loaded"), std::string::npos) << mentions[0];
  EXPECT_NE(mentions[0].find("/no/libcudart.so"), std::string::npos) << mentions[0];
  EXPECT_EQ(testing::exactly_once(testing::indices_of(testing::read_pass(*loader)), 24), "");
  EXPECT_TRUE(calls().empty()) << log_text();
}

TEST_F(PinnedMemoryTest, CudaErrorNamesTheDeviceAndFallsBack) {
  const ScopedEnv fail("FAKE_CUDA_FAIL", "cudaHostRegister");
  std::vector<std::byte> memory(8192);
  {
    const PinnedRegistration pinned = PinnedRegistration::pin(memory, 1, fake_libraries());
    EXPECT_FALSE(pinned.pinned());
    EXPECT_NE(pinned.summary().find("CUDA device 1"), std::string::npos) << pinned.summary();
    EXPECT_NE(pinned.summary().find("cudaHostRegister"), std::string::npos) << pinned.summary();
    EXPECT_NE(pinned.summary().find("unknown error (CUDA error 999)"), std::string::npos) << pinned.summary();
  }
  EXPECT_TRUE(find(calls(), "cudaHostUnregister").empty()) << "unregistered what was never registered";
  auto loader = open(options(1));
  ASSERT_TRUE(loader);
  EXPECT_FALSE(loader->stats().pinned);
}

// The caller's device, made current again only if it has a primary context.
TEST_F(PinnedMemoryTest, RestoresAPreviousDeviceThatHasAContext) {
  ASSERT_EQ(fake().set_device(0), 0);  // the trainer uses device 0
  std::vector<std::byte> memory(8192);
  {
    const PinnedRegistration pinned = PinnedRegistration::pin(memory, 1, fake_libraries());
    ASSERT_TRUE(pinned.pinned()) << pinned.summary();
    int current = -1;
    fake().get_device(&current);
    EXPECT_EQ(current, 0);
  }
  int current = -1;
  fake().get_device(&current);
  EXPECT_EQ(current, 0);
  const std::vector<Call> log = calls();
  const auto reg = find(log, "cudaHostRegister"), unreg = find(log, "cudaHostUnregister");
  ASSERT_EQ(reg.size(), 1u);
  ASSERT_EQ(unreg.size(), 1u);
  EXPECT_EQ(log[reg[0]].device, 1);
  EXPECT_EQ(log[unreg[0]].device, 1);
  ASSERT_LT(unreg[0] + 1, log.size());
  EXPECT_EQ(log[unreg[0] + 1].function, "cudaSetDevice");
  EXPECT_EQ(log[unreg[0] + 1].args.at(0), "0");
}

TEST_F(PinnedMemoryTest, LeavesAPreviousDeviceWithoutAContextAlone) {
  std::vector<std::byte> memory(8192);
  {
    const PinnedRegistration pinned = PinnedRegistration::pin(memory, 1, fake_libraries());
    ASSERT_TRUE(pinned.pinned()) << pinned.summary();
  }
  const std::vector<Call> log = calls();
  for (std::size_t at : find(log, "cudaSetDevice")) EXPECT_EQ(log[at].args.at(0), "1") << log_text();
  EXPECT_EQ(contexts(log), std::vector<int>{1}) << log_text();
  int current = -1;
  fake().get_device(&current);
  EXPECT_EQ(current, 1);
}

TEST_F(PinnedMemoryTest, UnpinsOnAnotherThreadWithItsDeviceSet) {
  std::vector<std::byte> memory(8192);
  std::optional<PinnedRegistration> pinned = PinnedRegistration::pin(memory, 1, fake_libraries());
  ASSERT_TRUE(pinned->pinned()) << pinned->summary();
  std::thread([&] { pinned.reset(); }).join();
  const std::vector<Call> log = calls();
  const auto unreg = find(log, "cudaHostUnregister");
  ASSERT_EQ(unreg.size(), 1u) << log_text();
  EXPECT_EQ(log[unreg[0]].device, 1) << log_text();
  EXPECT_EQ(contexts(log), std::vector<int>{1}) << log_text();
}

TEST(PinnedMemoryOptionsTest, DeviceMustBeMinusOneOrAnOrdinal) {
  LoaderOptions o;
  o.image_folder = "/nonexistent";
  o.pin_memory_device = -2;
  const Status s = validate(o);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("pin_memory_device"), std::string::npos) << s.message();
  o.pin_memory_device = 7;
  EXPECT_TRUE(validate(o).ok());
}

}  // namespace
}  // namespace forkfeed
