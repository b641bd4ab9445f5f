// Handshake: a connection without a stream is ended by the server after its deadline
// from accept, or to make room when it sits silent between requests; an open_stream
// building its loader is never cut short; once ended (or closing) nothing changes it.
// Every time is an explicit time_point: nothing here waits.
#include "daemon/handshake.h"

#include <poll.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>

#include "base/unique_fd.h"

namespace forkfeed {
namespace {

using Clock = Handshake::Clock;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;

constexpr Clock::duration kLimit = seconds(5);

class HandshakeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int fds[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds), 0);
    session_.reset(fds[0]);
    peer_.reset(fds[1]);
  }

  // True if a read on `fd` gives end of file now (without blocking).
  static bool reads_eof(int fd) {
    char byte;
    return ::recv(fd, &byte, 1, MSG_DONTWAIT) == 0;
  }
  // True if `fd` is readable (data, end of file or an error) now.
  static bool readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) == 1;
  }
  static bool can_send(int fd) {
    const char byte = 'x';
    return ::send(fd, &byte, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1;
  }

  UniqueFd session_;  // the daemon's end, the Handshake's socket
  UniqueFd peer_;     // the client's end
  const Clock::time_point accepted_ = Clock::now() - hours(1);
};

TEST_F(HandshakeTest, AFreshConnectionIsPendingAndNotEnded) {
  Handshake h(session_.get(), accepted_);
  EXPECT_TRUE(h.pending());
  EXPECT_EQ(h.ended(), Handshake::End::kNone);
  EXPECT_FALSE(readable(session_.get()));
  EXPECT_FALSE(readable(peer_.get()));
}

TEST_F(HandshakeTest, TimeOutEndsAWaitingConnectionOnceTheLimitHasPassed) {
  Handshake h(session_.get(), accepted_);
  EXPECT_FALSE(h.time_out(accepted_ + kLimit - nanoseconds(1), kLimit)) << "ended before its limit";
  EXPECT_EQ(h.ended(), Handshake::End::kNone);
  EXPECT_TRUE(h.pending());
  EXPECT_FALSE(readable(session_.get())) << "the socket was shut down by a time_out that did nothing";

  EXPECT_TRUE(h.time_out(accepted_ + kLimit, kLimit));
  EXPECT_EQ(h.ended(), Handshake::End::kTimedOut);
  EXPECT_FALSE(h.pending());
  // Waiting: the session's poll wakes with end of file, but it can still send the reason.
  EXPECT_TRUE(reads_eof(session_.get())) << "the session thread would not wake";
  EXPECT_TRUE(can_send(session_.get())) << "the reason could not be sent";
  EXPECT_FALSE(can_send(peer_.get())) << "the ended connection still takes requests";
  EXPECT_FALSE(h.time_out(accepted_ + kLimit * 2, kLimit)) << "ended twice";
}

TEST_F(HandshakeTest, TimeOutEndsAConnectionAnsweringARequest) {
  Handshake h(session_.get(), accepted_);
  ASSERT_TRUE(h.begin_request());
  EXPECT_TRUE(h.pending()) << "answering a request without a stream is pending";
  EXPECT_FALSE(h.time_out(accepted_ + kLimit - nanoseconds(1), kLimit));
  EXPECT_TRUE(h.time_out(accepted_ + kLimit, kLimit));
  EXPECT_EQ(h.ended(), Handshake::End::kTimedOut);
  EXPECT_FALSE(h.pending());
  // Answering: both directions go, so a reply blocked on a peer that reads nothing wakes.
  EXPECT_TRUE(reads_eof(peer_.get())) << "the peer did not see the end";
  EXPECT_FALSE(can_send(session_.get())) << "a blocked reply would not wake";
  EXPECT_FALSE(h.begin_opening()) << "an ended connection began opening a stream";
  EXPECT_FALSE(h.end_request(false)) << "the session was not told to close";
  EXPECT_EQ(h.ended(), Handshake::End::kTimedOut);
}

TEST_F(HandshakeTest, RepliesDoNotExtendTheDeadline) {
  Handshake h(session_.get(), accepted_);
  ASSERT_TRUE(h.begin_request());
  ASSERT_TRUE(h.end_request(false));
  EXPECT_TRUE(h.pending());
  EXPECT_TRUE(h.time_out(accepted_ + kLimit, kLimit)) << "the deadline counts from accept, not the reply";
  EXPECT_EQ(h.ended(), Handshake::End::kTimedOut);
}

TEST_F(HandshakeTest, AnOpenStreamBuildingItsLoaderIsNeverEnded) {
  Handshake h(session_.get(), accepted_);
  ASSERT_TRUE(h.begin_request());
  ASSERT_TRUE(h.begin_opening());
  EXPECT_TRUE(h.pending()) << "a stream being opened still counts as pending";
  EXPECT_FALSE(h.time_out(accepted_ + hours(100), kLimit));
  EXPECT_FALSE(h.crowd_out(accepted_ + hours(100), kLimit));
  EXPECT_EQ(h.ended(), Handshake::End::kNone);
  EXPECT_FALSE(readable(session_.get())) << "the socket was shut down under an opening stream";
  EXPECT_FALSE(readable(peer_.get()));
  ASSERT_TRUE(h.end_request(true));
  EXPECT_FALSE(h.pending());
}

TEST_F(HandshakeTest, AFailedOpenStreamGoesBackToWaiting) {
  Handshake h(session_.get(), accepted_);
  ASSERT_TRUE(h.begin_request());
  ASSERT_TRUE(h.begin_opening());
  ASSERT_TRUE(h.end_request(false));
  EXPECT_TRUE(h.pending());
  EXPECT_TRUE(h.time_out(accepted_ + kLimit, kLimit)) << "without a stream the deadline holds again";
}

