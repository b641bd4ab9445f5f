// forkfeedd against a hostile peer: thousands of random, mutated, truncated, oversized
// and out-of-order messages, and a client that scribbles over its consumer channel.
// Each gets an error reply or a closed connection; the daemon stays up and then serves
// a well-behaved client exactly as before.
//
// Over 300 lines on purpose: one hostile peer per case, all against the same daemon
// fixture and message generators; splitting it would copy the fixture.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>
#include <random>

#include "forkfeed/client.h"
#include "protocol/consumer_channel.h"
#include "protocol/frame.h"
#include "protocol/stream_request.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

using json = nlohmann::json;

// A raw connection whose reads give up after 10 s: a daemon that never answers fails the
// test instead of hanging it.
UniqueFd connect_to(const std::string& path) {
  UniqueFd fd = testing::connect_unix(path);
  if (!fd.valid()) return fd;
  const timeval timeout{10, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  return fd;
}

bool send_raw(int fd, const std::string& bytes) {
  return ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
}

std::string header(std::uint32_t magic, std::uint16_t version, std::uint16_t type, std::uint32_t length) {
  const FrameHeader h{magic, version, type, length, 0};
  return std::string(reinterpret_cast<const char*>(&h), sizeof h);
}

// Reads until the daemon closes the connection; false if it does not within the timeout.
bool drain_to_eof(int fd) {
  char buffer[4096];
  while (true) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n == 0) return true;
    if (n < 0) return errno == ECONNRESET;
  }
}

class DaemonFuzzTest : public testing::DaemonSuite<DaemonFuzzTest> {
 protected:
  static void SetUpTestSuite() { make_dataset(10, 2, 3, 40, 70); }

  static LoaderOptions options() { return stream_options(1, 3); }
};

// Random values of every JSON type, some of them plausible.
json random_value(std::mt19937& rng) {
  switch (rng() % 12) {
    case 0: return nullptr;
    case 1: return static_cast<bool>(rng() % 2);
    case 2: return static_cast<std::int64_t>(rng()) - (1ll << 31);
    case 3: return ~std::uint64_t{0} - rng() % 3;
    case 4: return static_cast<std::uint64_t>(rng() % 5);
    case 5: return -1.5e300;
    case 6: return std::string("bogus");
    case 7: return std::string(1000, 'a');
    case 8: return json::array({1, "two", nullptr});
    case 9: return json::object({{"epoch", 1}});
    case 10: return std::string("float32");
    default: return std::string("\xc3\xbc\x01");
  }
}

