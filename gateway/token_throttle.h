// TokenThrottle: slows down guessing the token. After a wrong token from an address, the
// next hello from that address is checked no sooner than 0.5 s later; each further wrong
// one doubles the wait, up to 5 s, so one address gets at most one guess per 5 s however
// many connections it opens. Hellos wait for their turn; none is refused for it, so a
// right token is served (after the wait, if its address was guessing), and other
// addresses never wait. An address quiet for a minute after its wait is forgotten, and
// at most kMaxAddresses are remembered (the least throttled go first): bounded memory.
// A value: the caller keeps the clock.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/backoff.h"
#include "remote/remote_wire.h"

namespace forkfeed {

class TokenThrottle {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr Clock::duration kFirstWait = std::chrono::milliseconds(500);
  static constexpr Clock::duration kMostWait = kWrongTokenMostWait;
  static constexpr Clock::duration kForget = std::chrono::seconds(60);
  static constexpr std::size_t kMaxAddresses = 4096;

  // The key of the address `peer` connects from: its IPv4 address, or its IPv6 /64 (one
  // host commonly holds a whole /64); an IPv4-mapped IPv6 address is its IPv4 one.
  static std::string address_of(const sockaddr_storage& peer);

  // Whether a hello from `address` may have its token checked at `now`.
  bool may_check(std::string_view address, Clock::time_point now) const;
  // A wrong token from `address` at `now`: the wait before its next check.
  Clock::duration wrong(const std::string& address, Clock::time_point now);
  // Addresses remembered.
  std::size_t size() const { return records_.size(); }

 private:
  struct Record {
    Backoff backoff{kFirstWait, kMostWait};
    Clock::time_point next;  // no check before
  };
  // Makes room for one more record: the forgotten ones go, then those free soonest.
  void make_room(Clock::time_point now);

  std::unordered_map<std::string, Record> records_;
};

}  // namespace forkfeed
