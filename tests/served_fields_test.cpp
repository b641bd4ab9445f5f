// A schema's fields through forkfeedd: a Client on this host, a remote Client over UCX
// (UCX_TLS=tcp on loopback) and a fan-in that loses a daemon mid-pass each give every
// field of every sample exactly as a Loader over the same shards does; and a client never
// reads outside a slot because the daemon described its fields wrongly: a layout outside
// the slots is refused at open, a batch whose fields reach past what it delivered at
// delivery.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "forkfeed/client.h"
#include "forkfeed/loader.h"
#include "loader/loader_internals.h"
#include "plan/slot_count.h"
#include "protocol/consumer_channel.h"
#include "protocol/stream_request.h"
#include "remote/remote_wire.h"
#include "tests/testing/command.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/processes.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

using namespace std::chrono_literals;
using namespace std::string_literals;
using json = nlohmann::json;

// A caption, a label, a JSON record, a ragged array and a second view of the image.
constexpr const char* kFields = "image=jpg;png, caption=txt, label=cls, meta=json, emb=npy, view2=jpg;png";
constexpr std::uint32_t kImages = 24;  // 6 batches of 4 an epoch

class ServedFieldsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ::setenv("UCX_TLS", "tcp", 1);  // before any UCX context: the network path
    ::setenv("UCX_WARN_UNUSED_ENV_VARS", "n", 1);
    dir_ = new testing::TempDir();
    ::setenv("FORKFEED_CACHE_DIR", (dir_->path() + "/cache").c_str(), 1);
    const testing::CommandOutcome made = testing::run_command(
        {std::string(FORKFEED_BIN_DIR) + "/forkfeed-mkdata", "--images=" + std::to_string(kImages),
         "--classes=3", "--seed=9", "--min-side=40", "--max-side=80", "--out", dir_->path() + "/data",
         "--format", "wds", "--shard-size", "8", "--fields", "jpg,txt,cls,json,npy"},
        dir_->path());
    ASSERT_TRUE(made.exited && made.code == 0) << made.describe();
    shards_ = dir_->path() + "/data/shard-{000000..000002}.tar";
    token_ = dir_->path() + "/token";
    std::ofstream(token_) << "served-fields-token-of-this-suite\n";
    ::chmod(token_.c_str(), 0600);
  }
  static void TearDownTestSuite() { delete dir_; }

  static LoaderOptions options() {
    LoaderOptions o = testing::small_options("", 2, 4);
    o.shards = shards_;
    o.fields = kFields;
    o.seed = 3;
    return o;
  }
  static StreamOptions remote_options() {
    StreamOptions s;
    s.loader = options();
    s.loader.workers = 1;
    s.loader.shards.clear();
    s.dataset = "fields";
    return s;
  }
  // A daemon serving the shards as "fields" to remote clients (`remote`), or to this host.
  static std::unique_ptr<testing::DaemonProcess> start(const std::string& name, bool remote) {
    std::vector<std::string> args{"--max-workers", "1"};
    if (remote) {
      for (const std::string& a :
           {"--dataset"s, "fields=shards:" + shards_, "--listen"s, "127.0.0.1:0"s, "--token-file"s, token_}) {
        args.push_back(a);
      }
    }
    return std::make_unique<testing::DaemonProcess>(dir_->path() + "/" + name + ".sock", args);
  }

  static inline testing::TempDir* dir_ = nullptr;
  static inline std::string shards_, token_;
};

