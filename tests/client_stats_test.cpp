// What a Client reports and holds is its caller's, as a Loader's with the same options:
// skipped samples count the batches the caller consumed, not those forkfeedd prefetched;
// a pass that skipped every sample is the same error; and a stream's batch slots follow
// its own options, not the size of the daemon's pool.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "forkfeed/client.h"
#include "forkfeed/loader.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

constexpr std::uint32_t kGood = 20;
constexpr std::uint32_t kBad = 4;  // two per class, first in index order

class ClientStatsTest : public testing::DaemonSuite<ClientStatsTest> {
 protected:
  static void SetUpTestSuite() {
    make_dataset(kGood, 2, 7, 40, 70);
    for (const auto& entry : std::filesystem::directory_iterator(root_)) {
      for (int b = 0; b < 2; ++b)
        std::ofstream(entry.path() / ("0_bad_" + std::to_string(b) + ".jpg")) << "no image\n";
    }
  }

  // Unshuffled: the bad files lead each epoch, so a daemon that runs ahead into the next
  // epoch has skipped some of them before its caller asked.
  static LoaderOptions options() {
    LoaderOptions o = stream_options(2, 4);
    o.on_error = OnError::kSkip;
    o.shuffle = false;
    o.log_level = "off";
    return o;
  }

  static std::uint64_t daemon_skips(const std::string& socket) {
    const nlohmann::json stats = testing::daemon_stats(socket);
    if (!stats.contains("streams") || stats["streams"].size() != 1) return 0;
    return stats["streams"][0].value("skipped_samples", std::uint64_t{0});
  }
};

// The reported case: a Client counted 12 skipped samples in an epoch where a Loader on the
// same files counted 10; the extra were in batches prefetched and never delivered.
TEST_F(ClientStatsTest, SkippedSamplesFollowWhatTheCallerConsumed) {
  testing::HangGuard guard(120, "ClientStatsTest.SkippedSamplesFollowWhatTheCallerConsumed");
  auto loader = testing::open_loader(options());
  ASSERT_TRUE(loader);
  testing::read_pass(*loader);
  ASSERT_EQ(loader->stats().skipped_samples, kBad);

  testing::DaemonProcess daemon(socket_path("skips"), {"--max-workers", "2"});
  auto client = Client::connect(daemon.socket(), options());
  ASSERT_TRUE(client.ok()) << client.status().message();
  for (std::uint64_t epoch = 1; epoch <= 2; ++epoch) {
    SCOPED_TRACE("epoch " + std::to_string(epoch - 1));
    const testing::Batches pass = testing::read_pass(**client);
    ASSERT_FALSE(pass.empty());
    // The daemon goes on into the next epoch, whose first batches hold bad files.
    EXPECT_TRUE(testing::eventually([&] { return daemon_skips(daemon.socket()) > epoch * kBad; },
                                    std::chrono::seconds(30)))
        << "the daemon did not run ahead";
    auto stats = (*client)->stats();
    ASSERT_TRUE(stats.ok()) << stats.status().message();
    EXPECT_EQ(stats->skipped_samples, epoch * kBad) << "as a Loader counts them: those the caller passed";
    EXPECT_EQ(stats->delivered_samples, epoch * kGood);
  }
}

// A Client carries a schema's fields (served_fields_test); what a Loader refuses of them
// it refuses too, with the Loader's words: fields of an ImageFolder.
TEST_F(ClientStatsTest, FieldsALoaderRefusesAreRefusedThroughTheDaemonToo) {
  testing::DaemonProcess daemon(socket_path("fields"), {"--max-workers", "1"});
  LoaderOptions o = options();
  o.fields = "image=jpg, caption=txt";
  auto loader = Loader::open(o);
  ASSERT_FALSE(loader.ok());
  auto client = Client::connect(daemon.socket(), o);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), loader.status().code());
  EXPECT_NE(client.status().message().find("fields are read from WebDataset shards"), std::string::npos)
      << client.status().message();
}

// As a Loader's (skipped_samples_test): a pass of which every sample was skipped ends in
// an error naming the count, and the next call goes on with the next epoch.
TEST_F(ClientStatsTest, APassThatSkippedEverySampleIsAnErrorThroughTheDaemonToo) {
  testing::HangGuard guard(120, "ClientStatsTest.APassThatSkippedEverySample");
  testing::DaemonProcess daemon(socket_path("empty"), {"--max-workers", "2"});
  LoaderOptions o = options();
  o.size = 0;
  o.transform = "RandomCrop(100)";  // every image is 40 to 70 pixels
  auto client = Client::connect(daemon.socket(), o);
  ASSERT_TRUE(client.ok()) << client.status().message();
  for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
    auto end = (*client)->next();
    ASSERT_FALSE(end.ok()) << "epoch " << epoch << " ended as a success";
    EXPECT_EQ(end.status().code(), Status::Code::kBadData);
    EXPECT_NE(end.status().message().find("every sample of epoch " + std::to_string(epoch) +
                                          "'s pass was skipped (" + std::to_string(kGood + kBad)),
              std::string::npos)
        << end.status().message();
    EXPECT_EQ((*client)->epoch(), epoch);
    auto stats = (*client)->stats();
    ASSERT_TRUE(stats.ok());
    EXPECT_EQ(stats->skipped_samples, (epoch + 1) * (kGood + kBad));
  }
}

// The reported case: workers=2, prefetch=2 hold 5 slots in a Loader but 3 through a
// forkfeedd of --max-workers 1, which said nothing of its cap. The slots follow the
// options; the cap only bounds how many workers the stream keeps busy (Client::workers).
TEST_F(ClientStatsTest, SlotsFollowTheClientsOptionsNotTheDaemonsPoolSize) {
  testing::HangGuard guard(120, "ClientStatsTest.SlotsFollowTheClientsOptions");
  LoaderOptions o = options();
  o.on_error = OnError::kFail;
  o.image_folder = testing::make_image_folder(dir_->path() + "/good", 24, 2, 9, 40, 70);
  o.workers = 2;
  o.prefetch = 2;
  auto loader = testing::open_loader(o);
  ASSERT_TRUE(loader);
  const std::uint32_t slots = loader->stats().slots;
  ASSERT_EQ(slots, 5u);

  testing::DaemonProcess daemon(socket_path("slots"), {"--max-workers", "1"});
  auto client = Client::connect(daemon.socket(), o);
  ASSERT_TRUE(client.ok()) << client.status().message();
  EXPECT_EQ((*client)->workers(), 1u) << "the workers it keeps busy: the daemon's cap";
  auto stats = (*client)->stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->slots, slots);
  std::vector<Batch> held;
  for (std::uint32_t i = 0; i < slots; ++i) {
    auto b = (*client)->next();
    ASSERT_TRUE(b.ok() && b->has_value())
        << "batch " << i << ": " << (b.ok() ? "end of pass" : b.status().message());
    held.push_back(std::move(**b));
  }
  // Every slot held: the next batch needs the oldest copied aside, and no sooner.
  ASSERT_EQ((*client)->stats()->copied_batches, 0u);
  auto next = (*client)->next();
  ASSERT_TRUE(next.ok() && next->has_value()) << (next.ok() ? "end of pass" : next.status().message());
  EXPECT_EQ((*client)->stats()->copied_batches, 1u);
}

}  // namespace
}  // namespace forkfeed
