// TokenThrottle: after a wrong token an address waits 0.5 s, then twice as long after
// each further one, at most 5 s; other addresses never wait; an address quiet for a
// minute starts over; and what it remembers is bounded, whatever the number of addresses.
#include "gateway/token_throttle.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <string>

namespace forkfeed {
namespace {

using Clock = TokenThrottle::Clock;
using std::chrono::milliseconds;

sockaddr_storage v4(const char* text, std::uint16_t port) {
  sockaddr_storage s{};
  auto& a = reinterpret_cast<sockaddr_in&>(s);
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  EXPECT_EQ(::inet_pton(AF_INET, text, &a.sin_addr), 1) << text;
  return s;
}

sockaddr_storage v6(const char* text, std::uint16_t port) {
  sockaddr_storage s{};
  auto& a = reinterpret_cast<sockaddr_in6&>(s);
  a.sin6_family = AF_INET6;
  a.sin6_port = htons(port);
  EXPECT_EQ(::inet_pton(AF_INET6, text, &a.sin6_addr), 1) << text;
  return s;
}

TEST(TokenThrottle, AnAddressIsItsHostNotItsPort) {
  const std::string a = TokenThrottle::address_of(v4("10.0.0.9", 41822));
  EXPECT_EQ(a, TokenThrottle::address_of(v4("10.0.0.9", 50000))) << "a new connection is no new address";
  EXPECT_NE(a, TokenThrottle::address_of(v4("10.0.0.10", 41822)));
  EXPECT_EQ(a, TokenThrottle::address_of(v6("::ffff:10.0.0.9", 1))) << "IPv4-mapped IPv6 is the IPv4 address";
  EXPECT_EQ(TokenThrottle::address_of(v6("2001:db8:1:2::1", 1)),
            TokenThrottle::address_of(v6("2001:db8:1:2::ff", 2)))
      << "one /64 is one host's";
  EXPECT_NE(TokenThrottle::address_of(v6("2001:db8:1:2::1", 1)),
            TokenThrottle::address_of(v6("2001:db8:1:3::1", 1)));
}

TEST(TokenThrottle, WrongTokensDoubleTheWaitOfTheirAddressOnlyUpTo5Seconds) {
  TokenThrottle throttle;
  const std::string guesser = TokenThrottle::address_of(v4("10.0.0.66", 1));
  const std::string other = TokenThrottle::address_of(v4("10.0.0.7", 1));
  Clock::time_point now{};
  EXPECT_TRUE(throttle.may_check(guesser, now)) << "a first hello is checked at once";
  const milliseconds expected[] = {milliseconds(500),  milliseconds(1000), milliseconds(2000),
                                   milliseconds(4000), milliseconds(5000), milliseconds(5000)};
  for (const milliseconds wait : expected) {
    EXPECT_EQ(throttle.wrong(guesser, now), wait);
    EXPECT_FALSE(throttle.may_check(guesser, now + wait - milliseconds(1)));
    EXPECT_TRUE(throttle.may_check(other, now)) << "another address waits for nobody";
    now += wait;
    EXPECT_TRUE(throttle.may_check(guesser, now));
  }
  // A minute of quiet after its wait: it starts over.
  now += TokenThrottle::kForget + milliseconds(1);
  EXPECT_EQ(throttle.wrong(guesser, now), milliseconds(500));
}

TEST(TokenThrottle, ItRemembersABoundedNumberOfAddressesTheMostThrottledLast) {
  TokenThrottle throttle;
  const Clock::time_point start{};
  const std::string persistent = TokenThrottle::address_of(v4("192.168.0.1", 1));
  Clock::time_point now = start;
  for (int i = 0; i < 4; ++i) now += throttle.wrong(persistent, now);
  EXPECT_EQ(throttle.wrong(persistent, now), std::chrono::seconds(5));  // the longest wait of all
  // A spray from 20,000 other addresses, one wrong token each.
  for (std::uint32_t i = 0; i < 20000; ++i) {
    sockaddr_storage s{};
    auto& a = reinterpret_cast<sockaddr_in&>(s);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(0x0a000000u + i);
    (void)throttle.wrong(TokenThrottle::address_of(s), now);
    EXPECT_LE(throttle.size(), TokenThrottle::kMaxAddresses);
  }
  EXPECT_FALSE(throttle.may_check(persistent, now)) << "the address that guessed most was forgotten first";
}

}  // namespace
}  // namespace forkfeed