// Every field of `got` equal to `want`'s, sample by sample, byte by byte.
void expect_same_fields(const Batch& got, const Batch& want, const std::string& what) {
  SCOPED_TRACE(what + ", batch " + std::to_string(want.index()) + " of epoch " +
               std::to_string(want.epoch()));
  ASSERT_EQ(got.epoch(), want.epoch());
  ASSERT_EQ(got.index(), want.index());
  ASSERT_EQ(got.size(), want.size());
  ASSERT_EQ(got.bytes(), want.bytes());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.bytes()), 0) << "pixels";
  EXPECT_TRUE(std::equal(got.labels().begin(), got.labels().end(), want.labels().begin())) << "labels";
  EXPECT_TRUE(
      std::equal(got.sample_indices().begin(), got.sample_indices().end(), want.sample_indices().begin()));
  ASSERT_EQ(want.fields().size(), 7u);  // the six of the schema and the keys
  ASSERT_EQ(got.fields().size(), want.fields().size()) << "a Client's batch lacks fields";
  for (std::size_t k = 0; k < want.fields().size(); ++k) {
    const FieldView& g = got.fields()[k];
    const FieldView& w = want.fields()[k];
    SCOPED_TRACE("field " + std::string(w.name()));
    ASSERT_EQ(g.name(), w.name());
    ASSERT_EQ(g.kind(), w.kind());
    ASSERT_EQ(g.element(), w.element());
    ASSERT_EQ(g.ragged(), w.ragged());
    ASSERT_EQ(g.size(), w.size());
    for (std::size_t i = 0; i < w.size(); ++i) {
      EXPECT_EQ(g.present(i), w.present(i)) << "sample " << i;
      const auto gb = g.bytes(i), wb = w.bytes(i);
      ASSERT_EQ(gb.size(), wb.size()) << "sample " << i;
      EXPECT_EQ(std::memcmp(gb.data(), wb.data(), wb.size()), 0) << "sample " << i;
      EXPECT_TRUE(std::ranges::equal(g.shape(i), w.shape(i))) << "sample " << i;
      EXPECT_EQ(g.element(i), w.element(i)) << "sample " << i;
    }
  }
}

// Reads `count` batches of each, across epoch ends, and compares them as they come.
template <typename Source>
void expect_same(Source& client, Loader& loader, std::size_t count, const std::string& what) {
  std::size_t read = 0;
  while (read < count) {
    auto got = client.next();
    auto want = loader.next();
    ASSERT_TRUE(got.ok()) << what << ": " << got.status().message();
    ASSERT_TRUE(want.ok()) << want.status().message();
    ASSERT_EQ(got->has_value(), want->has_value()) << what << ": the pass ends elsewhere";
    if (!want->has_value()) continue;  // the end of an epoch; the next call starts the next
    expect_same_fields(**got, **want, what);
    if (::testing::Test::HasFatalFailure()) return;
    read += 1;
  }
}

TEST_F(ServedFieldsTest, AClientThroughForkfeeddGivesEveryFieldOfEverySampleAsALoaderDoes) {
  testing::HangGuard guard(120, "ServedFieldsTest.Local");
  auto daemon = start("local", false);
  auto loader = testing::open_loader(options());
  ASSERT_TRUE(loader);
  auto client = Client::connect(daemon->socket(), options());
  ASSERT_TRUE(client.ok()) << client.status().message();
  expect_same(**client, *loader, 2 * kImages / 4, "through forkfeedd");
}

// What a schema's fields add to the slots is known once the index is (a text field's
// region holds its largest batch): a Loader of its own charges it against half of the
// machine's memory, a forkfeedd stream against its admission's limits (it used to pass
// unweighed), and before any worker starts.
TEST_F(ServedFieldsTest, TheFieldsRegionsAreChargedToForkfeeddsLimits) {
  testing::HangGuard guard(120, "ServedFieldsTest.Limits");
  auto resolved = StreamPlan::of(options());
  ASSERT_TRUE(resolved.ok()) << resolved.status().message();
  std::uint64_t field_bytes = 0;
  std::string what;
  auto refused =
      LoaderInternals::open(*resolved, {}, nullptr, [&](std::uint64_t bytes, const std::string& largest) {
        field_bytes = bytes;
        what = largest;
        EXPECT_TRUE(testing::children_of(::getpid()).empty())
            << "workers started before the fields were weighed";
        return Status::ResourceExhausted("refused by the test");
      });
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(), "refused by the test");
  ASSERT_GT(field_bytes, 0u);
  EXPECT_EQ(what.rfind("field '", 0), 0u) << what;

  const Status over_memory = memory_budget(resolved->options())(slot_memory_limit(), what);
  EXPECT_EQ(over_memory.code(), Status::Code::kResourceExhausted);
  EXPECT_NE(over_memory.message().find("over half of this machine's"), std::string::npos)
      << over_memory.message();
  EXPECT_NE(over_memory.message().find(what), std::string::npos) << over_memory.message();

  const std::uint64_t needed = arena_batch_bytes(resolved->options()) + field_bytes;
  {
    testing::DaemonProcess tight(
        dir_->path() + "/tight.sock",
        {"--max-workers", "1", "--max-stream-arena-bytes", std::to_string(needed - 1)});
    auto client = Client::connect(tight.socket(), options());
    ASSERT_FALSE(client.ok()) << "the fields' regions were not counted";
    for (const std::string& part : {"with its fields ("s + what, "max_stream_arena_bytes"s}) {
      EXPECT_NE(client.status().message().find(part), std::string::npos) << client.status().message();
    }
  }
  testing::DaemonProcess fits(dir_->path() + "/fits.sock",
                              {"--max-workers", "1", "--max-stream-arena-bytes", std::to_string(needed)});
  auto client = Client::connect(fits.socket(), options());
  ASSERT_TRUE(client.ok()) << client.status().message();
  auto batch = (*client)->next();
  ASSERT_TRUE(batch.ok() && batch->has_value()) << (batch.ok() ? "no batch" : batch.status().message());
}

