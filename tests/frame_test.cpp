// Frames on a Unix stream socket: what is sent is what is read, however the bytes
// arrive; a frame that breaks the protocol, or a peer that goes away, is an error that
// says which; fds travel with their frame.
#include "protocol/frame.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "testing/processes.h"

namespace forkfeed {
namespace {

class FrameTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int fds[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    sender_.reset(fds[0]);
    receiver_.reset(fds[1]);
  }

  // Writes `bytes` as they are, outside send_frame.
  void write_raw(const void* bytes, std::size_t length) {
    ASSERT_EQ(::write(sender_.get(), bytes, length), static_cast<ssize_t>(length));
  }
  void write_header(std::uint32_t magic, std::uint16_t version, std::uint32_t length) {
    const FrameHeader header{magic, version, static_cast<std::uint16_t>(MessageType::kReply), length, 0};
    write_raw(&header, sizeof header);
  }
  void make_nonblocking(int fd) { ASSERT_EQ(::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK), 0); }

  UniqueFd sender_;
  UniqueFd receiver_;
};

TEST_F(FrameTest, RoundTripKeepsTypeAndPayload) {
  ASSERT_TRUE(send_frame(sender_.get(), MessageType::kSeek, R"({"epoch":3,"position":7})").ok());
  ASSERT_TRUE(send_frame(sender_.get(), MessageType::kClose, "").ok());
  auto first = recv_frame(receiver_.get(), false);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->type, static_cast<std::uint16_t>(MessageType::kSeek));
  EXPECT_EQ(first->payload, R"({"epoch":3,"position":7})");
  EXPECT_TRUE(first->fds.empty());
  auto second = recv_frame(receiver_.get(), false);
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_EQ(second->type, static_cast<std::uint16_t>(MessageType::kClose));
  EXPECT_EQ(second->payload, "");
}

TEST_F(FrameTest, APayloadOfTheLimitArrivesWhole) {
  std::string payload(kMaxPayload, '\0');
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>('a' + i % 26);
  Status sent;
  // A thread: the frame may not fit in the socket's buffer until the reader drains it.
  std::thread sender([&] { sent = send_frame(sender_.get(), MessageType::kReply, payload); });
  auto frame = recv_frame(receiver_.get(), false);
  sender.join();
  ASSERT_TRUE(sent.ok()) << sent.message();
  ASSERT_TRUE(frame.ok()) << frame.status().message();
  EXPECT_EQ(frame->payload, payload);
}

TEST_F(FrameTest, AFrameArrivingAByteAtATimeIsReadWhole) {
  const std::string payload = R"({"ok":true,"stream":42})";
  const FrameHeader header{kFrameMagic, kProtocolVersion, static_cast<std::uint16_t>(MessageType::kReply),
                           static_cast<std::uint32_t>(payload.size()), 0};
  std::string bytes(reinterpret_cast<const char*>(&header), sizeof header);
  bytes += payload;
  // Whatever the reader finds at each recvmsg, one byte or many, it reads one frame.
  std::thread writer([&] {
    for (char c : bytes) {
      if (::write(sender_.get(), &c, 1) != 1) return;
    }
  });
  auto frame = recv_frame(receiver_.get(), false);
  writer.join();
  ASSERT_TRUE(frame.ok()) << frame.status().message();
  EXPECT_EQ(frame->type, static_cast<std::uint16_t>(MessageType::kReply));
  EXPECT_EQ(frame->payload, payload);
}

TEST_F(FrameTest, ASplitHeaderIsReadWhole) {
  const std::string payload = "{}";
  const FrameHeader header{kFrameMagic, kProtocolVersion, static_cast<std::uint16_t>(MessageType::kHello),
                           static_cast<std::uint32_t>(payload.size()), 0};
  write_raw(&header, 5);
  write_raw(reinterpret_cast<const char*>(&header) + 5, sizeof header - 5);
  write_raw(payload.data(), 1);
  write_raw(payload.data() + 1, 1);
  auto frame = recv_frame(receiver_.get(), false);
  ASSERT_TRUE(frame.ok()) << frame.status().message();
  EXPECT_EQ(frame->type, static_cast<std::uint16_t>(MessageType::kHello));
  EXPECT_EQ(frame->payload, payload);
}

TEST_F(FrameTest, AnOversizedPayloadIsNotSent) {
  const std::string payload(kMaxPayload + 1, 'x');
  const Status s = send_frame(sender_.get(), MessageType::kReply, payload);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find(std::to_string(kMaxPayload + 1) + " bytes is over the limit of " +
                             std::to_string(kMaxPayload)),
            std::string::npos)
      << s.message();
  make_nonblocking(receiver_.get());
  char byte;
  EXPECT_EQ(::recv(receiver_.get(), &byte, 1, 0), -1) << "a refused frame put bytes on the socket";
  EXPECT_EQ(errno, EAGAIN);
}

