// StreamSession on its own: one end of a socketpair is the client, speaking the wire
// protocol; no forkfeedd process and no server. Requests get replies (or errors that keep
// the connection), open_stream hands over the fds of a working stream, and close, the
// daemon's stop or a flood of bad requests end the session.
//
// Over 300 lines on purpose: one case per request and per way a session ends, over the
// same socketpair fixture; splitting it would copy the fixture.
#include "daemon/stream_session.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "protocol/stream_request.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/processes.h"

namespace forkfeed {
namespace {

using json = nlohmann::json;

constexpr std::uint32_t kImages = 12;
constexpr std::uint32_t kBatchSize = 4;
// Bad requests a connection may send; the last of them closes it (the daemon's limit).
constexpr int kMaxBadRequests = 64;
// Bounds that only a hung session reaches.
constexpr int kWaitMs = 60000;
constexpr auto kWait = std::chrono::milliseconds(kWaitMs);

class StreamSessionTest : public testing::DaemonSuite<StreamSessionTest> {
 protected:
  static void SetUpTestSuite() { make_dataset(kImages, 2, 11, 40, 70); }

  void SetUp() override {
    stop_ = UniqueFd(::eventfd(0, EFD_CLOEXEC));
    ASSERT_TRUE(stop_.valid());
    config_.log_level = "error";
    config_.datasets["cats"] = DatasetSource{.image_folder = root_};
    config_.datasets["dogs"] = DatasetSource{.image_folder = root_};
    int fds[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    client_ = UniqueFd(fds[1]);
    // A reply that never comes fails the test instead of hanging it.
    const timeval timeout{kWaitMs / 1000, 0};
    ::setsockopt(client_.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    auto pool = WorkerPool::open({.workers = 1, .log_level = "error"});
    ASSERT_TRUE(pool.ok()) << pool.status().message();
    context_ = SessionContext{&config_, &admission_, stop_.get(), std::move(pool).value(), [] {
                                return json{{"daemon", "stats"}};
                              }};
    session_ = std::make_unique<StreamSession>(7, Listener::Peer{UniqueFd(fds[0]), ::getpid(), ::getuid()},
                                               context_);
  }

  void TearDown() override {
    client_.reset();   // the session sees its client go and ends
    session_.reset();  // joins its thread
  }

  static Limits limits() {
    Limits l;
    l.max_workers = 4;
    l.max_arena_bytes = 256 << 20;
    return l;
  }

  // Sends a request and reads the frame that answers it.
  Frame exchange(MessageType type, const std::string& payload) {
    const Status sent = send_frame(client_.get(), type, payload);
    EXPECT_TRUE(sent.ok()) << sent.message();
    auto frame = recv_frame(client_.get(), true);
    EXPECT_TRUE(frame.ok()) << "no answer to a request of type " << static_cast<int>(type) << ": "
                            << frame.status().message();
    return frame.ok() ? std::move(frame).value() : Frame{};
  }
  // A request's reply body; `fds` gets the fds that came with it.
  json ask(MessageType type, const std::string& payload, std::vector<UniqueFd>* fds = nullptr) {
    Frame frame = exchange(type, payload);
    EXPECT_EQ(frame.type, static_cast<std::uint16_t>(MessageType::kReply)) << frame.payload;
    const json body = json::parse(frame.payload, nullptr, false);
    EXPECT_TRUE(body.is_object() && body.contains("ok") && body["ok"].is_boolean()) << frame.payload;
    if (fds != nullptr) *fds = std::move(frame.fds);
    return body.is_object() ? body : json::object({{"ok", false}, {"error", "not a reply"}});
  }

  static std::string open_request(const std::string& dataset = "") {
    LoaderOptions options = stream_options(1, kBatchSize);
    if (!dataset.empty()) options.image_folder.clear();
    return to_json(StreamRequest{StreamOptions{options, dataset}, {}}).dump();
  }
  // Opens a stream; its reply, and its four fds in `fds`.
  json open(std::vector<UniqueFd>& fds) {
    const json reply = ask(MessageType::kOpenStream, open_request(), &fds);
    EXPECT_TRUE(reply.value("ok", false)) << reply.dump();
    return reply;
  }

  // The connection still takes requests.
  void expect_serving() {
    const json hello = ask(MessageType::kHello, "{}");
    EXPECT_TRUE(hello.value("ok", false)) << "the connection was dropped: " << hello.dump();
  }
  // The session closed the connection: the client reads its end.
  void expect_closed() {
    auto frame = recv_frame(client_.get(), false);
    ASSERT_FALSE(frame.ok()) << "a frame of type " << frame->type
                             << " instead of the end: " << frame->payload;
    EXPECT_TRUE(frame.status().message().starts_with("connection closed")) << frame.status().message();
  }
  void expect_finished() {
    EXPECT_TRUE(testing::eventually([&] { return session_->finished(); }, kWait))
        << "the session never ended";
    EXPECT_TRUE(session_->stats().is_null())
        << "a finished session still has a stream: " << session_->stats();
  }

  testing::HangGuard guard_{240, "a StreamSessionTest"};
  DaemonConfig config_;
  Admission admission_{limits()};
  UniqueFd stop_;
  SessionContext context_{};
  UniqueFd client_;
  std::unique_ptr<StreamSession> session_;
};

void expect_error(const json& reply, const std::string& text) {
  EXPECT_FALSE(reply.value("ok", true)) << reply.dump();
  ASSERT_TRUE(reply.contains("error") && reply["error"].is_string()) << reply.dump();
  EXPECT_NE(reply["error"].get<std::string>().find(text), std::string::npos) << reply.dump();
}

TEST_F(StreamSessionTest, HelloAnswersWithTheProtocolVersion) {
  const json reply = ask(MessageType::kHello, "{}");
  EXPECT_EQ(reply, (json{{"ok", true}, {"protocol", kProtocolVersion}}));
  EXPECT_FALSE(session_->finished());
  EXPECT_TRUE(session_->stats().is_null());
  EXPECT_TRUE(session_->handshake().pending()) << "a hello opened no stream";
}

TEST_F(StreamSessionTest, StatsWithoutAStreamAreTheDaemons) {
  const json reply = ask(MessageType::kStats, "{}");
  EXPECT_EQ(reply, (json{{"ok", true}, {"daemon", "stats"}}));
}

TEST_F(StreamSessionTest, ABodyThatIsNoJsonObjectIsRefusedAndTheConnectionStays) {
  for (const std::string body : {"[1, 2]", "\"text\"", "not json", ""}) {
    expect_error(ask(MessageType::kHello, body), "must be a JSON object");
    expect_serving();
  }
}

TEST_F(StreamSessionTest, AnUnknownMessageTypeIsRefusedAndTheConnectionStays) {
  expect_error(ask(static_cast<MessageType>(77), "{}"), "unknown message type 77");
  expect_serving();
  // A daemon's own message types are no requests either.
  expect_error(ask(MessageType::kReply, "{}"), "unknown message type");
  expect_serving();
}

TEST_F(StreamSessionTest, SeekBeforeOpenStreamIsRefused) {
  const json reply = ask(MessageType::kSeek, R"({"epoch": 0, "position": 0})");
  expect_error(reply, "open a stream before seeking");
  EXPECT_EQ(reply.value("code", ""), "invalid_argument");
  expect_serving();
}

TEST_F(StreamSessionTest, OpenStreamRepliesWithTheStreamAndItsFds) {
  std::vector<UniqueFd> fds;
  const json reply = open(fds);
  EXPECT_EQ(reply.value("generation", 0u), 1u);
  EXPECT_EQ(reply.value("epoch", 99u), 0u);
  EXPECT_EQ(reply.value("position", 99u), 0u);
  EXPECT_EQ(reply.value("batches_per_epoch", 0u), (kImages + kBatchSize - 1) / kBatchSize);
  EXPECT_EQ(reply.value("workers", 0u), 1u);
  EXPECT_EQ(reply.value("slots", 0u), 1u * 2 + 1) << "workers x prefetch + 1";
  EXPECT_EQ(reply.value("size", 0u), 16u);
  EXPECT_EQ(reply.value("dtype", ""), "uint8");
  ASSERT_TRUE(reply.contains("order"));
  EXPECT_TRUE(reply["order"].is_object()) << reply.dump();
  ASSERT_EQ(fds.size(), 4u) << "arena, channel memfd, delivered and returned eventfds";
  for (const UniqueFd& fd : fds) EXPECT_TRUE(fd.valid());
  struct stat arena {};
  ASSERT_EQ(::fstat(fds[0].get(), &arena), 0);
  EXPECT_EQ(static_cast<std::uint64_t>(arena.st_size), reply.value("arena_bytes", 0u));

  const json stats = session_->stats();
  ASSERT_TRUE(stats.is_object()) << "no stats for an open stream";
  EXPECT_EQ(stats.value("stream", 0u), 7u);
  EXPECT_EQ(stats.value("workers", 0u), 1u);
  EXPECT_EQ(static_cast<pid_t>(stats.value("pid", 0)), ::getpid());
  EXPECT_EQ(admission_.totals().streams, 1u) << "the stream holds no ticket";

  // Stats on the connection are now the stream's, and seeking works.
  EXPECT_EQ(ask(MessageType::kStats, "{}").value("stream", 0u), 7u);
  // Only now for sure: the session ends a request's phase after sending its reply.
  EXPECT_FALSE(session_->handshake().pending()) << "a streaming connection is still pending";
  const json seek = ask(MessageType::kSeek, R"({"epoch": 1, "position": 1})");
  EXPECT_TRUE(seek.value("ok", false)) << seek.dump();
  EXPECT_EQ(seek.value("generation", 0u), 2u);
}

TEST_F(StreamSessionTest, ASecondOpenStreamOnOneConnectionIsRefused) {
  std::vector<UniqueFd> fds;
  open(fds);
  std::vector<UniqueFd> more;
  expect_error(ask(MessageType::kOpenStream, open_request(), &more), "already open on this connection");
  EXPECT_TRUE(more.empty());
  EXPECT_EQ(admission_.totals().streams, 1u);
  EXPECT_EQ(ask(MessageType::kStats, "{}").value("stream", 0u), 7u) << "the first stream is gone";
}

TEST_F(StreamSessionTest, AnUnknownDatasetNameIsRefusedNamingTheKnownOnes) {
  std::vector<UniqueFd> fds;
  const json reply = ask(MessageType::kOpenStream, open_request("birds"), &fds);
  expect_error(reply, "no dataset named 'birds'; it knows cats, dogs");
  EXPECT_EQ(reply.value("code", ""), "not_found");
  EXPECT_TRUE(fds.empty());
  EXPECT_TRUE(session_->stats().is_null());
  EXPECT_EQ(admission_.totals().streams, 0u);
  EXPECT_TRUE(session_->handshake().pending()) << "a refused open_stream left the handshake";
  expect_serving();
  // A name it knows opens.
  const json named = ask(MessageType::kOpenStream, open_request("dogs"), &fds);
  EXPECT_TRUE(named.value("ok", false)) << named.dump();
  EXPECT_EQ(fds.size(), 4u);
}

TEST_F(StreamSessionTest, DeliveriesOfAPassArriveInTheConsumerChannel) {
  std::vector<UniqueFd> fds;
  const json reply = open(fds);
  ASSERT_EQ(fds.size(), 4u);
  const std::uint64_t arena_bytes = reply.value("arena_bytes", 0u);
  auto channel = ConsumerChannel::attach(std::move(fds[1]), std::move(fds[2]), std::move(fds[3]));
  ASSERT_TRUE(channel.ok()) << channel.status().message();

  std::vector<std::uint64_t> positions;
  std::uint32_t samples = 0;
  bool ended = false;
  while (!ended && positions.size() <= kImages) {
    pollfd p{channel->delivered_fd(), POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, kWaitMs), 1) << "no delivery after " << positions.size() << " batches";
    ConsumerChannel::clear(channel->delivered_fd());
    while (auto d = channel->block().deliveries.try_pop()) {
      ASSERT_EQ(d->generation, 1u);
      ASSERT_EQ(d->epoch, 0u);
      if (d->kind == DeliveryKind::kEndOfPass) {
        ended = true;
        break;
      }
      ASSERT_EQ(d->kind, DeliveryKind::kBatch) << d->message;
      positions.push_back(d->index);
      samples += d->count;
      EXPECT_LE(d->pixels_offset + d->pixel_bytes, arena_bytes) << "a batch outside the arena";
      EXPECT_EQ(d->pixel_bytes, std::uint64_t{d->count} * 16 * 16 * 3);
      // Done with it: the slot goes back, so the loader can fill it again.
      ASSERT_TRUE(channel->block().returns.try_push(SlotReturn{d->handle, 0, d->tag}));
      channel->ring_returned();
    }
  }
  EXPECT_TRUE(ended) << "the pass never ended";
  EXPECT_EQ(positions, (std::vector<std::uint64_t>{0, 1, 2}));
  EXPECT_EQ(samples, kImages);

  // The stream goes on into the next epoch while it has free slots, and no further: kept
  // (not returned), epoch 1's three batches take all three slots and the stream stops.
  std::vector<std::uint64_t> next_positions;
  while (next_positions.size() < 3) {
    pollfd p{channel->delivered_fd(), POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, kWaitMs), 1) << "no delivery of epoch 1 after " << next_positions.size();
    ConsumerChannel::clear(channel->delivered_fd());
    while (auto d = channel->block().deliveries.try_pop()) {
      ASSERT_EQ(d->kind, DeliveryKind::kBatch) << d->message;
      ASSERT_EQ(d->epoch, 1u);
      next_positions.push_back(d->index);
      samples += d->count;
    }
  }
  EXPECT_EQ(next_positions, (std::vector<std::uint64_t>{0, 1, 2}));
  EXPECT_EQ(samples, 2 * kImages);
  // The session publishes its stats just after a delivery; once every slot is lent they
  // cannot move.
  EXPECT_TRUE(testing::eventually([&] { return session_->stats().value("lent_slots", 0u) == 3u; }, kWait))
      << session_->stats();
  EXPECT_EQ(session_->stats().value("delivered_samples", 0u), 2 * kImages);
}

TEST_F(StreamSessionTest, CloseEndsTheSessionAndItsStream) {
  std::vector<UniqueFd> fds;
  open(fds);
  ASSERT_FALSE(session_->stats().is_null());
  const json reply = ask(MessageType::kClose, "{}");
  EXPECT_EQ(reply, (json{{"ok", true}}));
  expect_closed();
  expect_finished();
  EXPECT_EQ(admission_.totals().streams, 0u) << "the closed stream kept its ticket";
}

TEST_F(StreamSessionTest, CloseWithoutAStreamEndsTheSession) {
  EXPECT_EQ(ask(MessageType::kClose, "{}"), (json{{"ok", true}}));
  expect_closed();
  expect_finished();
}

TEST_F(StreamSessionTest, AClientThatGoesEndsTheSession) {
  std::vector<UniqueFd> fds;
  open(fds);
  client_.reset();
  expect_finished();
  EXPECT_EQ(admission_.totals().streams, 0u);
}

TEST_F(StreamSessionTest, TheDaemonStoppingSendsANoticeAndEndsTheSession) {
  std::vector<UniqueFd> fds;
  open(fds);
  const std::uint64_t one = 1;
  ASSERT_EQ(::write(stop_.get(), &one, sizeof one), static_cast<ssize_t>(sizeof one));
  auto frame = recv_frame(client_.get(), false);
  ASSERT_TRUE(frame.ok()) << "no notice: " << frame.status().message();
  EXPECT_EQ(frame->type, static_cast<std::uint16_t>(MessageType::kNotice));
  EXPECT_EQ(json::parse(frame->payload, nullptr, false), (json{{"error", "forkfeedd is shutting down"}}));
  expect_closed();
  expect_finished();
}

TEST_F(StreamSessionTest, TooManyBadRequestsCloseTheConnection) {
  for (int i = 1; i < kMaxBadRequests; ++i) {
    expect_error(ask(static_cast<MessageType>(77), "{}"), "unknown message type");
    if (::testing::Test::HasFailure()) return;
  }
  expect_serving();  // one short of the limit: still here
  expect_error(ask(MessageType::kSeek, "{}"), "too many bad requests; closing the connection");
  if (::testing::Test::HasFailure()) return;  // still open: the reads below would only wait
  expect_closed();
  expect_finished();
}

}  // namespace
}  // namespace forkfeed
