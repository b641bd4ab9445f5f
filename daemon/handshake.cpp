// Handshake: the phases of a connection before its stream, under one mutex.
#include "daemon/handshake.h"

#include <sys/socket.h>

namespace forkfeed {

bool Handshake::begin_request() {
  std::lock_guard lock(mu_);
  if (phase_ == Phase::kStreaming) return true;
  if (phase_ != Phase::kWaiting) return false;
  phase_ = Phase::kAnswering;
  return true;
}

void Handshake::end_request(bool streaming) {
  std::lock_guard lock(mu_);
  if (phase_ != Phase::kAnswering) return;
  phase_ = streaming ? Phase::kStreaming : Phase::kWaiting;
  since_ = Clock::now();  // a connection without a stream has the deadline again for its next request
}

void Handshake::closing() {
  std::lock_guard lock(mu_);
  phase_ = Phase::kClosing;
}

Handshake::End Handshake::ended() const {
  std::lock_guard lock(mu_);
  return end_;
}

bool Handshake::pending() const {
  std::lock_guard lock(mu_);
  return phase_ == Phase::kWaiting || phase_ == Phase::kAnswering;
}

bool Handshake::time_out(Clock::time_point now, Clock::duration limit) {
  std::lock_guard lock(mu_);
  if (phase_ != Phase::kWaiting || now - since_ < limit) return false;
  end(End::kTimedOut);
  return true;
}

bool Handshake::crowd_out() {
  std::lock_guard lock(mu_);
  if (phase_ != Phase::kWaiting) return false;
  end(End::kCrowdedOut);
  return true;
}

void Handshake::end(End why) {
  phase_ = Phase::kEnded;
  end_ = why;
  // SHUT_RD, not SHUT_RDWR: the session still sends the reason before it closes.
  ::shutdown(socket_, SHUT_RD);
}

}  // namespace forkfeed
