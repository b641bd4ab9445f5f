// forkfeedd and memory: a request whose dataset would take gigabytes to name (a brace
// pattern with a long folder and a large range) is refused before anything is allocated,
// and one that runs the daemon out of memory (here, under an address-space limit) gets an
// error reply naming what was being built. Either way the daemon stays up and serves.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "forkfeed/client.h"
#include "tests/testing/daemon_process.h"

namespace forkfeed {
namespace {

class DaemonMemoryTest : public testing::DaemonSuite<DaemonMemoryTest> {
 protected:
  static void SetUpTestSuite() { make_dataset(6, 2, 3, 30, 50); }
  void SetUp() override {
    daemon_ = std::make_unique<testing::DaemonProcess>(socket_path("memory-" + std::to_string(::getpid())));
  }
  // A small stream opens and delivers: the daemon is up and serving.
  void expect_serving() {
    auto client = Client::connect(daemon_->socket(), stream_options(1, 3));
    ASSERT_TRUE(client.ok()) << client.status().message();
    auto batch = (*client)->next();
    ASSERT_TRUE(batch.ok() && batch->has_value()) << (batch.ok() ? "end of pass" : batch.status().message());
  }
  std::unique_ptr<testing::DaemonProcess> daemon_;
};

TEST_F(DaemonMemoryTest, APatternNamingGigabytesIsRefusedBeforeItIsExpanded) {
  std::string folder;  // 3.8 KB in names the file system allows
  for (int i = 0; i < 19; ++i) folder += "/" + std::string(199, 'd');
  LoaderOptions o = stream_options(1, 3);
  o.image_folder.clear();
  o.shards = folder + "/s-{0..999999}.tar";  // 10^6 names of 3.8 KB: 3.8 GB
  const auto start = std::chrono::steady_clock::now();
  auto refused = Client::connect(daemon_->socket(), o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Status::Code::kInvalidArgument) << refused.status().message();
  EXPECT_NE(refused.status().message().find("MiB a shard spec may name"), std::string::npos)
      << refused.status().message().substr(0, 300);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  expect_serving();
}

TEST_F(DaemonMemoryTest, ARequestThatRunsTheDaemonOutOfMemoryGetsAnErrorReply) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer aborts on allocation failure by design; the Release build runs this";
#else
  // A manifest of a gigabyte (sparse: it costs no disk) that the daemon would read whole.
  const std::string manifest = dir_->path() + "/huge.tsv";
  std::ofstream(manifest).close();
  std::filesystem::resize_file(manifest, std::uint64_t{1} << 30);
  std::ifstream statm("/proc/" + std::to_string(daemon_->pid()) + "/statm");
  std::uint64_t pages = 0;
  statm >> pages;
  const rlim_t limit = static_cast<rlim_t>(pages * ::sysconf(_SC_PAGESIZE) + (256 << 20));
  const rlimit tight{limit, limit};
  ASSERT_EQ(::prlimit(daemon_->pid(), RLIMIT_AS, &tight, nullptr), 0);
  LoaderOptions o = stream_options(1, 3);
  o.image_folder.clear();
  o.manifest = manifest;
  auto refused = Client::connect(daemon_->socket(), o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Status::Code::kResourceExhausted) << refused.status().message();
  EXPECT_NE(refused.status().message().find("out of memory building the index of manifest " + manifest),
            std::string::npos)
      << refused.status().message();
  expect_serving();
#endif
}

}  // namespace
}  // namespace forkfeed