TEST_F(DaemonFuzzTest, HostileMessagesLeaveTheDaemonServing) {
  testing::HangGuard guard(240, "DaemonFuzzTest.HostileMessages");
  testing::DaemonProcess daemon(
      dir_->path() + "/fuzz.sock",
      {"--max-workers", "2", "--max-stream-arena-bytes", "64M", "--max-streams", "4"});
  std::mt19937 rng(4242);
  const json valid = to_json(StreamRequest{StreamOptions{options(), {}}, {}});
  const std::vector<std::string> keys = [&] {
    std::vector<std::string> k;
    for (const auto& [key, value] : valid.items()) k.push_back(key);
    return k;
  }();
  std::size_t sent = 0, replies = 0, closes = 0, opened = 0;
  UniqueFd fd = connect_to(daemon.socket());
  ASSERT_TRUE(fd.valid());
  auto reconnect = [&] {
    fd = connect_to(daemon.socket());
    ASSERT_TRUE(fd.valid()) << "forkfeedd stopped accepting after " << sent << " messages";
  };
  // Sends a whole frame and expects a reply (or, for a frame that breaks the protocol, a
  // reply and then the end of the connection).
  auto exchange = [&](const std::string& bytes, bool breaks_protocol) {
    ++sent;
    if (!send_raw(fd.get(), bytes)) {
      ++closes;
      reconnect();
      return;
    }
    auto reply = recv_frame(fd.get(), true);
    if (!reply.ok()) {
      const std::string& why = reply.status().message();
      ASSERT_TRUE(why.starts_with("connection closed") || why.find("reset by peer") != std::string::npos)
          << "no reply and no close after message " << sent << ": " << why;
      ++closes;
      reconnect();
      return;
    }
    ++replies;
    ASSERT_EQ(reply->type, static_cast<std::uint16_t>(MessageType::kReply));
    const json body = json::parse(reply->payload, nullptr, false);
    ASSERT_TRUE(body.is_object() && body.contains("ok")) << reply->payload;
    if (body["ok"].get<bool>() && body.contains("batches_per_epoch"))
      ++opened;  // a mutation that is still valid
    if (!body["ok"].get<bool>()) {
      ASSERT_FALSE(body.value("error", "").empty()) << "an error without a message";
    }
    if (breaks_protocol || !reply->fds.empty() || rng() % 16 == 0) {
      // A stream that opened, or a connection to abandon: start over.
      if (breaks_protocol) {
        ASSERT_TRUE(drain_to_eof(fd.get()));
      }
      reconnect();
    }
  };
  // Sends bytes that leave the daemon waiting for the rest, then hangs up.
  auto hang_up_after = [&](const std::string& bytes) {
    ++sent;
    (void)send_raw(fd.get(), bytes);
    ::shutdown(fd.get(), SHUT_WR);
    ASSERT_TRUE(drain_to_eof(fd.get())) << "the daemon kept a half-closed connection open";
    ++closes;
    reconnect();
  };
  auto frame = [](MessageType type, const std::string& payload) {
    return header(kFrameMagic, kProtocolVersion, static_cast<std::uint16_t>(type),
                  static_cast<std::uint32_t>(payload.size())) +
           payload;
  };

  for (int i = 0; i < 3000; ++i) {
    switch (rng() % 10) {
      case 0: {  // random bytes
        std::string bytes(1 + rng() % 64, '\0');
        for (char& c : bytes) c = static_cast<char>(rng());
        if (bytes.size() >= sizeof(FrameHeader) && rng() % 2 == 0) {
          exchange(header(rng(), kProtocolVersion, 1, 0), true);  // bad magic
        } else {
          hang_up_after(bytes);
        }
        break;
      }
      case 1:  // another protocol version, or over the size limit
        exchange(rng() % 2 ? header(kFrameMagic, static_cast<std::uint16_t>(2 + rng() % 100), 1, 2) + "{}"
                           : header(kFrameMagic, kProtocolVersion, 1, kMaxPayload + 1 + rng() % 1000000),
                 true);
        break;
      case 2: {  // truncated: the header promises more than comes
        const std::string payload = valid.dump();
        const std::string whole = frame(MessageType::kOpenStream, payload);
        hang_up_after(whole.substr(0, rng() % whole.size()));
        break;
      }
      case 3:  // any type, some JSON
        exchange(frame(static_cast<MessageType>(rng() % 8 == 0 ? rng() % 65536 : rng() % 6),
                       random_value(rng).dump()),
                 false);
        break;
      case 4: {  // not JSON at all
        std::string payload(rng() % 200, '\0');
        for (char& c : payload) c = static_cast<char>(rng());
        exchange(frame(static_cast<MessageType>(1 + rng() % 4), payload), false);
        break;
      }
      case 5:  // out of order: seek or stats before open
        exchange(frame(rng() % 2 ? MessageType::kSeek : MessageType::kStats,
                       json{{"epoch", random_value(rng)}, {"position", random_value(rng)}}.dump()),
                 false);
        break;
      default: {  // a valid open_stream with one to three fields mutated, or unknown ones added
        json body = valid;
        for (std::uint32_t m = 0; m < 1 + rng() % 3; ++m) {
          if (rng() % 8 == 0) {
            body["surprise" + std::to_string(rng() % 3)] = random_value(rng);
          } else if (rng() % 8 == 0) {
            body.erase(keys[rng() % keys.size()]);
          } else {
            body[keys[rng() % keys.size()]] = random_value(rng);
          }
        }
        // Keep it off real folders (a mutated path is relative and does not exist), and
        // mostly off the test's own: a stream that opens costs its workers' start-up.
        if (body.contains("image_folder") && body["image_folder"].is_string() &&
            (body["image_folder"] != valid["image_folder"] || rng() % 16 != 0)) {
          body["image_folder"] = "no-such-dir-" + std::to_string(i);
        }
        exchange(frame(MessageType::kOpenStream, body.dump()), false);
      }
    }
    ASSERT_FALSE(::testing::Test::HasFatalFailure()) << "at message " << i;
  }
  std::printf("%zu messages: %zu replies, %zu closed connections, %zu streams opened by valid mutations\n",
              sent, replies, closes, opened);
  EXPECT_TRUE(testing::alive(daemon.pid()));
  EXPECT_GT(replies, 1000u);
  EXPECT_GT(closes, 300u);

  // A well-behaved client after all that.
  auto client = Client::connect(daemon.socket(), options());
  ASSERT_TRUE(client.ok()) << client.status().message();
  const testing::Batches pass = testing::read_pass(**client);
  EXPECT_EQ(testing::exactly_once(testing::indices_of(pass), 10), "");
}