TEST_F(HandshakeTest, BeginOpeningNeedsARequestInProgress) {
  Handshake h(session_.get(), accepted_);
  EXPECT_FALSE(h.begin_opening()) << "opened a stream without a request";
  EXPECT_TRUE(h.time_out(accepted_ + kLimit, kLimit)) << "a refused begin_opening changed the phase";
}

TEST_F(HandshakeTest, AStreamingConnectionIsNoLongerPendingAndNeverEnded) {
  Handshake h(session_.get(), accepted_);
  ASSERT_TRUE(h.begin_request());
  ASSERT_TRUE(h.begin_opening());
  ASSERT_TRUE(h.end_request(true));
  EXPECT_FALSE(h.pending());
  EXPECT_FALSE(h.time_out(accepted_ + hours(100), kLimit));
  EXPECT_FALSE(h.crowd_out(accepted_ + hours(100), kLimit));
  EXPECT_EQ(h.ended(), Handshake::End::kNone);
  // Later requests on the stream (seek, stats, close) go on as before.
  EXPECT_TRUE(h.begin_request());
  EXPECT_TRUE(h.end_request(false));
  EXPECT_FALSE(h.pending()) << "a request after the stream made it pending again";
  EXPECT_FALSE(h.time_out(accepted_ + hours(100), kLimit));
  EXPECT_FALSE(readable(session_.get()));
}

TEST_F(HandshakeTest, CrowdOutEndsAWaitingConnectionSilentLongEnough) {
  const Clock::duration silence = minutes(1);
  Handshake h(session_.get(), accepted_);
  EXPECT_FALSE(h.crowd_out(accepted_ + silence - nanoseconds(1), silence))
      << "crowded out before its silence";
  EXPECT_EQ(h.ended(), Handshake::End::kNone);
  EXPECT_FALSE(readable(session_.get()));
  EXPECT_TRUE(h.crowd_out(accepted_ + silence, silence));
  EXPECT_EQ(h.ended(), Handshake::End::kCrowdedOut);
  EXPECT_FALSE(h.pending());
  EXPECT_TRUE(reads_eof(session_.get())) << "the session thread would not wake";
  EXPECT_TRUE(can_send(session_.get())) << "the reason could not be sent";
  EXPECT_FALSE(h.begin_request()) << "a crowded-out connection took a request";
  EXPECT_FALSE(h.time_out(accepted_ + hours(100), kLimit)) << "ended twice";
  EXPECT_EQ(h.ended(), Handshake::End::kCrowdedOut);
}

TEST_F(HandshakeTest, CrowdOutLeavesAConnectionInTheMiddleOfARequest) {
  Handshake h(session_.get(), accepted_);
  ASSERT_TRUE(h.begin_request());
  EXPECT_FALSE(h.crowd_out(accepted_ + hours(100), seconds(1)));
  EXPECT_EQ(h.ended(), Handshake::End::kNone);
  EXPECT_FALSE(readable(peer_.get()));
  EXPECT_TRUE(h.end_request(false));
}

TEST_F(HandshakeTest, SilenceCountsFromTheLastReply) {
  const Clock::duration silence = minutes(10);
  Handshake h(session_.get(), accepted_);
  ASSERT_TRUE(h.begin_request());
  ASSERT_TRUE(h.end_request(false));
  const Clock::time_point replied = Clock::now();  // end_request's own clock read is no later
  // An hour since accept, but only just replied: not silent.
  EXPECT_FALSE(h.crowd_out(replied, silence)) << "silence counted from accept, not from the reply";
  EXPECT_EQ(h.ended(), Handshake::End::kNone);
  EXPECT_TRUE(h.crowd_out(replied + silence, silence));
  EXPECT_EQ(h.ended(), Handshake::End::kCrowdedOut);
}

TEST_F(HandshakeTest, AnEndedConnectionRefusesEveryLaterRequest) {
  Handshake h(session_.get(), accepted_);
  ASSERT_TRUE(h.crowd_out(accepted_ + minutes(1), minutes(1)));
  EXPECT_FALSE(h.begin_request());
  EXPECT_FALSE(h.begin_opening());
  EXPECT_FALSE(h.end_request(false));
  EXPECT_FALSE(h.end_request(true));
  EXPECT_EQ(h.ended(), Handshake::End::kCrowdedOut);
}

TEST_F(HandshakeTest, AClosingConnectionIsLeftAlone) {
  Handshake h(session_.get(), accepted_);
  h.closing();
  EXPECT_FALSE(h.pending());
  EXPECT_FALSE(h.time_out(accepted_ + hours(100), kLimit));
  EXPECT_FALSE(h.crowd_out(accepted_ + hours(100), kLimit));
  EXPECT_EQ(h.ended(), Handshake::End::kNone);
  // The socket may already be closed (or its number reused): it must not be touched.
  EXPECT_FALSE(readable(session_.get()));
  EXPECT_FALSE(readable(peer_.get()));
  EXPECT_TRUE(can_send(peer_.get()));
}

TEST_F(HandshakeTest, ClosingAfterTheEndKeepsTheReason) {
  Handshake h(session_.get(), accepted_);
  ASSERT_TRUE(h.time_out(accepted_ + kLimit, kLimit));
  h.closing();
  EXPECT_EQ(h.ended(), Handshake::End::kTimedOut);
  EXPECT_FALSE(h.crowd_out(accepted_ + hours(100), kLimit));
}

}  // namespace
}  // namespace forkfeed