TEST_F(ServedFieldsTest, ARemoteClientGivesEveryFieldOfEverySampleAsALoaderDoes) {
  testing::HangGuard guard(120, "ServedFieldsTest.Remote");
  auto daemon = start("remote", true);
  auto loader = testing::open_loader(options());
  ASSERT_TRUE(loader);
  auto client = Client::connect(RemoteDaemon{testing::remote_address(*daemon), token_}, remote_options());
  ASSERT_TRUE(client.ok()) << client.status().message();
  expect_same(**client, *loader, 2 * kImages / 4, "over UCX");
}

TEST_F(ServedFieldsTest, AFanInThatLosesADaemonKeepsEveryField) {
  testing::HangGuard guard(180, "ServedFieldsTest.FanIn");
  // Killed before the first batch came (its wanted batches still in the making) and mid-pass.
  for (const std::size_t after : {0u, 3u}) {
    SCOPED_TRACE("killed after " + std::to_string(after) + " batches");
    auto d0 = start("fan0", true);
    auto d1 = start("fan1", true);
    auto loader = testing::open_loader(options());
    ASSERT_TRUE(loader);
    auto client = Client::connect(std::vector<RemoteDaemon>{{testing::remote_address(*d0), token_},
                                                            {testing::remote_address(*d1), token_}},
                                  remote_options());
    ASSERT_TRUE(client.ok()) << client.status().message();
    expect_same(**client, *loader, after, "before the kill");
    ASSERT_TRUE(d0->signal_and_wait(SIGKILL, 5s));
    expect_same(**client, *loader, 2 * kImages / 4 - after, "after the kill");
    ASSERT_FALSE((*client)->daemons()[0].up) << "the client never saw the killed daemon go";
  }
}

// The open_stream reply of a stream of two fields, as forkfeedd writes it.
json reply_with_fields(SlotFields fields, std::uint64_t slot_bytes) {
  StreamOpened o;
  o.slot_bytes = slot_bytes;
  o.order.batch_size = 4;
  o.order.dataset.samples = 1;
  o.order.dataset.names = o.order.dataset.labels = o.order.dataset.sizes = std::string(16, '0');
  o.order.dataset.ranges = std::string(8, '0');
  o.order.dataset.legacy = std::string(16, '0');
  o.fields = fields;
  return to_json(o);
}

SlotFields two_fields(std::uint64_t& end) {
  std::vector<FieldDemand> demands(2);
  demands[0].name = "caption";
  demands[0].kind = FieldKind::kText;
  demands[0].ragged = true;
  demands[0].ragged_bytes = 100;
  demands[1].name = "score";
  demands[1].kind = FieldKind::kNumber;
  demands[1].element = ElementType::kFloat64;
  auto placed = SlotFields::place(demands, 4, 64, end);
  EXPECT_TRUE(placed.ok()) << placed.status().message();
  return placed.ok() ? *placed : SlotFields{};
}

TEST(ServedFieldsLayout, TheReplyCarriesTheFieldsAndALayoutOutsideTheSlotsIsRefused) {
  std::uint64_t end = 0;
  const SlotFields fields = two_fields(end);
  auto good = parse_stream_opened(reply_with_fields(fields, end));
  ASSERT_TRUE(good.ok()) << good.status().message();
  ASSERT_EQ(good->fields.count, 2u);
  EXPECT_TRUE(same_fields(good->fields, fields));
  EXPECT_EQ(good->fields.find("caption")->capacity, 100u);

  // Slots smaller than the fields, and each kind of region moved out of them.
  EXPECT_FALSE(parse_stream_opened(reply_with_fields(fields, end - 1)).ok()) << "slots too small";
  for (const char* member : {"values", "offsets", "present", "capacity"}) {
    json reply = reply_with_fields(fields, end);
    reply["fields"][0][member] = end - 2;
    auto bad = parse_stream_opened(reply);
    ASSERT_FALSE(bad.ok()) << member << " moved outside the slot was taken";
    EXPECT_NE(bad.status().message().find("do not lie inside a slot"), std::string::npos)
        << bad.status().message();
  }
  json reply = reply_with_fields(fields, end);
  reply["fields"][1]["rank"] = 7;
  EXPECT_FALSE(parse_stream_opened(reply).ok()) << "a rank beyond the shape's";
  reply = reply_with_fields(fields, end);
  reply["fields"][1]["sample_bytes"] = 1000;
  EXPECT_FALSE(parse_stream_opened(reply).ok()) << "dense values beyond the region";
  reply = reply_with_fields(fields, end);
  reply["fields"][0]["kind"] = "poem";
  EXPECT_FALSE(parse_stream_opened(reply).ok()) << "an unknown kind";
  reply = reply_with_fields(fields, end);
  reply["fields"][0]["name"] = std::string(40, 'x');
  EXPECT_FALSE(parse_stream_opened(reply).ok()) << "a name longer than a region holds";
}