TEST_F(FrameTest, AnOversizedFrameIsRefusedBeforeItsPayloadIsRead) {
  write_header(kFrameMagic, kProtocolVersion, kMaxPayload + 1);
  auto frame = recv_frame(receiver_.get(), false);
  ASSERT_FALSE(frame.ok());
  EXPECT_EQ(frame.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(frame.status().message().find("message of " + std::to_string(kMaxPayload + 1) +
                                          " bytes is over the limit of " + std::to_string(kMaxPayload)),
            std::string::npos)
      << frame.status().message();
}

TEST_F(FrameTest, ABadMagicOrVersionIsRefusedWithWhatIsWrong) {
  write_header(0x12345678, kProtocolVersion, 0);
  auto magic = recv_frame(receiver_.get(), false);
  ASSERT_FALSE(magic.ok());
  EXPECT_EQ(magic.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(magic.status().message().find("bad magic"), std::string::npos) << magic.status().message();

  write_header(kFrameMagic, kProtocolVersion + 1, 0);
  auto version = recv_frame(receiver_.get(), false);
  ASSERT_FALSE(version.ok());
  EXPECT_EQ(version.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(version.status().message().find("protocol version " + std::to_string(kProtocolVersion + 1)),
            std::string::npos)
      << version.status().message();
  EXPECT_NE(version.status().message().find("one release"), std::string::npos) << version.status().message();
}

TEST_F(FrameTest, FdsTravelWithTheirFrame) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  UniqueFd read_end(pipe_fds[0]), write_end(pipe_fds[1]);
  const int sent_fds[] = {write_end.get(), read_end.get()};
  ASSERT_TRUE(send_frame(sender_.get(), MessageType::kReply, R"({"ok":true})", sent_fds).ok());
  auto frame = recv_frame(receiver_.get(), true);
  ASSERT_TRUE(frame.ok()) << frame.status().message();
  EXPECT_EQ(frame->payload, R"({"ok":true})");
  ASSERT_EQ(frame->fds.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    struct stat got {
    }, want{};
    ASSERT_EQ(::fstat(frame->fds[i].get(), &got), 0);
    ASSERT_EQ(::fstat(sent_fds[i], &want), 0);
    EXPECT_EQ(got.st_ino, want.st_ino) << "fd " << i << " is another file";
    EXPECT_NE(::fcntl(frame->fds[i].get(), F_GETFD) & FD_CLOEXEC, 0) << "a received fd is inherited by exec";
  }
  // The received write end feeds the original read end: the same pipe, in order.
  ASSERT_EQ(::write(frame->fds[0].get(), "k", 1), 1);
  char c = 0;
  ASSERT_EQ(::read(read_end.get(), &c, 1), 1);
  EXPECT_EQ(c, 'k');
}

TEST_F(FrameTest, FdsNotAcceptedAreClosed) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  UniqueFd read_end(pipe_fds[0]), write_end(pipe_fds[1]);
  const int before = testing::open_fds();
  const int sent_fds[] = {write_end.get(), read_end.get()};
  ASSERT_TRUE(send_frame(sender_.get(), MessageType::kOpenStream, "{}", sent_fds).ok());
  auto frame = recv_frame(receiver_.get(), false);
  ASSERT_TRUE(frame.ok()) << frame.status().message();
  EXPECT_TRUE(frame->fds.empty());
  EXPECT_EQ(testing::open_fds(), before) << "fds a reader did not accept stayed open";
}

TEST_F(FrameTest, TooManyFdsAreRefused) {
  const std::vector<int> fds(kMaxFrameFds + 1, sender_.get());
  const Status s = send_frame(sender_.get(), MessageType::kReply, "{}", fds);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("too many fds"), std::string::npos) << s.message();
}

TEST_F(FrameTest, APeerThatClosesBetweenFramesClosedCleanly) {
  sender_.reset();
  auto frame = recv_frame(receiver_.get(), false);
  ASSERT_FALSE(frame.ok());
  EXPECT_EQ(frame.status().code(), Status::Code::kIoError);
  EXPECT_EQ(frame.status().message(), "connection closed");
}

TEST_F(FrameTest, APeerThatClosesMidHeaderIsATruncatedMessage) {
  const FrameHeader header{kFrameMagic, kProtocolVersion, 1, 0, 0};
  write_raw(&header, 7);
  sender_.reset();
  auto frame = recv_frame(receiver_.get(), false);
  ASSERT_FALSE(frame.ok());
  EXPECT_EQ(frame.status().code(), Status::Code::kIoError);
  EXPECT_EQ(frame.status().message(), "connection closed in the middle of a message");
}

TEST_F(FrameTest, APeerThatClosesMidPayloadIsATruncatedMessage) {
  write_header(kFrameMagic, kProtocolVersion, 100);
  write_raw("0123456789", 10);
  sender_.reset();
  auto frame = recv_frame(receiver_.get(), false);
  ASSERT_FALSE(frame.ok());
  EXPECT_EQ(frame.status().code(), Status::Code::kIoError);
  EXPECT_EQ(frame.status().message(), "connection closed in the middle of a message");
}

TEST_F(FrameTest, SendingToAClosedPeerIsAnErrorNotSigpipe) {
  receiver_.reset();
  const Status s = send_frame(sender_.get(), MessageType::kHello, "{}");
  EXPECT_EQ(s.code(), Status::Code::kIoError) << s.message();
}

TEST_F(FrameTest, NothingYetOrHalfAFrameOnANonblockingSocketSaysWhich) {
  make_nonblocking(receiver_.get());
  auto nothing = recv_frame(receiver_.get(), false);
  ASSERT_FALSE(nothing.ok());
  EXPECT_EQ(nothing.status().code(), Status::Code::kDeadlineExceeded);
  EXPECT_EQ(nothing.status().message(), "timed out waiting for a message");

  write_header(kFrameMagic, kProtocolVersion, 10);
  write_raw("01234", 5);
  auto half = recv_frame(receiver_.get(), false);
  ASSERT_FALSE(half.ok());
  EXPECT_EQ(half.status().code(), Status::Code::kDeadlineExceeded);
  EXPECT_NE(half.status().message().find("truncated message"), std::string::npos) << half.status().message();
}

}  // namespace
}  // namespace forkfeed