// A client that writes garbage all over its consumer channel, returns slots it never
// got, and cannot write the arena: the daemon ignores what it does not expect.
TEST_F(DaemonFuzzTest, ScribbledChannelHarmsOnlyItsOwnStream) {
  testing::HangGuard guard(120, "DaemonFuzzTest.ScribbledChannel");
  testing::DaemonProcess daemon(dir_->path() + "/scribble.sock", {"--max-workers", "2"});
  std::mt19937 rng(99);
  const json request = to_json(StreamRequest{StreamOptions{options(), {}}, {}});
  for (int round = 0; round < 8; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    UniqueFd fd = connect_to(daemon.socket());
    ASSERT_TRUE(fd.valid());
    const std::string payload = request.dump();
    ASSERT_TRUE(send_frame(fd.get(), MessageType::kOpenStream, payload).ok());
    auto reply = recv_frame(fd.get(), true);
    ASSERT_TRUE(reply.ok()) << reply.status().message();
    ASSERT_EQ(reply->fds.size(), 4u) << reply->payload;

    struct stat st {};
    ASSERT_EQ(::fstat(reply->fds[0].get(), &st), 0);
    void* writable = ::mmap(nullptr, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, reply->fds[0].get(), 0);
    EXPECT_EQ(writable, MAP_FAILED) << "the client could map the arena writable";
    if (writable != MAP_FAILED) ::munmap(writable, st.st_size);
    EXPECT_NE(::ftruncate(reply->fds[1].get(), 0), 0) << "the client could shrink the channel";

    ASSERT_EQ(::fstat(reply->fds[1].get(), &st), 0);
    auto* channel = static_cast<unsigned char*>(
        ::mmap(nullptr, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, reply->fds[1].get(), 0));
    ASSERT_NE(channel, MAP_FAILED);
    auto* block = reinterpret_cast<ChannelBlock*>(channel);
    for (int i = 0; i < 50; ++i) {
      switch (rng() % 3) {
        case 0:  // random bytes anywhere, ring indices included
          for (int b = 0; b < 64; ++b)
            channel[rng() % sizeof(ChannelBlock)] = static_cast<unsigned char>(rng());
          break;
        case 1:  // returns of slots it does not hold
          (void)block->returns.try_push(SlotReturn{static_cast<std::uint32_t>(rng()), 0, rng()});
          break;
        default:  // take deliveries and return them twice
          if (auto d = block->deliveries.try_pop()) {
            (void)block->returns.try_push(SlotReturn{d->handle, 0, d->tag});
            (void)block->returns.try_push(SlotReturn{d->handle, 0, d->tag});
          }
      }
      const std::uint64_t one = 1;
      (void)!::write(reply->fds[3].get(), &one, sizeof one);
      if (rng() % 4 == 0) {
        const json seek = {{"epoch", rng() % 3}, {"position", rng() % 6}};
        ASSERT_TRUE(send_frame(fd.get(), MessageType::kSeek, seek.dump()).ok());
        auto answer = recv_frame(fd.get(), false);
        ASSERT_TRUE(answer.ok()) << answer.status().message();
      }
    }
    ::munmap(channel, st.st_size);
  }
  EXPECT_TRUE(testing::alive(daemon.pid()));
  auto client = Client::connect(daemon.socket(), options());
  ASSERT_TRUE(client.ok()) << client.status().message();
  const testing::Batches pass = testing::read_pass(**client);
  EXPECT_EQ(testing::exactly_once(testing::indices_of(pass), 10), "");
  EXPECT_EQ(testing::children_of(daemon.pid()).size(), 2u) << "the pool lost or gained workers";
}

}  // namespace
}  // namespace forkfeed
