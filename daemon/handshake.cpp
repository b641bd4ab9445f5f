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

bool Handshake::begin_opening() {
  std::lock_guard lock(mu_);
  if (phase_ != Phase::kAnswering) return false;
  phase_ = Phase::kOpening;
  return true;
}

bool Handshake::end_request(bool streaming) {
  std::lock_guard lock(mu_);
  if (phase_ == Phase::kStreaming) return true;
  if (phase_ != Phase::kAnswering && phase_ != Phase::kOpening) return false;
  phase_ = streaming ? Phase::kStreaming : Phase::kWaiting;
  quiet_since_ = Clock::now();  // the deadline from accept stays: replies do not extend it
  return true;
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
  return phase_ == Phase::kWaiting || phase_ == Phase::kAnswering || phase_ == Phase::kOpening;
}

bool Handshake::time_out(Clock::time_point now, Clock::duration limit) {
  std::lock_guard lock(mu_);
  if (phase_ != Phase::kWaiting && phase_ != Phase::kAnswering) return false;
  if (now - accepted_ < limit) return false;
  end(End::kTimedOut);
  return true;
}

bool Handshake::crowd_out(Clock::time_point now, Clock::duration min_silence) {
  std::lock_guard lock(mu_);
  if (phase_ != Phase::kWaiting || now - quiet_since_ < min_silence) return false;
  end(End::kCrowdedOut);
  return true;
}

void Handshake::end(End why) {
  // Waiting: SHUT_RD only, so the session can still send the reason before it closes.
  // Answering: SHUT_RDWR, since a peer that reads nothing blocks the reply's send and
  // only shutting the writing side wakes it; that peer gets no reason.
  ::shutdown(socket_, phase_ == Phase::kWaiting ? SHUT_RD : SHUT_RDWR);
  phase_ = Phase::kEnded;
  end_ = why;
}

}  // namespace forkfeed
