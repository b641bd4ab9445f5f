// TokenThrottle: the wait per address, and the bound on what it remembers.
#include "gateway/token_throttle.h"

#include <netinet/in.h>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace forkfeed {

std::string TokenThrottle::address_of(const sockaddr_storage& peer) {
  if (peer.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(peer);
    return std::string(reinterpret_cast<const char*>(&v4.sin_addr), sizeof v4.sin_addr);
  }
  if (peer.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(peer);
    const auto* bytes = reinterpret_cast<const char*>(&v6.sin6_addr);
    if (IN6_IS_ADDR_V4MAPPED(&v6.sin6_addr)) return std::string(bytes + 12, 4);
    return std::string(bytes, 8) + "/64";
  }
  return std::string();
}

bool TokenThrottle::may_check(std::string_view address, Clock::time_point now) const {
  const auto it = records_.find(std::string(address));
  return it == records_.end() || now >= it->second.next;
}

TokenThrottle::Clock::duration TokenThrottle::wrong(const std::string& address, Clock::time_point now) {
  auto it = records_.find(address);
  if (it == records_.end()) {
    make_room(now);
    it = records_.emplace(address, Record{}).first;
  } else if (now > it->second.next + kForget) {
    it->second.backoff.reset();  // quiet long enough: it starts over
  }
  const Clock::duration wait = it->second.backoff.failed();
  it->second.next = now + wait;
  return wait;
}

void TokenThrottle::make_room(Clock::time_point now) {
  if (records_.size() < kMaxAddresses) return;
  std::erase_if(records_, [&](const auto& entry) { return now > entry.second.next + kForget; });
  if (records_.size() < kMaxAddresses) return;
  // A sixteenth at once, those free soonest: a spray from many addresses costs a scan per
  // kMaxAddresses / 16 of them, not one each.
  std::vector<std::unordered_map<std::string, Record>::iterator> all;
  all.reserve(records_.size());
  for (auto it = records_.begin(); it != records_.end(); ++it) all.push_back(it);
  const std::size_t drop = std::max<std::size_t>(1, kMaxAddresses / 16);
  std::nth_element(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(drop - 1), all.end(),
                   [](const auto& a, const auto& b) { return a->second.next < b->second.next; });
  for (std::size_t i = 0; i < drop; ++i) records_.erase(all[i]);
}

}  // namespace forkfeed