TEST(ServedFieldsLayout, ABatchWhoseFieldsReachPastWhatItDeliveredIsNotRead) {
  std::uint64_t end = 0;
  const SlotFields fields = two_fields(end);
  std::vector<std::uint64_t> words(end / 8 + 1, 0);  // the slot, 8-byte aligned
  auto* slot = reinterpret_cast<std::byte*>(words.data());
  const FieldRegion& caption = *fields.find("caption");
  auto* offsets = reinterpret_cast<std::uint64_t*>(slot + caption.offsets);
  const std::uint64_t written[] = {0, 5, 9, 20};  // three captions
  std::memcpy(offsets, written, sizeof written);
  const auto reach = fields_written_end(fields, slot, 3, end);
  ASSERT_TRUE(reach.has_value());
  EXPECT_EQ(*reach, std::max(caption.values + 20, fields.find("score")->values + 3 * 8));

  DeliveryRecord d{};
  d.count = 3;
  d.fields_bytes = *reach;
  EXPECT_EQ(batch_fields_slot(d, slot, fields), slot);
  d.fields_bytes = *reach - 1;
  EXPECT_EQ(batch_fields_slot(d, slot, fields), nullptr) << "what the samples wrote reaches past what came";
  d.fields_bytes = 0;
  EXPECT_EQ(batch_fields_slot(d, slot, fields), nullptr) << "a batch without its fields";
  d.fields_bytes = *reach;
  offsets[3] = caption.capacity + 1;
  EXPECT_EQ(batch_fields_slot(d, slot, fields), nullptr) << "an offset past the region";
  offsets[3] = 20;
  offsets[2] = 30;
  EXPECT_EQ(batch_fields_slot(d, slot, fields), nullptr) << "offsets that go back";
}

// Over the network, a batch of fields is its slot from the start to the end of what its
// samples wrote; without fields, the span stays the indices, labels and pixels.
TEST(ServedFieldsLayout, TheRemoteSpanCoversTheFieldsFromTheSlotsStart) {
  DeliveryRecord d{};
  d.kind = DeliveryKind::kBatch;
  d.count = 4;
  d.indices_offset = 4096 + 64;
  d.labels_offset = d.indices_offset + 32;
  d.pixels_offset = 4096 + 1024;
  d.pixel_bytes = 4 * 768;
  const BatchSpan plain = batch_span(d);
  EXPECT_EQ(plain.offset, d.indices_offset);
  EXPECT_EQ(plain.bytes, d.pixels_offset + d.pixel_bytes - d.indices_offset);

  d.slot_offset = 4096;
  d.fields_bytes = 1024 + 4 * 768 + 500;  // regions after the pixels
  const BatchSpan span = batch_span(d);
  EXPECT_EQ(span.offset, 4096u);
  EXPECT_EQ(span.bytes, d.fields_bytes);
  const DeliveryRecord back = from_wire(to_wire(d, 7, span), {});
  EXPECT_EQ(back.slot_offset, 0u) << "the receive slot holds the span from its start";
  EXPECT_EQ(back.fields_bytes, d.fields_bytes);
  EXPECT_EQ(back.pixels_offset, 1024u);
  EXPECT_EQ(back.indices_offset, 64u);
  EXPECT_TRUE(batch_delivery_fits(back, span.bytes, 768, 4));
  EXPECT_FALSE(batch_delivery_fits(back, span.bytes - 1, 768, 4)) << "fields past what was received";
}

}  // namespace
}  // namespace forkfeed
